// Seats and queues of the priority levels: how many requests of each Limited level may
// execute at once, and what happens to the rest (429 at once for Reject; for Queue, a wait
// in one of the level's queues, chosen by shuffle sharding the request's flow, until a seat
// frees or the wait limit passes).
//
// The server's concurrency limit is --max-requests-inflight + --max-mutating-requests-inflight.
// A Limited level's nominal limit is ceil(serverCL × its nominalConcurrencyShares / the sum
// of every level's shares), as kube computes it (the exempt level's shares count in the sum).
// Simplified against kube: no borrowing between levels (lendablePercent is read, not used:
// a level's limit is its nominal one); every request takes one seat (no width estimate for
// lists); a watch takes none (kube holds one for its initialization); queues are served
// round-robin, one request per non-empty queue in turn, rather than kube's virtual-time
// fair queuing.
//
// With several front threads (issue 18) the seats are the server's: a level's executing and
// waiting counts live in its slot of the shared seat table (shared-seats.ts), so its limit
// holds across threads and a newcomer on one thread does not jump requests queued on
// another. The queues stay per thread (each thread shuffle-shards its own requests over its
// own copy of the level's queues; a flow's requests meet in the same queues only on one
// thread): a thread with waiters listens for a seat released on any thread and then races
// the other threads with waiters for it.
//
// Thread ownership: the front thread owns its levels, queues and local counts here; the
// seat counts in each level's SeatSlot are every front thread's (Atomics only).
import type { LevelConfig } from './classifier.js';
import type { RejectReason } from '../errors.js';
import { SeatSlot } from './shared-seats.js';

/** A request waiting in a queue for a seat. */
export interface Waiter {
  /** called with true when a seat is granted (it now holds one), false when refused */
  settle(granted: boolean, reason?: RejectReason): void;
  queue: number;
  /** performance.now() at enqueue */
  since: number;
  state: 'queued' | 'running' | 'gone';
}

/** One level's live state; it outlives configuration changes (kept by name). */
export class LevelState {
  config: LevelConfig;
  /** seats the level may use at once (Infinity for exempt) */
  limit = 0;
  /** its nominal seats by kube's formula (0 for the exempt level with its default 0 shares) */
  nominal = 0;
  /** requests in this thread's queues (slot.waiting counts every thread's) */
  waiting = 0;
  queues: Waiter[][] = [];
  /** the next queue the round-robin dispatch looks at */
  private next = 0;
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

  /** seats held by the level's requests on every thread */
  get executing(): number {
    return this.slot.executing;
  }

  reconfigure(config: LevelConfig): void {
    const oldQueues = this.config.queues;
    this.config = config;
    if (config.queues !== oldQueues || this.queues.length === 0) this.resizeQueues();
  }

  /** A new queue count: the waiting requests are dealt out again in their order of arrival. */
  private resizeQueues(): void {
    const waiting = this.queues.flat().sort((a, b) => a.since - b.since);
    const n = this.config.exempt || this.config.limitResponse !== 'Queue' ? 0 : this.config.queues;
    this.queues = Array.from({ length: n }, () => []);
    this.next = 0;
    if (n === 0) {
      this.refuse(waiting);
      return;
    }
    waiting.forEach((w, i) => {
      w.queue = i % n;
      this.queues[w.queue].push(w);
    });
  }

  /** Refuses every waiter of this thread: the level went away, or stopped queuing. */
  refuseAll(): void {
    this.refuse(this.queues.flatMap((q) => q.splice(0)));
  }

  private refuse(waiters: Waiter[]): void {
    for (const w of waiters) {
      this.waiting--;
      this.slot.addWaiting(-1);
      w.state = 'gone';
      w.settle(false, 'concurrency-limit');
    }
  }

  /**
   * Shuffle sharding: the flow's hash deals a hand of handSize distinct queues out of the
   * level's queues; the request goes to the shortest of them (the first on a tie).
   */
  pickQueue(flowHash: number): number {
    const n = this.queues.length;
    const hand = Math.min(this.config.handSize, n);
    // Deal without replacement: each card is an index into the queues not dealt yet.
    const dealt: number[] = [];
    let h = flowHash;
    let best = -1;
    for (let i = 0; i < hand; i++) {
      const range = n - i;
      let card = h % range;
      h = Math.floor(h / range);
      // map the card onto the i-th remaining queue (skipping the ones already dealt)
      for (const d of dealt.slice().sort((a, b) => a - b)) if (card >= d) card++;
      dealt.push(card);
      if (best < 0 || this.queues[card].length < this.queues[best].length) best = card;
    }
    return best;
  }

  enqueue(w: Waiter): RejectReason | null {
    const q = this.queues[w.queue];
    if (q.length >= this.config.queueLengthLimit) return 'queue-full';
    q.push(w);
    this.waiting++;
    this.slot.addWaiting(1);
    return null;
  }

  /** Takes a waiter out of its queue (it timed out, or its client went away). */
  remove(w: Waiter): void {
    const q = this.queues[w.queue];
    const i = q ? q.indexOf(w) : -1;
    if (i >= 0) {
      q.splice(i, 1);
      this.waiting--;
      this.slot.addWaiting(-1);
    }
  }

  /** A newcomer's seat: below the limit and with nobody waiting on any thread. */
  tryTake(): boolean {
    this.seenAtTry = this.slot.releases;
    return this.slot.tryTake(this.limit);
  }

  /**
   * The newcomer that tryTake just refused joined a queue: this thread listens for a seat
   * released (on any thread) since that attempt. It does not dispatch at once: a seat free
   * now is owed to the threads whose waiters came first (they were woken for it).
   */
  awaitSeat(): void {
    if (this.waiting > 0) this.slot.listen(this.seenAtTry, this.wake);
  }

  /**
   * A seat ends. Alone with waiters, this thread hands it on at once, as a single thread
   * does. When other threads have waiters too, it only wakes them: every thread with waiters
   * (this one included) listens for releases and races for the seat when woken, so a busy
   * thread does not keep the level's seats to its own queues.
   */
  release(): void {
    this.slot.release();
    if (this.waiting > 0 && this.slot.waiting <= this.waiting) this.dispatch();
  }

  /**
   * Grants free seats to this thread's waiting requests, one queue after another; when the
   * seats are all taken (on any thread), listens for the next release anywhere.
   */
  dispatch(): void {
    const n = this.queues.length;
    while (this.waiting > 0) {
      // read before the attempt: a release after it changes the value listen() waits on
      const seen = this.slot.releases;
      let q = this.queues[this.next];
      for (let i = 0; i < n && q.length === 0; i++) {
        this.next = (this.next + 1) % n;
        q = this.queues[this.next];
      }
      if (q === undefined || q.length === 0) {
        // every queue is empty: the count was off; trust the queues
        this.slot.addWaiting(-this.waiting);
        this.waiting = 0;
        return;
      }
      if (!this.slot.tryDispatch(this.limit)) {
        this.slot.listen(seen, this.wake);
        return;
      }
      const w = q.shift()!;
      this.waiting--;
      this.next = (this.next + 1) % n;
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
