// One queue set per priority level for the whole server, however many front threads serve
// it (issue 18, issue 22). A request that finds its level's seats taken waits in the main
// thread's queues, wherever its connection came in: the other front threads send it there
// (enqueue) and run it when the main thread grants it its seats (granted). So shuffle
// sharding, the virtual-time choice of the next queue and the fairness between flows are
// kube's queueset's over every thread's requests, not each thread's over its own.
//
// Only requests that must wait make the trip: a request that finds a free seat (and nobody
// waiting on any thread) takes it on its own thread with a compare-and-swap in the shared
// seat table (shared-seats.ts), as before. While anyone waits, every newcomer waits too
// (SeatSlot.tryTake refuses while the level has waiters), so under contention every
// request goes through the one queue set.
//
// The exchange, over one MessagePort per front thread:
//   thread -> main  enqueue {id, level, schema, hash, seats, initialSeats, latencyMs, work, kind}
//   main -> thread  outcome {id, granted, reason}   (granted: the seats are held on the thread's behalf)
//   thread -> main  cancel {id}                      (its wait ended first: time-out, or the client left)
//   thread -> main  finish {id}                      (a granted request ended: its seats go back)
//   main -> thread  local {id}                       (the main thread does not know the level yet:
//                                                     the thread queues it itself, as before)
// A grant that crosses a cancel is finished at once by the thread. The wait limit is timed on
// the request's own thread (it answers the 429); the main thread only keeps the queues.
//
// Thread ownership: a QueueHost lives on the main thread, one per other front thread, and
// owns the waiters and executions it made for that thread; a RemoteQueues lives on its front
// thread and owns the pending outcomes of that thread's requests.
import type { MessagePort } from 'node:worker_threads';
import type { RejectReason } from '../errors.js';
import type { Execution, LevelState, Waiter } from './priority-levels.js';
import type { FlowStats } from './flow-stats.js';

export interface EnqueueMessage {
  t: 'enqueue';
  id: number;
  level: string;
  schema: string;
  /** the flow's hash (flowHash): its hand of queues */
  hash: number;
  seats: number;
  initialSeats: number;
  latencyMs: number;
  work: number;
  kind: number;
}
type ToMain = EnqueueMessage | { t: 'cancel'; id: number } | { t: 'finish'; id: number };
type ToThread = { t: 'outcome'; id: number; granted: boolean; reason?: RejectReason } | { t: 'local'; id: number };

/** What a queued request learns: its seats (granted), a refusal, or that it must queue on its own thread. */
export type Outcome = { granted: true } | { granted: false; reason: RejectReason } | { local: true };

/** The front thread's side: its requests' places in the main thread's queues. */
export class RemoteQueues {
  private nextId = 1;
  private readonly pending = new Map<number, (o: Outcome) => void>();
  /** granted requests not yet finished */
  private readonly running = new Set<number>();

  constructor(private readonly port: MessagePort) {
    port.on('message', (m: ToThread) => {
      const done = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.t === 'local') {
        done?.({ local: true });
        return;
      }
      if (m.granted) {
        // a grant that crossed the request's cancel: its seats go straight back
        if (done === undefined) return this.post({ t: 'finish', id: m.id });
        this.running.add(m.id);
        done({ granted: true });
      } else done?.({ granted: false, reason: m.reason ?? 'time-out' });
    });
    // (a thread with nothing queued is not kept alive by the port)
    port.unref();
  }

  /** Queues a request in the main thread's queue set; `done` is called once with its outcome. */
  enqueue(m: Omit<EnqueueMessage, 't' | 'id'>, done: (o: Outcome) => void): number {
    const id = this.nextId++;
    this.pending.set(id, done);
    this.post({ t: 'enqueue', id, ...m });
    return id;
  }

  /** The request stopped waiting on its own (time-out, client gone): no outcome will be delivered. */
  cancel(id: number): void {
    if (!this.pending.delete(id)) return;
    this.post({ t: 'cancel', id });
  }

  /** A granted request ended: the main thread gives its seats back. */
  finish(id: number): void {
    if (!this.running.delete(id)) return;
    this.post({ t: 'finish', id });
  }

  private post(m: ToMain): void {
    this.port.postMessage(m);
  }
}

/** The main thread's side, for one other front thread. */
export class QueueHost {
  private readonly waiting = new Map<number, { w: Waiter; st: LevelState }>();
  private readonly running = new Map<number, { e: Execution; st: LevelState }>();

  constructor(
    private readonly port: MessagePort,
    /** the main thread's state of a level, by name (undefined: not known here yet) */
    private readonly levelOf: (name: string) => LevelState | undefined,
    /** the main thread's counters of a (level, schema) pair: the queue lengths, and the dispatches that found no room */
    private readonly flowOf: (level: string, schema: string) => FlowStats,
  ) {
    port.on('message', (m: ToMain) => this.onMessage(m));
    port.unref();
  }

  private onMessage(m: ToMain): void {
    if (m.t === 'enqueue') return this.enqueue(m);
    if (m.t === 'cancel') {
      const q = this.waiting.get(m.id);
      if (q === undefined) return;
      this.waiting.delete(m.id);
      q.st.remove(q.w);
      q.w.state = 'gone';
      return;
    }
    const r = this.running.get(m.id);
    if (r === undefined) return;
    this.running.delete(m.id);
    r.st.finish(r.e);
  }

  private enqueue(m: EnqueueMessage): void {
    const st = this.levelOf(m.level);
    if (st === undefined || st.queues.length === 0) return this.post({ t: 'local', id: m.id });
    const flow = this.flowOf(m.level, m.schema);
    const w: Waiter = {
      queue: st.pickFrom(st.hand(m.hash)),
      since: performance.now(),
      state: 'queued',
      seats: m.seats,
      work: m.work,
      kind: m.kind,
      flow,
      settle: (granted, reason) => {
        this.waiting.delete(m.id);
        if (granted) {
          // charged to its queue by the dispatch; finish() credits it back when the request ends
          this.running.set(m.id, { st, e: { queue: w.queue, gen: st.gen, seats: m.seats, initialSeats: m.initialSeats, latencyMs: m.latencyMs, started: performance.now(), kind: m.kind } });
          this.post({ t: 'outcome', id: m.id, granted: true });
        } else this.post({ t: 'outcome', id: m.id, granted: false, reason });
      },
    };
    const full = st.enqueue(w);
    if (full) return this.post({ t: 'outcome', id: m.id, granted: false, reason: full });
    flow.queueLength.observe(st.queues[w.queue].waiting.length);
    this.waiting.set(m.id, { w, st });
    // the waiters are all here: whatever is free goes to the queue of least virtual finish
    st.dispatch();
  }

  /**
   * The thread ended (it failed, or the server stops): its waiters leave the queues and the
   * seats granted to its requests go back.
   */
  close(): void {
    for (const { w, st } of this.waiting.values()) {
      st.remove(w);
      w.state = 'gone';
    }
    this.waiting.clear();
    for (const { e, st } of this.running.values()) st.finish(e);
    this.running.clear();
    this.port.close();
  }

  private post(m: ToThread): void {
    this.port.postMessage(m);
  }
}
