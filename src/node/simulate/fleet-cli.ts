// `kubeshard node --simulate N [flags]`: N virtual nodes in one process (issue 23), as kwok
// runs them: each registers its Node, renews its Lease, reports status and runs its pods
// without processes (sim-node.ts). Runs until SIGTERM or SIGINT; prints one line when every
// node is registered ("fleet ready: ...") and, with --stats-interval, its counters as JSON.
//
// Thread ownership: the process's main thread.
import { loadWebhookKubeconfig } from '../../auth/webhook-client.js';
import { Fleet, type FleetOptions } from './fleet.js';

interface Flag {
  help: string;
  dflt: string;
}

const FLAGS: Record<string, Flag> = {
  kubeconfig: { help: 'kubeconfig of the API server (its current context: server, CA, token or client certificate)', dflt: '' },
  simulate: { help: 'number of virtual nodes', dflt: '0' },
  'node-name-prefix': { help: 'node names: <prefix><index>', dflt: 'sim-node-' },
  'first-index': { help: 'index of the first node (several fleets take disjoint ranges)', dflt: '0' },
  'heartbeat-interval': { help: "how often each node renews its Lease (kubelet's renew interval: a quarter of the lease duration)", dflt: '10s' },
  'node-lease-duration-seconds': { help: "the Lease's leaseDurationSeconds", dflt: '40' },
  'node-status-report-frequency': { help: 'how often each node reports its status when nothing changed', dflt: '5m' },
  'pod-start-delay': { help: 'time from seeing a pod to reporting it Running', dflt: '0s' },
  'register-concurrency': { help: 'nodes registering at a time', dflt: '50' },
  'streams-per-connection': { help: 'the most HTTP/2 streams (requests and watches) on one connection; more connections open as needed', dflt: '250' },
  'http1': { help: 'speak HTTP/1.1 even to a server that offers HTTP/2 (one connection per watch)', dflt: 'false' },
  'stats-interval': { help: 'print the counters as a JSON line this often (0: only at exit)', dflt: '0s' },
};

const UNITS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };

/** A Go duration ("10s", "1m30s", "250ms") in milliseconds; a bare number is seconds. */
export function durationMs(flag: string, v: string): number {
  if (/^\d+(\.\d+)?$/.test(v)) return Number(v) * 1000;
  const part = /(\d+(?:\.\d*)?)(h|ms|m|s)/y;
  let total = 0;
  let at = 0;
  for (let m: RegExpExecArray | null; at < v.length && (m = part.exec(v)); at = part.lastIndex) total += Number(m[1]) * UNITS[m[2]];
  if (!v || at !== v.length) throw new Error(`invalid argument "${v}" for "--${flag}" flag: time: invalid duration "${v}"`);
  return total;
}

export function parseFleetArgs(argv: string[]): Record<string, string> | 'help' {
  const out: Record<string, string> = Object.fromEntries(Object.entries(FLAGS).map(([k, f]) => [k, f.dflt]));
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') return 'help';
    if (!a.startsWith('--')) throw new Error(`unexpected argument "${a}"`);
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
    if (!FLAGS[name]) throw new Error(`unknown flag: --${name}`);
    // a boolean flag alone is true (--http1), as Go's flag package reads it
    const value = eq > 0 ? a.slice(eq + 1) : FLAGS[name].dflt === 'false' ? 'true' : argv[++i];
    if (value === undefined) throw new Error(`flag needs an argument: --${name}`);
    out[name] = value;
  }
  return out;
}

function fleetUsage(): string {
  return ['Usage: kubeshard node --simulate N --kubeconfig FILE [flags]', '', ...Object.entries(FLAGS).map(([k, f]) => `  --${k}${f.dflt ? ` (default ${f.dflt})` : ''}\n      ${f.help}`)].join('\n');
}

export async function fleetMain(argv: string[]): Promise<number> {
  let a: Record<string, string>;
  let o: FleetOptions;
  let fleet: Fleet;
  try {
    const parsed = parseFleetArgs(argv);
    if (parsed === 'help') {
      console.log(fleetUsage());
      return 0;
    }
    a = parsed;
    const count = Number(a.simulate);
    if (!Number.isInteger(count) || count < 1) throw new Error(`--simulate takes a number of nodes, got "${a.simulate}"`);
    if (!a.kubeconfig) throw new Error('--kubeconfig is required');
    o = {
      count,
      prefix: a['node-name-prefix'],
      firstIndex: Number(a['first-index']) || 0,
      heartbeatMs: durationMs('heartbeat-interval', a['heartbeat-interval']),
      leaseDurationSeconds: Number(a['node-lease-duration-seconds']),
      statusReportMs: durationMs('node-status-report-frequency', a['node-status-report-frequency']),
      podStartMs: durationMs('pod-start-delay', a['pod-start-delay']),
      registerConcurrency: Math.max(1, Number(a['register-concurrency']) || 50),
      streamsPerConnection: Math.max(1, Number(a['streams-per-connection']) || 250),
      kubeletVersion: 'v1.33.0',
      forceHttp1: a.http1 === 'true',
    };
    fleet = new Fleet(loadWebhookKubeconfig(a.kubeconfig), o);
  } catch (err) {
    console.error(`Error: ${(err as Error).message}`);
    return 2;
  }
  const t0 = performance.now();
  let stopping = false;
  const stopped = new Promise<void>((resolve) => {
    const stop = () => {
      if (stopping) return;
      stopping = true;
      resolve();
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  const statsMs = durationMs('stats-interval', a['stats-interval']);
  const timer = statsMs > 0 ? setInterval(() => console.log(JSON.stringify({ at: new Date().toISOString(), ...fleet.stats() })), statsMs) : undefined;
  try {
    await Promise.race([fleet.start(), stopped]);
  } catch (err) {
    console.error(`Error: ${(err as Error).message}`);
    fleet.stop();
    return 1;
  }
  if (!stopping) console.log(`fleet ready: ${o.count} nodes registered in ${((performance.now() - t0) / 1000).toFixed(1)} s over ${fleet.pool.connections} ${fleet.pool.protocol} connections`);
  await stopped;
  if (timer) clearInterval(timer);
  // the counters before the connections close (so that they count the connections held)
  const final = fleet.stats();
  fleet.stop();
  console.log(JSON.stringify({ at: new Date().toISOString(), final: true, ...final }));
  return 0;
}
