// The seats of flow control, shared by every front thread (issue 18). Each front thread runs
// its own PriorityAndFairness or InflightLimiter, but the limits are the server's: N threads
// must admit what one would, not N times it. So the counters live in one SharedArrayBuffer
// that the main thread creates and every front thread maps (server.ts, front/front-threads.ts),
// and every change to them is an Atomics operation: taking a seat is a compare-and-swap below
// the limit, so the limit holds across threads without a lock.
//
// Layout, in 32-bit words:
//   [0]  read-only requests holding a seat (apiserver_current_inflight_requests; the read-only
//        limit of the inflight limiter)
//   [1]  mutating requests holding a seat (likewise)
//   [2]  how many front threads the buffer has shares for (--front-threads)
//   [3]  read-only requests waiting in priority-and-fairness queues, on every thread
//   [4]  mutating requests waiting likewise (read_vs_write_current_requests; a failed front
//        thread's are not reclaimed)
//   [5]  the lock of the timing blocks (seat-timing.ts: every level's and read/write's)
//   [6..7] the most read-only and mutating requests that held a seat at once since the
//        main thread last rolled the period (apiserver_current_inflight_requests shows the
//        last second's, as kube's watermark)
//   then LEVEL_SLOTS slots of 8 words, one per priority level:
//   [+0..1] the level's key (one BigInt64): a 52-bit hash of its name, plus one; 0 while free
//   [+2]    seats the level's requests hold, on every thread (a request holds the seats
//           its work estimate gives it: 1 to 10)
//   [+3]    seats the requests waiting in the level's queues ask for, on every thread
//   [+4]    releases: bumped (and Atomics.notify'd) each time seats of the level are released
//   [+5]    the level's current limit plus one, set by the main thread's borrowing loop
//           (borrowing.ts; 0 until it ran: each thread then uses the level's nominal seats)
//   [+6..7] spare
//   then per front thread (0 the main one): its share of the counts above, written by it
//   alone beside each change of a total: its read-only and mutating seats, then its
//   executing and waiting counts of every slot.
//   Then, 8-byte aligned, float64s: [0] the time origin (performance.timeOrigin) of the thread
//   that made the buffer, the clock every thread's times are moved onto; [1..2] the last
//   period's peaks of words 0 and 1 (rollPeaks); [3..7] spare; the
//   read/write timing block; one level timing block per slot (seat-timing.ts: the seat demand
//   integrator and the timing ratio histograms, integrated at every change of the counts).
//   When a front thread ends without releasing
//   (it failed; its connections and requests went with it), the main thread takes its shares
//   out of the totals (reclaim), so its seats are not lost to the server for good. A thread
//   stopped between a total's change and its share's would leave one count off.
//
// Levels are named by PriorityLevelConfiguration objects, which each thread reads from its
// own caches, so threads learn of a level at slightly different times. There is no central
// allocator: a thread finds a level's slot by probing from its hash (open addressing) and
// claims a free one with compareExchange; another thread probing for the same name finds the
// key it wrote. Slots are never freed (a level deleted and created again gets its old slot
// back, and requests that still hold its seats release them there). When all LEVEL_SLOTS are
// taken, a new level counts its seats on a thread-local slot (each thread then enforces that
// level's limit on its own) and a warning is logged. Two names whose 52-bit hashes collide
// would share a slot; among a few hundred names that has odds of about 1 in 10^10.
//
// Thread ownership: the buffer is every front thread's, written only through Atomics (the
// timing blocks: under their lock word); a
// thread's shares are written by it alone, and zeroed by the main thread (reclaim) only once
// it has ended. A SharedSeats object (the slot lookup cache, the pending waits of its SeatSlots) belongs
// to the thread that made it. This file imports nothing at run time (its unit test loads it
// into worker threads with seat-timing.ts, which it imports).
import { LEVEL_TIMING_DOUBLES, LevelTiming, RW_TIMING_DOUBLES, ReadWriteTiming } from './seat-timing.js';

/** How many priority levels the table holds; kube's bootstrap configuration has eight. */
export const LEVEL_SLOTS = 512;
const HEADER_WORDS = 8;
const SLOT_WORDS = 8;
const EXECUTING = 2;
const WAITING = 3;
const RELEASES = 4;
const CURRENT_LIMIT = 5;
/** header word: the lock of every timing block */
const TIMING_LOCK = 5;
/** header word: front threads with shares */
const THREADS = 2;
/** header words: the current period's peaks of words 0 and 1 */
const PEAK = 6;
const THREAD_WORDS = 2 + 2 * LEVEL_SLOTS;
const SLOTS_END = HEADER_WORDS + LEVEL_SLOTS * SLOT_WORDS;
/** float64s before the level timing blocks: the time origin, spare, the read/write block */
const FLOAT_HEADER = 8;
const FLOAT_LEVELS = FLOAT_HEADER + RW_TIMING_DOUBLES;
const FLOAT_DOUBLES = FLOAT_LEVELS + LEVEL_SLOTS * LEVEL_TIMING_DOUBLES;
/** where the float64s begin, in bytes, for a buffer with shares for `threads` threads */
const floatsAt = (threads: number) => Math.ceil(((SLOTS_END + threads * THREAD_WORDS) * 4) / 8) * 8;
/**
 * A thread with waiters wakes at least this often to look for a free seat, in case a wake-up
 * was missed (a release always notifies; this is a safety net, not the mechanism).
 */
export const SAFETY_NET_MS = 100;

const KEY_MASK = (1n << 52n) - 1n;

type WaitAsync = (view: Int32Array, index: number, value: number, timeoutMs: number) => { async: false; value: string } | { async: true; value: Promise<string> };
// (Atomics.waitAsync is in Node 20, not in the ES2022 library this project compiles against)
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

/** A 52-bit FNV-1a hash of a level's name (the 64-bit hash, cut to 52 bits). */
export function levelKey(name: string): bigint {
  let h = 0xcbf29ce484222325n;
  for (const b of new TextEncoder().encode(name)) {
    h ^= BigInt(b);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h & KEY_MASK;
}

/**
 * One priority level's counters, wherever they live (a slot of the shared table, or a
 * thread-local one), as one thread sees them. Its methods are the only way they change.
 */
export class SeatSlot {
  /** while a wait for the next release is pending on this thread: whom it wakes */
  private wakers: Set<() => void> | null = null;

  /**
   * `share`: where this thread's executing and waiting counts of the slot are (-1: none kept);
   * `timing`: the level's time-weighted statistics, which the callers note each change in
   * (with the time they read for it) beside the counts here.
   */
  constructor(
    private readonly words: Int32Array,
    private readonly base: number,
    private readonly share = -1,
    readonly timing: LevelTiming = LevelTiming.local(),
  ) {}

  /** A slot of this thread's own (no buffer given, or the shared table full). */
  static local(timing: LevelTiming = LevelTiming.local()): SeatSlot {
    return new SeatSlot(new Int32Array(new SharedArrayBuffer(SLOT_WORDS * 4)), 0, -1, timing);
  }

  private addShare(executing: number, waiting: number): void {
    if (this.share < 0) return;
    if (executing !== 0) Atomics.add(this.words, this.share, executing);
    if (waiting !== 0) Atomics.add(this.words, this.share + 1, waiting);
  }

  /** seats held, on every thread sharing the slot */
  get executing(): number {
    return Atomics.load(this.words, this.base + EXECUTING);
  }
  /** seats asked for by the requests waiting in the level's queues, on every thread sharing the slot */
  get waiting(): number {
    return Atomics.load(this.words, this.base + WAITING);
  }
  /** how many seats were released so far (the value listen() waits on) */
  get releases(): number {
    return Atomics.load(this.words, this.base + RELEASES);
  }

  /** the limit the borrowing loop set (the main thread's), or undefined before it first ran */
  get currentLimit(): number | undefined {
    const v = Atomics.load(this.words, this.base + CURRENT_LIMIT);
    return v === 0 ? undefined : v - 1;
  }
  set currentLimit(v: number | undefined) {
    Atomics.store(this.words, this.base + CURRENT_LIMIT, v === undefined ? 0 : Math.max(0, Math.round(v)) + 1);
  }

  /**
   * A newcomer takes `seats` seats: only when they fit under the limit, and only when
   * nobody waits on any thread (a newcomer never jumps the queues). As kube's
   * canAccommodateSeatsLocked, a request wider than the whole limit runs when nothing else does.
   */
  tryTake(limit: number, seats = 1): boolean {
    const i = this.base + EXECUTING;
    for (;;) {
      const cur = Atomics.load(this.words, i);
      if ((cur + seats > limit && cur !== 0) || Atomics.load(this.words, this.base + WAITING) > 0) return false;
      if (Atomics.compareExchange(this.words, i, cur, cur + seats) === cur) break;
    }
    this.addShare(seats, 0);
    return true;
  }

  /** Seats taken whatever the limit (the exempt level: counted for the borrowing loop's demand only). */
  take(seats: number): void {
    Atomics.add(this.words, this.base + EXECUTING, seats);
    this.addShare(seats, 0);
  }

  /** Gives back seats taken with take(): nobody queues for an exempt level, so nobody is woken. */
  untake(seats: number): void {
    Atomics.sub(this.words, this.base + EXECUTING, seats);
    this.addShare(-seats, 0);
  }

  /**
   * A waiter is dispatched: it takes its seats when they fit (the others waiting do not stop
   * it: it is one of them) and its seats leave the waiting count. Between the two steps the
   * level counts them twice, which only makes a newcomer queue: never a seat too many.
   */
  tryDispatch(limit: number, seats = 1): boolean {
    const i = this.base + EXECUTING;
    for (;;) {
      const cur = Atomics.load(this.words, i);
      if (cur + seats > limit && cur !== 0) return false;
      if (Atomics.compareExchange(this.words, i, cur, cur + seats) === cur) break;
    }
    Atomics.sub(this.words, this.base + WAITING, seats);
    this.addShare(seats, -seats);
    return true;
  }

  /** Gives seats back and wakes every thread listening for them. */
  release(seats = 1): void {
    Atomics.sub(this.words, this.base + EXECUTING, seats);
    this.addShare(-seats, 0);
    Atomics.add(this.words, this.base + RELEASES, 1);
    Atomics.notify(this.words, this.base + RELEASES);
  }

  /** Seats of a request joining (+) or leaving without a seat (-) one of this thread's queues. */
  addWaiting(delta: number): void {
    Atomics.add(this.words, this.base + WAITING, delta);
    this.addShare(0, delta);
  }

  /**
   * Calls wake once a seat has been released on any thread since `seen` (a value of
   * `releases` read before the last failed attempt, so no release in between is missed), or
   * after SAFETY_NET_MS. At most one wait per slot and thread is pending: a call while one is
   * adds its wake to it (once per function: pass the same one each time). Its own `seen` may
   * be later than the pending wait's, which then only wakes it sooner.
   */
  listen(seen: number, wake: () => void): void {
    if (this.wakers) {
      this.wakers.add(wake);
      return;
    }
    const wakers = (this.wakers = new Set([wake]));
    const done = () => {
      this.wakers = null;
      for (const w of wakers) w();
    };
    const r = waitAsync(this.words, this.base + RELEASES, seen, SAFETY_NET_MS);
    // 'not-equal': a release came since `seen`; wake from the event loop, not from inside the caller
    if (r.async) void r.value.then(done);
    else setImmediate(done);
  }
}

export class SharedSeats {
  readonly sab: SharedArrayBuffer;
  /** front threads the buffer keeps shares for */
  readonly threads: number;
  private readonly words: Int32Array;
  private readonly keys: BigInt64Array;
  private readonly floats: Float64Array;
  /** where this thread's shares begin */
  private readonly own: number;
  /** this thread's index plus one: its mark on the timing locks it holds */
  private readonly me: number;
  /** ms from this thread's performance.now() to the buffer's clock */
  private readonly clockOffset: number;
  /** read_vs_write_current_requests, the server's */
  readonly rw: ReadWriteTiming;
  /** this thread's slots, by level name */
  private readonly slots = new Map<string, SeatSlot>();
  private warnedFull = false;

  static bytes(threads: number): number {
    return floatsAt(threads) + FLOAT_DOUBLES * 8;
  }

  /**
   * Maps a buffer another thread made, as front thread `thread` (1..); or, none given, makes
   * one with shares for `threads` front threads, as the main thread (0) does.
   */
  constructor(sab?: SharedArrayBuffer, thread = 0, threads = 1) {
    this.sab = sab ?? new SharedArrayBuffer(SharedSeats.bytes(threads));
    this.words = new Int32Array(this.sab);
    this.keys = new BigInt64Array(this.sab);
    if (!sab) Atomics.store(this.words, THREADS, threads);
    this.threads = Atomics.load(this.words, THREADS);
    if (this.sab.byteLength !== SharedSeats.bytes(this.threads)) throw new Error(`shared seats: a buffer of ${this.sab.byteLength} bytes, not ${SharedSeats.bytes(this.threads)}`);
    if (!(thread >= 0 && thread < this.threads)) throw new Error(`shared seats: no shares for front thread ${thread} of ${this.threads}`);
    this.own = SLOTS_END + thread * THREAD_WORDS;
    this.me = thread + 1;
    this.floats = new Float64Array(this.sab, floatsAt(this.threads), FLOAT_DOUBLES);
    if (!sab) this.floats[0] = performance.timeOrigin;
    this.clockOffset = performance.timeOrigin - this.floats[0];
    this.rw = new ReadWriteTiming({ floats: this.floats, base: FLOAT_HEADER, words: this.words, lockAt: TIMING_LOCK, me: this.me, offset: this.clockOffset });
  }

  private timingOf(s: number): LevelTiming {
    return new LevelTiming({ floats: this.floats, base: FLOAT_LEVELS + s * LEVEL_TIMING_DOUBLES, words: this.words, lockAt: TIMING_LOCK, me: this.me, offset: this.clockOffset, rwBase: FLOAT_HEADER });
  }

  /** The slot of the level named so: found, or claimed on first use by any thread. */
  level(name: string): SeatSlot {
    let slot = this.slots.get(name);
    if (slot) return slot;
    slot = this.claim(name);
    this.slots.set(name, slot);
    return slot;
  }

  private claim(name: string): SeatSlot {
    const key = levelKey(name) + 1n;
    const start = Number(key % BigInt(LEVEL_SLOTS));
    for (let i = 0; i < LEVEL_SLOTS; i++) {
      const s = (start + i) % LEVEL_SLOTS;
      const base = HEADER_WORDS + s * SLOT_WORDS;
      // the key's BigInt64 index: the slot's first two words
      const k = base / 2;
      const prev = Atomics.compareExchange(this.keys, k, 0n, key);
      if (prev === 0n || prev === key) {
        const timing = this.timingOf(s);
        // a level's statistics count from its creation (the first thread to claim it starts them)
        timing.start(performance.now());
        return new SeatSlot(this.words, base, this.own + 2 + 2 * s, timing);
      }
    }
    if (!this.warnedFull) {
      this.warnedFull = true;
      console.warn(`W priority levels: the shared seat table's ${LEVEL_SLOTS} slots are taken; level ${JSON.stringify(name)} and any further new level are limited per front thread`);
    }
    return SeatSlot.local(LevelTiming.local(this.rw));
  }

  /** Requests holding a read-only (false) or mutating (true) seat, on every thread. */
  inflight(mutating: boolean): number {
    return Atomics.load(this.words, mutating ? 1 : 0);
  }

  /**
   * Counts a seat taken (+1) or released (-1) without a limit (priority and fairness limits by
   * level, and counts read_vs_write_current_requests through the levels' timing notes); with
   * `now` (this thread's performance.now(): the inflight limiter), read_vs_write too.
   */
  addInflight(mutating: boolean, delta: number, now?: number): void {
    const k = mutating ? 1 : 0;
    const n = Atomics.add(this.words, k, delta) + delta;
    Atomics.add(this.words, this.own + k, delta);
    if (delta > 0) this.notePeak(k, n);
    if (now !== undefined) this.rw.note(now, mutating, delta, 0);
  }

  private notePeak(k: number, n: number): void {
    for (;;) {
      const peak = Atomics.load(this.words, PEAK + k);
      if (n <= peak || Atomics.compareExchange(this.words, PEAK + k, peak, n) === peak) return;
    }
  }

  /**
   * The main thread, once a period (a second, as kube's watermark): the most requests of
   * each kind that held a seat at once during it; the next period starts from the count now.
   */
  rollPeaks(): void {
    for (const k of [0, 1]) {
      const now = Atomics.load(this.words, k);
      // (a float64 is written whole on the platforms Node runs on; readers see the old or the new)
      this.floats[1 + k] = Math.max(now, Atomics.exchange(this.words, PEAK + k, now));
    }
  }

  /** The last period's peaks (rollPeaks), the same on every thread. */
  peaks(): { readOnly: number; mutating: number } {
    return { readOnly: this.floats[1], mutating: this.floats[2] };
  }

  /** Requests of a kind waiting in the queues of priority and fairness, on every thread. */
  waitingOf(mutating: boolean): number {
    return Atomics.load(this.words, mutating ? 4 : 3);
  }

  /** (read_vs_write_current_requests counts them through the levels' timing notes, seat-timing.ts) */
  addWaitingOf(mutating: boolean, delta: number): void {
    Atomics.add(this.words, mutating ? 4 : 3, delta);
  }

  /** The inflight limiter's seat: taken only below the limit, whatever thread holds the others. */
  tryTakeInflight(mutating: boolean, limit: number): boolean {
    const i = mutating ? 1 : 0;
    for (;;) {
      const cur = Atomics.load(this.words, i);
      if (cur >= limit) return false;
      if (Atomics.compareExchange(this.words, i, cur, cur + 1) === cur) {
        this.notePeak(i, cur + 1);
        break;
      }
    }
    Atomics.add(this.words, this.own + i, 1);
    return true;
  }

  /**
   * The main thread, once front thread `thread` has ended without releasing what it held:
   * its seats and waiters leave the counts, and threads waiting for a seat of its levels
   * are woken. Never for a thread that still runs (its later releases would count twice).
   */
  reclaim(thread: number): void {
    const t = SLOTS_END + thread * THREAD_WORDS;
    // the timing lock, if it held it when it ended, is let go first
    Atomics.compareExchange(this.words, TIMING_LOCK, thread + 1, 0);
    const now = performance.now();
    for (const k of [0, 1]) {
      const n = Atomics.exchange(this.words, t + k, 0);
      if (n !== 0) Atomics.sub(this.words, k, n);
    }
    for (let s = 0; s < LEVEL_SLOTS; s++) {
      const share = t + 2 + 2 * s;
      const base = HEADER_WORDS + s * SLOT_WORDS;
      const executing = Atomics.exchange(this.words, share, 0);
      const waiting = Atomics.exchange(this.words, share + 1, 0);
      if (waiting !== 0) Atomics.sub(this.words, base + WAITING, waiting);
      // (its seats leave the level's statistics too; its requests' counts are not kept per thread)
      if (waiting !== 0 || executing !== 0) this.timingOf(s).note(now, -executing, 0, 0, -waiting);
      if (executing !== 0) {
        Atomics.sub(this.words, base + EXECUTING, executing);
        Atomics.add(this.words, base + RELEASES, 1);
        Atomics.notify(this.words, base + RELEASES);
      }
    }
  }
}
