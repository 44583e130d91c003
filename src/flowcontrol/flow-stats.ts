// Counters of priority and fairness per (priority level, FlowSchema), the label pair of
// kube's apiserver_flowcontrol_* series. Plain numbers bumped on the request path and
// written out only when /metrics is scraped (src/metrics/request-metrics.ts does the same).
//
// Thread ownership: the front thread.
import type { RejectReason } from '../errors.js';

/** apiserver_flowcontrol_request_wait_duration_seconds' buckets, as kube's */
export const WAIT_BUCKETS = [0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30];

export class WaitHistogram {
  readonly bounds = WAIT_BUCKETS;
  /** per bucket (not cumulative): a sample lands in its first bucket only */
  readonly counts = new Float64Array(WAIT_BUCKETS.length);
  sum = 0;
  count = 0;
  observe(v: number): void {
    let i = 0;
    while (i < WAIT_BUCKETS.length && v > WAIT_BUCKETS[i]) i++;
    if (i < WAIT_BUCKETS.length) this.counts[i]++;
    this.sum += v;
    this.count++;
  }
}

export class FlowStats {
  dispatched = 0;
  executing = 0;
  inqueue = 0;
  readonly rejected: Record<RejectReason, number> = { 'queue-full': 0, 'concurrency-limit': 0, 'time-out': 0, cancelled: 0 };
  /** waits of requests that then executed (execute="true") and of those that did not */
  readonly waitExecuted = new WaitHistogram();
  readonly waitRejected = new WaitHistogram();
  constructor(
    readonly priorityLevel: string,
    readonly flowSchema: string,
  ) {}
}

/** Every (priority level, FlowSchema) pair seen so far; kept across configuration changes. */
export class FlowStatsRegistry {
  readonly all = new Map<string, FlowStats>();

  of(priorityLevel: string, flowSchema: string): FlowStats {
    const key = `${priorityLevel}\0${flowSchema}`;
    let s = this.all.get(key);
    if (!s) this.all.set(key, (s = new FlowStats(priorityLevel, flowSchema)));
    return s;
  }
}
