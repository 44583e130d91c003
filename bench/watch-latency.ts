// Watch event latency, and where it goes: one or more builds (A/B, interleaved round by
// round so that both see the same minutes of a shared machine), each started fresh with N
// watchers of one namespace, a full-speed phase (optional) and a steady calm load.
//
//   npm run build && node dist/bench/watch-latency.js --watchers 10000 [--rate 13 | --events 134375]
//     [--seconds 5] [--rounds 3] [--peak] [--sample-every 100]
//     [--servers dist/src/main.js,/tmp/other/dist/src/main.js] [--server-args "--watch-fanout-tick 5"]
//     [--client js|native]
//
// Latency is the issue's: from the create's acknowledgement (its response reaching the
// writer) to the event's arrival at a watch client, measured on one raw watch in
// --sample-every of the fleet (on the fleet's busy reading threads), and given from the
// send time beside it. The calling thread's five samplers (idle readers, registered last)
// are reported apart. The share of the two cores taken by the server and by the client (this
// process: the fleet's reading threads, the writer and the samplers; and the native fleet's
// process with --client native) is printed per phase.
//
// --client native: the raw watches are held by the native fleet (native/loadgen/watchfleet.c,
// bench/native-watch.ts), a C process that costs the shared cores a fraction of the JS
// fleet's ~4.5 µs per event, so the figures are less those of the client's contention with
// the server. The writer and the samplers stay in this process.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { api, sampleProc, type Target, freePort } from './lib.js';
import { latenciesOf, openWatchFleet, percentile, type WatchFleet } from './watch-load.js';
import { newWriteClock, runRateWriter, type WriteClock } from './rate-writer.js';
import { nativeWatchAvailable, openNativeWatchFleet } from './native-watch.js';

const args = process.argv.slice(2);
const opt = (name: string, dflt: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const watchers = Number(opt('watchers', '1000'));
const seconds = Number(opt('seconds', '5'));
const rounds = Number(opt('rounds', '1'));
const peak = args.includes('--peak');
/** the issue's calm load: a quarter of the peak it measured (537,500 events/s) */
const events = Number(opt('events', '134375'));
const rate = Number(opt('rate', String(Math.max(1, Math.round(events / watchers)))));
const sampleEvery = Number(opt('sample-every', String(Math.max(1, Math.round(watchers / 100)))));
const servers = opt('servers', join(ROOT, 'dist', 'src', 'main.js')).split(',');
const serverArgs = opt('server-args', '').split(' ').filter(Boolean);
/** --client js|native: the raw watches' fleet */
const client = opt('client', 'js');

async function start(main: string): Promise<Target & { stop(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'kubeshard-watchlat-'));
  const port = await freePort();
  const proc = spawn(process.execPath, [main, '--secure-port', String(port), '--data-dir', dataDir, ...serverArgs], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout!.on('data', (d) => {
    out += d;
    // the server's fan-out statistics (KUBESHARD_FANOUT_STATS=1), when asked for
    if (args.includes('--server-log')) for (const l of String(d).split('\n')) if (l.startsWith('fanout')) console.log(`    server ${l}`);
  });
  const deadline = Date.now() + 30_000;
  while (!out.includes('Serving securely')) {
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error('kubeshard did not start: ' + out);
    await new Promise((r) => setTimeout(r, 50));
  }
  const kc = readFileSync(join(dataDir, 'admin.kubeconfig'), 'utf8');
  // a bench stopped by a signal takes its server with it
  const onSignal = () => {
    proc.kill('SIGTERM');
    rmSync(dataDir, { recursive: true, force: true });
    process.exit(1);
  };
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
  return {
    url: /server:\s*(\S+)/.exec(kc)![1],
    token: /token:\s*(\S+)/.exec(kc)![1],
    pid: proc.pid,
    stop: async () => {
      process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** CPU ticks of this process's threads, by name */
function ownThreads(): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const name = Number(tid) === process.pid ? 'main' : `${stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))}#${tid}`;
      out.set(name, Number(f[11]) + Number(f[12]));
    } catch {
      /* gone */
    }
  }
  return out;
}

const fmt = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : '-');

async function phase(t: Target, fleet: WatchFleet, clock: WriteClock, r: number, secs: number, label: string): Promise<Record<string, number>> {
  await fleet.takeArrivals();
  fleet.takeLatencies();
  const e0 = fleet.events();
  const r0 = fleet.reads();
  const s0 = sampleProc(t.pid)!;
  const c0 = process.cpuUsage();
  const f0 = sampleProc(fleet.pid);
  const th0 = ownThreads();
  const w0 = performance.now();
  // --perf FILE: the server's profile (perf record) over this phase
  const perfOut = opt('perf', '');
  const perf = perfOut ? spawn('perf', ['record', '-F', '1999', '-g', '-p', String(t.pid), '-o', `${perfOut}.${label}`], { stdio: 'ignore' }) : null;
  const sent = await runRateWriter({ url: t.url, headers: { authorization: `Bearer ${t.token}` }, path: '/api/v1/namespaces/lat/configmaps', rate: r, seconds: secs, annotation: 'bench/sent', clock });
  const expected = sent * fleet.open();
  const drain = Date.now() + 10_000;
  while (fleet.events() - e0 < expected && Date.now() < drain) await new Promise((res) => setTimeout(res, 20));
  const wall = (performance.now() - w0) / 1000;
  if (perf) {
    perf.kill('SIGINT');
    await new Promise((res) => perf.once('exit', res));
  }
  const s1 = sampleProc(t.pid)!;
  const c1 = process.cpuUsage(c0);
  const f1 = sampleProc(fleet.pid);
  const th1 = ownThreads();
  clock.base += sent;
  const a = await fleet.takeArrivals();
  const ack = latenciesOf(a.fleet, clock, 'ack');
  const send = latenciesOf(a.fleet, clock, 'send');
  const samp = latenciesOf(a.samplers, clock, 'ack');
  const delivered = fleet.events() - e0;
  // per create: the first sampled arrival (a stall of the whole fan-out shows here) and the
  // spread to the last one (the pass over the watchers, and the readers' own delays)
  const acked = new Float64Array(clock.acked);
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  for (let i = 0; i + 1 < a.fleet.length; i += 2) {
    const q = a.fleet[i];
    const at = a.fleet[i + 1];
    if (!(acked[q] > 0)) continue;
    if (!(first.get(q)! <= at)) first.set(q, at);
    if (!(last.get(q)! >= at)) last.set(q, at);
  }
  const firstLat = [...first].map(([q, at]) => at - acked[q]);
  // the creates' own latency (send to acknowledgement): the writer's queueing, the server's
  // work, and any wait behind the fan-out on the front thread
  const sentAt = new Float64Array(clock.sent);
  const writeLat: number[] = [];
  for (let q = clock.base - sent; q < clock.base; q++) if (acked[q] > 0 && sentAt[q] > 0) writeLat.push(acked[q] - sentAt[q]);
  const spread = [...first].map(([q, at]) => last.get(q)! - at);
  const m: Record<string, number> = {
    creates: sent,
    eventsPerSec: delivered / wall,
    lost: expected - delivered,
    eventsPerRead: delivered / Math.max(1, fleet.reads() - r0),
    ackP50: percentile(ack, 50),
    ackP99: percentile(ack, 99),
    ackMax: percentile(ack, 100),
    sendP50: percentile(send, 50),
    sendP99: percentile(send, 99),
    samplerAckP50: percentile(samp, 50),
    samplerAckP99: percentile(samp, 99),
    samples: ack.length,
    writeP50: percentile(writeLat, 50),
    writeP99: percentile(writeLat, 99),
    firstP50: percentile(firstLat, 50),
    firstP99: percentile(firstLat, 99),
    spreadP50: percentile(spread, 50),
    spreadP99: percentile(spread, 99),
    serverCpu: (s1.cpuSeconds - s0.cpuSeconds) / wall,
    clientCpu: (c1.user + c1.system) / 1e6 / wall,
  };
  // the native fleet's process is the client too (ticks of 10 ms: coarse, but a phase lasts seconds)
  if (f0 && f1) {
    m.fleetCpu = (f1.cpuSeconds - f0.cpuSeconds) / wall;
    m.clientCpu += m.fleetCpu;
  }
  const busy = [...th1].map(([k, v]) => [k, (v - (th0.get(k) ?? 0)) / 100 / wall] as const).filter(([, v]) => v >= 0.02);
  console.log(
    `  ${label}: ${fmt(m.eventsPerSec / 1000)}k ev/s (${sent} creates, lost ${m.lost}) ev/read ${fmt(m.eventsPerRead)} | from ack p50 ${fmt(m.ackP50)} p99 ${fmt(m.ackP99)} max ${fmt(m.ackMax)} ms (${ack.length} samples) | from send p50 ${fmt(m.sendP50)} p99 ${fmt(m.sendP99)} | create itself p50 ${fmt(m.writeP50)} p99 ${fmt(m.writeP99)} | samplers from ack p50 ${fmt(m.samplerAckP50)} p99 ${fmt(m.samplerAckP99)} | first arrival p50 ${fmt(m.firstP50)} p99 ${fmt(m.firstP99)}, spread p50 ${fmt(m.spreadP50)} p99 ${fmt(m.spreadP99)} | cores: server ${m.serverCpu.toFixed(2)} client ${m.clientCpu.toFixed(2)} (${fleet.pid ? `native fleet ${m.fleetCpu.toFixed(2)}, ` : ''}${busy.map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')})`,
  );
  return m;
}

async function main() {
  process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
  if (client !== 'js' && client !== 'native') throw new Error(`--client ${client}: js or native`);
  // built before anything is measured, and no silent fallback: a figure labelled native
  // must come from the native fleet
  if (client === 'native' && !(await nativeWatchAvailable())) throw new Error('--client native: the native watch fleet cannot be built here');
  const results = new Map<string, Array<Record<string, number>>>();
  for (let round = 0; round < rounds; round++) {
    for (const main of servers) {
      const t = await start(main);
      try {
        await api(t, 'POST', '/api/v1/namespaces', { metadata: { name: 'lat' } });
        const path = '/api/v1/namespaces/lat/configmaps?watch=1';
        const fleet = client === 'native' ? (await openNativeWatchFleet(t, path, watchers, 5, 'bench/sent', undefined, sampleEvery))! : await openWatchFleet(t, path, watchers, 5, 'bench/sent', 2, undefined, sampleEvery);
        const clock = newWriteClock();
        console.log(`${main} round ${round + 1}: ${fleet.open()} watchers (${client} fleet, ${fleet.failed()} failed), calm ${rate} creates/s = ${rate * fleet.open()} events/s`);
        const row: Record<string, number> = {};
        if (peak) {
          const p = await phase(t, fleet, clock, Math.max(5, Math.min(2000, Math.round(600_000 / Math.max(1, fleet.open())))), seconds, 'peak');
          row.peakEventsPerSec = p.eventsPerSec;
          await new Promise((r) => setTimeout(r, 2000));
        }
        const c = await phase(t, fleet, clock, rate, seconds, 'calm');
        Object.assign(row, c);
        (results.get(main) ?? results.set(main, []).get(main)!).push(row);
        await fleet.close();
      } finally {
        await t.stop();
      }
    }
  }
  const stat = (xs: number[]) => {
    const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
    return s.length ? `min ${fmt(s[0])} med ${fmt(s[Math.floor((s.length - 1) / 2)])} max ${fmt(s[s.length - 1])}` : '-';
  };
  for (const [main, rows] of results) {
    const keys = ['peakEventsPerSec', 'ackP50', 'ackP99', 'sendP50', 'sendP99', 'samplerAckP99', 'writeP50', 'writeP99', 'firstP99', 'spreadP99', 'serverCpu', 'clientCpu', 'fleetCpu'];
    console.log(`${main}: ${keys.filter((k) => rows[0][k] !== undefined).map((k) => `${k} ${stat(rows.map((r) => r[k]))}`).join(' | ')}`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
