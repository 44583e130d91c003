import { describe, it, expect } from 'vitest';
import { mergeMetricsText } from './merge-text.js';

const a = `# HELP apiserver_request_total Requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",verb="GET"} 3
apiserver_request_total{code="404",verb="GET"} 1
# HELP apiserver_request_duration_seconds Time.
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{verb="GET",le="0.005"} 2
apiserver_request_duration_seconds_bucket{verb="GET",le="+Inf"} 4
apiserver_request_duration_seconds_sum{verb="GET"} 0.5
apiserver_request_duration_seconds_count{verb="GET"} 4
# HELP apiserver_current_inflight_requests Seats.
# TYPE apiserver_current_inflight_requests gauge
apiserver_current_inflight_requests{request_kind="mutating"} 2
`;
const b = `# HELP apiserver_request_total Requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",verb="GET"} 5
apiserver_request_total{code="201",verb="POST"} 7
# HELP apiserver_request_duration_seconds Time.
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{verb="GET",le="0.005"} 1
apiserver_request_duration_seconds_bucket{verb="GET",le="+Inf"} 5
apiserver_request_duration_seconds_sum{verb="GET"} 0.25
apiserver_request_duration_seconds_count{verb="GET"} 5
# HELP apiserver_current_inflight_requests Seats.
# TYPE apiserver_current_inflight_requests gauge
apiserver_current_inflight_requests{request_kind="mutating"} 2
`;

describe('mergeMetricsText', () => {
  it('sums counters and histograms series by series, keeps the process-wide gauges once, and the first text order', () => {
    const m = mergeMetricsText([a, b]);
    expect(m).toBe(`# HELP apiserver_request_total Requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",verb="GET"} 8
apiserver_request_total{code="404",verb="GET"} 1
apiserver_request_total{code="201",verb="POST"} 7
# HELP apiserver_request_duration_seconds Time.
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{verb="GET",le="0.005"} 3
apiserver_request_duration_seconds_bucket{verb="GET",le="+Inf"} 9
apiserver_request_duration_seconds_sum{verb="GET"} 0.75
apiserver_request_duration_seconds_count{verb="GET"} 9
# HELP apiserver_current_inflight_requests Seats.
# TYPE apiserver_current_inflight_requests gauge
apiserver_current_inflight_requests{request_kind="mutating"} 2
`);
  });

  it('one text is returned as it is', () => {
    expect(mergeMetricsText([a])).toBe(a);
  });

  it('a family only another thread has is added with its head', () => {
    const c = `# HELP apiserver_longrunning_requests Watches.\n# TYPE apiserver_longrunning_requests gauge\napiserver_longrunning_requests{verb="WATCH"} 4\n`;
    expect(mergeMetricsText([a, c])).toBe(a + c);
  });
});
