// The shared seat table across real threads: two worker_threads map one buffer, as two
// front threads do, and run the real LevelState (priority-levels.ts) and SeatSlot on it.
// Workers cannot load TypeScript, so the three modules are transpiled here and handed to
// them as data: URLs (priority-levels.ts imports only shared-seats.ts at run time, which
// imports only seat-timing.ts).
import { describe, it, expect, afterEach, vi } from 'vitest';
import { Worker } from 'node:worker_threads';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { LEVEL_SLOTS, SeatSlot, SharedSeats } from './shared-seats.js';
import { LevelState, type Waiter } from './priority-levels.js';
import type { LevelConfig } from './classifier.js';

function moduleUrl(file: string, rewrite: (js: string) => string = (js) => js): string {
  const src = readFileSync(fileURLToPath(new URL(file, import.meta.url)), 'utf8');
  const js = ts.transpileModule(src, { compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 } }).outputText;
  return `data:text/javascript;base64,${Buffer.from(rewrite(js)).toString('base64')}`;
}
const TIMING_URL = moduleUrl('./seat-timing.ts');
const SEATS_URL = moduleUrl('./shared-seats.ts', (js) => js.replaceAll("'./seat-timing.js'", JSON.stringify(TIMING_URL)));
const LEVELS_URL = moduleUrl('./priority-levels.ts', (js) => js.replaceAll("'./shared-seats.js'", JSON.stringify(SEATS_URL)));

// probe words (an Int32Array of their own): requests running right now as the workers count
// them, the most ever seen at once, the most slot.executing ever read, and a gate a worker
// can be held at
const RUNNING = 0;
const MAX_RUNNING = 1;
const MAX_EXECUTING = 2;
const GATE = 3;

/** The worker: answers each command of the test with a reply of the same id. */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { seatsUrl, levelsUrl, sab, probeSab, index } = workerData;
const probe = new Int32Array(probeSab);
const RUNNING = ${RUNNING}, MAX_RUNNING = ${MAX_RUNNING}, MAX_EXECUTING = ${MAX_EXECUTING}, GATE = ${GATE};
const noteMax = (i, v) => {
  let cur = Atomics.load(probe, i);
  while (v > cur) {
    const prev = Atomics.compareExchange(probe, i, cur, v);
    if (prev === cur) return;
    cur = prev;
  }
};
(async () => {
  const { SharedSeats } = await import(seatsUrl);
  const { LevelState } = await import(levelsUrl);
  const seats = new SharedSeats(sab, index);
  const levels = new Map();
  const level = (name, limit) => {
    let st = levels.get(name);
    if (!st) {
      const cfg = { name, uid: name, exempt: false, shares: 1, lendablePercent: 0, borrowingLimitPercent: null, limitResponse: 'Queue', queues: 8, handSize: 2, queueLengthLimit: 10000 };
      levels.set(name, (st = new LevelState(cfg, seats.level(name))));
    }
    st.limit = limit;
    return st;
  };
  /** the requests holding a seat in step mode, oldest first */
  const held = [];
  /** a newcomer, as the APF filter handles it: a seat at once, or a queue and a wait */
  const arrive = (st, onSeat) => {
    if (st.tryTake()) {
      onSeat();
      return true;
    }
    const w = { queue: st.pickQueue((Math.random() * 2 ** 32) >>> 0), since: performance.now(), state: 'queued', settle: (granted) => {
      if (!granted) throw new Error('refused');
      onSeat();
    } };
    if (st.enqueue(w)) throw new Error('queue full');
    st.awaitSeat();
    return false;
  };
  const commands = {
    // many requests of a level with a small limit, arriving in bursts and holding their seat a little
    async contend({ name, limit, requests }) {
      const st = level(name, limit);
      let immediate = 0, queued = 0, done = 0;
      await new Promise((resolve) => {
        const run = () => {
          noteMax(MAX_RUNNING, Atomics.add(probe, RUNNING, 1) + 1);
          noteMax(MAX_EXECUTING, st.executing);
          setTimeout(() => {
            Atomics.sub(probe, RUNNING, 1);
            st.release();
            if (++done === requests) resolve();
          }, Math.random() * 2);
        };
        let started = 0;
        const burst = () => {
          for (let k = 0; k < 5 && started < requests; k++, started++) {
            if (arrive(st, run)) immediate++;
            else queued++;
          }
          if (started < requests) setImmediate(burst);
        };
        burst();
      });
      return { immediate, queued };
    },
    // the inflight limiter's counts: no queues, a refusal at the limit
    async inflight({ limit, requests }) {
      let taken = 0, refused = 0, done = 0;
      await new Promise((resolve) => {
        let started = 0;
        const burst = () => {
          for (let k = 0; k < 3 && started < requests; k++, started++) {
            if (!seats.tryTakeInflight(false, limit)) {
              refused++;
              if (++done === requests) resolve();
              continue;
            }
            taken++;
            noteMax(MAX_RUNNING, Atomics.add(probe, RUNNING, 1) + 1);
            noteMax(MAX_EXECUTING, seats.inflight(false));
            setTimeout(() => {
              Atomics.sub(probe, RUNNING, 1);
              seats.addInflight(false, -1);
              if (++done === requests) resolve();
            }, Math.random() * 3);
          }
          // (paced, at random: refusals are quick, and a thread whose arrivals always came just
          // after the other's would meet nothing else)
          if (started < requests) setTimeout(burst, Math.random() * 2);
        };
        burst();
      });
      return { taken, refused };
    },
    // one newcomer; tells whether it got a seat at once (else it waits and 'granted' follows)
    take({ name, limit, tag }) {
      const st = level(name, limit);
      return arrive(st, () => {
        held.push(st);
        parentPort.postMessage({ granted: tag });
      });
    },
    release() {
      held.shift().release();
      return true;
    },
    // a release and, in the same turn of the event loop, a newcomer
    releaseThenTake({ name, limit, tag }) {
      commands.release();
      return commands.take({ name, limit, tag });
    },
    // holds this thread (its event loop too) until the test opens the gate
    block() {
      parentPort.postMessage({ blocked: true });
      Atomics.wait(probe, GATE, 0);
      return true;
    },
    takeInflight({ mutating, limit }) {
      return seats.tryTakeInflight(mutating, limit);
    },
    claim({ names }) {
      for (const n of names) seats.level(n).addWaiting(1);
      return true;
    },
  };
  parentPort.on('message', async ({ id, op, args }) => {
    try {
      parentPort.postMessage({ id, result: await commands[op](args) });
    } catch (err) {
      parentPort.postMessage({ id, error: String(err && err.stack || err) });
    }
  });
  parentPort.postMessage({ ready: true });
})();
`;

interface Thread {
  call(op: string, args?: unknown): Promise<any>;
  /** resolves with the tag of the next seat granted to one of its waiters */
  granted(tag: string): Promise<void>;
  blocked(): Promise<void>;
  worker: Worker;
}

const started: Worker[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((w) => w.terminate()));
});

/** Front thread `index` (1 or 2; the test itself is the main thread, 0). */
async function thread(sab: SharedArrayBuffer, probeSab: SharedArrayBuffer, index: number): Promise<Thread> {
  const worker = new Worker(WORKER, { eval: true, workerData: { seatsUrl: SEATS_URL, levelsUrl: LEVELS_URL, sab, probeSab, index } });
  started.push(worker);
  let next = 0;
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  const grants = new Map<string, () => void>();
  const seenGrants = new Set<string>();
  let onBlocked: (() => void) | undefined;
  let ready!: () => void;
  const isReady = new Promise<void>((r) => (ready = r));
  worker.on('message', (m: any) => {
    if (m.ready) ready();
    else if (m.blocked) onBlocked?.();
    else if (m.granted !== undefined) {
      seenGrants.add(m.granted);
      grants.get(m.granted)?.();
    } else {
      const p = pending.get(m.id)!;
      pending.delete(m.id);
      if (m.error) p.reject(new Error(m.error));
      else p.resolve(m.result);
    }
  });
  worker.on('error', (e) => {
    for (const p of pending.values()) p.reject(e);
  });
  await isReady;
  return {
    worker,
    call(op, args) {
      const id = next++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        worker.postMessage({ id, op, args });
      });
    },
    granted(tag) {
      if (seenGrants.has(tag)) return Promise.resolve();
      return new Promise((r) => grants.set(tag, r));
    },
    blocked() {
      return new Promise((r) => (onBlocked = r));
    },
  };
}

function setup(): { sab: SharedArrayBuffer; probe: Int32Array; probeSab: SharedArrayBuffer; seats: SharedSeats } {
  const seats = new SharedSeats(undefined, 0, 3);
  const probeSab = new SharedArrayBuffer(16);
  return { sab: seats.sab, probe: new Int32Array(probeSab), probeSab, seats };
}

describe('shared seats across two threads', () => {
  it('a level never runs more than its limit across both threads, under contention, and leaks nothing', async () => {
    const { sab, probe, probeSab, seats } = setup();
    const [a, b] = await Promise.all([thread(sab, probeSab, 1), thread(sab, probeSab, 2)]);
    const args = { name: 'contended', limit: 3, requests: 400 };
    const [ra, rb] = await Promise.all([a.call('contend', args), b.call('contend', args)]);
    // both threads had to queue: the other's requests held the seats
    expect(ra.queued).toBeGreaterThan(0);
    expect(rb.queued).toBeGreaterThan(0);
    expect(ra.immediate + ra.queued).toBe(400);
    // the limit was reached, never passed, whichever count is read
    expect(Atomics.load(probe, MAX_RUNNING)).toBe(3);
    expect(Atomics.load(probe, MAX_EXECUTING)).toBeLessThanOrEqual(3);
    const slot = seats.level('contended');
    expect([slot.executing, slot.waiting, Atomics.load(probe, RUNNING)]).toEqual([0, 0, 0]);
  });

  it("the inflight limiter's limit holds across both threads", async () => {
    const { sab, probe, probeSab, seats } = setup();
    const [a, b] = await Promise.all([thread(sab, probeSab, 1), thread(sab, probeSab, 2)]);
    const [ra, rb] = await Promise.all([a.call('inflight', { limit: 2, requests: 400 }), b.call('inflight', { limit: 2, requests: 400 })]);
    expect(ra.refused + rb.refused).toBeGreaterThan(0);
    expect(ra.taken).toBeGreaterThan(0);
    expect(rb.taken).toBeGreaterThan(0);
    expect(Atomics.load(probe, MAX_RUNNING)).toBe(2);
    expect(Atomics.load(probe, MAX_EXECUTING)).toBeLessThanOrEqual(2);
    expect([seats.inflight(false), seats.inflight(true)]).toEqual([0, 0]);
    // the period's peak (apiserver_current_inflight_requests) saw the limit reached, never passed
    seats.rollPeaks();
    expect(seats.peaks()).toEqual({ readOnly: 2, mutating: 0 });
    // the next period starts from the count at the roll: nothing held now
    seats.rollPeaks();
    expect(seats.peaks()).toEqual({ readOnly: 0, mutating: 0 });
  });

  it('a seat freed on one thread goes to a waiter on the other; newcomers see the other thread waiting', async () => {
    const { sab, probe, probeSab, seats } = setup();
    const [a, b] = await Promise.all([thread(sab, probeSab, 1), thread(sab, probeSab, 2)]);
    const slot = seats.level('one-seat');
    const lvl = { name: 'one-seat', limit: 1 };
    expect(await a.call('take', { ...lvl, tag: 'a1' })).toBe(true);
    // b's newcomer finds the seat taken: it queues, and its waiting is counted for every thread
    expect(await b.call('take', { ...lvl, tag: 'b1' })).toBe(false);
    expect([slot.executing, slot.waiting]).toEqual([1, 1]);
    // b is held, so it cannot take the seat a frees; a's next newcomer, in the same turn as
    // the release, finds a free seat but b's request ahead of it, and queues behind it
    const blocked = b.blocked();
    void b.call('block');
    await blocked;
    expect(await a.call('releaseThenTake', { ...lvl, tag: 'a2' })).toBe(false);
    expect([slot.executing, slot.waiting]).toEqual([0, 2]);
    // b, free again, is woken by a's release and takes the seat
    Atomics.store(probe, GATE, 1);
    Atomics.notify(probe, GATE);
    await b.granted('b1');
    expect([slot.executing, slot.waiting]).toEqual([1, 1]);
    // and b's release wakes a's waiter
    await b.call('release');
    await a.granted('a2');
    expect([slot.executing, slot.waiting]).toEqual([1, 0]);
    await a.call('release');
    expect([slot.executing, slot.waiting]).toEqual([0, 0]);
  });

  it('a thread that ends holding seats and waiting: the main thread reclaims its share, and the seat goes to a waiter of the other', async () => {
    const { sab, probeSab, seats } = setup();
    const [a, b] = await Promise.all([thread(sab, probeSab, 1), thread(sab, probeSab, 2)]);
    const slot = seats.level('lost');
    const lvl = { name: 'lost', limit: 1 };
    expect(await a.call('take', { ...lvl, tag: 'a1' })).toBe(true);
    expect(await a.call('take', { ...lvl, tag: 'a2' })).toBe(false);
    expect(await a.call('takeInflight', { mutating: true, limit: 5 })).toBe(true);
    expect(await b.call('take', { ...lvl, tag: 'b1' })).toBe(false);
    expect([slot.executing, slot.waiting, seats.inflight(true)]).toEqual([1, 2, 1]);
    await a.worker.terminate();
    seats.reclaim(1);
    await b.granted('b1');
    expect([slot.executing, slot.waiting, seats.inflight(true)]).toEqual([1, 0, 0]);
    await b.call('release');
    expect([slot.executing, slot.waiting]).toEqual([0, 0]);
  });

  it('two threads claiming the same level names concurrently find the same slots', async () => {
    const { sab, probeSab, seats } = setup();
    const [a, b] = await Promise.all([thread(sab, probeSab, 1), thread(sab, probeSab, 2)]);
    const names = Array.from({ length: 300 }, (_, i) => `level-${i}`);
    await Promise.all([a.call('claim', { names }), b.call('claim', { names: [...names].reverse() })]);
    for (const n of names) expect(seats.level(n).waiting).toBe(2);
  });
});

describe('the seat table on one thread', () => {
  it('past LEVEL_SLOTS levels, a new level counts its seats on a slot of its own thread, with a warning', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const one = new SharedSeats();
      const other = new SharedSeats(one.sab);
      for (let i = 0; i < LEVEL_SLOTS; i++) one.level(`l${i}`).addWaiting(1);
      expect(warn).not.toHaveBeenCalled();
      const late = one.level('late');
      late.addWaiting(1);
      expect(warn).toHaveBeenCalledTimes(1);
      // the other thread's view: the level is not shared; known ones still are
      expect(other.level('late').waiting).toBe(0);
      expect(other.level('l7').waiting).toBe(1);
      expect(one.level('late')).toBe(late);
    } finally {
      warn.mockRestore();
    }
  });

  it('a buffer of another size is refused', () => {
    expect(() => new SharedSeats(new SharedArrayBuffer(64))).toThrow(/bytes/);
  });

  it('a waiter listening on one table is woken by a release through another view of the buffer', async () => {
    const cfg: LevelConfig = { name: 'q', uid: 'q', exempt: false, shares: 1, lendablePercent: 0, borrowingLimitPercent: null, limitResponse: 'Queue', queues: 2, handSize: 1, queueLengthLimit: 5 };
    const mine = new SharedSeats();
    const theirs = new SharedSeats(mine.sab);
    const st = new LevelState(cfg, mine.level('q'));
    st.limit = 1;
    const slot: SeatSlot = theirs.level('q');
    expect(slot.tryTake(1)).toBe(true);
    expect(st.tryTake()).toBeNull();
    let granted = false;
    const w: Waiter = { queue: 0, since: 0, state: 'queued', settle: (g) => (granted = g) };
    expect(st.enqueue(w)).toBeNull();
    st.awaitSeat();
    expect(slot.waiting).toBe(1);
    // a newcomer elsewhere does not jump the queue, even once the seat is free
    slot.release();
    expect(slot.tryTake(1)).toBe(false);
    await vi.waitFor(() => expect(granted).toBe(true));
    expect([slot.executing, slot.waiting]).toEqual([1, 0]);
  });

  it('a level deleted and created again while its thread listens still wakes the new waiters', async () => {
    const cfg: LevelConfig = { name: 'r', uid: 'r', exempt: false, shares: 1, lendablePercent: 0, borrowingLimitPercent: null, limitResponse: 'Queue', queues: 1, handSize: 1, queueLengthLimit: 5 };
    const mine = new SharedSeats();
    const theirs = new SharedSeats(mine.sab).level('r');
    expect(theirs.tryTake(1)).toBe(true);
    const waiter = (): Waiter & { granted?: boolean } => {
      const w: Waiter & { granted?: boolean } = { queue: 0, since: 0, state: 'queued', settle: (g) => (w.granted = g) };
      return w;
    };
    const old = new LevelState(cfg, mine.level('r'));
    old.limit = 1;
    expect(old.tryTake()).toBeNull();
    const w1 = waiter();
    old.enqueue(w1);
    old.awaitSeat();
    old.refuseAll();
    expect(w1.granted).toBe(false);
    const fresh = new LevelState(cfg, mine.level('r'));
    fresh.limit = 1;
    expect(fresh.tryTake()).toBeNull();
    const w2 = waiter();
    fresh.enqueue(w2);
    fresh.awaitSeat();
    theirs.release();
    await vi.waitFor(() => expect(w2.granted).toBe(true), { timeout: 1000 });
    expect([theirs.executing, theirs.waiting]).toEqual([1, 0]);
  });
});
