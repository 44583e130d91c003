#!/usr/bin/env node
// Entry point: parse flags, start, and stop cleanly on SIGTERM / SIGINT.
import { FlagError, parseArgs, usage } from './options.js';
import { startServer } from './server.js';
import { snapshotMain } from './snapshot-cli.js';

async function main(): Promise<void> {
  // `kubeshard snapshot ...`: backup and restore (snapshot-cli.ts), no server started
  if (process.argv[2] === 'snapshot') process.exit(await snapshotMain(process.argv.slice(3)));
  // `kubeshard node ...`: the node agent, or with --simulate N a fleet of virtual nodes
  if (process.argv[2] === 'node') {
    const argv = process.argv.slice(3);
    const simulate = argv.some((a) => a === '--simulate' || a.startsWith('--simulate='));
    const code = simulate ? await (await import('./node/simulate/fleet-cli.js')).fleetMain(argv) : await (await import('./node/cli.js')).nodeMain(argv);
    // the agent returns when it has stopped (a signal, or a failed start)
    process.exit(code);
  }
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (e) {
    if (e instanceof FlagError) {
      console.error(`Error: ${e.message}`);
      console.error(`Run with --help for the list of flags.`);
      process.exit(2);
    }
    throw e;
  }
  if (opts === 'help') {
    console.log(usage());
    return;
  }
  let server;
  try {
    server = await startServer(opts);
  } catch (e) {
    console.error(`Error: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  }
  console.log(`Serving securely on ${server.url}`);
  console.log(`Admin kubeconfig: ${server.kubeconfigPath}`);
  console.log(`Try: kubectl --kubeconfig ${server.kubeconfigPath} get namespaces`);
  let stopping = false;
  const stop = (signal: string) => {
    // as kube's signal handler: a second signal ends the process at once, exit code 1
    if (stopping) {
      console.error(`Received ${signal} again, exiting without a graceful shutdown`);
      process.exit(1);
    }
    stopping = true;
    console.log(`Received ${signal}, shutting down`);
    server.shutdown().then(
      () => process.exit(0),
      (err) => {
        console.error('shutdown failed:', err);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
