// Counters of priority and fairness per (priority level, FlowSchema), the label pair of
// kube's apiserver_flowcontrol_* series. Plain numbers bumped on the request path and
// written out only when /metrics is scraped (src/metrics/request-metrics.ts does the same).
//
// Thread ownership: the front thread.
import type { RejectReason } from '../errors.js';
import { Histogram } from '../metrics/request-metrics.js';

/** apiserver_flowcontrol_request_wait_duration_seconds' and _request_execution_seconds' buckets, as kube's */
const WAIT_BUCKETS = [0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30];
/** apiserver_flowcontrol_work_estimated_seats' buckets */
const SEATS_BUCKETS = [1, 2, 4, 10];
/** apiserver_flowcontrol_request_queue_length_after_enqueue's buckets */
const QUEUE_LENGTH_BUCKETS = [0, 10, 25, 50, 100, 250, 500, 1000];
/** apiserver_flowcontrol_watch_count_samples' buckets */
const WATCH_COUNT_BUCKETS = [0, 1, 10, 100, 1000, 10000];

export class FlowStats {
  dispatched = 0;
  executing = 0;
  executingSeats = 0;
  inqueue = 0;
  inqueueSeats = 0;
  /** dispatch attempts of this flow's requests that found the seats taken */
  noAccommodation = 0;
  readonly rejected: Record<RejectReason, number> = { 'queue-full': 0, 'concurrency-limit': 0, 'time-out': 0, cancelled: 0 };
  /** waits of requests that then executed (execute="true") and of those that did not */
  readonly waitExecuted = new Histogram(WAIT_BUCKETS);
  readonly waitRejected = new Histogram(WAIT_BUCKETS);
  /** how long requests held their seats (a watch: until it was set up), by type="regular" / "watch" */
  readonly execRegular = new Histogram(WAIT_BUCKETS);
  readonly execWatch = new Histogram(WAIT_BUCKETS);
  readonly estimatedSeats = new Histogram(SEATS_BUCKETS);
  readonly queueLength = new Histogram(QUEUE_LENGTH_BUCKETS);
  readonly watchCounts = new Histogram(WATCH_COUNT_BUCKETS);
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
