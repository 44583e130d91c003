// npm run bench: the side-by-side benchmark suite.
//
//   npm run bench                          start kubeshard in a temp dir and run everything
//   npm run bench -- --kubeconfig K [--context C]   run against any API server (token or client certificate)
//   npm run bench -- --kubeconfig K --pid P   ... and read that server's RSS/CPU from /proc
//   npm run bench -- --only create,get --seconds 5 --watchers 1000,10000 --idle 20000 --startup-objects 1000000
//   npm run bench -- --server-args "--storage-backend etcd3 --etcd-servers http://127.0.0.1:23790"
//                                          kubeshard started here with these flags too (e.g. on etcd)
//   npm run bench -- --only watch --watch-client native
//                                          the watch scenario's raw watches from the native fleet
//                                          (bench/native-watch.ts) instead of the JS one
//   npm run bench -- --only nodes --nodes 100 --pods-per-node 30 [--nodes-window 30] [--fleet-args "..."]
//                                          a simulated fleet and its pods (issue 23, bench/nodes.ts)
//   npm run bench -- --reference K [--reference-pid P[,P2]] [--reference-context C]
//                                          ... and each scenario again against a second server (the
//                                          kube-apiserver reference), right after kubeshard's turn;
//                                          one result file and one report with both
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import https from 'node:https';
import { execFileSync } from 'node:child_process';
import { GO_TLS13_CIPHERS, api, authHeaders, autocannonLoad, load, sampleProc, startTarget, targetFromKubeconfig, type LoadResult, type Target } from './lib.js';
import { latenciesOf, openWatchFleet, percentile, timedLatenciesOf } from './watch-load.js';
import { comparisonTable, table, writeReport, type Report, type ScenarioResult, type ScenarioSeries } from './report.js';
import { seedAndTimeStartup } from './startup.js';
import { rawLoad } from './raw-load.js';
import { nativeLoad, nativeLoadgen } from './native-load.js';
import { wrkAvailable, wrkLoad } from './wrk-load.js';
import { newWriteClock, runRateWriter } from './rate-writer.js';
import { nodesScenario } from './nodes.js';
import { nativeWatchAvailable, openNativeWatchFleet } from './native-watch.js';

const args = process.argv.slice(2);
function opt(name: string, dflt: string): string;
function opt(name: string, dflt?: string): string | undefined;
function opt(name: string, dflt?: string): string | undefined {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
}
const seconds = Number(opt('seconds', '10'));
const only = new Set(opt('only', 'create,get,list,watch,idle-watches,startup,mixed').split(','));
const watcherCounts = opt('watchers', '1000,10000').split(',').map(Number);
/** --watch-client js|native: the watch scenario's fleet (the native one costs the shared cores less) */
const watchClient = opt('watch-client', 'js');
/**
 * Each idle watch is a socket on both sides: both processes need more descriptors than
 * watches. The default asks for 20,000 but stays below this process's limit.
 */
function fdLimit(): number {
  try {
    return Number(execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim()) || Infinity;
  } catch {
    return Infinity;
  }
}
const idleCount = Number(opt('idle', String(Math.min(20000, fdLimit() - 300))));
const startupObjects = Number(opt('startup-objects', '1000000'));
const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');

/** One keep-alive agent per server (each with that server's client certificate, if any). */
const agents = new WeakMap<Target, https.Agent>();
function agentFor(t: Target): https.Agent {
  let a = agents.get(t);
  if (!a) agents.set(t, (a = new https.Agent({ keepAlive: true, rejectUnauthorized: false, ciphers: GO_TLS13_CIPHERS, maxSockets: 64, ...t.tls })));
  return a;
}

function call(t: Target, method: string, path: string, body?: unknown): Promise<{ status: number; bytes: number; text: string }> {
  const u = new URL(t.url + path);
  const agent = agentFor(t);
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((res, rej) => {
    const req = https.request(
      { host: u.hostname, port: u.port, path: u.pathname + u.search, method, agent, headers: { ...authHeaders(t), accept: 'application/json', ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}) } },
      (r) => {
        const chunks: Buffer[] = [];
        r.on('data', (c) => chunks.push(c));
        r.on('end', () => {
          const b = Buffer.concat(chunks);
          res({ status: r.statusCode!, bytes: b.length, text: b.length < 100_000 ? b.toString() : b.subarray(0, 4096).toString() });
        });
      },
    );
    req.on('error', rej);
    if (payload) req.write(payload);
    req.end();
  });
}

async function ensureNs(t: Target, ns: string) {
  await api(t, 'POST', '/api/v1/namespaces', { metadata: { name: ns } });
}

/** Creates n objects with bounded concurrency. */
async function seed(t: Target, path: string, n: number, make: (i: number) => unknown, concurrency = 64) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        const r = await call(t, 'POST', path, make(i));
        if (r.status !== 201 && r.status !== 409) throw new Error(`seed ${path}: ${r.status} ${r.text.slice(0, 200)}`);
      }
    }),
  );
}

/** The value size that makes the issue's list of 10,000 ConfigMaps 3.7 MB. */
const LIST_VALUE_BYTES = 18;

async function timeRequests(t: Target, path: string, times: number): Promise<{ ms: number; bytes: number }> {
  const durations: number[] = [];
  let bytes = 0;
  for (let i = 0; i < times; i++) {
    const start = process.hrtime.bigint();
    const r = await call(t, 'GET', path);
    durations.push(Number(process.hrtime.bigint() - start) / 1e6);
    bytes = r.bytes;
    if (r.status !== 200) throw new Error(`${path}: ${r.status}`);
  }
  return { ms: percentile(durations, 50), bytes };
}

async function timeChunked(t: Target, path: string, limit: number, times: number): Promise<number> {
  const durations: number[] = [];
  for (let i = 0; i < times; i++) {
    const start = process.hrtime.bigint();
    let cont = '';
    for (;;) {
      const r = await call(t, 'GET', `${path}?limit=${limit}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
      const m = /"continue":"([^"]*)"/.exec(r.text.slice(0, 400)) ?? /"continue":"([^"]*)"/.exec(r.text);
      cont = m?.[1] ?? '';
      if (!cont) break;
    }
    durations.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return percentile(durations, 50);
}

/** One server under test: its target, its name in the report, and its results so far. */
interface Server {
  t: Target;
  name: string;
  results: ScenarioResult[];
}

/** The server's name from /version (kube-apiserver answers with its gitVersion). */
async function versionOf(t: Target): Promise<string> {
  try {
    const r = await api(t, 'GET', '/version');
    // v1.24.0+litekube.51802d7e46cc: the build metadata after '+' is left out
    return typeof r.body?.gitVersion === 'string' ? r.body.gitVersion.replace(/\+.*$/, '') : '';
  } catch {
    return '';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Per-second p50 and p99 of latencies (ms) that arrived at times at (ms since the epoch), from t0 on. */
function latencyPerSecond(at: number[], ms: number[], t0: number, seconds: number): { p50: Array<number | null>; p99: Array<number | null> } {
  const buckets: number[][] = Array.from({ length: seconds }, () => []);
  for (let i = 0; i < at.length; i++) {
    const s = Math.floor((at[i] - t0) / 1000);
    if (s >= 0 && s < seconds) buckets[s].push(ms[i]);
  }
  const q = (b: number[], p: number) => (b.length ? percentile(b, p) : null);
  return { p50: buckets.map((b) => q(b, 50)), p99: buckets.map((b) => q(b, 99)) };
}

/** The load figures of one run: p50/p90/p99/p99.9 and requests per second, second by second. */
function loadMetrics(r: LoadResult): { metrics: Record<string, number>; series: ScenarioSeries } {
  const metrics: Record<string, number> = { rps: r.rps, p50: r.p50, p90: r.p90, p99: r.p99, p999: r.p999, non2xx: r.non2xx };
  if (r.clientCpuUs !== undefined) metrics.clientCpuUs = r.clientCpuUs;
  return { metrics, series: { perSecond: r.perSecond, perSecondUnit: 'req/s' } };
}

/** The steps of the run, in order; each runs on every server before the next begins. */
function steps(): Array<{ name: string; run: (s: Server) => Promise<void> }> {
  const out: Array<{ name: string; run: (s: Server) => Promise<void> }> = [];
  const record = (s: Server, r: ScenarioResult) => {
    s.results.push(r);
    console.log(`  [${s.name}] ${r.scenario}: ${Object.entries(r.metrics).map(([k, v]) => `${k}=${Math.round(v * 100) / 100}`).join(' ')}`);
  };
  const measured = async (s: Server, name: string, fn: () => Promise<Omit<ScenarioResult, 'scenario' | 'before' | 'after'>>) => {
    const before = sampleProc(s.t.pid);
    const r = await fn();
    const after = sampleProc(s.t.pid);
    // Server CPU per request (or per delivered watch event): unlike req/s, it hardly moves with
    // whatever else the machine runs, so it compares builds measured on a busy machine.
    if (before && after) {
      const cpu = after.cpuSeconds - before.cpuSeconds;
      if (r.metrics.rps) r.metrics.cpuUsPerReq = (cpu * 1e6) / (r.metrics.rps * seconds);
      if (r.metrics.delivered && r.metrics.cpuNsPerEvent === undefined) r.metrics.cpuNsPerEvent = (cpu * 1e9) / r.metrics.delivered;
    }
    record(s, { scenario: name, ...r, before, after });
  };
  /** [open watches, server RSS MB] while a fleet opens */
  const rssWhileOpening = (s: Server) => {
    const points: Array<[number, number]> = [];
    const cb = (open: number) => {
      const p = sampleProc(s.t.pid);
      if (p && (points.length === 0 || points[points.length - 1][0] !== open)) points.push([open, p.rssBytes / 2 ** 20]);
    };
    return { points, cb };
  };

  out.push({
    name: 'idle after start',
    run: async (s) => {
      const rss = sampleProc(s.t.pid)?.rssBytes;
      record(s, { scenario: 'idle after start', metrics: { rssMB: (rss ?? NaN) / 2 ** 20 }, goal: 'under 150 MB', reached: rss === undefined ? undefined : rss < 150 * 2 ** 20 });
    },
  });
  // Idle watches first, on the freshly started server: their RSS is then the watches' own,
  // not the heap that later scenarios' hundred thousand objects leave behind.
  if (only.has('idle-watches')) {
    out.push({
      name: 'idle-watches',
      run: async (s) => {
        const t = s.t;
        await ensureNs(t, 'bench-idle');
        const before = sampleProc(t.pid);
        const rss = rssWhileOpening(s);
        const fleet = await openWatchFleet(t, '/api/v1/namespaces/bench-idle/configmaps?watch=1', idleCount, 0, undefined, undefined, rss.cb);
        await sleep(2000);
        const after = sampleProc(t.pid);
        if (after) rss.points.push([fleet.open(), after.rssBytes / 2 ** 20]);
        const perWatch = before && after ? (after.rssBytes - before.rssBytes) / Math.max(1, fleet.open()) : NaN;
        record(s, {
          scenario: `idle-watches ${idleCount}`,
          metrics: { watchers: fleet.open(), failed: fleet.failed(), rssMB: (after?.rssBytes ?? NaN) / 2 ** 20, bytesPerWatch: perWatch },
          goal: '20,000 watches under 600 MB',
          reached: after ? after.rssBytes < 600 * 2 ** 20 : undefined,
          before,
          after,
          series: { rssByWatchers: rss.points },
        });
        await fleet.close();
      },
    });
  }
  // One load, measured with each client: autocannon (the reference), the lean JS client, the
  // native client where it builds (cc and libssl-dev), whose lower CPU on 2 shared cores is
  // CPU the server gets back, and wrk where it is installed (an independent C client).
  const withEachClient = async (s: Server, label: string, opts: { path: string; method?: string; body?: string }, goal: string, reached: (r: LoadResult) => boolean) => {
    const t = s.t;
    const clients: Array<[string, () => Promise<LoadResult | null>]> = [
      ['', () => load(t, { ...opts, connections: 50, seconds })],
      [', lean client', () => rawLoad(t, { ...opts, connections: 50, seconds })],
    ];
    if (await nativeLoadgen()) clients.push([', native client', () => nativeLoad(t, { ...opts, connections: 50, seconds })]);
    if (await wrkAvailable()) clients.push([', wrk', () => wrkLoad(t, { ...opts, connections: 50, seconds })]);
    for (const [suffix, run] of clients) {
      await measured(s, `${label} (50 clients${suffix})`, async () => {
        const r = (await run())!;
        return { ...loadMetrics(r), goal, reached: reached(r) };
      });
    }
  };
  if (only.has('create')) {
    out.push({
      name: 'create',
      run: async (s) => {
        await ensureNs(s.t, 'bench-create');
        const body = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'cm-' }, data: { payload: 'x'.repeat(1000) } });
        await withEachClient(s, 'create', { path: '/api/v1/namespaces/bench-create/configmaps', method: 'POST', body }, '≥15,000 req/s durable, p99 < 20 ms', (r) => r.rps >= 15000 && r.p99 < 20);
      },
    });
  }
  if (only.has('get')) {
    out.push({
      name: 'get',
      run: async (s) => {
        await ensureNs(s.t, 'bench-get');
        await api(s.t, 'POST', '/api/v1/namespaces/bench-get/configmaps', { metadata: { name: 'one' }, data: { payload: 'x'.repeat(1000) } });
        await withEachClient(s, 'get one object', { path: '/api/v1/namespaces/bench-get/configmaps/one' }, '≥30,000 req/s', (r) => r.rps >= 30000);
      },
    });
  }
  if (only.has('list')) {
    out.push({
      name: 'list',
      run: async (s) => {
        const t = s.t;
        // The issue's list: 10,000 ConfigMaps of 3.7 MB in all (≈ 370 bytes an item, as
        // kube-apiserver writes them: no kind and apiVersion on a built-in type's items).
        await ensureNs(t, 'bench-list');
        await seed(t, '/api/v1/namespaces/bench-list/configmaps', 10000, (i) => ({ metadata: { name: `cm-${i}` }, data: { v: 'y'.repeat(LIST_VALUE_BYTES) } }));
        await measured(s, 'list 10k ConfigMaps, consistent', async () => {
          const r = await timeRequests(t, '/api/v1/namespaces/bench-list/configmaps', 20);
          return { metrics: { ms: r.ms, MB: r.bytes / 1e6 }, goal: 'under 25 ms', reached: r.ms < 25 };
        });
        await measured(s, 'list 10k ConfigMaps, rv=0', async () => {
          const r = await timeRequests(t, '/api/v1/namespaces/bench-list/configmaps?resourceVersion=0', 20);
          return { metrics: { ms: r.ms, MB: r.bytes / 1e6 }, goal: 'under 25 ms', reached: r.ms < 25 };
        });
        // The same two lists from the native client (one connection, lists back to back): the
        // Node client's own decryption and copying of 3.7 MB is a good part of the figures above.
        if (await nativeLoadgen()) {
          for (const [label, path] of [
            ['consistent', '/api/v1/namespaces/bench-list/configmaps'],
            ['rv=0', '/api/v1/namespaces/bench-list/configmaps?resourceVersion=0'],
          ]) {
            await measured(s, `list 10k ConfigMaps, ${label} (native client)`, async () => {
              const r = (await nativeLoad(t, { path, connections: 1, seconds: Math.min(seconds, 5) }))!;
              return {
                metrics: { ms: r.p50, p50: r.p50, p90: r.p90, p99: r.p99, p999: r.p999, lists: r.requests, non2xx: r.non2xx, clientCpuUs: r.clientCpuUs ?? NaN },
                series: { perSecond: r.perSecond, perSecondUnit: 'lists/s' },
                goal: 'under 25 ms',
                reached: r.p50 < 25 && r.non2xx === 0,
              };
            });
          }
        }
        // The same count of larger ConfigMaps (220-byte values and a label): how the time grows with the bytes.
        await ensureNs(t, 'bench-list-large');
        await seed(t, '/api/v1/namespaces/bench-list-large/configmaps', 10000, (i) => ({ metadata: { name: `cm-${i}`, labels: { app: 'bench' } }, data: { v: 'y'.repeat(220) } }));
        await measured(s, 'list 10k larger ConfigMaps, consistent', async () => {
          const r = await timeRequests(t, '/api/v1/namespaces/bench-list-large/configmaps', 20);
          return { metrics: { ms: r.ms, MB: r.bytes / 1e6 } };
        });
        await ensureNs(t, 'bench-pods');
        // kube-apiserver's ServiceAccount admission wants the namespace's default account, which
        // a controller-manager would create (the reference runs without one)
        await call(t, 'POST', '/api/v1/namespaces/bench-pods/serviceaccounts', { metadata: { name: 'default' } });
        const pod = (i: number) => ({
          metadata: { name: `pod-${i}`, labels: { app: 'bench', idx: String(i % 100) }, annotations: { note: 'z'.repeat(600) } },
          spec: { containers: [{ name: 'c', image: 'registry.example/app:1.0', command: ['/bin/app', '--flag=1'], env: Array.from({ length: 8 }, (_, j) => ({ name: `E${j}`, value: 'v'.repeat(40) })), resources: { requests: { cpu: '100m', memory: '64Mi' } } }], nodeName: `node-${i % 50}` },
        });
        await seed(t, '/api/v1/namespaces/bench-pods/pods', 10000, pod);
        await measured(s, 'list 10k Pods (~2 KiB), whole', async () => {
          const r = await timeRequests(t, '/api/v1/namespaces/bench-pods/pods', 10);
          return { metrics: { ms: r.ms, MB: r.bytes / 1e6 } };
        });
        await measured(s, 'list 10k Pods, chunks of 500', async () => ({ metrics: { ms: await timeChunked(t, '/api/v1/namespaces/bench-pods/pods', 500, 5) } }));
      },
    });
  }
  if (only.has('watch')) {
    for (const n of watcherCounts) {
      out.push({
        name: `watch ${n}`,
        run: async (s) => {
          const t = s.t;
          await ensureNs(t, 'bench-watch');
          await measured(s, `watch ${n} watchers${watchClient === 'native' ? ' (native fleet)' : ''}`, async () => {
            const rss = rssWhileOpening(s);
            // about a hundred raw watches (one in sampleEvery of each reading thread, spread over
            // the fan-out's order) note when each sequenced create arrives
            const watchPath = '/api/v1/namespaces/bench-watch/configmaps?watch=1';
            const fleet =
              watchClient === 'native'
                ? (await openNativeWatchFleet(t, watchPath, n, 5, undefined, rss.cb, Math.max(1, Math.round(n / 100))))!
                : await openWatchFleet(t, watchPath, n, 5, undefined, undefined, rss.cb, Math.max(1, Math.round(n / 100)));
            // each create's sequence number, send time and acknowledgement time (rate-writer.ts)
            const clock = newWriteClock();
            // A writer rate that asks for 600k events/s: the delivered figure shows the capacity.
            const rate = Math.max(5, Math.min(2000, Math.round(600_000 / Math.max(1, fleet.open()))));
            const startEvents = fleet.events();
            const startReads = fleet.reads();
            fleet.takeLatencies();
            await fleet.takeArrivals();
            const cpuBefore = sampleProc(t.pid);
            const start = Date.now();
            // events delivered in each second from the writer's start to the end of the calm phase
            const perSecond: number[] = [];
            let lastEvents = startEvents;
            const ticker = setInterval(() => {
              const e = fleet.events();
              perSecond.push(e - lastEvents);
              lastEvents = e;
            }, 1000);
            // every latency of the run with its arrival time, for the per-second series: from the
            // acknowledgement (the issue's figure) and from the send
            const timed = { at: [] as number[], ms: [] as number[] };
            const timedSend = { at: [] as number[], ms: [] as number[] };
            const keep = (into: { at: number[]; ms: number[] }, x: { at: number[]; ms: number[] }) => {
              for (let i = 0; i < x.at.length; i++) {
                into.at.push(x.at[i]);
                into.ms.push(x.ms[i]);
              }
              return x.ms;
            };
            /** the fleet's sampled arrivals since the last call: latencies from the ack and from the send */
            const arrivedSince = async () => {
              fleet.takeLatencies();
              const a = await fleet.takeArrivals();
              return {
                ack: keep(timed, timedLatenciesOf(a.fleet, clock, 'ack')),
                send: keep(timedSend, timedLatenciesOf(a.fleet, clock, 'send')),
                samplers: latenciesOf(a.samplers, clock, 'ack'),
              };
            };
            try {
              const sent = await runRateWriter({ url: t.url, headers: authHeaders(t), tls: t.tls, path: '/api/v1/namespaces/bench-watch/configmaps', rate, seconds, annotation: 'bench/sent', clock });
              clock.base += sent;
              const expected = sent * fleet.open();
              const drainUntil = Date.now() + 10_000;
              while (fleet.events() - startEvents < expected && Date.now() < drainUntil) await sleep(50);
              const elapsed = (Date.now() - start) / 1000;
              const cpuAfter = sampleProc(t.pid);
              // latency as the issue defines it: from the create's acknowledgement to the event's arrival
              const full = await arrivedSince();
              const lat = full.ack.slice().sort((a, b) => a - b);
              const delivered = fleet.events() - startEvents;
              const pct = (q: number) => percentile(lat, q, true);
              const metrics: Record<string, number> = {
                watchers: fleet.open(),
                failed: fleet.failed(),
                malformed: fleet.malformed(),
                createsPerSec: sent / seconds,
                eventsPerSec: delivered / elapsed,
                delivered,
                expected,
                p50: pct(50),
                p90: pct(90),
                p99: pct(99),
                p999: pct(99.9),
                sendP50: percentile(full.send, 50),
                sendP99: percentile(full.send, 99),
              };
              // how many events one read of the fleet carried: the batching the fan-out achieved
              metrics.eventsPerRead = delivered / Math.max(1, fleet.reads() - startReads);
              // server CPU per event over the full-speed delivery only (not the watches' TLS
              // handshakes, nor the calm phase below)
              if (cpuBefore && cpuAfter) metrics.cpuNsPerEvent = ((cpuAfter.cpuSeconds - cpuBefore.cpuSeconds) * 1e9) / Math.max(1, delivered);
              // The latencies above are those of an offered load beyond capacity (they grow with
              // the backlog). Event latency at a sustainable load: a quarter of what was delivered.
              const calm = Math.max(1, Math.floor((0.25 * metrics.eventsPerSec) / Math.max(1, fleet.open())));
              await sleep(2000);
              await arrivedSince();
              const calmAt = (Date.now() - start) / 1000;
              // the shares of the two cores the server and this process (the fleet, the writer) take
              const calmServer = sampleProc(t.pid);
              const calmClient = process.cpuUsage();
              const calmFleet = sampleProc(fleet.pid);
              const calmStart = performance.now();
              const calmSent = await runRateWriter({ url: t.url, headers: authHeaders(t), tls: t.tls, path: '/api/v1/namespaces/bench-watch/configmaps', rate: calm, seconds: Math.max(3, seconds / 2), annotation: 'bench/sent', clock });
              const calmWall = (performance.now() - calmStart) / 1000;
              const calmServerAfter = sampleProc(t.pid);
              const calmClientUs = process.cpuUsage(calmClient);
              const calmFleetAfter = sampleProc(fleet.pid);
              clock.base += calmSent;
              await sleep(1000);
              const calmLat = await arrivedSince();
              metrics.calmEventsPerSec = calm * fleet.open();
              metrics.calmP50 = percentile(calmLat.ack, 50);
              metrics.calmP99 = percentile(calmLat.ack, 99);
              metrics.calmSendP50 = percentile(calmLat.send, 50);
              metrics.calmSendP99 = percentile(calmLat.send, 99);
              metrics.calmSamplerP99 = percentile(calmLat.samplers, 99);
              if (calmServer && calmServerAfter) metrics.calmServerCores = (calmServerAfter.cpuSeconds - calmServer.cpuSeconds) / calmWall;
              metrics.calmClientCores = (calmClientUs.user + calmClientUs.system) / 1e6 / calmWall;
              // the native fleet's process is the client too
              if (calmFleet && calmFleetAfter) metrics.calmClientCores += (calmFleetAfter.cpuSeconds - calmFleet.cpuSeconds) / calmWall;
              clearInterval(ticker);
              const lps = latencyPerSecond(timed.at, timed.ms, start, perSecond.length);
              const lpsSend = latencyPerSecond(timedSend.at, timedSend.ms, start, perSecond.length);
              const series: ScenarioSeries = {
                perSecond,
                perSecondUnit: 'events/s',
                eventLatencyFrom: 'ack',
                eventP50: lps.p50,
                eventP99: lps.p99,
                eventSendP50: lpsSend.p50,
                eventSendP99: lpsSend.p99,
                phases: [
                  { at: 0, name: 'full speed' },
                  { at: elapsed, name: delivered >= expected ? 'drained' : 'drain timed out' },
                  { at: calmAt, name: 'calm' },
                ],
                rssByWatchers: rss.points,
              };
              return { metrics, series, goal: n >= 10000 ? '≥500,000 events/s at 10,000 watchers' : undefined, reached: n >= 10000 ? metrics.eventsPerSec >= 500000 : undefined };
            } finally {
              clearInterval(ticker);
              await fleet.close();
              await call(t, 'DELETE', '/api/v1/namespaces/bench-watch/configmaps');
            }
          });
          await sleep(1000);
        },
      });
    }
  }
  if (only.has('nodes')) {
    // issue 23: a simulated fleet and its pods (bench/nodes.ts); not in the default set (minutes, and a second process)
    const nodes = Number(opt('nodes', '100'));
    const podsPerNode = Number(opt('pods-per-node', '30'));
    out.push({
      name: 'nodes',
      run: async (s) => {
        const r = await nodesScenario(s.t, {
          nodes,
          podsPerNode,
          windowSeconds: Number(opt('nodes-window', '30')),
          fleetArgs: (opt('fleet-args') ?? '').split(/\s+/).filter(Boolean),
          log: (m) => console.log(`  [${s.name}]${m}`),
        });
        record(s, { scenario: `nodes ${nodes.toLocaleString('en-US')} x ${podsPerNode} pods`, metrics: r });
      },
    });
  }
  if (only.has('mixed')) {
    out.push({
      name: 'mixed',
      run: async (s) => {
        const t = s.t;
        await ensureNs(t, 'bench-mixed');
        await seed(t, '/api/v1/namespaces/bench-mixed/configmaps', 200, (i) => ({ metadata: { name: `m-${i}` }, data: { v: 'x'.repeat(300) } }));
        await measured(s, 'mixed read-heavy (50 clients)', async () => {
          const auth = { ...authHeaders(t), 'content-type': 'application/json' };
          const r = await autocannonLoad({
            tlsOptions: t.tls,
            url: t.url,
            connections: 50,
            duration: seconds,
            headers: auth,
            requests: [
              { method: 'GET', path: '/api/v1/namespaces/bench-mixed/configmaps/m-1' },
              { method: 'GET', path: '/api/v1/namespaces/bench-mixed/configmaps/m-2' },
              { method: 'GET', path: '/api/v1/namespaces/bench-mixed/configmaps?limit=50' },
              { method: 'GET', path: '/api/v1/namespaces/bench-mixed/configmaps/m-3' },
              { method: 'PATCH', path: '/api/v1/namespaces/bench-mixed/configmaps/m-4', headers: { ...auth, 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ data: { n: String(Math.random()) } }) },
              { method: 'GET', path: '/api/v1/namespaces/bench-mixed/configmaps/m-5' },
              { method: 'GET', path: '/api/v1/namespaces/bench-mixed/configmaps?labelSelector=app%3Dnone' },
              { method: 'POST', path: '/api/v1/namespaces/bench-mixed/configmaps', body: JSON.stringify({ metadata: { generateName: 'mx-' }, data: { v: 'x' } }) },
            ],
          });
          const { metrics, series } = loadMetrics(r);
          return { metrics, series };
        });
      },
    });
  }
  return out;
}

function describe(t: Target): string {
  const pids = t.pid === undefined ? [] : ([] as number[]).concat(t.pid);
  return pids.length ? ` (RSS and CPU of pid ${pids.join(' + ')}${t.pidNote ? `: ${t.pidNote}` : ''}${pids.length > 1 ? ', summed' : ''})` : ' (no pid: RSS and CPU not read)';
}

async function main() {
  const referencePath = opt('reference');
  const servers: Server[] = [];
  const stops: Array<() => Promise<void>> = [];
  // --front-threads 1,2: kubeshard with each count of front threads, side by side (the
  // report's ratio is then the scaling from the first count to the second)
  const threadCounts = (opt('front-threads') ?? '').split(',').filter(Boolean).map(Number);
  if (threadCounts.length > 2 || threadCounts.some((n) => !(n >= 1))) throw new Error('--front-threads takes one or two counts, e.g. 1,2');
  if (threadCounts.length === 2 && referencePath) throw new Error('--front-threads with two counts compares kubeshard with itself: leave out --reference');
  if (watchClient !== 'js' && watchClient !== 'native') throw new Error(`--watch-client ${watchClient}: js or native`);
  // built before anything is measured, and no silent fallback: figures labelled native
  // must come from the native fleet
  if (watchClient === 'native' && only.has('watch') && !(await nativeWatchAvailable())) throw new Error('--watch-client native: the native watch fleet cannot be built here');
  try {
    const serverArgs = (opt('server-args') ?? '').split(/\s+/).filter(Boolean);
    const t = await startTarget(args, [...serverArgs, ...(threadCounts.length ? ['--front-threads', String(threadCounts[0])] : [])]);
    stops.push(() => t.stop());
    const external = args.includes('--kubeconfig');
    const version = external ? await versionOf(t) : '';
    const threadsName = (n: number) => `kubeshard, ${n} front thread${n === 1 ? '' : 's'}`;
    servers.push({ t, name: opt('name') ?? (external ? `server${version ? ' ' + version : ''} at ${t.url}` : threadCounts.length ? threadsName(threadCounts[0]) : 'kubeshard'), results: [] });
    if (threadCounts.length === 2 && !external) {
      const t2 = await startTarget(args, [...serverArgs, '--front-threads', String(threadCounts[1])]);
      stops.push(() => t2.stop());
      servers.push({ t: t2, name: threadsName(threadCounts[1]), results: [] });
    }
    if (referencePath) {
      const r = targetFromKubeconfig(referencePath, opt('reference-context'), opt('reference-pid'));
      const v = await versionOf(r);
      servers.push({ t: r, name: opt('reference-name') ?? `kube-apiserver${v ? ' ' + v : ''}`, results: [] });
    }
    console.log(servers.map((s) => `${s.name}: ${s.t.url}${describe(s.t)}`).join('\n'));
    // Each step runs against every server before the next step begins: the two figures of a
    // scenario are taken minutes apart at most, on a machine whose load moves by the hour.
    for (const step of steps()) for (const s of servers) await step.run(s);
  } finally {
    for (const stop of stops) await stop();
  }
  const [primary, ref] = servers;
  if (only.has('startup') && !args.includes('--kubeconfig')) {
    const r = await seedAndTimeStartup(startupObjects);
    primary.results.push({ scenario: `startup with ${startupObjects.toLocaleString('en-US')} objects`, metrics: { seconds: r.seconds, seedSeconds: r.seedSeconds, rssMB: r.rssBytes / 2 ** 20, settledRssMB: r.settledRssBytes / 2 ** 20 } });
    primary.results.push({ scenario: `restart with ${startupObjects.toLocaleString('en-US')} objects (cache index)`, metrics: { seconds: r.restartSeconds, rssMB: r.restartRssBytes / 2 ** 20, settledRssMB: r.restartSettledRssBytes / 2 ** 20 } });
  }
  const report: Report = {
    target: args.includes('--kubeconfig') ? `${primary.t.url} (kubeconfig)${describe(primary.t)}` : `kubeshard (started here) ${primary.t.url}`,
    name: primary.name,
    machine: { cpus: cpus().length, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, platform: `${process.platform}/${process.arch}` },
    startedAt: startedAt,
    seconds,
    results: primary.results,
  };
  if (ref) report.reference = { name: ref.name, target: referencePath ? `${ref.t.url} (kubeconfig ${referencePath})${describe(ref.t)}` : `kubeshard (started here) ${ref.t.url}${describe(ref.t)}`, results: ref.results };
  console.log('\n' + table(report));
  if (report.reference) console.log('\n' + comparisonTable(report));
  const files = writeReport(join(ROOT, 'bench', 'results'), report);
  console.log(`\nJSON: ${files.json}\nHTML: ${files.html}`);
}

const startedAt = new Date().toISOString();

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
