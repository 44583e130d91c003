// Table and protobuf conversions of a large list on the front thread (what the list handler
// does: src/handlers/list.ts, src/codec/representation.ts encodeList) against the same work
// sent to a piscina pool (issue 18, "the card's packages where they serve"). A prototype
// outside the server, on the server's own encoder.
//
// Per list (10,000 ConfigMaps of ~370 B as the bench's list scenario, or 10,000 Pods of
// ~2.5 KiB), per conversion (Table as kubectl get asks, Table with includeObject=Object,
// protobuf):
// - today, cold: entries that carry only their stored JSON (a first read after a start):
//   every object is parsed, and protobuf encodes each item (then memoized on the entry);
// - today, warm: the same entries again (parse and protobuf items memoized; a Table's rows
//   are made again, their ages move);
// - pool: the list's JSON joined into one buffer (the input must cross: the cache's buffers
//   cannot be transferred, and a structured clone of 10,000 views would copy each view's
//   whole backing buffer), transferred with the objects' ends, converted by a pool thread,
//   the answer transferred back. The front thread's share is the join, the post and the
//   answer's receipt (its event loop's active time over the request); the longest stall is
//   what a 1 ms timer on the front thread saw in a second pass.
// Then 4 such lists asked at once (each answer's latency, mean and last).
//
//   npm i --no-save piscina@5 && npm run build && node dist/bench/piscina-offload.js [--objects 10000] [--threads 2] [--rounds 5]
//
// piscina is not the server's (measured, not used: bench/README.md, "piscina and msgpackr"):
// it is loaded by name at run time.
import { performance } from 'node:perf_hooks';
import { encodeList, type Encodable } from '../src/codec/representation.js';
import { configMap, pod } from './sample-objects.js';
import { listContext, representationOf, type Conversion } from './piscina-offload-shared.js';
import type { ConvertTask } from './piscina-task.js';

interface Pool {
  run(task: unknown, o?: { transferList?: ArrayBuffer[] }): Promise<unknown>;
  destroy(): Promise<void>;
}
const PISCINA = 'piscina';
const { Piscina } = (await import(PISCINA)) as { Piscina: new (o: Record<string, unknown>) => Pool };

const args = process.argv.slice(2);
const arg = (name: string, d: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : d;
};
const N = arg('--objects', 10_000);
const THREADS = arg('--threads', 2);
const ROUNDS = arg('--rounds', 5);
const LIST_META = { resourceVersion: '123456' };

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const f = (ms: number) => ms.toFixed(1);

/** The longest gap a 1 ms timer sees on this thread while `work` runs. */
async function longestStall(work: () => Promise<unknown> | unknown): Promise<number> {
  let last = performance.now();
  let max = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    if (now - last > max) max = now - last;
    last = now;
  }, 1);
  await new Promise((r) => setTimeout(r, 5));
  last = performance.now();
  max = 0;
  await work();
  const now = performance.now();
  if (now - last > max) max = now - last;
  clearInterval(timer);
  return max;
}

function makeJsons(resource: 'configmaps' | 'pods'): Buffer[] {
  // the list scenario's ConfigMaps: an 18-byte value (the stored object is ~370 B)
  return Array.from({ length: N }, (_, i) => {
    if (resource === 'pods') return Buffer.from(JSON.stringify(pod(i)));
    const cm = configMap(i, 0);
    cm.data.v = 'y'.repeat(18);
    return Buffer.from(JSON.stringify(cm));
  });
}

function today(jsons: Buffer[], entries: Encodable[] | undefined, resource: 'configmaps' | 'pods', c: Conversion): Buffer {
  const es = entries ?? jsons.map((json) => ({ json }));
  return encodeList(es, LIST_META, representationOf(c), listContext(resource, c));
}

async function offloaded(pool: Pool, jsons: Buffer[], resource: 'configmaps' | 'pods', c: Conversion, timing?: { joinMs: number }): Promise<Buffer> {
  const t = performance.now();
  let total = 0;
  for (const j of jsons) total += j.length;
  const joined = Buffer.allocUnsafeSlow(total);
  const ends = new Int32Array(jsons.length);
  let o = 0;
  for (let i = 0; i < jsons.length; i++) {
    o += jsons[i].copy(joined, o);
    ends[i] = o;
  }
  if (timing) timing.joinMs = performance.now() - t;
  const task: ConvertTask = { buf: joined.buffer as ArrayBuffer, ends, conversion: c, resource, listMeta: LIST_META };
  const ab = (await pool.run(task, { transferList: [joined.buffer as ArrayBuffer, ends.buffer as ArrayBuffer] })) as ArrayBuffer;
  return Buffer.from(ab);
}

const t0 = performance.now();
const pool = new Piscina({ filename: new URL('./piscina-task.js', import.meta.url).href, minThreads: THREADS, maxThreads: THREADS, concurrentTasksPerWorker: 4, idleTimeout: 600_000 });
// first use: the threads start and load the encoders (protobuf's schema included)
await Promise.all(Array.from({ length: THREADS }, () => offloaded(pool, makeJsons('configmaps').slice(0, 10), 'configmaps', 'protobuf')));
console.log(`pool of ${THREADS} (concurrentTasksPerWorker 4): first use ${f(performance.now() - t0)} ms (threads started, encoders loaded)`);
console.log(`${N} objects; medians of ${ROUNDS} rounds; ms`);

for (const resource of ['configmaps', 'pods'] as const) {
  const jsons = makeJsons(resource);
  const mb = jsons.reduce((s, j) => s + j.length, 0) / 1e6;
  for (const c of ['table', 'table-object', 'protobuf'] as const) {
    // agreement: the pool's answer is the front's
    const a = today(jsons, undefined, resource, c);
    const b = await offloaded(pool, jsons, resource, c);
    if (c === 'protobuf' ? !a.equals(b) : JSON.parse(a.toString()).rows.length !== JSON.parse(b.toString()).rows.length) throw new Error(`${resource} ${c}: the pool's answer differs`);

    const cold: number[] = [];
    const warm: number[] = [];
    const warmEntries: Encodable[] = jsons.map((json) => ({ json }));
    today(jsons, warmEntries, resource, c);
    for (let r = 0; r < ROUNDS; r++) {
      let t = performance.now();
      today(jsons, undefined, resource, c);
      cold.push(performance.now() - t);
      t = performance.now();
      today(jsons, warmEntries, resource, c);
      warm.push(performance.now() - t);
    }
    const lat: number[] = [];
    const active: number[] = [];
    const join: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const timing = { joinMs: 0 };
      const elu0 = performance.eventLoopUtilization();
      const t = performance.now();
      await offloaded(pool, jsons, resource, c, timing);
      lat.push(performance.now() - t);
      active.push(performance.eventLoopUtilization(elu0).active);
      join.push(timing.joinMs);
    }
    const stallToday = await longestStall(() => today(jsons, undefined, resource, c));
    const stallPool = await longestStall(() => offloaded(pool, jsons, resource, c));
    // 4 at once: today one after another on the front thread; offloaded, over the pool
    const four = async (run: () => Promise<unknown>) => {
      const t = performance.now();
      const done: number[] = [];
      await Promise.all(Array.from({ length: 4 }, () => run().then(() => done.push(performance.now() - t))));
      return { mean: done.reduce((s, x) => s + x, 0) / 4, last: Math.max(...done) };
    };
    // (each in a turn of its own, as requests are: the first answer is out before the second starts)
    const fourToday = await four(async () => {
      await new Promise((r) => setImmediate(r));
      today(jsons, undefined, resource, c);
    });
    const fourPool = await four(() => offloaded(pool, jsons, resource, c));
    console.log(
      `${resource} (${mb.toFixed(1)} MB JSON) ${c} -> ${(a.length / 1e6).toFixed(1)} MB\n` +
        `  today: cold ${f(median(cold))} (longest stall ${f(stallToday)}), warm ${f(median(warm))}; 4 at once: mean ${f(fourToday.mean)}, last ${f(fourToday.last)}\n` +
        `  pool:  latency ${f(median(lat))}, front thread active ${f(median(active))} (join ${f(median(join))}; longest stall ${f(stallPool)}); 4 at once: mean ${f(fourPool.mean)}, last ${f(fourPool.last)}`,
    );
  }
}
await pool.destroy();
