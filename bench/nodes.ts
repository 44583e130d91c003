// The `nodes` scenario (issue 23): a simulated fleet (`kubeshard node --simulate N`, run
// as its own process) against a server, then pods bound to its nodes by nodeName, as
// kwok's benchmarks create them (no scheduler). Measured:
//   - registration: the time for N nodes to register (bounded concurrency 50);
//   - Lease updates per second the server sustains, over a window, counted on a watch of
//     kube-node-lease (each node renews every 10 s: the expected rate is N / 10);
//   - pod start latency: from each pod's create being sent to the bench seeing it Running
//     on its watch of the namespace (create, the node's watch, the node's status patch and
//     the bench's watch, end to end), p50 and p99;
//   - the server's CPU (percent of one core) and RSS over each window, idle fleet and with
//     the pods; and the fleet's own CPU (it shares the machine).
import { spawn } from 'node:child_process';
import https from 'node:https';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GO_TLS13_CIPHERS, api, authHeaders, sampleProc, type Target } from './lib.js';
import { percentile } from './watch-load.js';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const NS = 'bench-nodes';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface NodesOptions {
  nodes: number;
  podsPerNode: number;
  windowSeconds: number;
  /** extra flags for the fleet */
  fleetArgs: string[];
  log: (m: string) => void;
}

/** A watch on the target; onEvent per event; returns a closer. */
function watch(t: Target, path: string, onEvent: (ev: any) => void): { close(): void } {
  const u = new URL(t.url + path);
  let buf = '';
  const req = https.request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: 'GET', rejectUnauthorized: false, ciphers: GO_TLS13_CIPHERS, ...t.tls, headers: { ...authHeaders(t), accept: 'application/json' } }, (r) => {
    r.setEncoding('utf8');
    r.on('data', (c: string) => {
      buf += c;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.trim()) onEvent(JSON.parse(line));
      }
    });
    r.on('error', () => undefined);
  });
  req.on('error', () => undefined);
  req.end();
  return { close: () => req.destroy() };
}

async function pool(n: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

/** Lease renewals of the fleet seen on a watch of kube-node-lease over seconds, and the server's CPU and RSS meanwhile. */
async function steadyWindow(t: Target, prefix: string, seconds: number): Promise<{ leaseUpdatesPerSec: number; cpuPct: number; rssMB: number }> {
  const list = await api(t, 'GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?limit=1');
  let count = 0;
  let counting = false;
  const w = watch(t, `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?watch=true&resourceVersion=${list.body.metadata.resourceVersion}`, (ev) => {
    if (counting && ev.type === 'MODIFIED' && ev.object?.metadata?.name?.startsWith(prefix)) count++;
  });
  await sleep(1000);
  const before = sampleProc(t.pid);
  const t0 = performance.now();
  counting = true;
  await sleep(seconds * 1000);
  counting = false;
  const wall = (performance.now() - t0) / 1000;
  const after = sampleProc(t.pid);
  w.close();
  return {
    leaseUpdatesPerSec: count / wall,
    cpuPct: before && after ? ((after.cpuSeconds - before.cpuSeconds) / wall) * 100 : NaN,
    rssMB: after ? after.rssBytes / 2 ** 20 : NaN,
  };
}

export async function nodesScenario(t: Target, o: NodesOptions): Promise<Record<string, number>> {
  if (!t.kubeconfig) throw new Error('the nodes scenario needs the server kubeconfig (for the fleet)');
  const prefix = 'bench-node-';
  const m: Record<string, number> = { nodes: o.nodes, pods: o.nodes * o.podsPerNode };
  // 1. the fleet
  const t0 = performance.now();
  const fleet = spawn(process.execPath, ['--max-old-space-size=4096', join(ROOT, 'dist', 'src', 'main.js'), 'node', '--simulate', String(o.nodes), '--kubeconfig', t.kubeconfig, '--node-name-prefix', prefix, ...o.fleetArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  fleet.stdout!.on('data', (d) => (out += d));
  fleet.stderr!.on('data', (d) => (out += d));
  const fleetCpu0 = sampleProc(fleet.pid);
  try {
    while (!out.includes('fleet ready')) {
      if (fleet.exitCode !== null) throw new Error(`fleet exited: ${out.slice(-2000)}`);
      await sleep(100);
    }
    m.registerSeconds = (performance.now() - t0) / 1000;
    o.log(`  ${out.trim().split('\n').pop()}`);
    // every node has renewed once (the first renewal falls within the first interval)
    await sleep(11_000);
    const idle = await steadyWindow(t, prefix, o.windowSeconds);
    m.idleLeaseUpdatesPerSec = idle.leaseUpdatesPerSec;
    m.idleCpuPct = idle.cpuPct;
    m.idleRssMB = idle.rssMB;
    o.log(`  idle fleet: ${idle.leaseUpdatesPerSec.toFixed(1)} lease updates/s, server CPU ${idle.cpuPct.toFixed(1)} %, RSS ${idle.rssMB.toFixed(0)} MB`);

    // 2. the pods, bound by nodeName
    await api(t, 'POST', '/api/v1/namespaces', { metadata: { name: NS } });
    // the reference runs no controller-manager: the ServiceAccount admission wants one
    await api(t, 'POST', `/api/v1/namespaces/${NS}/serviceaccounts`, { metadata: { name: 'default' } });
    const total = o.nodes * o.podsPerNode;
    const sent = new Map<string, number>();
    const latencies: number[] = [];
    const running = new Set<string>();
    const list = await api(t, 'GET', `/api/v1/namespaces/${NS}/pods?limit=1`);
    const w = watch(t, `/api/v1/namespaces/${NS}/pods?watch=true&resourceVersion=${list.body.metadata.resourceVersion}`, (ev) => {
      const name = ev.object?.metadata?.name;
      if (ev.object?.status?.phase !== 'Running' || running.has(name)) return;
      running.add(name);
      const s = sent.get(name);
      if (s !== undefined) latencies.push(performance.now() - s);
    });
    await sleep(500);
    const cpu0 = sampleProc(t.pid);
    const c0 = performance.now();
    let failed = 0;
    await pool(total, 32, async (i) => {
      const name = `p-${i}`;
      sent.set(name, performance.now());
      const r = await api(t, 'POST', `/api/v1/namespaces/${NS}/pods`, {
        metadata: { name, labels: { app: 'bench-nodes' } },
        spec: { nodeName: `${prefix}${i % o.nodes}`, automountServiceAccountToken: false, containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
      });
      if (r.status !== 201) failed++;
    });
    m.createSeconds = (performance.now() - c0) / 1000;
    m.createFailures = failed;
    // Waits while pods keep starting; a pod that has not started 2 minutes after the last one
    // did is not going to (its node lost it): the wait ends there, and the pods left are named.
    const deadline = Date.now() + Math.max(60_000, total * 20);
    let seen = running.size;
    let lastProgress = Date.now();
    while (running.size < total - failed && Date.now() < deadline && Date.now() - lastProgress < 120_000) {
      await sleep(200);
      if (running.size !== seen) {
        seen = running.size;
        lastProgress = Date.now();
      }
    }
    m.podsRunningSeconds = (performance.now() - c0) / 1000;
    if (running.size < total - failed) {
      const left: string[] = [];
      for (let i = 0; i < total && left.length < 20; i++) if (!running.has(`p-${i}`)) left.push(`p-${i} (${prefix}${i % o.nodes})`);
      o.log(`  ${total - failed - running.size} pods never seen Running, e.g. ${left.join(', ')}`);
    }
    const cpu1 = sampleProc(t.pid);
    w.close();
    m.podsRunning = running.size;
    m.podStartP50ms = percentile(latencies, 50);
    m.podStartP99ms = percentile(latencies, 99);
    if (cpu0 && cpu1) m.podPhaseCpuPct = ((cpu1.cpuSeconds - cpu0.cpuSeconds) / m.podsRunningSeconds) * 100;
    o.log(`  ${running.size}/${total} pods Running in ${m.podsRunningSeconds.toFixed(1)} s (creates ${m.createSeconds.toFixed(1)} s); start latency p50 ${m.podStartP50ms.toFixed(0)} ms, p99 ${m.podStartP99ms.toFixed(0)} ms`);

    // 3. the fleet with its pods
    const loaded = await steadyWindow(t, prefix, o.windowSeconds);
    m.leaseUpdatesPerSec = loaded.leaseUpdatesPerSec;
    m.cpuPct = loaded.cpuPct;
    m.rssMB = loaded.rssMB;
    o.log(`  with pods: ${loaded.leaseUpdatesPerSec.toFixed(1)} lease updates/s, server CPU ${loaded.cpuPct.toFixed(1)} %, RSS ${loaded.rssMB.toFixed(0)} MB`);

    // 4. cleanup: the pods deleted gracefully (the fleet confirms each), then the nodes and their Leases
    const d0 = performance.now();
    // a collection delete of many pods may outlast its request's timeout (kube-apiserver's
    // stops there): issued again while pods are left that it has not marked
    const dl = Date.now() + Math.min(300_000, Math.max(60_000, total * 20));
    let deleting: Promise<unknown> | undefined;
    for (;;) {
      deleting ??= api(t, 'DELETE', `/api/v1/namespaces/${NS}/pods`)
        .catch(() => undefined)
        .finally(() => (deleting = undefined));
      const r = await api(t, 'GET', `/api/v1/namespaces/${NS}/pods?limit=1`);
      if (!(r.body.items?.length > 0) || Date.now() > dl) break;
      await sleep(500);
    }
    m.podsLeftAfterDelete = (await api(t, 'GET', `/api/v1/namespaces/${NS}/pods?limit=1`)).body.items?.length ? 1 : 0;
    m.deleteSeconds = (performance.now() - d0) / 1000;
  } finally {
    const fleetCpu1 = sampleProc(fleet.pid);
    if (fleetCpu0 && fleetCpu1) m.fleetCpuSeconds = fleetCpu1.cpuSeconds - fleetCpu0.cpuSeconds;
    if (fleetCpu1) m.fleetRssMB = fleetCpu1.rssBytes / 2 ** 20;
    if (fleet.exitCode === null) {
      fleet.kill('SIGTERM');
      await new Promise((r) => fleet.once('exit', r));
    }
    const final = out.trim().split('\n').reverse().find((l) => l.includes('"final":true'));
    // the fleet's own reports (its counters, failures by cause, pods it gave up on)
    for (const l of out.trim().split('\n')) if (l.includes('"final":true') || l.startsWith('fleet:')) o.log(`  ${l}`);
    if (final) {
      const f = JSON.parse(final);
      m.fleetConnections = f.connections;
      m.fleetLeaseFailures = f.leaseFailures;
      m.fleetRequestFailures = f.failures;
    }
    await api(t, 'DELETE', `/api/v1/nodes?labelSelector=${encodeURIComponent('type=kubeshard-simulated')}`).catch(() => undefined);
    await pool(o.nodes, 32, async (i) => {
      await api(t, 'DELETE', `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${prefix}${i}`).catch(() => undefined);
    });
  }
  return m;
}
