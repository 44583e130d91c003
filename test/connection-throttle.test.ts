// --max-connection-bytes-per-sec on a started server: a long-running response (a watch) is
// sent at most that many bytes a second, while a plain response (a list of the same objects)
// is not held back, as kube applies the flag to long-running requests only. The figure
// asserted is a lower bound that follows from the rate (load can only make it longer).
import { describe, it, expect } from 'vitest';
import { openWatch, request, startServer, until } from './helpers/server.js';

const CM = '/api/v1/namespaces/default/configmaps';
const RATE = 64 * 1024;
const OBJECTS = 24;
const EACH = 8 * 1024;

describe.each([['uws'], ['http2']])('--max-connection-bytes-per-sec (--front-end=%s)', (front) => {
  it("holds a watch's stream to the rate and leaves plain responses alone", async () => {
    const s = await startServer({ args: [`--max-connection-bytes-per-sec=${RATE}`, `--front-end=${front}`] });
    try {
      for (let i = 0; i < OBJECTS; i++) {
        const r = await request(s, 'POST', CM, { metadata: { name: `big-${i}`, labels: { t: 'throttle' } }, data: { v: 'x'.repeat(EACH) } });
        expect(r.status).toBe(201);
      }
      // a list of ~192 KiB: answered whole, not at 64 KiB/s
      const list = await request(s, 'GET', `${CM}?labelSelector=t%3Dthrottle`);
      expect(list.status).toBe(200);
      expect(list.json().items).toHaveLength(OBJECTS);

      // the same objects as a watch's initial events: ~192 KiB at 64 KiB/s with one second's
      // bytes in the bucket at the start, so not before ≈ 2 s
      const started = performance.now();
      const w = openWatch(s, `${CM}?watch=1&resourceVersion=0&labelSelector=t%3Dthrottle`);
      expect(await w.status).toBe(200);
      await until(() => w.events.length >= OBJECTS, 30_000);
      const took = performance.now() - started;
      const bytes = w.raw().length;
      expect(bytes).toBeGreaterThan(OBJECTS * EACH);
      expect(took).toBeGreaterThanOrEqual(((bytes - RATE) / RATE) * 1000 * 0.9);
      w.close();
    } finally {
      await s.stop();
    }
  }, 90_000);
});
