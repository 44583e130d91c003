// Time-weighted statistics of priority and fairness, integrated at every change rather than
// sampled: kube's fairqueuing Integrator (the seat demand the borrowing loop reads: its
// average, standard deviation and high watermark over each 10 s period) and its timing ratio
// histograms (metrics/timing_ratio_histogram.go), which count, per bucket, the nanoseconds
// during which a quantity over its denominator had a value in that bucket:
//
//   per priority level   seats held / limit      apiserver_flowcontrol_priority_level_seat_utilization
//                        requests executing / limit, requests waiting / queue room
//                                                apiserver_flowcontrol_priority_level_request_utilization
//                        seat demand / limit     apiserver_flowcontrol_demand_seats
//   server-wide          read-only and mutating requests executing / the nominal seats (the
//                        plain inflight limits: / each kind's limit), and waiting / the room
//                        in the queues
//                                                apiserver_flowcontrol_read_vs_write_current_requests
//
// The limit is the level's current seat limit, or max(1, round(server seats / 10)) while that
// is 0; the queue room max(1, queueLengthLimit) × max(1, queues), as kube's.
//
// Every change is noted with a time the caller already read (the request path's one clock
// read): the interval since the previous change goes to the buckets of the values that held
// during it, then the values move. The quantities are the server's, changed by every front
// thread, so the statistics live in the shared seat table's buffer (shared-seats.ts), behind
// one spin lock of one Int32 word for every block (the owner's thread index plus one; a
// thread that ends while holding it has it released by SharedSeats.reclaim; a thread that
// finds it taken spins a little, then naps 50 µs at a time, so that a holder preempted on a
// busy machine gets the core back instead of waiting out the spinner's time slice). One lock, so
// that a request's change of its level and of read/write is one critical section: the
// sequentially consistent release of a lock is the dearest part of a change. A critical
// section is a few dozen floating-point operations and allocates nothing. Times are the thread's
// performance.now() moved onto the buffer maker's clock (each thread adds the difference of
// the time origins once known); a change noted a little out of order across threads (its
// time before the last one noted) counts as made at the last one.
//
// Thread ownership: the blocks are every front thread's, written only under the lock; a
// LevelTiming or ReadWriteTiming object (views on them) belongs to the thread that made it.

export const SEAT_UTILIZATION_BUCKETS = [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1];
export const REQUEST_UTILIZATION_BUCKETS = [0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.25, 0.5, 0.75, 1];
export const DEMAND_BUCKETS = [0.2, 0.4, 0.6, 0.8, 1, 1.2, 1.4, 1.7, 2, 2.8, 4, 6];
export const READ_WRITE_BUCKETS = [0, 0.001, 0.01, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1];

// A level's block, in float64s.
const LAST = 0; // time of the last change noted (ms on the shared clock; 0: not started)
const EXEC_SEATS = 1;
const EXEC_REQUESTS = 2;
const WAIT_REQUESTS = 3;
const WAIT_SEATS = 4;
const DEN_EXEC = 5;
const DEN_WAIT = 6;
const ELAPSED = 7; // the integrator's moments since its last reset: seconds, ∫demand dt, ∫demand² dt
const INT_X = 8;
const INT_XX = 9;
const MAX_DEMAND = 10;
const TOTAL_NS = 11; // the timing histograms' count
const H_SEATS = 12; // each histogram: its buckets' nanoseconds (not cumulated), then its sum
const H_REQ_EXEC = H_SEATS + SEAT_UTILIZATION_BUCKETS.length + 1;
const H_REQ_WAIT = H_REQ_EXEC + REQUEST_UTILIZATION_BUCKETS.length + 1;
const H_DEMAND = H_REQ_WAIT + REQUEST_UTILIZATION_BUCKETS.length + 1;
export const LEVEL_TIMING_DOUBLES = 64;

// The read/write block.
const RW_EXEC = 1; // [readOnly, mutating]
const RW_WAIT = 3;
const RW_DEN_EXEC = 5; // [readOnly, mutating]
const RW_DEN_WAIT = 7;
const RW_TOTAL_NS = 8;
const RW_H = 9; // executing readOnly, executing mutating, waiting readOnly, waiting mutating
const RW_H_SIZE = READ_WRITE_BUCKETS.length + 1;
export const RW_TIMING_DOUBLES = RW_H + 4 * RW_H_SIZE;

/** Tries spinning before a waiter sleeps: a critical section is far shorter than this. */
const SPINS = 256;
/** How long a waiter sleeps between tries once it stops spinning (ms): its holder was likely preempted, and gets the core. */
const NAP_MS = 0.05;
/** After this many naps (a second or a few: a nap may last longer than asked) the lock is taken anyway (a holder that never lets go: a figure is off, nothing worse). */
const NAPS_BEFORE_TAKING = 20_000;

function lock(words: Int32Array, i: number, me: number): void {
  for (let tries = 0; ; tries++) {
    const owner = Atomics.compareExchange(words, i, 0, me);
    if (owner === 0) return;
    if (tries < SPINS) continue;
    if (tries >= SPINS + NAPS_BEFORE_TAKING && Atomics.compareExchange(words, i, owner, me) === owner) return;
    // (returns at once when the word has changed already)
    Atomics.wait(words, i, owner, NAP_MS);
  }
}

function unlock(words: Int32Array, i: number): void {
  Atomics.store(words, i, 0);
}

/** Adds `ns` nanoseconds at value v to the histogram at h (bucket of the first bound ≥ v; past the last, only the count and sum). */
function observe(f: Float64Array, h: number, bounds: readonly number[], v: number, ns: number): void {
  const n = bounds.length;
  let i = 0;
  while (i < n && v > bounds[i]) i++;
  if (i < n) f[h + i] += ns;
  f[h + n] += v * ns;
}

/** What the metrics write a histogram from (request-metrics.ts HistogramData): a copy, taken under the lock. */
export interface TimingHistogramData {
  readonly bounds: readonly number[];
  readonly counts: Float64Array;
  readonly sum: number;
  readonly count: number;
}

function copy(f: Float64Array, h: number, bounds: readonly number[], count: number): TimingHistogramData {
  return { bounds, counts: f.slice(h, h + bounds.length), sum: f[h + bounds.length], count };
}

/** kube's IntegratorResults: the demand over the period since the last reset. */
export interface IntegratorResults {
  /** seconds integrated */
  duration: number;
  /** time-weighted average (NaN over no time) */
  average: number;
  /** time-weighted standard deviation (NaN over no time, or when rounding makes the variance negative) */
  deviation: number;
  /** the most seats demanded at once */
  max: number;
}

/** Where a timing block is: its floats, its lock word, this thread's lock value and clock offset. */
export interface TimingPlace {
  floats: Float64Array;
  base: number;
  words: Int32Array;
  lockAt: number;
  /** this thread's index plus one */
  me: number;
  /** ms to add to this thread's performance.now() to be on the shared clock */
  offset: number;
  /** a level's: where the read/write block is in the same floats, under the same lock (-1: elsewhere) */
  rwBase?: number;
  /** a level's, when its read/write block is elsewhere: where its requests' changes go */
  rw?: ReadWriteTiming;
}

/** The request kinds of read_vs_write_current_requests (NONE: a change not counted there). */
export const NONE = -1;
export const READ_ONLY = 0;
export const MUTATING = 1;

/** Integrates a level's block up to t (shared clock), the values unchanged since the last change. Under the lock. */
function advanceLevel(f: Float64Array, b: number, t: number): void {
  const last = f[b + LAST];
  if (last === 0) {
    f[b + LAST] = t;
    if (f[b + DEN_EXEC] === 0) f[b + DEN_EXEC] = 1;
    if (f[b + DEN_WAIT] === 0) f[b + DEN_WAIT] = 1;
    return;
  }
  // whole nanoseconds, as kube's (a shorter interval waits for the next change)
  const ns = Math.round((t - last) * 1e6);
  if (!(ns > 0)) return;
  f[b + LAST] = last + ns / 1e6;
  const s = ns / 1e9;
  f[b + TOTAL_NS] += ns;
  const seats = f[b + EXEC_SEATS];
  const den = f[b + DEN_EXEC];
  const demand = seats + f[b + WAIT_SEATS];
  observe(f, b + H_SEATS, SEAT_UTILIZATION_BUCKETS, seats / den, ns);
  observe(f, b + H_REQ_EXEC, REQUEST_UTILIZATION_BUCKETS, f[b + EXEC_REQUESTS] / den, ns);
  observe(f, b + H_REQ_WAIT, REQUEST_UTILIZATION_BUCKETS, f[b + WAIT_REQUESTS] / f[b + DEN_WAIT], ns);
  observe(f, b + H_DEMAND, DEMAND_BUCKETS, demand / den, ns);
  f[b + ELAPSED] += s;
  f[b + INT_X] += demand * s;
  f[b + INT_XX] += demand * demand * s;
}

/** Integrates the read/write block up to t. Under the lock. */
function advanceReadWrite(f: Float64Array, b: number, t: number): void {
  const last = f[b + LAST];
  if (last === 0) {
    f[b + LAST] = t;
    if (f[b + RW_DEN_EXEC] === 0) f[b + RW_DEN_EXEC] = f[b + RW_DEN_EXEC + 1] = 1;
    if (f[b + RW_DEN_WAIT] === 0) f[b + RW_DEN_WAIT] = 1;
    return;
  }
  const ns = Math.round((t - last) * 1e6);
  if (!(ns > 0)) return;
  f[b + LAST] = last + ns / 1e6;
  f[b + RW_TOTAL_NS] += ns;
  const dw = f[b + RW_DEN_WAIT];
  observe(f, b + RW_H, READ_WRITE_BUCKETS, f[b + RW_EXEC] / f[b + RW_DEN_EXEC], ns);
  observe(f, b + RW_H + RW_H_SIZE, READ_WRITE_BUCKETS, f[b + RW_EXEC + 1] / f[b + RW_DEN_EXEC + 1], ns);
  observe(f, b + RW_H + 2 * RW_H_SIZE, READ_WRITE_BUCKETS, f[b + RW_WAIT] / dw, ns);
  observe(f, b + RW_H + 3 * RW_H_SIZE, READ_WRITE_BUCKETS, f[b + RW_WAIT + 1] / dw, ns);
}

/** One priority level's statistics (kube: its seat demand integrator and three timing ratio histogram vectors' children). */
export class LevelTiming {
  private readonly f: Float64Array;
  private readonly b: number;
  private readonly words: Int32Array;
  private readonly lockAt: number;
  private readonly me: number;
  private readonly offset: number;
  private readonly rwBase: number;
  private readonly rw: ReadWriteTiming | undefined;

  constructor(p: TimingPlace) {
    this.f = p.floats;
    this.b = p.base;
    this.words = p.words;
    this.lockAt = p.lockAt;
    this.me = p.me;
    this.offset = p.offset;
    this.rwBase = p.rwBase ?? -1;
    this.rw = p.rw;
  }

  /** A block of this thread's own (a thread-local seat slot); its requests' changes go to `rw` when given. */
  static local(rw?: ReadWriteTiming): LevelTiming {
    return new LevelTiming({ floats: new Float64Array(LEVEL_TIMING_DOUBLES), base: 0, words: new Int32Array(new SharedArrayBuffer(4)), lockAt: 0, me: 1, offset: 0, rw });
  }

  /** Starts the clock of a block never used (a level's slot just claimed): its time counts from now. */
  start(now: number): void {
    lock(this.words, this.lockAt, this.me);
    const f = this.f;
    if (f[this.b + LAST] === 0) {
      f[this.b + LAST] = now + this.offset;
      if (f[this.b + DEN_EXEC] === 0) f[this.b + DEN_EXEC] = 1;
      if (f[this.b + DEN_WAIT] === 0) f[this.b + DEN_WAIT] = 1;
    }
    unlock(this.words, this.lockAt);
  }

  private advance(t: number): void {
    advanceLevel(this.f, this.b, t);
  }

  /**
   * The level's counts changed at `now` (this thread's performance.now()): seats held,
   * requests executing (kube's regular stage: not the additional latency), requests and
   * seats waiting in its queues. With a request kind (READ_ONLY, MUTATING), its requests'
   * changes count in read_vs_write_current_requests too, in the same critical section.
   */
  note(now: number, execSeats: number, execRequests: number, waitRequests: number, waitSeats: number, kind = NONE): void {
    lock(this.words, this.lockAt, this.me);
    const f = this.f;
    const b = this.b;
    const t = now + this.offset;
    advanceLevel(f, b, t);
    f[b + EXEC_SEATS] += execSeats;
    f[b + EXEC_REQUESTS] += execRequests;
    f[b + WAIT_REQUESTS] += waitRequests;
    f[b + WAIT_SEATS] += waitSeats;
    const demand = f[b + EXEC_SEATS] + f[b + WAIT_SEATS];
    if (demand > f[b + MAX_DEMAND]) f[b + MAX_DEMAND] = demand;
    const rb = this.rwBase;
    if (kind !== NONE && rb >= 0) {
      advanceReadWrite(f, rb, t);
      f[rb + RW_EXEC + kind] += execRequests;
      f[rb + RW_WAIT + kind] += waitRequests;
    }
    unlock(this.words, this.lockAt);
    if (kind !== NONE && rb < 0) this.rw?.note(now, kind === MUTATING, execRequests, waitRequests);
  }

  /** New denominators (kube's SetDenominator): the executing one (seats and requests, demand) and the waiting one; each at least 1. */
  setDenominators(now: number, executing: number, waiting: number): void {
    lock(this.words, this.lockAt, this.me);
    this.advance(now + this.offset);
    this.f[this.b + DEN_EXEC] = Math.max(1, executing);
    this.f[this.b + DEN_WAIT] = Math.max(1, waiting);
    unlock(this.words, this.lockAt);
  }

  /** The seat demand now (seats held plus seats waited for, on every thread). */
  get demand(): number {
    return this.f[this.b + EXEC_SEATS] + this.f[this.b + WAIT_SEATS];
  }

  /** kube's Integrator.Reset: the demand's statistics since the last reset, and a new period from now. */
  reset(now: number): IntegratorResults {
    lock(this.words, this.lockAt, this.me);
    const f = this.f;
    const b = this.b;
    this.advance(now + this.offset);
    const duration = f[b + ELAPSED];
    const average = duration > 0 ? f[b + INT_X] / duration : NaN;
    const variance = duration > 0 ? f[b + INT_XX] / duration - average * average : NaN;
    const r = { duration, average, deviation: variance >= 0 ? Math.sqrt(variance) : NaN, max: f[b + MAX_DEMAND] };
    f[b + ELAPSED] = f[b + INT_X] = f[b + INT_XX] = 0;
    f[b + MAX_DEMAND] = f[b + EXEC_SEATS] + f[b + WAIT_SEATS];
    unlock(this.words, this.lockAt);
    return r;
  }

  /** The level's three timing ratio histograms (four series), brought up to now. */
  histograms(now: number): { seatUtilization: TimingHistogramData; requestExecuting: TimingHistogramData; requestWaiting: TimingHistogramData; demand: TimingHistogramData } {
    lock(this.words, this.lockAt, this.me);
    const f = this.f;
    const b = this.b;
    this.advance(now + this.offset);
    const count = f[b + TOTAL_NS];
    const r = {
      seatUtilization: copy(f, b + H_SEATS, SEAT_UTILIZATION_BUCKETS, count),
      requestExecuting: copy(f, b + H_REQ_EXEC, REQUEST_UTILIZATION_BUCKETS, count),
      requestWaiting: copy(f, b + H_REQ_WAIT, REQUEST_UTILIZATION_BUCKETS, count),
      demand: copy(f, b + H_DEMAND, DEMAND_BUCKETS, count),
    };
    unlock(this.words, this.lockAt);
    return r;
  }
}

/** The server's read_vs_write_current_requests (kube's four gauges of readWriteConcurrencyGaugeVec). */
export class ReadWriteTiming {
  private readonly f: Float64Array;
  private readonly b: number;
  private readonly words: Int32Array;
  private readonly lockAt: number;
  private readonly me: number;
  private readonly offset: number;

  constructor(p: TimingPlace) {
    this.f = p.floats;
    this.b = p.base;
    this.words = p.words;
    this.lockAt = p.lockAt;
    this.me = p.me;
    this.offset = p.offset;
  }

  private advance(t: number): void {
    advanceReadWrite(this.f, this.b, t);
  }

  /** Requests of a kind began (+1) or ended (-1) executing, or joined or left a queue, at `now` (this thread's clock). */
  note(now: number, mutating: boolean, executing: number, waiting: number): void {
    lock(this.words, this.lockAt, this.me);
    this.advance(now + this.offset);
    const k = mutating ? 1 : 0;
    this.f[this.b + RW_EXEC + k] += executing;
    this.f[this.b + RW_WAIT + k] += waiting;
    unlock(this.words, this.lockAt);
  }

  /**
   * kube's denominators, each at least 1: of the read-only and of the mutating requests
   * executing (priority and fairness: the sum of the levels' nominal seats for both; the
   * inflight limits: each kind's limit), and of the requests waiting (the room in every queue).
   */
  setDenominators(now: number, executingReadOnly: number, executingMutating: number, waiting: number): void {
    lock(this.words, this.lockAt, this.me);
    this.advance(now + this.offset);
    this.f[this.b + RW_DEN_EXEC] = Math.max(1, executingReadOnly);
    this.f[this.b + RW_DEN_EXEC + 1] = Math.max(1, executingMutating);
    this.f[this.b + RW_DEN_WAIT] = Math.max(1, waiting);
    unlock(this.words, this.lockAt);
  }

  histograms(now: number): { executingReadonly: TimingHistogramData; executingMutating: TimingHistogramData; waitingReadonly: TimingHistogramData; waitingMutating: TimingHistogramData } {
    lock(this.words, this.lockAt, this.me);
    const f = this.f;
    const b = this.b;
    this.advance(now + this.offset);
    const count = f[b + RW_TOTAL_NS];
    const r = {
      executingReadonly: copy(f, b + RW_H, READ_WRITE_BUCKETS, count),
      executingMutating: copy(f, b + RW_H + RW_H_SIZE, READ_WRITE_BUCKETS, count),
      waitingReadonly: copy(f, b + RW_H + 2 * RW_H_SIZE, READ_WRITE_BUCKETS, count),
      waitingMutating: copy(f, b + RW_H + 3 * RW_H_SIZE, READ_WRITE_BUCKETS, count),
    };
    unlock(this.words, this.lockAt);
    return r;
  }
}
