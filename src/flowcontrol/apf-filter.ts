// The priority-and-fairness filter (--enable-priority-and-fairness, on by default as in
// kube-apiserver 1.33). Every authenticated request is classified into a FlowSchema and
// priority level (classifier.ts); its responses carry the X-Kubernetes-PF-* headers with
// both objects' uids, whatever answers it, a 429 included. Its work is estimated in seats
// (work-estimator.ts: a LIST by the objects it goes through, a write by the watchers it
// will notify, a WATCH that asked for initial events like a LIST). Then:
//
//   - exempt level (system:masters, probes): runs at once; its seats are counted (the
//     borrowing loop sees the exempt level's demand, as kube's) and timed, but never limited;
//   - a Limited level whose seats fit and where no one waits: takes them until its response
//     ends (a watch: until it is set up, kube's watch initialization signal), plus the
//     additional latency of a write with many watchers;
//   - otherwise Reject → 429 at once; Queue → waits in a queue (priority-levels.ts: kube's
//     fair queuing) until its seats are free, or 429 when its queue is full or its wait
//     passes the limit: a quarter of --request-timeout, at most a minute, as kube's.
//
// The levels' limits move with their demand: the main thread runs kube's seat borrowing
// every 10 s (borrowing.ts) and sets every level's current limit in the shared seat table.
//
// With several front threads (issue 18) each runs its own PriorityAndFairness on one shared
// seat table (shared-seats.ts): the seats a level holds, the seats its waiting requests ask
// for, its current limit and the inflight gauges are counted across threads, so the limits
// are the server's, and so are the time-weighted statistics of those counts (seat-timing.ts:
// the seat demand the borrowing loop reads, the timing ratio histograms, which the main
// thread's instance serves). A request that must wait waits in the main thread's queues,
// whichever thread it came in on (remote-queues.ts): one queue set per level, so fairness
// between flows is the server's; the other apiserver_flowcontrol_* counters are each
// thread's (summed at a scrape).
//
// Thread ownership: the front thread owns all of it (the classifier's cache and config, the
// levels' queues, the counters) except the seat counts, which every front thread shares;
// the main thread's instance also owns the borrowing loop.
import { requestTimeoutMs } from '../http/filters/request-timeout.js';
import type { Filter } from '../http/filter-chain.js';
import type { ApiRequest, ResponseSink } from '../http/types.js';
import type { Cacher } from '../storage/cacher.js';
import type { Store, ResourceTarget } from '../registry/store.js';
import { TooManyRequestsError, type RejectReason } from '../errors.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import { Classifier, type Classification, type LevelConfig } from './classifier.js';
import { LevelState, flowHash, levelMaxSeats, limitBounds, nominalLimits, totalWork, type Execution, type Waiter } from './priority-levels.js';
import { FlowStatsRegistry, type FlowStats } from './flow-stats.js';
import { SharedSeats } from './shared-seats.js';
import { estimateWork, type WorkSources } from './work-estimator.js';
import { Borrowing } from './borrowing.js';
import { QueueHost, type RemoteQueues } from './remote-queues.js';
import type { MessagePort } from 'node:worker_threads';
import type { FlowControlSnapshot } from '../metrics/flowcontrol-metrics.js';

/**
 * Long-running requests other than watches (kube's long-running check: the proxy verb, and
 * the attach, exec, log, portforward and proxy subresources) bypass flow control entirely,
 * as in kube: not classified, no headers, no seat.
 */
const LONG_RUNNING_SUBRESOURCES = new Set(['attach', 'exec', 'log', 'portforward', 'proxy']);

const MUTATING = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/** kube's denominator of a level's waiting requests: max(1, queueLengthLimit) × max(1, queues) for a Queue level, else 1 */
function waitRoom(cfg: LevelConfig): number {
  if (cfg.exempt || cfg.limitResponse !== 'Queue') return 1;
  return Math.max(1, cfg.queueLengthLimit) * Math.max(1, cfg.queues);
}

export interface ApfOptions {
  /** --max-requests-inflight + --max-mutating-requests-inflight */
  serverConcurrencyLimit: number;
  /** --request-timeout, in seconds: a queued request waits at most a quarter of it (and a minute) */
  requestTimeoutSeconds: number;
  /** run the seat borrowing loop, and serve the server's timing histograms (the main thread's instance only) */
  borrowing?: boolean;
  /** --show-hidden-metrics-for-version=1.32: the deprecated request_concurrency_limit and request_concurrency_in_use are served */
  showHiddenMetrics?: boolean;
  /** (a front thread other than the main one) its requests that must wait, wait in the main thread's queues */
  remote?: RemoteQueues;
}

/** What the filter keeps per classification outcome: its counters, level and shuffle-sharding hand. */
interface FlowHandle {
  stats: FlowStats;
  state: LevelState;
  /** the names of its level and FlowSchema (the main thread's queues know the level by name) */
  level: string;
  schema: string;
  /** the flow's hash (schema name and distinguisher) */
  hash: number;
  /** its hand of queues, dealt for the queue generation handGen */
  hand: number[];
  handGen: number;
}

/** no counts known: every list is of an unknown resource (one seat), no watchers */
const NO_COUNTS: WorkSources = { objectCount: () => undefined, watchCount: () => 0 };

export class PriorityAndFairness {
  readonly classifier: Classifier;
  readonly stats = new FlowStatsRegistry();
  /** live state of every configured level, by name */
  readonly levels = new Map<string, LevelState>();
  private readonly waitLimitMs: number;
  private readonly requestTimeoutSeconds: number;
  private readonly borrowing: Borrowing | null;
  /** the watcher count the estimator read for the request being estimated (watch_count_samples) */
  private lastWatchCount = -1;
  private readonly work: WorkSources;

  /** `seats`: the table the front threads share; without one, this thread's own (as in unit tests) */
  constructor(
    cacher: Cacher,
    store: Store,
    fsT: ResourceTarget,
    plT: ResourceTarget,
    private opts: ApfOptions,
    private readonly seats: SharedSeats = new SharedSeats(),
    work: WorkSources = NO_COUNTS,
  ) {
    this.waitLimitMs = Math.min(60, opts.requestTimeoutSeconds / 4) * 1000;
    this.requestTimeoutSeconds = opts.requestTimeoutSeconds;
    this.work = {
      objectCount: work.objectCount,
      watchCount: (gr, ns) => (this.lastWatchCount = work.watchCount(gr, ns)),
    };
    this.borrowing = opts.borrowing
      ? new Borrowing(() => {
          this.classifier.levels();
          return [...this.levels.entries()].map(([name, st]) => ({ name, nominal: st.nominal, lower: st.lower, upper: st.upper, slot: st.slot, waitRoom: waitRoom(st.config) }));
        }, opts.serverConcurrencyLimit)
      : null;
    const objects = (t: ResourceTarget) => [...store.cacheOf(t).items.values()].map((e) => entryObject(e)).filter((o) => o && !o.metadata?.deletionTimestamp);
    this.classifier = new Classifier(() => ({ schemas: objects(fsT), levels: objects(plT) }));
    this.classifier.onRebuild = (levels) => this.reconfigure(levels);
    cacher.observe((cache) => {
      if (cache.gr === fsT.gr || cache.gr === plT.gr) this.classifier.invalidate();
    });
    this.borrowing?.start();
  }

  /** Stops the borrowing loop (the server's shutdown). */
  stop(): void {
    this.borrowing?.stop();
  }

  /**
   * (the main thread) Keeps, in this thread's queues, the waiting requests another front
   * thread sends over the port; close() the host returned when that thread ends.
   */
  hostRemote(port: MessagePort): QueueHost {
    return new QueueHost(
      port,
      (name) => {
        this.classifier.levels(); // rebuilt first if the configuration changed
        return this.levels.get(name);
      },
      (level, schema) => this.stats.of(level, schema),
    );
  }

  /** What /metrics shows of it. */
  snapshot(): FlowControlSnapshot {
    this.classifier.levels(); // rebuilt first if the configuration changed
    const b = this.borrowing;
    const now = performance.now();
    return {
      flows: this.stats.all.values(),
      levels: [...this.levels.entries()].map(([name, st]) => ({
        name,
        nominal: st.nominal,
        lower: st.lower,
        upper: st.upper,
        current: st.config.exempt ? st.slot.currentLimit ?? st.nominal : st.limit,
        currentR: st.currentR,
        dispatch: st.lastDispatch.dispatched ? st.lastDispatch : undefined,
        epochAdvances: st.epochAdvances,
        // the statistics are the server's: the main thread's instance serves them
        timing: b ? st.slot.timing.histograms(now) : undefined,
      })),
      borrowing: b ? { fairFrac: b.fairFrac, byLevel: b.byLevel } : undefined,
      readWrite: b ? this.seats.rw.histograms(now) : undefined,
      showHidden: this.opts.showHiddenMetrics === true,
    };
  }

  /** A new configuration: limits recomputed, queues resized, levels that went refuse their waiters. */
  private reconfigure(levels: Map<string, LevelConfig>): void {
    const serverCL = this.opts.serverConcurrencyLimit;
    const limits = nominalLimits(levels.values(), serverCL);
    for (const [name, cfg] of levels) {
      let st = this.levels.get(name);
      if (st) st.reconfigure(cfg);
      else this.levels.set(name, (st = new LevelState(cfg, this.seats.level(name))));
      st.nominal = limits.get(name) ?? 0;
      const { lower, upper } = limitBounds(cfg, st.nominal, serverCL);
      st.lower = lower;
      st.upper = upper;
      st.maxSeats = levelMaxSeats(cfg, st.nominal);
      // until the borrowing loop sets one: kube's first current limit, nominal less half the lendable seats
      st.limit = st.nominal - Math.floor((st.nominal - lower) / 2);
      cfg.state = st;
    }
    for (const [name, st] of this.levels) {
      if (levels.has(name)) continue;
      this.levels.delete(name);
      st.refuseAll();
    }
    // the denominators of read_vs_write_current_requests: the nominal seats, and the room in
    // every queue (kube's maxExecutingRequests and maxWaitingRequests)
    let nominalSum = 0;
    let room = 0;
    for (const st of this.levels.values()) {
      nominalSum += st.nominal;
      if (!st.config.exempt && st.config.limitResponse === 'Queue') room += st.config.queues * st.config.queueLengthLimit;
    }
    if (this.borrowing) this.seats.rw.setDenominators(performance.now(), nominalSum, nominalSum, room);
    // kube adjusts the limits at once after a configuration change
    this.borrowing?.adjust();
    // A larger limit may let waiting requests in.
    for (const st of this.levels.values()) st.dispatch();
  }

  private handleOf(c: Classification, req: ApiRequest): FlowHandle {
    let h = c.flow as FlowHandle | undefined;
    if (h !== undefined) return h;
    const fs = c.schema;
    // (a classification is per user and request shape: its distinguisher is fixed)
    const distinguisher = fs.distinguisher === 'ByUser' ? req.user!.name : fs.distinguisher === 'ByNamespace' ? req.requestInfo!.namespace : '';
    h = { stats: this.stats.of(c.level.name, fs.name), state: c.level.state!, level: c.level.name, schema: fs.name, hash: flowHash(`${fs.name}\0${distinguisher}`), hand: [], handGen: -1 };
    c.flow = h;
    return h;
  }

  /** The queue a request of the flow joins now: the flow's hand dealt once per queue generation. */
  private queueOf(h: FlowHandle): number {
    const st = h.state;
    if (st.queues.length === 0) return -1;
    if (h.handGen !== st.gen) {
      h.hand = st.hand(h.hash);
      h.handGen = st.gen;
    }
    return st.pickFrom(h.hand);
  }

  filter(): Filter {
    const classifier = this.classifier;
    return {
      name: 'flow-control',
      run: (req, res) => {
        const info = req.requestInfo!;
        if (info.verb === 'proxy' || (info.subresource !== '' && info.isResourceRequest && LONG_RUNNING_SUBRESOURCES.has(info.subresource))) return;
        const c = classifier.classify(req.user!, info);
        if (c === null) return;
        // The audit filter may have put the Audit-Id header first: the shared list is never mutated.
        req.responseHeaders = req.responseHeaders === undefined ? c.headers : req.responseHeaders.concat(c.headers);
        const h = this.handleOf(c, req);
        const st = h.state;
        const mutating = MUTATING.has(info.verb);
        this.lastWatchCount = -1;
        const est = estimateWork(info, req, this.work, st.maxSeats);
        if (this.lastWatchCount >= 0) h.stats.watchCounts.observe(this.lastWatchCount);
        const seats = est.initialSeats >= est.finalSeats ? est.initialSeats : est.finalSeats;
        h.stats.estimatedSeats.observe(seats);
        if (c.level.exempt) {
          // counted (the borrowing loop sees its demand) and timed as kube's exempt queue set
          // does (dispatchSansQueueLocked), in read_vs_write too (kube's filter notes every
          // request it executes), never limited
          const slot = st.slot;
          const started = performance.now();
          const kind = mutating ? 1 : 0;
          slot.take(seats);
          slot.timing.note(started, seats, 1, 0, 0, kind);
          // (apiserver_current_inflight_requests counts it, as kube's filter counts every request it runs)
          this.seats.addInflight(mutating, 1);
          const stats = h.stats;
          stats.executing++;
          stats.executingSeats += seats;
          stats.dispatched++;
          const watch = info.verb === 'watch';
          let held = true;
          const release = () => {
            if (!held) return;
            held = false;
            const now = performance.now();
            stats.executing--;
            stats.executingSeats -= seats;
            (watch ? stats.execWatch : stats.execRegular).observe((now - started) / 1000);
            slot.untake(seats);
            slot.timing.note(now, -seats, -1, 0, 0, kind);
            this.seats.addInflight(mutating, -1);
          };
          req.delegated = release;
          res.onDone(release);
          return;
        }
        const exe = st.tryTake(seats, this.queueOf(h), totalWork(est.initialSeats, est.finalSeats, est.latencyMs), mutating ? 1 : 0);
        if (exe !== null) {
          exe.initialSeats = est.initialSeats;
          exe.latencyMs = est.latencyMs;
          this.run(req, res, h, exe, mutating, 0);
          return;
        }
        if (c.level.limitResponse === 'Reject' || st.queues.length === 0) throw this.refusal(h, 'concurrency-limit', 0);
        return this.enqueue(req, res, h, mutating, seats, est.initialSeats, est.finalSeats, est.latencyMs);
      },
    };
  }

  /**
   * The request holds its seats: counted, and given back once (at its end, when it is
   * delegated, or for a watch once it is set up).
   */
  private run(req: ApiRequest, res: ResponseSink, h: FlowHandle, exe: Execution, mutating: boolean, waited: number): void {
    const stats = h.stats;
    stats.executing++;
    stats.executingSeats += exe.seats;
    stats.dispatched++;
    stats.waitExecuted.observe(waited);
    // (apiserver_request_sli_duration_seconds leaves the queue's wait out, as kube's latency tracker)
    if (waited > 0) req.sliExcludedSeconds = (req.sliExcludedSeconds ?? 0) + waited;
    this.seats.addInflight(mutating, 1);
    const watch = req.requestInfo!.verb === 'watch';
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      const now = performance.now();
      this.seats.addInflight(mutating, -1);
      stats.executing--;
      stats.executingSeats -= exe.seats;
      (watch ? stats.execWatch : stats.execRegular).observe((now - exe.started) / 1000);
      if (exe.remote !== undefined) this.opts.remote!.finish(exe.remote);
      else h.state.finish(exe, now);
    };
    req.delegated = release;
    res.onDone(release);
  }

  /**
   * How long the request may wait in its queue: a quarter of --request-timeout (kube's
   * request wait limit), or less when the request's own ?timeout= ends it sooner (a request
   * that could only wait past its own deadline would be answered 504 before it ran).
   */
  private waitFor(req: ApiRequest): number {
    if (!req.rawQuery.includes('timeout') || req.requestInfo!.verb === 'watch') return this.waitLimitMs;
    try {
      return Math.min(this.waitLimitMs, requestTimeoutMs(req, this.requestTimeoutSeconds));
    } catch {
      return this.waitLimitMs;
    }
  }

  /** Counts a refusal and gives the 429 for it. */
  private refusal(h: FlowHandle, reason: RejectReason, waitedSeconds: number): TooManyRequestsError {
    h.stats.rejected[reason]++;
    h.stats.waitRejected.observe(waitedSeconds);
    return new TooManyRequestsError(reason);
  }

  /**
   * Queues the request (in the main thread's queues when this is another front thread); the
   * promise settles when it gets its seats (the chain goes on) or is refused.
   */
  private enqueue(req: ApiRequest, res: ResponseSink, h: FlowHandle, mutating: boolean, seats: number, initialSeats: number, finalSeats: number, latencyMs: number): Promise<void> {
    const remote = this.opts.remote;
    if (remote === undefined) return this.enqueueHere(req, res, h, mutating, seats, initialSeats, finalSeats, latencyMs);
    const stats = h.stats;
    return new Promise<void>((resolve, reject) => {
      const since = performance.now();
      let timer: ReturnType<typeof setTimeout> | undefined;
      let queued = true;
      // (the first of outcome, time-out and the client's leaving ends the wait; the others find it ended)
      const end = (): number => {
        queued = false;
        if (timer !== undefined) clearTimeout(timer);
        stats.inqueue--;
        stats.inqueueSeats -= seats;
        this.seats.addWaitingOf(mutating, -1);
        return (performance.now() - since) / 1000;
      };
      const kind = mutating ? 1 : 0;
      const id = remote.enqueue({ level: h.level, schema: h.schema, hash: h.hash, seats, initialSeats, latencyMs, work: totalWork(initialSeats, finalSeats, latencyMs), kind }, (o) => {
        if (!queued) return;
        const waited = end();
        if ('local' in o) {
          this.enqueueHere(req, res, h, mutating, seats, initialSeats, finalSeats, latencyMs).then(resolve, reject);
          return;
        }
        if (!o.granted) {
          reject(this.refusal(h, o.reason, waited));
          return;
        }
        // its seats are held in the main thread's queue set, where release() gives them back
        const exe: Execution = { queue: -1, gen: -1, seats, initialSeats, latencyMs, started: performance.now(), kind, remote: id };
        this.run(req, res, h, exe, mutating, waited);
        resolve();
      });
      stats.inqueue++;
      stats.inqueueSeats += seats;
      // (request_queue_length_after_enqueue is observed where the queue is: the main thread)
      this.seats.addWaitingOf(mutating, 1);
      timer = setTimeout(() => {
        if (!queued) return;
        remote.cancel(id);
        reject(this.refusal(h, 'time-out', end()));
      }, this.waitFor(req));
      res.onDone(() => {
        if (!queued) return;
        // the client went away while waiting
        remote.cancel(id);
        reject(this.refusal(h, 'cancelled', end()));
      });
    });
  }

  /** Queues the request in this thread's queues. */
  private enqueueHere(req: ApiRequest, res: ResponseSink, h: FlowHandle, mutating: boolean, seats: number, initialSeats: number, finalSeats: number, latencyMs: number): Promise<void> {
    const st = h.state;
    const stats = h.stats;
    return new Promise<void>((resolve, reject) => {
      const since = performance.now();
      let timer: ReturnType<typeof setTimeout> | undefined;
      let exe: Execution | null = null;
      const leave = () => {
        stats.inqueue--;
        stats.inqueueSeats -= seats;
        this.seats.addWaitingOf(mutating, -1);
      };
      const w: Waiter = {
        queue: this.queueOf(h),
        since,
        state: 'queued',
        seats,
        work: totalWork(initialSeats, finalSeats, latencyMs),
        flow: stats,
        kind: mutating ? 1 : 0,
        settle: (granted, reason) => {
          if (timer !== undefined) clearTimeout(timer);
          const now = performance.now();
          leave();
          const waited = (now - since) / 1000;
          if (granted) {
            // the level counted the seats and charged the queue; the rest of the accounting is this outcome's
            exe = { queue: w.queue, gen: st.gen, seats, initialSeats, latencyMs, started: now, kind: w.kind };
            this.run(req, res, h, exe, mutating, waited);
            resolve();
            return;
          }
          reject(this.refusal(h, reason ?? 'time-out', waited));
        },
      };
      const full = st.enqueue(w);
      if (full) {
        reject(this.refusal(h, full, 0));
        return;
      }
      stats.inqueue++;
      stats.inqueueSeats += seats;
      stats.queueLength.observe(st.queues[w.queue].waiting.length);
      this.seats.addWaitingOf(mutating, 1);
      timer = setTimeout(() => {
        if (w.state !== 'queued') return;
        st.remove(w);
        w.state = 'gone';
        w.settle(false, 'time-out');
      }, this.waitFor(req));
      res.onDone(() => {
        if (w.state === 'queued') {
          // the client went away while waiting
          st.remove(w);
          w.state = 'gone';
          w.settle(false, 'cancelled');
        }
      });
      // Listens for seats released on any thread since this request found none.
      st.awaitSeat();
    });
  }
}
