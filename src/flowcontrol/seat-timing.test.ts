import { describe, it, expect } from 'vitest';
import { Worker } from 'node:worker_threads';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { DEMAND_BUCKETS, LevelTiming, MUTATING, REQUEST_UTILIZATION_BUCKETS, SEAT_UTILIZATION_BUCKETS } from './seat-timing.js';
import { SharedSeats } from './shared-seats.js';

/** ns per bucket of a histogram copy, by bound */
const byBound = (h: { bounds: readonly number[]; counts: Float64Array }) => Object.fromEntries(h.bounds.map((b, i) => [b, h.counts[i]]).filter(([, n]) => n !== 0));

describe('seat timing: the integrator and timing ratio histograms, integrated at every change', () => {
  it("integrates the seat demand over time as kube's Integrator: time-weighted average, deviation and high watermark; a reset starts a period", () => {
    const t = LevelTiming.local();
    const t0 = 1000;
    t.start(t0);
    // 2 seats for 1 s, then 6 seats (4 of them waiting) for 3 s, then 0
    t.note(t0, 2, 2, 0, 0);
    t.note(t0 + 1000, 0, 0, 4, 4);
    t.note(t0 + 4000, -2, -2, -4, -4);
    const r = t.reset(t0 + 4000);
    expect(r.duration).toBeCloseTo(4, 9);
    expect(r.average).toBeCloseTo((2 * 1 + 6 * 3) / 4, 9);
    // E[x²] - E[x]² = (4 + 108) / 4 - 25
    expect(r.deviation).toBeCloseTo(Math.sqrt(28 - 25), 9);
    expect(r.max).toBe(6);
    // the next period's watermark starts from the demand then (0), its moments from nothing
    t.note(t0 + 5000, 1, 1, 0, 0);
    const r2 = t.reset(t0 + 6000);
    expect(r2.duration).toBeCloseTo(2, 9);
    expect(r2.average).toBeCloseTo(0.5, 9);
    expect(r2.max).toBe(1);
    // no time: NaN, as kube's
    expect(Number.isNaN(t.reset(t0 + 6000).average)).toBe(true);
  });

  it('counts nanoseconds per bucket of each ratio, with kube buckets; the denominators move the ratios from the time they are set', () => {
    const t = LevelTiming.local();
    const t0 = 500;
    t.start(t0);
    t.setDenominators(t0, 10, 100);
    t.note(t0, 5, 5, 10, 20); // 0.5 of the seats, 0.5 of the requests executing, 0.1 waiting, demand 25/10
    t.setDenominators(t0 + 2, 20, 100); // from 2 ms on: 0.25, 0.25, demand 1.25
    const h = t.histograms(t0 + 5);
    expect(h.seatUtilization.bounds).toEqual(SEAT_UTILIZATION_BUCKETS);
    expect(h.requestExecuting.bounds).toEqual(REQUEST_UTILIZATION_BUCKETS);
    expect(h.demand.bounds).toEqual(DEMAND_BUCKETS);
    expect(h.seatUtilization.count).toBeCloseTo(5e6, 3);
    // whole nanoseconds, in the count and in every bucket
    expect(Number.isInteger(t.histograms(t0 + 5.0000123).seatUtilization.count)).toBe(true);
    expect(byBound(h.seatUtilization)).toEqual({ 0.3: expect.closeTo(3e6, 3), 0.5: expect.closeTo(2e6, 3) });
    expect(h.seatUtilization.sum).toBeCloseTo(0.5 * 2e6 + 0.25 * 3e6, 3);
    expect(byBound(h.requestExecuting)).toEqual({ 0.25: expect.closeTo(3e6, 3), 0.5: expect.closeTo(2e6, 3) });
    expect(byBound(h.requestWaiting)).toEqual({ 0.1: expect.closeTo(5e6, 3) });
    // demand 2.5 is in the 2.8 bucket, 1.25 in the 1.4 one
    expect(byBound(h.demand)).toEqual({ 1.4: expect.closeTo(3e6, 3), 2.8: expect.closeTo(2e6, 3) });
    // a scrape brings the histograms up to its time, without a change
    expect(t.histograms(t0 + 10).seatUtilization.count).toBeCloseTo(10e6, 3);
  });

  it('a value past the last bound counts in the count and the sum only (the +Inf bucket)', () => {
    const t = LevelTiming.local();
    t.start(1);
    t.note(1, 30, 1, 0, 0); // 30 seats of a limit of 1
    const h = t.histograms(2).seatUtilization;
    expect([...h.counts].every((n) => n === 0)).toBe(true);
    expect(h.count).toBeCloseTo(1e6, 3);
    expect(h.sum).toBeCloseTo(30e6, 1);
  });

  it('a change noted with a time before the last one (another thread read its clock a little earlier) counts as made at the last one', () => {
    const t = LevelTiming.local();
    t.start(100);
    t.note(110, 1, 1, 0, 0);
    t.note(105, 1, 1, 0, 0);
    const r = t.reset(120);
    expect(r.duration).toBeCloseTo(0.02, 9);
    expect(r.average).toBeCloseTo((0 * 10 + 2 * 10) / 20, 9);
  });

  it('is the server\'s: two threads\' views of one buffer add into one block; a thread that ended holding a lock has it let go', () => {
    const main = new SharedSeats(undefined, 0, 2);
    const other = new SharedSeats(main.sab, 1, 2);
    const a = main.level('workload-low');
    const b = other.level('workload-low');
    const now = performance.now();
    a.timing.note(now, 1, 1, 0, 0);
    b.timing.note(now, 2, 1, 0, 0);
    expect(a.timing.demand).toBe(3);
    expect(a.timing.reset(now + 1).max).toBe(3);
    // read_vs_write: one block for every thread
    main.rw.setDenominators(now, 10, 10, 100);
    other.rw.note(now, true, 1, 0);
    main.rw.note(now, false, 2, 5);
    const rw = main.rw.histograms(now + 1);
    expect(byBound(rw.executingMutating)).toEqual({ 0.1: expect.closeTo(1e6, 1) });
    expect(byBound(rw.executingReadonly)).toEqual({ 0.2: expect.closeTo(1e6, 1) });
    expect(byBound(rw.waitingReadonly)).toEqual({ 0.1: expect.closeTo(1e6, 1) });
    // a level's change with a request kind counts in read/write in the same critical section
    b.timing.note(now + 1, 0, 1, 0, 0, MUTATING);
    const rw2 = main.rw.histograms(now + 2);
    expect(byBound(rw2.executingMutating)).toEqual({ 0.1: expect.closeTo(1e6, 1), 0.2: expect.closeTo(1e6, 1) });
    // thread 1 ends while holding the timing lock (header word 5): reclaim lets it go
    Atomics.store(new Int32Array(main.sab), 5, 2);
    main.reclaim(1);
    const t1 = Date.now();
    main.rw.note(performance.now(), false, -2, -5);
    expect(Date.now() - t1).toBeLessThan(1000);
  });

  it('a lock whose holder never lets go (and was not reclaimed) is taken after a second or a few, not waited on for ever', () => {
    const seats = new SharedSeats(undefined, 0, 2);
    const slot = seats.level('stuck');
    Atomics.store(new Int32Array(seats.sab), 5, 99);
    const t0 = Date.now();
    slot.timing.note(performance.now(), 1, 1, 0, 0);
    const took = Date.now() - t0;
    expect(took).toBeGreaterThan(500);
    expect(took).toBeLessThan(20_000);
    expect(slot.timing.demand).toBe(1);
  }, 30_000);

  it('holds under contention: two threads noting at once lose no change, and the integrated time is the elapsed time', async () => {
    // workers cannot load TypeScript: the two modules are transpiled and handed over as data: URLs
    const url = (file: string, rewrite: (js: string) => string = (js) => js) => {
      const src = readFileSync(fileURLToPath(new URL(file, import.meta.url)), 'utf8');
      const js = ts.transpileModule(src, { compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 } }).outputText;
      return `data:text/javascript;base64,${Buffer.from(rewrite(js)).toString('base64')}`;
    };
    const timingUrl = url('./seat-timing.ts');
    const seatsUrl = url('./shared-seats.ts', (js) => js.replaceAll("'./seat-timing.js'", JSON.stringify(timingUrl)));
    const main = new SharedSeats(undefined, 0, 3);
    const slot = main.level('contended');
    const start = performance.now();
    slot.timing.reset(start);
    const N = 20000;
    const run = (index: number) =>
      new Promise<void>((resolve, reject) => {
        const w = new Worker(
          `const { workerData, parentPort } = require('node:worker_threads');
          import(workerData.seatsUrl).then(({ SharedSeats }) => {
            const seats = new SharedSeats(workerData.sab, workerData.index, 3);
            const t = seats.level('contended').timing;
            for (let i = 0; i < workerData.n; i++) {
              t.note(performance.now(), 2, 1, 0, 0, 1);
              t.note(performance.now(), -2, -1, 1, 1, 1);
              t.note(performance.now(), 0, 0, -1, -1, 1);
            }
            // one change that stays: a seat held
            t.note(performance.now(), 1, 1, 0, 0, 0);
            parentPort.postMessage('done');
          });`,
          { eval: true, workerData: { seatsUrl, sab: main.sab, index, n: N } },
        );
        w.once('message', () => resolve());
        w.once('error', reject);
      });
    await Promise.all([run(1), run(2)]);
    const end = performance.now();
    expect(slot.timing.demand).toBe(2);
    const r = slot.timing.reset(end);
    expect(r.duration * 1000).toBeGreaterThan((end - start) * 0.99);
    expect(r.duration * 1000).toBeLessThanOrEqual(end - start + 1);
    expect(r.max).toBeLessThanOrEqual(6);
    const h = slot.timing.histograms(end);
    expect(h.seatUtilization.count).toBeGreaterThan((end - start) * 1e6 * 0.99);
    // the read/write block saw both threads' requests: two read-only ones still executing
    const before = main.rw.histograms(end).executingReadonly;
    main.rw.setDenominators(end, 2, 2, 1);
    const later = main.rw.histograms(end + 1).executingReadonly;
    // 2 of 2: the bucket of 1 got the last millisecond
    expect((later.counts[later.bounds.indexOf(1)] - before.counts[before.bounds.indexOf(1)])).toBeCloseTo(1e6, -1);
  });
});
