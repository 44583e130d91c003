// Priority and fairness' series, with kube-apiserver 1.33's names, labels, buckets and
// stability levels (k8s.io/apiserver/pkg/util/flowcontrol/metrics): per (priority_level,
// flow_schema) from the filter's counters (src/flowcontrol/flow-stats.ts), per level from
// its state, and the borrowing loop's figures and the timing ratio histograms (the server's,
// seat-timing.ts) from the main thread's instance; read only when /metrics is scraped. The
// timing ratio histograms count nanoseconds per bucket, integrated at every change, as
// kube's (their _count is the nanoseconds since the level was made). The virtual-time gauges
// (current_r, dispatch_r, latest_s, next_s_bounds, next_discounted_s_bounds) are each
// thread's queues' (the merged scrape shows the main thread's, merge-text.ts).
//
// Thread ownership: the front thread (the scrape runs there, as the requests do).
import type { FlowStats } from '../flowcontrol/flow-stats.js';
import { histogramText, labelText, type Histogram } from './request-metrics.js';
import type { LevelAdjustment } from '../flowcontrol/borrowing.js';
import type { TimingHistogramData } from '../flowcontrol/seat-timing.js';

export interface LevelSnapshot {
  name: string;
  /** its nominal seats, the bounds of its limit and its current limit */
  nominal: number;
  lower: number;
  upper: number;
  current: number;
  /** R at the last sync of this thread's queues */
  currentR: number;
  /** this thread's last dispatch from a queue, if any */
  dispatch?: { r: number; s: number; sMin: number; sMax: number; dsMin: number; dsMax: number };
  epochAdvances: { success: number; failure: number };
  /** its timing ratio histograms (the main thread's instance only) */
  timing?: { seatUtilization: TimingHistogramData; requestExecuting: TimingHistogramData; requestWaiting: TimingHistogramData; demand: TimingHistogramData };
}

export interface FlowControlSnapshot {
  /** every (priority level, FlowSchema) pair seen */
  flows: Iterable<FlowStats>;
  /** every configured level */
  levels: Iterable<LevelSnapshot>;
  /** the borrowing loop's figures (the main thread's instance only) */
  borrowing?: { fairFrac: number; byLevel: Map<string, LevelAdjustment> };
  /** read_vs_write_current_requests (the main thread's instance only) */
  readWrite?: { waitingReadonly: TimingHistogramData; waitingMutating: TimingHistogramData; executingReadonly: TimingHistogramData; executingMutating: TimingHistogramData };
  /** --show-hidden-metrics-for-version=1.32: the deprecated families hidden in 1.33 are served */
  showHidden?: boolean;
}

type MetricFn = (name: string, type: string, help: string, body: () => void) => void;

const byName = <T extends { name: string }>(xs: Iterable<T>): T[] => [...xs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

export function renderFlowControl(snap: FlowControlSnapshot, metric: MetricFn, out: string[]): void {
  if (Array.isArray(snap.levels) && snap.levels.length === 0 && snap.readWrite) {
    // the plain inflight limits: read_vs_write_current_requests only
    renderReadWrite(snap, metric, out);
    return;
  }
  const flows = [...snap.flows].sort((a, b) => (a.priorityLevel + '\0' + a.flowSchema < b.priorityLevel + '\0' + b.flowSchema ? -1 : 1));
  const levels = byName(snap.levels);
  const pair = (f: FlowStats) => ({ flow_schema: f.flowSchema, priority_level: f.priorityLevel });
  const perFlow = (name: string, stability: string, help: string, value: (f: FlowStats) => number, onlyNonZero = false) =>
    metric(name, 'gauge', `[${stability}] ${help}`, () => {
      for (const f of flows) {
        const v = value(f);
        if (!onlyNonZero || v > 0) out.push(`${name}${labelText(pair(f))} ${v}`);
      }
    });
  const perLevel = (name: string, stability: string, help: string, value: (l: (typeof levels)[number]) => number) =>
    metric(name, 'gauge', `[${stability}] ${help}`, () => {
      for (const l of levels) out.push(`${name}${labelText({ priority_level: l.name })} ${value(l)}`);
    });
  const flowHistogram = (name: string, stability: string, help: string, h: (f: FlowStats) => Histogram, extra: Record<string, string> = {}) =>
    metric(name, 'histogram', `[${stability}] ${help}`, () => {
      for (const f of flows) if (h(f).count > 0) histogramText(name, { ...pair(f), ...extra }, h(f), out);
    });

  metric('apiserver_flowcontrol_dispatched_requests_total', 'counter', '[BETA] Requests that priority and fairness let execute, by priority level and FlowSchema.', () => {
    for (const f of flows) if (f.dispatched > 0) out.push(`apiserver_flowcontrol_dispatched_requests_total${labelText(pair(f))} ${f.dispatched}`);
  });
  metric('apiserver_flowcontrol_rejected_requests_total', 'counter', '[BETA] Requests that priority and fairness turned away, by priority level, FlowSchema and reason (queue-full, concurrency-limit, time-out, cancelled).', () => {
    for (const f of flows) for (const [reason, n] of Object.entries(f.rejected)) if (n > 0) out.push(`apiserver_flowcontrol_rejected_requests_total${labelText({ ...pair(f), reason })} ${n}`);
  });
  metric('apiserver_flowcontrol_request_dispatch_no_accommodation_total', 'counter', '[ALPHA] Dispatch attempts that found too few free seats for the request at the head of the chosen queue.', () => {
    for (const f of flows) if (f.noAccommodation > 0) out.push(`apiserver_flowcontrol_request_dispatch_no_accommodation_total${labelText(pair(f))} ${f.noAccommodation}`);
  });
  perFlow('apiserver_flowcontrol_current_inqueue_requests', 'BETA', 'Requests waiting in the queues of priority and fairness now, by priority level and FlowSchema.', (f) => f.inqueue);
  perFlow('apiserver_flowcontrol_current_inqueue_seats', 'ALPHA', 'Seats asked for by the requests waiting in the queues of priority and fairness now.', (f) => f.inqueueSeats);
  perFlow('apiserver_flowcontrol_current_executing_requests', 'BETA', 'Requests holding seats of priority and fairness now (a watch only while it is set up), by priority level and FlowSchema.', (f) => f.executing);
  perFlow('apiserver_flowcontrol_current_executing_seats', 'BETA', 'Seats held by the requests executing now (a watch only while it is set up), by priority level and FlowSchema.', (f) => f.executingSeats);
  perLevel('apiserver_flowcontrol_nominal_limit_seats', 'BETA', 'Nominal seats of each priority level.', (l) => l.nominal);
  perLevel('apiserver_flowcontrol_lower_limit_seats', 'ALPHA', 'The least seats each priority level keeps (its nominal seats less those it may lend).', (l) => l.lower);
  perLevel('apiserver_flowcontrol_upper_limit_seats', 'ALPHA', 'The most seats each priority level may have (its nominal seats plus those it may borrow).', (l) => l.upper);
  perLevel('apiserver_flowcontrol_current_limit_seats', 'ALPHA', 'Seats each priority level may use now, as the last borrowing adjustment set them.', (l) => l.current);
  if (snap.showHidden) {
    // deprecated in 1.30 and 1.31, hidden in 1.33 unless --show-hidden-metrics-for-version=1.32
    perLevel('apiserver_flowcontrol_request_concurrency_limit', 'ALPHA', '(Deprecated since 1.30.0) Nominal seats of each priority level (the same as nominal_limit_seats).', (l) => l.nominal);
    perFlow('apiserver_flowcontrol_request_concurrency_in_use', 'ALPHA', '(Deprecated since 1.31.0) Seats held by the requests executing now (the same as current_executing_seats).', (f) => f.executingSeats);
  }
  perLevel('apiserver_flowcontrol_current_r', 'ALPHA', 'The virtual time R of the queues of each priority level at their last change, in seat-seconds.', (l) => l.currentR);
  const dispatched = levels.filter((l) => l.dispatch !== undefined);
  const lastDispatch = (name: string, help: string, value: (d: NonNullable<LevelSnapshot['dispatch']>) => number) =>
    metric(name, 'gauge', `[ALPHA] ${help}`, () => {
      for (const l of dispatched) out.push(`${name}${labelText({ priority_level: l.name })} ${value(l.dispatch!)}`);
    });
  const bounds = (name: string, help: string, min: (d: NonNullable<LevelSnapshot['dispatch']>) => number, max: (d: NonNullable<LevelSnapshot['dispatch']>) => number) =>
    metric(name, 'gauge', `[ALPHA] ${help}`, () => {
      for (const l of dispatched) out.push(`${name}${labelText({ bound: 'max', priority_level: l.name })} ${max(l.dispatch!)}`, `${name}${labelText({ bound: 'min', priority_level: l.name })} ${min(l.dispatch!)}`);
    });
  if (dispatched.length > 0) {
    lastDispatch('apiserver_flowcontrol_dispatch_r', 'The virtual time R when each priority level last dispatched a request from a queue, in seat-seconds.', (d) => d.r);
    lastDispatch('apiserver_flowcontrol_latest_s', 'The virtual start S of the request each priority level dispatched last, in seat-seconds.', (d) => d.s);
    bounds('apiserver_flowcontrol_next_s_bounds', 'The least and greatest virtual start S of the oldest waiting request of each queue, at the last dispatch, in seat-seconds.', (d) => d.sMin, (d) => d.sMax);
    bounds('apiserver_flowcontrol_next_discounted_s_bounds', 'The same bounds less the work each queue had in progress (its seats held times the estimated 3 ms service), in seat-seconds.', (d) => d.dsMin, (d) => d.dsMax);
  }
  const epochs = levels.filter((l) => l.epochAdvances.success + l.epochAdvances.failure > 0);
  if (epochs.length > 0)
    metric('apiserver_flowcontrol_epoch_advance_total', 'counter', '[ALPHA] Times the virtual time R of a priority level was wound back to keep it from overflowing, by whether every reading moved back cleanly.', () => {
      for (const l of epochs) {
        if (l.epochAdvances.failure > 0) out.push(`apiserver_flowcontrol_epoch_advance_total${labelText({ priority_level: l.name, success: 'false' })} ${l.epochAdvances.failure}`);
        if (l.epochAdvances.success > 0) out.push(`apiserver_flowcontrol_epoch_advance_total${labelText({ priority_level: l.name, success: 'true' })} ${l.epochAdvances.success}`);
      }
    });
  flowHistogram('apiserver_flowcontrol_work_estimated_seats', 'ALPHA', 'Seats each request was estimated to need (the larger of its initial and final seats).', (f) => f.estimatedSeats);
  flowHistogram('apiserver_flowcontrol_watch_count_samples', 'ALPHA', 'Watchers that a write would notify, as its work estimate counted them.', (f) => f.watchCounts);
  flowHistogram('apiserver_flowcontrol_request_queue_length_after_enqueue', 'ALPHA', 'Requests in the queue a request joined, itself included.', (f) => f.queueLength);
  metric('apiserver_flowcontrol_request_wait_duration_seconds', 'histogram', '[BETA] Time requests waited in a queue, in seconds, by priority level, FlowSchema and whether they then executed.', () => {
    for (const f of flows) {
      if (f.waitExecuted.count > 0) histogramText('apiserver_flowcontrol_request_wait_duration_seconds', { ...pair(f), execute: 'true' }, f.waitExecuted, out);
      if (f.waitRejected.count > 0) histogramText('apiserver_flowcontrol_request_wait_duration_seconds', { ...pair(f), execute: 'false' }, f.waitRejected, out);
    }
  });
  metric('apiserver_flowcontrol_request_execution_seconds', 'histogram', '[ALPHA] Time requests held their seats, in seconds (a watch: until it was set up), by priority level, FlowSchema and type (regular or watch).', () => {
    for (const f of flows) {
      if (f.execRegular.count > 0) histogramText('apiserver_flowcontrol_request_execution_seconds', { ...pair(f), type: 'regular' }, f.execRegular, out);
      if (f.execWatch.count > 0) histogramText('apiserver_flowcontrol_request_execution_seconds', { ...pair(f), type: 'watch' }, f.execWatch, out);
    }
  });

  const b = snap.borrowing;
  if (b) {
    const adj = [...b.byLevel.entries()].sort((x, y) => (x[0] < y[0] ? -1 : 1));
    const gauge = (name: string, help: string, v: (a: LevelAdjustment) => number) =>
      metric(name, 'gauge', `[ALPHA] ${help}`, () => {
        for (const [level, a] of adj) out.push(`${name}${labelText({ priority_level: level })} ${v(a)}`);
      });
    gauge('apiserver_flowcontrol_demand_seats_high_watermark', 'The most seats the requests of each priority level held or waited for during the last borrowing period.', (a) => a.demand.highWatermark);
    gauge('apiserver_flowcontrol_demand_seats_average', 'Seats the requests of each priority level held or waited for, on average over the last borrowing period.', (a) => a.demand.avg);
    gauge('apiserver_flowcontrol_demand_seats_stdev', 'Standard deviation of that seat demand over the last borrowing period.', (a) => a.demand.stdDev);
    gauge('apiserver_flowcontrol_demand_seats_smoothed', 'The seat demand of each priority level, smoothed across borrowing periods.', (a) => a.demand.smoothed);
    gauge('apiserver_flowcontrol_target_seats', 'The seats each priority level aimed at in the last borrowing adjustment.', (a) => a.target);
    metric('apiserver_flowcontrol_seat_fair_frac', 'gauge', "[ALPHA] The share of its target that the last borrowing adjustment gave each priority level that could use it.", () => {
      out.push(`apiserver_flowcontrol_seat_fair_frac ${b.fairFrac}`);
    });
  }
  const timed = levels.filter((l) => l.timing !== undefined);
  if (timed.length > 0) {
    metric('apiserver_flowcontrol_demand_seats', 'histogram', '[ALPHA] Nanoseconds spent at each ratio of the seat demand of a priority level (seats held and waited for) to its current limit (max(1, round(server seats / 10)) while that is 0).', () => {
      for (const l of timed) histogramText('apiserver_flowcontrol_demand_seats', { priority_level: l.name }, l.timing!.demand, out);
    });
    metric('apiserver_flowcontrol_priority_level_seat_utilization', 'histogram', '[ALPHA] Nanoseconds spent at each ratio of the seats held by a priority level (a watch only while it is set up) to its current limit (max(1, round(server seats / 10)) while that is 0).', () => {
      for (const l of timed) histogramText('apiserver_flowcontrol_priority_level_seat_utilization', { phase: 'executing', priority_level: l.name }, l.timing!.seatUtilization, out);
    });
    metric('apiserver_flowcontrol_priority_level_request_utilization', 'histogram', '[ALPHA] Nanoseconds spent at each ratio of the requests of a priority level executing (over its current seat limit, or max(1, round(server seats / 10)) while that is 0) or waiting (over max(1, queueLengthLimit) × max(1, queues)).', () => {
      for (const l of timed) {
        histogramText('apiserver_flowcontrol_priority_level_request_utilization', { phase: 'executing', priority_level: l.name }, l.timing!.requestExecuting, out);
        histogramText('apiserver_flowcontrol_priority_level_request_utilization', { phase: 'waiting', priority_level: l.name }, l.timing!.requestWaiting, out);
      }
    });
  }
  renderReadWrite(snap, metric, out);
}

function renderReadWrite(snap: FlowControlSnapshot, metric: MetricFn, out: string[]): void {
  const rw = snap.readWrite;
  if (rw) {
    metric('apiserver_flowcontrol_read_vs_write_current_requests', 'histogram', '[ALPHA] Nanoseconds spent at each ratio of read-only and mutating requests executing (over the sum of the nominal seats; with the plain inflight limits, over each kind\'s limit) or waiting (over the room in every queue).', () => {
      histogramText('apiserver_flowcontrol_read_vs_write_current_requests', { phase: 'executing', request_kind: 'mutating' }, rw.executingMutating, out);
      histogramText('apiserver_flowcontrol_read_vs_write_current_requests', { phase: 'executing', request_kind: 'readOnly' }, rw.executingReadonly, out);
      histogramText('apiserver_flowcontrol_read_vs_write_current_requests', { phase: 'waiting', request_kind: 'mutating' }, rw.waitingMutating, out);
      histogramText('apiserver_flowcontrol_read_vs_write_current_requests', { phase: 'waiting', request_kind: 'readOnly' }, rw.waitingReadonly, out);
    });
  }
}
