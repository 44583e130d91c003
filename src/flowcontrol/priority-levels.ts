// Seats and queues of the priority levels: how many seats each Limited level's requests may
// hold at once, and what happens to the rest (429 at once for Reject; for Queue, a wait in
// one of the level's queues, chosen by shuffle sharding the request's flow, until its seats
// are free or the wait limit passes). This is kube's queueset (fairqueuing/queueset):
//
//   - a request holds the seats its work estimate gives it (work-estimator.ts: 1 to the
//     level's maximum), and a request wider than the whole limit runs when nothing else does
//     (canAccommodateSeatsLocked);
//   - fair queuing in virtual time: the level's progress meter R advances, per real second,
//     by min(seats asked for, limit) / active queues (getVirtualTimeRatioLocked); each queue
//     keeps the virtual time its next request may start at (nextDispatchR), which a dispatch
//     moves on by the request's estimated work in seat-seconds (3 ms of each initial seat plus
//     the final seats over the additional latency) and a finished request corrects by what
//     its initial seats really took; the next request served is the head of the queue whose
//     virtual finish (nextDispatchR + the head's work) is least, looking from the last queue
//     served on (findDispatchQueueToBoundLocked); a queue that goes idle restarts at R, and a
//     queue's start is never before its head's arrival (boundNextDispatchLocked);
//   - shuffle sharding: the flow's hash deals a hand of handSize queues, and the request joins
//     the one whose waiting requests ask for the fewest seats (shuffleShardLocked); it is
//     refused (queue-full) when the level's seats are all taken and that queue holds
//     queueLengthLimit requests already (rejectOrEnqueueToBoundLocked).
//
// Each change of the level's seats held, requests executing and requests or seats waiting is
// noted, with the time already read for the change, in the level's timing block
// (slot.timing, seat-timing.ts: kube's seat demand integrator and timing ratio histograms).
// The queue set's virtual-time figures are kept for the metrics as kube's queueset sets them:
// R at every sync (current_r), and at each dispatch from a queue R then, the queue's start S,
// and the least and greatest S of the queues with waiters, less or not the work in progress
// (dispatch_r, latest_s, next_s_bounds, next_discounted_s_bounds). R is wound back when it
// nears kube's limit (advanceEpochLocked; epoch_advance_total), unreachable in practice.
//
// The level's limit is its current one: the nominal seats (ceil(serverCL × shares / sum of
// shares)) until the main thread's borrowing loop (borrowing.ts) sets it in the shared slot.
//
// With several front threads (issue 18) the seats are the server's: a level's executing and
// waiting seats live in its slot of the shared seat table (shared-seats.ts), so its limit
// holds across threads and a newcomer on one thread does not jump requests queued on
// another. The requests that must wait wait here on the main thread, whichever thread they
// came in on (remote-queues.ts), so one queue set serves the level; a thread with waiters
// listens for seats released on any thread. (Until the main thread knows a new level, a
// thread queues that level's requests itself, and threads with waiters race for the seats.)
//
// Thread ownership: the front thread owns its levels, queues, virtual clock and local counts
// here; the seat counts in each level's SeatSlot are every front thread's (Atomics only).
import type { LevelConfig } from './classifier.js';
import type { RejectReason } from '../errors.js';
import { SeatSlot } from './shared-seats.js';

/** kube's queueset estimatedServiceDuration: the seat time a request is charged at dispatch, in seconds */
export const ESTIMATED_SERVICE_SECONDS = 0.003;

/**
 * How far R is wound back when it reaches HIGH_R (kube's rDecrement and highR: half and
 * three quarters of the largest SeatSeconds, 2^64 - 1 units of 1e-8 seat-seconds).
 */
export const R_DECREMENT = (2 ** 64 - 1) / 1e8 / 2;
export const HIGH_R = R_DECREMENT * 1.5;

/** A request waiting in a queue for its seats. */
export interface Waiter {
  /** called with true when its seats are granted (it now holds them), false when refused */
  settle(granted: boolean, reason?: RejectReason): void;
  queue: number;
  /** performance.now() at enqueue */
  since: number;
  state: 'queued' | 'running' | 'gone';
  /** the seats it holds once dispatched (the larger of its initial and final seats); 1 when unset */
  seats?: number;
  /** its estimated work in seat-seconds (kube's totalWork); set by enqueue when unset */
  work?: number;
  /** R when it arrived (kube's arrivalR); set by enqueue */
  arrivalR?: number;
  /** its flow's counters: a dispatch that finds no room for it counts there */
  flow?: { noAccommodation: number };
  /** its kind for read_vs_write_current_requests: 0 read-only, 1 mutating (seat-timing.ts); unset: not counted there */
  kind?: number;
}

/** One queue of a level: its waiting requests and its place in virtual time. */
export interface FairQueue {
  waiting: Waiter[];
  /** seats the waiting requests ask for */
  waitingSeats: number;
  /** R at which the queue's next request may start */
  nextDispatchR: number;
  /** seats held by its dispatched requests (until their additional latency ends) */
  seatsInUse: number;
  /** its requests executing (not counting the additional latency) */
  executing: number;
}

/** What a request that got its seats keeps, to give them back (LevelState.finish). */
export interface Execution {
  /** the queue it was charged to (-1: none), in the queue generation `gen` */
  queue: number;
  gen: number;
  seats: number;
  initialSeats: number;
  /** ms the final seats stay held after the response (kube's AdditionalLatency) */
  latencyMs: number;
  /** performance.now() at dispatch */
  started: number;
  /** its kind for read_vs_write_current_requests (see Waiter.kind; -1: not counted there) */
  kind?: number;
  /** granted by the main thread's queues (remote-queues.ts): its id there, where it is finished */
  remote?: number;
}

/** Seat-seconds of a request's work (kube's request.totalWork). */
export function totalWork(initialSeats: number, finalSeats: number, latencyMs: number): number {
  return initialSeats * ESTIMATED_SERVICE_SECONDS + (finalSeats * latencyMs) / 1000;
}

const active = (q: FairQueue) => q.waiting.length > 0 || q.executing > 0;

/** One level's live state; it outlives configuration changes (kept by name). */
export class LevelState {
  config: LevelConfig;
  /** its nominal seats by kube's formula (0 for the exempt level with its default 0 shares) */
  nominal = 0;
  /** the lower and upper bounds of its current limit (nominal less lendable, nominal plus borrowable) */
  lower = 0;
  upper = 0;
  /** the most seats one request of the level may hold (the work estimator's maximum) */
  maxSeats = 10;
  /** seats asked for by requests in this thread's queues (slot.waiting counts every thread's) */
  waiting = 0;
  /** requests in this thread's queues */
  waitingRequests = 0;
  queues: FairQueue[] = [];
  /** bumped when the queues are made again: executions of an older generation skip their queue */
  gen = 0;
  /** dispatch attempts that found the seats taken (request_dispatch_no_accommodation_total) */
  noAccommodation = 0;
  /** the virtual clock: R, and the real time (ms) it was last brought up to */
  currentR = 0;
  /** the last dispatch from a queue, as kube's SetDispatchMetrics notes it (dispatched: there was one) */
  readonly lastDispatch = { dispatched: false, r: 0, s: 0, sMin: 0, sMax: 0, dsMin: 0, dsMax: 0 };
  /** times R was wound back, that went well and that did not (epoch_advance_total) */
  readonly epochAdvances = { success: 0, failure: 0 };
  private lastSync = performance.now();
  /** queues with requests waiting or executing, and the seats those ask for or hold */
  private activeQueues = 0;
  private seatsRequested = 0;
  /** the queue dispatch looks from (kube's robinIndex) */
  private robin = -1;
  /** the limit set on this thread (tests, or the nominal seats until the borrowing loop sets one) */
  private ownLimit = 0;
  /** slot.releases when the last newcomer tried for a seat (see awaitSeat) */
  private seenAtTry = 0;
  /** what a release on any thread calls while this thread has waiters (one function, so the slot wakes it once) */
  private readonly wake = () => this.dispatch();
  /** the level's seat counts: shared by the front threads, or this thread's own (unit tests) */
  readonly slot: SeatSlot;

  constructor(config: LevelConfig, slot: SeatSlot = SeatSlot.local()) {
    this.config = config;
    this.slot = slot;
    this.resizeQueues();
  }

  /** seats the level may use at once: Infinity for exempt, else the borrowing loop's, else this thread's */
  get limit(): number {
    if (this.config.exempt) return Infinity;
    return this.slot.currentLimit ?? this.ownLimit;
  }
  set limit(v: number) {
    this.ownLimit = v;
  }

  /** seats held by the level's requests on every thread */
  get executing(): number {
    return this.slot.executing;
  }

  reconfigure(config: LevelConfig): void {
    const old = this.config;
    this.config = config;
    if (config.queues !== old.queues || config.limitResponse !== old.limitResponse || config.exempt !== old.exempt || this.queues.length === 0) this.resizeQueues();
  }

  /** A new queue count: the waiting requests are dealt out again in their order of arrival. */
  private resizeQueues(): void {
    const waiting = this.queues.flatMap((q) => q.waiting).sort((a, b) => a.since - b.since);
    const n = this.config.exempt || this.config.limitResponse !== 'Queue' ? 0 : this.config.queues;
    this.syncTime(performance.now());
    this.gen++;
    this.queues = Array.from({ length: n }, () => ({ waiting: [], waitingSeats: 0, nextDispatchR: this.currentR, seatsInUse: 0, executing: 0 }));
    this.robin = -1;
    this.activeQueues = 0;
    this.seatsRequested = 0;
    if (n === 0) {
      this.refuse(waiting);
      return;
    }
    waiting.forEach((w, i) => {
      w.queue = i % n;
      const q = this.queues[w.queue];
      if (q.waiting.length === 0) this.activeQueues++;
      q.waiting.push(w);
      const seats = w.seats ?? 1;
      q.waitingSeats += seats;
      this.seatsRequested += seats;
    });
  }

  /** Refuses every waiter of this thread: the level went away, or stopped queuing. */
  refuseAll(): void {
    this.refuse(this.queues.flatMap((q) => q.waiting.splice(0)));
    for (const q of this.queues) q.waitingSeats = 0;
  }

  private refuse(waiters: Waiter[]): void {
    const now = performance.now();
    for (const w of waiters) {
      const seats = w.seats ?? 1;
      this.waiting -= seats;
      this.waitingRequests--;
      this.slot.addWaiting(-seats);
      this.slot.timing.note(now, 0, 0, -1, -seats, w.kind);
      w.state = 'gone';
      w.settle(false, 'concurrency-limit');
    }
  }

  /**
   * Brings R up to now: it advanced by min(seats asked for, limit) / active queues per real
   * second since the last change (kube's syncTimeLocked and getVirtualTimeRatioLocked).
   */
  syncTime(now: number): void {
    const dt = (now - this.lastSync) / 1000;
    this.lastSync = now;
    if (dt > 0 && this.activeQueues > 0) {
      this.currentR += (dt * Math.min(this.seatsRequested, this.limit)) / this.activeQueues;
      if (this.currentR >= HIGH_R) this.advanceEpoch();
    }
  }

  /**
   * Winds R and every reading of it back by R_DECREMENT (kube's advanceEpoch): idle queues
   * restart at 0, the others' starts and their waiters' arrivals move back. A reading that
   * would go below 0 is the failure kube counts (its unsigned values would wrap); here it
   * stops at 0.
   */
  advanceEpoch(): void {
    this.currentR -= R_DECREMENT;
    let ok = true;
    const back = (v: number) => {
      if (v < R_DECREMENT) {
        ok = false;
        return 0;
      }
      return v - R_DECREMENT;
    };
    for (const q of this.queues) {
      if (!active(q)) {
        q.nextDispatchR = 0;
        continue;
      }
      q.nextDispatchR = back(q.nextDispatchR);
      for (const w of q.waiting) if (w.arrivalR !== undefined) w.arrivalR = back(w.arrivalR);
    }
    if (ok) this.epochAdvances.success++;
    else this.epochAdvances.failure++;
  }

  /**
   * Shuffle sharding's hand: handSize distinct queues dealt from the flow's hash, each card
   * an index among the queues not dealt yet (kube's shufflesharding.Dealer). A flow's hand
   * is the same for as long as the queue count is, so callers may keep it.
   */
  hand(flowHash: number): number[] {
    const n = this.queues.length;
    const size = Math.min(this.config.handSize, n);
    const dealt: number[] = [];
    let h = flowHash;
    for (let i = 0; i < size; i++) {
      const range = n - i;
      let card = h % range;
      h = Math.floor(h / range);
      // the card-th queue of those left: step over the ones dealt already, lowest first
      for (const d of dealt.slice().sort((a, b) => a - b)) if (card >= d) card++;
      dealt.push(card);
    }
    return dealt;
  }

  /** The queue of a hand whose waiting requests ask for the fewest seats (the first on a tie). */
  pickFrom(hand: readonly number[]): number {
    let best = -1;
    for (const card of hand) if (best < 0 || this.queues[card].waitingSeats < this.queues[best].waitingSeats) best = card;
    return best;
  }

  pickQueue(flowHash: number): number {
    return this.pickFrom(this.hand(flowHash));
  }

  /**
   * Puts a request in its queue (w.queue), or says why not: queue-full when the level's
   * seats are all taken and the queue holds queueLengthLimit requests already.
   */
  enqueue(w: Waiter): RejectReason | null {
    const q = this.queues[w.queue];
    if (this.slot.executing >= this.limit && q.waiting.length >= this.config.queueLengthLimit) return 'queue-full';
    const now = performance.now();
    this.syncTime(now);
    const seats = w.seats ?? 1;
    w.work ??= totalWork(seats, 0, 0);
    w.arrivalR = this.currentR;
    if (!active(q)) {
      // an idle queue starts again at the present (kube: the queue's start R is set to R)
      q.nextDispatchR = this.currentR;
      this.activeQueues++;
    }
    q.waiting.push(w);
    q.waitingSeats += seats;
    this.seatsRequested += seats;
    this.waiting += seats;
    this.waitingRequests++;
    this.slot.addWaiting(seats);
    this.slot.timing.note(now, 0, 0, 1, seats, w.kind);
    return null;
  }

  /** Takes a waiter out of its queue (it timed out, or its client went away). */
  remove(w: Waiter): void {
    const q = this.queues[w.queue];
    const i = q ? q.waiting.indexOf(w) : -1;
    if (i < 0) return;
    const now = performance.now();
    this.syncTime(now);
    const seats = w.seats ?? 1;
    q.waiting.splice(i, 1);
    q.waitingSeats -= seats;
    this.seatsRequested -= seats;
    if (!active(q)) this.activeQueues--;
    this.waiting -= seats;
    this.waitingRequests--;
    this.slot.addWaiting(-seats);
    this.slot.timing.note(now, 0, 0, -1, -seats, w.kind);
    this.boundNextDispatch(q);
  }

  /**
   * A newcomer's seats: when they fit and nobody waits on any thread. Granted, they are
   * charged to `queue` (-1: none) as a dispatch from it would be (the request is the only
   * one to dispatch, so kube's enqueue-then-dispatch picks it at once).
   */
  tryTake(seats = 1, queue = -1, work = totalWork(seats, 0, 0), kind = -1): Execution | null {
    this.seenAtTry = this.slot.releases;
    if (!this.slot.tryTake(this.limit, seats)) return null;
    const now = performance.now();
    this.slot.timing.note(now, seats, 1, 0, 0, kind);
    if (queue >= 0) {
      this.syncTime(now);
      const q = this.queues[queue];
      if (!active(q)) {
        q.nextDispatchR = this.currentR;
        this.activeQueues++;
      } else if (q.nextDispatchR < this.currentR) {
        // kube enqueues it first: a queue's start is never before its head's arrival (R now)
        q.nextDispatchR = this.currentR;
      }
      this.seatsRequested += seats;
      // the only queue with a waiter is this one (no one waits), as kube's dispatch sees it
      const d = this.lastDispatch;
      d.dispatched = true;
      d.r = this.currentR;
      d.s = d.sMin = d.sMax = q.nextDispatchR;
      d.dsMin = d.dsMax = q.nextDispatchR - q.seatsInUse * ESTIMATED_SERVICE_SECONDS;
      this.started(q, seats, work);
    }
    return { queue, gen: this.gen, seats, initialSeats: seats, latencyMs: 0, started: now, kind };
  }

  /** kube's dispatchLocked, on the queue's side: the request's work moves the queue's start on. */
  private started(q: FairQueue, seats: number, work: number): void {
    q.nextDispatchR += work;
    q.seatsInUse += seats;
    q.executing++;
    this.boundNextDispatch(q);
  }

  /** kube's boundNextDispatchLocked: a queue's start is never before its head's arrival. */
  private boundNextDispatch(q: FairQueue): void {
    const head = q.waiting[0];
    if (head !== undefined && q.nextDispatchR < head.arrivalR!) q.nextDispatchR = head.arrivalR!;
  }

  /**
   * The newcomer that tryTake just refused joined a queue: this thread listens for seats
   * released (on any thread) since that attempt. It does not dispatch at once: seats free
   * now are owed to the threads whose waiters came first (they were woken for them).
   */
  awaitSeat(): void {
    if (this.waiting > 0) this.slot.listen(this.seenAtTry, this.wake);
  }

  /**
   * A request's response ended: its queue is credited with what its initial seats did not
   * use of their estimate (or charged what they used beyond it), and its seats are given
   * back, after its additional latency when it has one (kube's finishRequestLocked).
   */
  finish(e: Execution, now = performance.now()): void {
    const q = e.queue >= 0 && e.gen === this.gen ? this.queues[e.queue] : undefined;
    if (q !== undefined) {
      this.syncTime(now);
      q.executing--;
      q.nextDispatchR -= e.initialSeats * (ESTIMATED_SERVICE_SECONDS - (now - e.started) / 1000);
      this.boundNextDispatch(q);
    }
    if (e.latencyMs > 0) {
      // the request has ended; its final seats stay held through the additional latency
      this.slot.timing.note(now, 0, -1, 0, 0, e.kind);
      setTimeout(() => this.releaseSeats(q, e.seats, performance.now(), 0), e.latencyMs).unref();
    } else this.releaseSeats(q, e.seats, now, 1, e.kind);
  }

  private releaseSeats(q: FairQueue | undefined, seats: number, now: number, requests: number, kind = -1): void {
    if (q !== undefined) {
      this.syncTime(now);
      q.seatsInUse -= seats;
      this.seatsRequested -= seats;
      if (!active(q)) this.activeQueues--;
    }
    this.slot.timing.note(now, -seats, -requests, 0, 0, kind);
    this.release(seats);
  }

  /**
   * Seats end. Alone with waiters, this thread hands them on at once, as a single thread
   * does. When other threads have waiters too, it only wakes them: every thread with waiters
   * (this one included) listens for releases and races for the seats when woken, so a busy
   * thread does not keep the level's seats to its own queues.
   */
  release(seats = 1): void {
    this.slot.release(seats);
    if (this.waiting > 0 && this.slot.waiting <= this.waiting) this.dispatch();
  }

  /**
   * Grants free seats to this thread's waiting requests, the head of the queue of least
   * virtual finish first; when its seats are not free (on any thread), listens for the next
   * release anywhere. As kube's, a head that does not fit is not overtaken by a narrower one.
   */
  dispatch(): void {
    const n = this.queues.length;
    while (this.waiting > 0) {
      // read before the attempt: a release after it changes the value listen() waits on
      const seen = this.slot.releases;
      const now = performance.now();
      this.syncTime(now);
      let best = -1;
      let bestFinish = Infinity;
      // (the bounds of S over the queues with waiters, for the dispatch metrics)
      let sMin = Infinity;
      let sMax = -Infinity;
      let dsMin = Infinity;
      let dsMax = -Infinity;
      for (let k = 1; k <= n; k++) {
        const i = (this.robin + k + n) % n;
        const q = this.queues[i];
        if (q.waiting.length === 0) continue;
        const s = q.nextDispatchR;
        const ds = s - q.seatsInUse * ESTIMATED_SERVICE_SECONDS;
        if (s < sMin) sMin = s;
        if (s > sMax) sMax = s;
        if (ds < dsMin) dsMin = ds;
        if (ds > dsMax) dsMax = ds;
        const finish = q.nextDispatchR + q.waiting[0].work!;
        if (finish < bestFinish) {
          bestFinish = finish;
          best = i;
        }
      }
      if (best < 0) {
        // every queue is empty: the count was off; trust the queues
        // (read_vs_write's count of them stays off: their kinds are not known here)
        this.slot.timing.note(now, 0, 0, -this.waitingRequests, -this.waiting);
        this.slot.addWaiting(-this.waiting);
        this.waiting = 0;
        this.waitingRequests = 0;
        return;
      }
      const q = this.queues[best];
      const w = q.waiting[0];
      const seats = w.seats ?? 1;
      if (!this.slot.tryDispatch(this.limit, seats)) {
        this.noAccommodation++;
        if (w.flow) w.flow.noAccommodation++;
        this.slot.listen(seen, this.wake);
        return;
      }
      q.waiting.shift();
      q.waitingSeats -= seats;
      this.waiting -= seats;
      this.waitingRequests--;
      this.robin = best;
      this.slot.timing.note(now, seats, 1, -1, -seats, w.kind);
      const d = this.lastDispatch;
      d.dispatched = true;
      d.r = this.currentR;
      d.s = q.nextDispatchR;
      d.sMin = sMin;
      d.sMax = sMax;
      d.dsMin = dsMin;
      d.dsMax = dsMax;
      this.started(q, seats, w.work!);
      w.state = 'running';
      w.settle(true);
    }
  }
}

/** A 32-bit FNV-1a hash of a flow's identity (schema name and distinguisher). */
export function flowHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Nominal seats of every level (exempt ones too) for a server concurrency limit, by kube's formula. */
export function nominalLimits(levels: Iterable<LevelConfig>, serverCL: number): Map<string, number> {
  const all = [...levels];
  const sum = all.reduce((a, l) => a + Math.max(0, l.shares), 0);
  const out = new Map<string, number>();
  for (const l of all) out.set(l.name, sum > 0 ? Math.ceil((serverCL * Math.max(0, l.shares)) / sum) : 0);
  return out;
}

/**
 * A level's bounds around its nominal seats (kube's finishQueueSetReconfigsLocked): lower =
 * nominal less round(nominal × lendablePercent%), upper = nominal plus round(nominal ×
 * borrowingLimitPercent%), or plus the whole server's seats when that is unset.
 */
export function limitBounds(cfg: LevelConfig, nominal: number, serverCL: number): { lower: number; upper: number } {
  const lendable = Math.round((nominal * cfg.lendablePercent) / 100);
  const borrowable = cfg.borrowingLimitPercent === null ? serverCL : Math.round((nominal * cfg.borrowingLimitPercent) / 100);
  return { lower: nominal - lendable, upper: nominal + borrowable };
}

/**
 * The most seats one request of a Queue level may hold: max(1, min(ceil(15% of nominal),
 * nominal / handSize)) as kube's MaxSeatsTracker, and never over the estimator's 10; 10 for
 * a level without queues.
 */
export function levelMaxSeats(cfg: LevelConfig, nominal: number): number {
  if (cfg.exempt || cfg.limitResponse !== 'Queue') return 10;
  return Math.min(10, Math.max(1, Math.min(Math.ceil(nominal * 0.15), Math.floor(nominal / cfg.handSize))));
}
