// What a cached object costs the front thread's garbage collector: N ConfigMaps applied to a
// real ResourceCache as the commit path applies them (bytes, parsed object, then the object
// dropped), their bytes either in one ArrayBuffer per commit of 50 (as shards send them now:
// RecordSlab) or in one ArrayBuffer each (as they came before), then a full collection
// timed and the heap per object measured. A full collection marks every live object, so its
// time follows the count of heap objects per cached object.
//
//   npm run build && node --expose-gc dist/bench/cache-entry-gc.js [--objects 300000]
import { ResourceCache } from '../workers/watch/watch-cache.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const i = process.argv.indexOf('--objects');
const N = i >= 0 ? Number(process.argv[i + 1]) : 300_000;
const BATCH = 50;

function fill(shared: boolean): { heapPerObject: number; fullGcMs: number; arrayBuffersMB: number } {
  gc!();
  const before = process.memoryUsage().heapUsed;
  const cache = new ResourceCache('configmaps', 1000, 0);
  for (let b = 0; b < N; b += BATCH) {
    const texts: string[] = [];
    const objs: any[] = [];
    for (let k = b; k < Math.min(N, b + BATCH); k++) {
      const o = { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: `cm-${k.toString(36)}`, generateName: 'cm-', namespace: 'bench', uid: crypto.randomUUID(), resourceVersion: String(k + 1), creationTimestamp: '2026-11-27T05:00:00Z' }, data: { payload: 'x'.repeat(1000) } };
      objs.push(o);
      texts.push(JSON.stringify(o));
    }
    const sizes = texts.map((t) => Buffer.byteLength(t));
    const chunk = shared ? Buffer.allocUnsafeSlow(sizes.reduce((a, n) => a + n, 0)) : null;
    let off = 0;
    for (let j = 0; j < texts.length; j++) {
      let json: Buffer;
      if (chunk) {
        chunk.write(texts[j], off);
        json = chunk.subarray(off, off + sizes[j]);
        off += sizes[j];
      } else {
        json = Buffer.allocUnsafeSlow(sizes[j]);
        json.write(texts[j]);
      }
      const ev = cache.apply('ADDED', `bench/${objs[j].metadata.name}`, b + j + 1, json, objs[j]);
      ev.entry.obj = undefined;
    }
  }
  gc!();
  gc!();
  const heapPerObject = (process.memoryUsage().heapUsed - before) / N;
  const t = performance.now();
  for (let r = 0; r < 5; r++) gc!();
  const fullGcMs = (performance.now() - t) / 5;
  const arrayBuffersMB = process.memoryUsage().arrayBuffers / 2 ** 20;
  if (cache.lastRvOfType() !== N) throw new Error('not all applied');
  return { heapPerObject, fullGcMs, arrayBuffersMB };
}

for (const shared of [false, true, false, true]) {
  const r = fill(shared);
  console.log(`${shared ? 'one buffer per commit of 50' : 'one buffer per object     '}: ${N.toLocaleString('en-US')} objects, heap ${r.heapPerObject.toFixed(0)} B per object, full GC ${r.fullGcMs.toFixed(1)} ms, array buffers ${r.arrayBuffersMB.toFixed(0)} MB`);
  gc();
}
