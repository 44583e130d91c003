// How a forwarded response's parts (RemoteSink.sendParts, src/front/serve-forwarded.ts) are
// cheapest carried between threads: joined into one transferred buffer, each copied into a
// buffer of its own and all transferred, or cloned as they are. A worker answers the main
// thread's requests one at a time, as a receiving thread answers a list; the main thread
// plays each answer onto a sink that only looks at the bytes. The figure is the time per
// answer, from the request's post to the answer played (both threads' work, serialized),
// and the main thread's part of it (its event loop's active time: the answer's
// deserialization and play), which is what a front thread pays.
//
//   npm run build && node dist/bench/forward-parts.js [--rounds 200]
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { copyOut, joinOut } from '../src/front/forward-protocol.js';

type Strategy = 'join' | 'each' | 'clone';
type Shape = 'small' | 'large';

/** What a list's parts look like: each object's cached encoding, a Buffer of its own (pooled when small). */
function makeParts(shape: Shape): Uint8Array[] {
  if (shape === 'small') {
    const parts: Uint8Array[] = [];
    for (let i = 0; i < 10_000; i++) parts.push(Buffer.from(`{"metadata":{"name":"cm-${i}","namespace":"default"},"data":{"k":"${'x'.repeat(340)}"}},`));
    return parts;
  }
  return [0, 1, 2].map((i) => Buffer.allocUnsafeSlow(1 << 20).fill(i));
}

if (!isMainThread && workerData?.forwardParts) {
  const cache = { small: makeParts('small'), large: makeParts('large') };
  parentPort!.on('message', (m: { strategy: Strategy; shape: Shape }) => {
    const parts = cache[m.shape];
    if (m.strategy === 'join') {
      let total = 0;
      for (const p of parts) total += p.byteLength;
      const ab = joinOut(parts, total);
      parentPort!.postMessage({ body: ab }, [ab]);
    } else if (m.strategy === 'each') {
      const abs = parts.map(copyOut);
      parentPort!.postMessage({ parts: abs }, abs);
    } else {
      parentPort!.postMessage({ parts });
    }
  });
} else if (isMainThread) {
  const args = process.argv.slice(2);
  const i = args.indexOf('--rounds');
  const rounds = i >= 0 ? Number(args[i + 1]) : 200;
  const w = new Worker(fileURLToPath(import.meta.url), { workerData: { forwardParts: true } });
  let sink = 0;
  const play = (m: { body?: ArrayBuffer; parts?: Array<ArrayBuffer | Uint8Array> }) => {
    // what the sending side does before res.sendParts: views over what arrived
    const parts = m.body ? [Buffer.from(m.body)] : m.parts!.map((p) => (p instanceof ArrayBuffer ? Buffer.from(p) : p));
    for (const p of parts) sink += p.byteLength;
  };
  const run = (strategy: Strategy, shape: Shape, n: number) =>
    new Promise<{ ms: number; mainMs: number }>((resolve) => {
      let left = n;
      const t0 = performance.now();
      const elu0 = performance.eventLoopUtilization();
      const next = () => w.postMessage({ strategy, shape });
      const on = (m: { body?: ArrayBuffer; parts?: Array<ArrayBuffer | Uint8Array> }) => {
        play(m);
        if (--left > 0) return next();
        w.off('message', on);
        const elu = performance.eventLoopUtilization(elu0);
        resolve({ ms: (performance.now() - t0) / n, mainMs: elu.active / n });
      };
      w.on('message', on);
      next();
    });
  for (const shape of ['small', 'large'] as const) {
    for (const strategy of ['join', 'each', 'clone'] as const) {
      await run(strategy, shape, 20);
      const { ms, mainMs } = await run(strategy, shape, rounds);
      console.log(`${shape === 'small' ? '10,000 parts of ~400 B' : '3 parts of 1 MiB'}\t${strategy}\t${ms.toFixed(2)} ms per answer, ${mainMs.toFixed(2)} ms of it on the main thread`);
    }
  }
  void sink;
  await w.terminate();
}
