// Priority and fairness' series, with kube-apiserver's names and labels (priority_level,
// flow_schema; reason for rejections, execute for waits): read from the filter's counters
// (src/flowcontrol/flow-stats.ts) only when /metrics is scraped.
//
// Thread ownership: the front thread (the scrape runs there, as the requests do).
import type { FlowStats } from '../flowcontrol/flow-stats.js';
import { histogramText, labelText } from './request-metrics.js';

export interface FlowControlSnapshot {
  /** every (priority level, FlowSchema) pair seen */
  flows: Iterable<FlowStats>;
  /** every configured level with its nominal seats */
  levels: Iterable<{ name: string; nominal: number }>;
}

type MetricFn = (name: string, type: string, help: string, body: () => void) => void;

export function renderFlowControl(snap: FlowControlSnapshot, metric: MetricFn, out: string[]): void {
  const flows = [...snap.flows].sort((a, b) => (a.priorityLevel + '\0' + a.flowSchema < b.priorityLevel + '\0' + b.flowSchema ? -1 : 1));
  const pair = (f: FlowStats) => ({ flow_schema: f.flowSchema, priority_level: f.priorityLevel });
  metric('apiserver_flowcontrol_dispatched_requests_total', 'counter', '[BETA] Requests that priority and fairness let execute, by priority level and FlowSchema.', () => {
    for (const f of flows) if (f.dispatched > 0) out.push(`apiserver_flowcontrol_dispatched_requests_total${labelText(pair(f))} ${f.dispatched}`);
  });
  metric('apiserver_flowcontrol_rejected_requests_total', 'counter', '[BETA] Requests that priority and fairness turned away, by priority level, FlowSchema and reason (queue-full, concurrency-limit, time-out, cancelled).', () => {
    for (const f of flows) for (const [reason, n] of Object.entries(f.rejected)) if (n > 0) out.push(`apiserver_flowcontrol_rejected_requests_total${labelText({ ...pair(f), reason })} ${n}`);
  });
  metric('apiserver_flowcontrol_current_inqueue_requests', 'gauge', '[BETA] Requests waiting in the queues of priority and fairness now, by priority level and FlowSchema.', () => {
    for (const f of flows) out.push(`apiserver_flowcontrol_current_inqueue_requests${labelText(pair(f))} ${f.inqueue}`);
  });
  metric('apiserver_flowcontrol_current_executing_requests', 'gauge', '[BETA] Requests holding a seat of priority and fairness now, by priority level and FlowSchema.', () => {
    for (const f of flows) out.push(`apiserver_flowcontrol_current_executing_requests${labelText(pair(f))} ${f.executing}`);
  });
  metric('apiserver_flowcontrol_nominal_limit_seats', 'gauge', '[BETA] Nominal seats of each priority level.', () => {
    for (const l of [...snap.levels].sort((a, b) => (a.name < b.name ? -1 : 1))) out.push(`apiserver_flowcontrol_nominal_limit_seats${labelText({ priority_level: l.name })} ${l.nominal}`);
  });
  metric('apiserver_flowcontrol_request_wait_duration_seconds', 'histogram', '[BETA] Time requests waited in a queue, in seconds, by priority level, FlowSchema and whether they then executed.', () => {
    for (const f of flows) {
      if (f.waitExecuted.count > 0) histogramText('apiserver_flowcontrol_request_wait_duration_seconds', { ...pair(f), execute: 'true' }, f.waitExecuted, out);
      if (f.waitRejected.count > 0) histogramText('apiserver_flowcontrol_request_wait_duration_seconds', { ...pair(f), execute: 'false' }, f.waitRejected, out);
    }
  });
}
