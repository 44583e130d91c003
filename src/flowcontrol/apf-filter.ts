// The priority-and-fairness filter (--enable-priority-and-fairness, on by default as in
// kube-apiserver 1.33). Every authenticated request is classified into a FlowSchema and
// priority level (classifier.ts); its responses carry the X-Kubernetes-PF-* headers with
// both objects' uids, whatever answers it, a 429 included. Then:
//
//   - exempt level (system:masters, probes): runs at once, no seat;
//   - a watch: runs at once without holding a seat (kube holds one only while the watch
//     initializes; here it is not held at all);
//   - a Limited level with a free seat and no one waiting: takes a seat until its response ends;
//   - otherwise Reject → 429 at once; Queue → waits in a queue (priority-levels.ts) until a
//     seat frees, or 429 when its queue is full or its wait passes the limit: a quarter of
//     --request-timeout, at most a minute, as kube's.
//
// With several front threads (issue 18) each runs its own PriorityAndFairness on one shared
// seat table (shared-seats.ts): the seats a level holds, the requests it has waiting and the
// inflight gauges are counted across threads, so the limits are the server's; the queues and
// the apiserver_flowcontrol_* counters are each thread's.
//
// Thread ownership: the front thread owns all of it (the classifier's cache and config, the
// levels' queues, the counters) except the seat counts, which every front thread shares.
import type { Filter } from '../http/filter-chain.js';
import type { ApiRequest, ResponseSink } from '../http/types.js';
import type { Cacher } from '../storage/cacher.js';
import type { Store, ResourceTarget } from '../registry/store.js';
import { TooManyRequestsError, type RejectReason } from '../errors.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import { Classifier, type Classification, type LevelConfig } from './classifier.js';
import { LevelState, flowHash, nominalLimits, type Waiter } from './priority-levels.js';
import { FlowStatsRegistry, type FlowStats } from './flow-stats.js';
import { SharedSeats } from './shared-seats.js';
import type { FlowControlSnapshot } from '../metrics/flowcontrol-metrics.js';

/**
 * Long-running requests other than watches (kube's long-running check: the proxy verb, and
 * the attach, exec, log, portforward and proxy subresources) bypass flow control entirely,
 * as in kube: not classified, no headers, no seat.
 */
const LONG_RUNNING_SUBRESOURCES = new Set(['attach', 'exec', 'log', 'portforward', 'proxy']);

const MUTATING = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

export interface ApfOptions {
  /** --max-requests-inflight + --max-mutating-requests-inflight */
  serverConcurrencyLimit: number;
  /** --request-timeout, in seconds: a queued request waits at most a quarter of it (and a minute) */
  requestTimeoutSeconds: number;
}

/** What the filter keeps per classification outcome: its counters and the seat releases. */
interface FlowHandle {
  stats: FlowStats;
  state: LevelState;
  /** ends a seat of a read-only / mutating request of this outcome */
  releaseReadonly: () => void;
  releaseMutating: () => void;
}

export class PriorityAndFairness {
  readonly classifier: Classifier;
  readonly stats = new FlowStatsRegistry();
  /** live state of every configured level, by name */
  readonly levels = new Map<string, LevelState>();
  private readonly waitLimitMs: number;

  /** `seats`: the table the front threads share; without one, this thread's own (as in unit tests) */
  constructor(
    cacher: Cacher,
    store: Store,
    fsT: ResourceTarget,
    plT: ResourceTarget,
    private opts: ApfOptions,
    private readonly seats: SharedSeats = new SharedSeats(),
  ) {
    this.waitLimitMs = Math.min(60, opts.requestTimeoutSeconds / 4) * 1000;
    const objects = (t: ResourceTarget) => [...store.cacheOf(t).items.values()].map((e) => entryObject(e)).filter((o) => o && !o.metadata?.deletionTimestamp);
    this.classifier = new Classifier(() => ({ schemas: objects(fsT), levels: objects(plT) }));
    this.classifier.onRebuild = (levels) => this.reconfigure(levels);
    cacher.observe((cache) => {
      if (cache.gr === fsT.gr || cache.gr === plT.gr) this.classifier.invalidate();
    });
  }

  /** seats held by read-only and mutating requests on every front thread (apiserver_current_inflight_requests) */
  get inflight(): { readOnly: number; mutating: number } {
    return { readOnly: this.seats.inflight(false), mutating: this.seats.inflight(true) };
  }

  /** What /metrics shows of it. */
  snapshot(): FlowControlSnapshot {
    this.classifier.levels(); // rebuilt first if the configuration changed
    return { flows: this.stats.all.values(), levels: [...this.levels.entries()].map(([name, st]) => ({ name, nominal: st.nominal })) };
  }

  /** A new configuration: limits recomputed, queues resized, levels that went refuse their waiters. */
  private reconfigure(levels: Map<string, LevelConfig>): void {
    const limits = nominalLimits(levels.values(), this.opts.serverConcurrencyLimit);
    for (const [name, cfg] of levels) {
      let st = this.levels.get(name);
      if (st) st.reconfigure(cfg);
      else this.levels.set(name, (st = new LevelState(cfg, this.seats.level(name))));
      st.nominal = limits.get(name) ?? 0;
      // An exempt level is never limited (its nominal seats only count for borrowing, which is not done here).
      st.limit = cfg.exempt ? Infinity : st.nominal;
      cfg.state = st;
    }
    for (const [name, st] of this.levels) {
      if (levels.has(name)) continue;
      this.levels.delete(name);
      st.refuseAll();
    }
    // A larger limit may let waiting requests in.
    for (const st of this.levels.values()) st.dispatch();
  }

  private handleOf(c: Classification): FlowHandle {
    let h = c.flow as FlowHandle | undefined;
    if (h !== undefined) return h;
    const stats = this.stats.of(c.level.name, c.schema.name);
    const state = c.level.state!;
    const seats = this.seats;
    const release = (mutating: boolean) => () => {
      seats.addInflight(mutating, -1);
      stats.executing--;
      state.release();
    };
    h = { stats, state, releaseReadonly: release(false), releaseMutating: release(true) };
    c.flow = h;
    return h;
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
        const h = this.handleOf(c);
        const level = c.level;
        if (level.exempt || info.verb === 'watch') {
          h.stats.dispatched++;
          return;
        }
        const st = h.state;
        const mutating = MUTATING.has(info.verb);
        if (st.tryTake()) {
          h.stats.executing++;
          h.stats.dispatched++;
          h.stats.waitExecuted.observe(0);
          this.seats.addInflight(mutating, 1);
          // (once: at the end, or earlier when the request is delegated)
          let held = true;
          const release = () => {
            if (!held) return;
            held = false;
            (mutating ? h.releaseMutating : h.releaseReadonly)();
          };
          req.delegated = release;
          res.onDone(release);
          return;
        }
        if (level.limitResponse === 'Reject' || st.queues.length === 0) throw this.refusal(h, 'concurrency-limit', 0);
        return this.enqueue(req, res, c, h, mutating);
      },
    };
  }

  /** Counts a refusal and gives the 429 for it. */
  private refusal(h: FlowHandle, reason: RejectReason, waitedSeconds: number): TooManyRequestsError {
    h.stats.rejected[reason]++;
    h.stats.waitRejected.observe(waitedSeconds);
    return new TooManyRequestsError(reason);
  }

  /** Queues the request; the promise settles when it gets a seat (the chain goes on) or is refused. */
  private enqueue(req: ApiRequest, res: ResponseSink, c: Classification, h: FlowHandle, mutating: boolean): Promise<void> {
    const st = h.state;
    const fs = c.schema;
    const distinguisher = fs.distinguisher === 'ByUser' ? req.user!.name : fs.distinguisher === 'ByNamespace' ? req.requestInfo!.namespace : '';
    return new Promise<void>((resolve, reject) => {
      const since = performance.now();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const w: Waiter = {
        queue: st.pickQueue(flowHash(`${fs.name}\0${distinguisher}`)),
        since,
        state: 'queued',
        settle: (granted, reason) => {
          if (timer !== undefined) clearTimeout(timer);
          h.stats.inqueue--;
          const waited = (performance.now() - since) / 1000;
          if (granted) {
            // the level counted the seat; the rest of the accounting is this outcome's
            h.stats.executing++;
            h.stats.dispatched++;
            h.stats.waitExecuted.observe(waited);
            this.seats.addInflight(mutating, 1);
            req.delegated = () => {
              if (w.state !== 'running') return;
              w.state = 'gone';
              (mutating ? h.releaseMutating : h.releaseReadonly)();
            };
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
      h.stats.inqueue++;
      timer = setTimeout(() => {
        if (w.state !== 'queued') return;
        st.remove(w);
        w.state = 'gone';
        w.settle(false, 'time-out');
      }, this.waitLimitMs);
      res.onDone(() => {
        if (w.state === 'queued') {
          // the client went away while waiting
          st.remove(w);
          w.state = 'gone';
          w.settle(false, 'cancelled');
        } else if (w.state === 'running') {
          w.state = 'gone';
          (mutating ? h.releaseMutating : h.releaseReadonly)();
        }
      });
      // Listens for a seat released on any thread since this request found none.
      st.awaitSeat();
    });
  }
}
