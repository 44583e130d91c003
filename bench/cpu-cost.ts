// CPU cost per request: a measurement that does not depend on how busy the machine is.
// Wall-clock throughput on a shared 2-core machine moves with every other process; the
// server's own CPU seconds per request (all its threads, read from /proc before and after
// a short load) do not, much. Each thread is reported apart: the front (main) thread, the
// shard workers and the rest (libuv pool, GC helpers).
//
//   npm run build && node dist/bench/cpu-cost.js --scenario get [--seconds 5] [--connections 50] [--prof DIR] [--strace]
//     [--rate N]   (create only: N creates/s from a rate writer instead of as fast as 50 connections go)
//     [--server OTHER/dist/src/main.js]   (the same load against another build: A/B on a noisy machine)
//     [--client native]                   (get, create, list: the native load client instead of the JS lean one;
//                                          watch: the native watch fleet instead of the JS one)
//     [--server-args "ARGS"]              (more server flags, split on spaces: e.g. "--storage-backend etcd3 --etcd-servers URL")
//     [--webhooks]                        (create: through one mutating and one validating admission webhook,
//                                          served over HTTPS on localhost by bench/webhook-server.ts)
//   scenarios: get, create, list (10k ConfigMaps, consistent), list-rv0, watch (N watchers, --watchers)
//
// With --prof DIR the server runs under `node --cpu-prof` and the hottest functions (self
// time) of the front thread's profile are printed.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import https from 'node:https';
import { rawLoad } from './raw-load.js';
import { nativeLoad, nativeLoadgen } from './native-load.js';
import { openWatchFleet } from './watch-load.js';
import { nativeWatchAvailable, openNativeWatchFleet } from './native-watch.js';
import { runRateWriter } from './rate-writer.js';
import { GO_TLS13_CIPHERS, sampleProc, type Target, freePort } from './lib.js';

const args = process.argv.slice(2);
const opt = (name: string, dflt: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const scenario = opt('scenario', 'get');
const seconds = Number(opt('seconds', '5'));
const connections = Number(opt('connections', '50'));
const profDir = opt('prof', '');
/** --server PATH: another build's dist/src/main.js, for an A/B comparison on the same load */
const serverMain = opt('server', '');
/** --client lean|native: the load client of the get, create and list scenarios, the watch fleet of watch */
const client = opt('client', 'lean');
/** --front-threads N: the server's front threads (issue 18's per-thread CPU figures) */
const frontThreads = opt('front-threads', '');
/** --server-args "A B C": more server flags (e.g. the etcd3 backend's) */
const serverArgs = opt('server-args', '').split(' ').filter(Boolean);
/** --webhooks: creates go through a mutating and a validating webhook (issue 20's figure) */
const withWebhooks = args.includes('--webhooks');
const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');

interface ThreadCpu {
  name: string;
  ticks: number;
}

/** CPU ticks (1/100 s) per thread of a process. */
function threadTicks(pid: number): Map<number, ThreadCpu> {
  const out = new Map<number, ThreadCpu>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(tid), { name, ticks: Number(f[11]) + Number(f[12]) });
    } catch {
      /* thread ended */
    }
  }
  return out;
}

function rssMB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

const agent = new https.Agent({ keepAlive: true, rejectUnauthorized: false, ciphers: GO_TLS13_CIPHERS, maxSockets: 32 });
function call(t: Target, method: string, path: string, body?: unknown): Promise<number> {
  const u = new URL(t.url + path);
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((res, rej) => {
    const req = https.request(
      { host: u.hostname, port: u.port, path: u.pathname + u.search, method, agent, headers: { authorization: `Bearer ${t.token}`, ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}) } },
      (r) => {
        r.resume();
        r.on('end', () => res(r.statusCode!));
      },
    );
    req.on('error', rej);
    if (payload) req.write(payload);
    req.end();
  });
}

async function seed(t: Target, path: string, n: number, make: (i: number) => unknown) {
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < n) {
        const i = next++;
        const s = await call(t, 'POST', path, make(i));
        if (s !== 201 && s !== 409) throw new Error(`seed: ${s}`);
      }
    }),
  );
}

async function main() {
  process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
  const dataDir = mkdtempSync(join(tmpdir(), 'kubeshard-cpu-'));
  const port = await freePort();
  const nodeArgs = profDir ? ['--cpu-prof', '--cpu-prof-dir', profDir] : [];
  const proc = spawn(process.execPath, [...nodeArgs, serverMain || join(ROOT, 'dist', 'src', 'main.js'), '--secure-port', String(port), '--data-dir', dataDir, ...(frontThreads ? ['--front-threads', frontThreads] : []), ...serverArgs], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  const deadline = Date.now() + 30_000;
  while (!out.includes('Serving securely')) {
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error('kubeshard did not start: ' + out);
    await new Promise((r) => setTimeout(r, 50));
  }
  const kc = readFileSync(join(dataDir, 'admin.kubeconfig'), 'utf8');
  const t: Target = { url: /server:\s*(\S+)/.exec(kc)![1], token: /token:\s*(\S+)/.exec(kc)![1], pid: proc.pid, stop: async () => {} };
  const pid = proc.pid!;
  let webhookProc: ChildProcess | undefined;
  try {
    if (client !== 'lean' && client !== 'native') throw new Error(`--client ${client}: lean or native`);
    // built before anything is measured (the compile would count as client CPU), and no
    // silent fallback: a figure labelled native must come from the native client
    if (client === 'native' && scenario !== 'watch' && !(await nativeLoadgen())) throw new Error('--client native: the native load client cannot be built here');
    if (client === 'native' && scenario === 'watch' && !(await nativeWatchAvailable())) throw new Error('--client native: the native watch fleet cannot be built here');
    await call(t, 'POST', '/api/v1/namespaces', { metadata: { name: 'cpu' } });
    const idleRss = rssMB(pid);
    let path = '/api/v1/namespaces/cpu/configmaps/one';
    let method = 'GET';
    let body: string | undefined;
    let unit = 'request';
    if (scenario === 'get') {
      await call(t, 'POST', '/api/v1/namespaces/cpu/configmaps', { metadata: { name: 'one' }, data: { payload: 'x'.repeat(1000) } });
    } else if (scenario === 'create') {
      if (withWebhooks) webhookProc = await startWebhooks(t, dataDir);
      path = '/api/v1/namespaces/cpu/configmaps';
      method = 'POST';
      body = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'cm-' }, data: { payload: 'x'.repeat(1000) } });
    } else if (scenario === 'list' || scenario === 'list-rv0') {
      await seed(t, '/api/v1/namespaces/cpu/configmaps', 10000, (i) => ({ metadata: { name: `cm-${i}`, labels: { app: 'bench' } }, data: { v: 'y'.repeat(220) } }));
      path = '/api/v1/namespaces/cpu/configmaps' + (scenario === 'list-rv0' ? '?resourceVersion=0' : '');
    }
    // --strace: a syscall summary of the server during the load (strace -c).
    const tracer = args.includes('--strace') ? spawn('strace', ['-f', '-c', '-p', String(pid)], { stdio: ['ignore', 'inherit', 'inherit'] }) : null;
    if (tracer) await new Promise((r) => setTimeout(r, 500));
    const before = threadTicks(pid);
    // the load generator's own CPU (this process): on 2 cores it competes with the server
    let clientCpu = process.cpuUsage();
    const start = performance.now();
    let count = 0;
    let extra = '';
    /** the client's CPU µs per request as the client measured it (the native client runs in a process of its own) */
    let childClientUs: number | undefined;
    if (scenario === 'watch') {
      unit = 'event delivered';
      const watchers = Number(opt('watchers', '1000'));
      const watchPath = '/api/v1/namespaces/cpu/configmaps?watch=1';
      const fleet = client === 'native' ? (await openNativeWatchFleet(t, watchPath, watchers, 0))! : await openWatchFleet(t, watchPath, watchers, 0);
      const fleetCpu0 = sampleProc(fleet.pid);
      const t0 = threadTicks(pid);
      for (const [k, v] of t0) before.set(k, v);
      clientCpu = process.cpuUsage();
      const clientBefore = threadTicks(process.pid);
      const e0 = fleet.events();
      const r0 = fleet.reads();
      const rate = Number(opt('rate', '200'));
      // the creates come from a thread of their own (as in run.ts): from this event loop
      // they would wait behind the fleet's reads, and the rate would fall with the load
      const sent = await runRateWriter({ url: t.url, headers: { authorization: `Bearer ${t.token}` }, path: '/api/v1/namespaces/cpu/configmaps', rate, seconds, annotation: 'bench/sent' });
      const drain = Date.now() + 5000;
      while (fleet.events() - e0 < sent * fleet.open() && Date.now() < drain) await new Promise((r) => setTimeout(r, 50));
      count = fleet.events() - e0;
      const c = process.cpuUsage(clientCpu);
      // the native fleet's own process: the client's CPU too
      const fleetCpu1 = sampleProc(fleet.pid);
      const nativeUs = fleetCpu0 && fleetCpu1 ? (fleetCpu1.cpuSeconds - fleetCpu0.cpuSeconds) * 1e6 : 0;
      if (fleet.pid) childClientUs = (c.user + c.system + nativeUs) / Math.max(1, count);
      const fleetThreads = [...threadTicks(process.pid)].map(([tid, v]) => `${tid === process.pid ? 'main' : v.name}:${(((v.ticks - (clientBefore.get(tid)?.ticks ?? 0)) * 1e4) / Math.max(1, count)).toFixed(1)}`).filter((x) => !x.endsWith(':0.0'));
      extra = ` watchers=${fleet.open()} creates=${sent} eventsPerRead=${(count / Math.max(1, fleet.reads() - r0)).toFixed(1)} client threads (µs per event) ${fleetThreads.join(' ')}${fleet.pid ? ` native fleet:${(nativeUs / Math.max(1, count)).toFixed(1)}` : ''} (client total ${((c.user + c.system + nativeUs) / Math.max(1, count)).toFixed(1)}) rss=${rssMB(pid).toFixed(0)}MB`;
      await fleet.close();
    } else if (scenario === 'create' && args.includes('--rate')) {
      // creates at a fixed rate (from a thread of its own): with and without webhooks the
      // server then does the same creates per second, so the shard threads' fixed
      // per-interval work weighs the same per create, and the difference is the calls' own
      const rate = Number(opt('rate', '1000'));
      count = await runRateWriter({ url: t.url, headers: { authorization: `Bearer ${t.token}` }, path, rate, seconds, annotation: 'bench/sent' });
      extra = ` rate=${rate} (sent ${(count / seconds).toFixed(0)}/s)`;
    } else {
      const loadOpts = { path, method, body, connections: scenario.startsWith('list') ? 4 : connections, seconds };
      const r = client === 'native' ? (await nativeLoad(t, loadOpts))! : await rawLoad(t, loadOpts);
      count = r.requests;
      childClientUs = r.clientCpuUs;
      extra = ` client=${client} rps=${r.rps.toFixed(0)} p50=${r.p50.toFixed(2)}ms p99=${r.p99.toFixed(2)}ms non2xx=${r.non2xx} errors=${r.errors}`;
    }
    const wall = (performance.now() - start) / 1000;
    const after = threadTicks(pid);
    const c = process.cpuUsage(clientCpu);
    const clientUs = childClientUs ?? (c.user + c.system) / Math.max(1, count);
    if (tracer) {
      tracer.kill('SIGINT');
      await new Promise((r) => tracer.once('exit', r));
    }
    const perThread: string[] = [];
    let total = 0;
    for (const [tid, a] of after) {
      const d = a.ticks - (before.get(tid)?.ticks ?? 0);
      total += d;
      if (d > 0) perThread.push(`${tid === pid ? 'main' : a.name}:${((d * 1e4) / Math.max(1, count)).toFixed(1)}`);
    }
    const us = (total * 1e4) / Math.max(1, count);
    console.log(`${scenario}: ${count} ${unit}s in ${wall.toFixed(1)} s; server CPU ${(total / 100).toFixed(2)} s = ${us.toFixed(1)} µs per ${unit} (${perThread.join(' ')}); idle rss ${idleRss.toFixed(0)}MB; client CPU ${clientUs.toFixed(1)} µs per ${unit}${extra}`);
  } finally {
    webhookProc?.kill('SIGTERM');
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
    rmSync(dataDir, { recursive: true, force: true });
  }
  if (profDir) summarizeProfiles(profDir);
}

/**
 * A CA and serving certificate (openssl), the webhook server in a process of its own, and a
 * MutatingWebhookConfiguration and a ValidatingWebhookConfiguration on ConfigMap creates in
 * the bench namespace; returns once a create goes through both.
 */
async function startWebhooks(t: Target, dir: string): Promise<ChildProcess> {
  const run = (a: string[]) => execFileSync('openssl', a, { cwd: dir, stdio: 'ignore' });
  run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'wh-ca.key']);
  run(['req', '-x509', '-new', '-key', 'wh-ca.key', '-days', '1', '-subj', '/CN=bench-webhook-ca', '-out', 'wh-ca.crt']);
  run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'wh.key']);
  run(['req', '-new', '-key', 'wh.key', '-subj', '/CN=127.0.0.1', '-out', 'wh.csr']);
  writeFileSync(join(dir, 'wh.ext'), 'subjectAltName=IP:127.0.0.1\n');
  run(['x509', '-req', '-in', 'wh.csr', '-CA', 'wh-ca.crt', '-CAkey', 'wh-ca.key', '-CAcreateserial', '-days', '1', '-extfile', 'wh.ext', '-out', 'wh.crt']);
  const proc = spawn(process.execPath, [join(ROOT, 'dist', 'bench', 'webhook-server.js'), join(dir, 'wh.key'), join(dir, 'wh.crt')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((res, rej) => {
    let out = '';
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /listening (\d+)/.exec(out);
      if (m) res(Number(m[1]));
    });
    proc.once('exit', () => rej(new Error('webhook server exited')));
  });
  const caBundle = readFileSync(join(dir, 'wh-ca.crt')).toString('base64');
  const hook = (name: string, p: string) => ({
    name,
    admissionReviewVersions: ['v1'],
    sideEffects: 'None',
    clientConfig: { url: `https://127.0.0.1:${port}${p}`, caBundle },
    rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'cpu' } },
  });
  const base = '/apis/admissionregistration.k8s.io/v1';
  if ((await call(t, 'POST', `${base}/mutatingwebhookconfigurations`, { metadata: { name: 'bench' }, webhooks: [hook('mutate.bench.kubeshard.io', '/mutate')] })) !== 201) throw new Error('mutating webhook configuration refused');
  if ((await call(t, 'POST', `${base}/validatingwebhookconfigurations`, { metadata: { name: 'bench' }, webhooks: [hook('validate.bench.kubeshard.io', '/validate')] })) !== 201) throw new Error('validating webhook configuration refused');
  // until a create is seen by both (the configurations reach the caches)
  const deadline = Date.now() + 10_000;
  for (;;) {
    const body = await new Promise<any>((res, rej) => {
      const u = new URL(t.url + '/api/v1/namespaces/cpu/configmaps?dryRun=All');
      const payload = Buffer.from(JSON.stringify({ metadata: { generateName: 'probe-' } }));
      const req = https.request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: 'POST', agent, headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json', 'content-length': payload.length } }, (r) => {
        let text = '';
        r.on('data', (c) => (text += c));
        r.on('end', () => res(JSON.parse(text)));
      });
      req.on('error', rej);
      req.end(payload);
    });
    if (body?.metadata?.labels?.['bench-webhook'] === 'yes') break;
    if (Date.now() > deadline) throw new Error('webhooks not active: ' + JSON.stringify(body));
    await new Promise((r) => setTimeout(r, 100));
  }
  return proc;
}

interface ProfNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount: number;
  children?: number[];
}

/** Prints the hottest functions by self time of each profile in dir. */
function summarizeProfiles(dir: string): void {
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.cpuprofile'))) {
    const p = JSON.parse(readFileSync(join(dir, f), 'utf8')) as { nodes: ProfNode[]; samples: number[] };
    const total = p.samples.length;
    const self = new Map<string, number>();
    for (const n of p.nodes) {
      const url = n.callFrame.url.replace(/^.*\/(dist|node_modules)\//, '$1/');
      const key = `${n.callFrame.functionName || '(anon)'} ${url}:${n.callFrame.lineNumber + 1}`;
      self.set(key, (self.get(key) ?? 0) + n.hitCount);
    }
    const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(opt('top', '30')));
    console.log(`\n${f}: ${total} samples; self time`);
    for (const [k, v] of top) console.log(`  ${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`);
    // Inclusive time of our own functions (each counted once per sample, recursion or not).
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const keyOf = (n: ProfNode) => `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.replace(/^.*\/(dist|node_modules)\//, '$1/')}:${n.callFrame.lineNumber + 1}`;
    const incl = new Map<string, number>();
    for (const id of p.samples) {
      const seen = new Set<string>();
      for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
        const n = byId.get(cur)!;
        if (!n.callFrame.url.includes('/dist/')) continue;
        const k = keyOf(n);
        if (!seen.has(k)) {
          seen.add(k);
          incl.set(k, (incl.get(k) ?? 0) + 1);
        }
      }
    }
    console.log('  inclusive (our code):');
    for (const [k, v] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, Number(opt('top', '30')))) console.log(`  ${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
