import { describe, it, expect, afterEach } from 'vitest';
import { PriorityAndFairness } from '../flowcontrol/apf-filter.js';
import { mandatoryFlowSchemas, mandatoryPriorityLevels, suggestedFlowSchemas, suggestedPriorityLevels } from '../flowcontrol/bootstrap-objects.js';
import { renderFlowControl, type FlowControlSnapshot } from './flowcontrol-metrics.js';
import { InflightLimiter } from '../flowcontrol/max-inflight.js';

const fsT = { gr: 'flowschemas.flowcontrol.apiserver.k8s.io' } as any;
const plT = { gr: 'prioritylevelconfigurations.flowcontrol.apiserver.k8s.io' } as any;
const entries = (objs: any[]) => new Map(objs.map((o, i) => [o.metadata.name, { obj: { ...o, metadata: { ...o.metadata, uid: `uid-${i}` } } }]));

/** A filter on kube's bootstrap configuration, without a server (the main thread's instance: borrowing on). */
function filter(showHiddenMetrics = false): PriorityAndFairness {
  const fsItems = entries([...mandatoryFlowSchemas(), ...suggestedFlowSchemas()]);
  const plItems = entries([...mandatoryPriorityLevels(), ...suggestedPriorityLevels()]);
  const store = { cacheOf: (t: any) => ({ items: t === fsT ? fsItems : plItems }) } as any;
  return new PriorityAndFairness({ observe: () => () => {} } as any, store, fsT, plT, { serverConcurrencyLimit: 600, requestTimeoutSeconds: 60, borrowing: true, showHiddenMetrics });
}

const info = (verb: string) => ({ verb, isResourceRequest: true, apiPrefix: 'api', apiGroup: '', apiVersion: 'v1', namespace: 'ns', resource: 'configmaps', subresource: '', name: verb === 'get' ? 'x' : '', parts: [], path: '/api/v1/namespaces/ns/configmaps' });

/** Runs one request through the filter as `user`; returns its end. */
function start(apf: PriorityAndFairness, user: { name: string; groups: string[] }, verb = 'get'): () => void {
  const done: Array<() => void> = [];
  const r = apf.filter().run({ user, requestInfo: info(verb), rawQuery: '', headers: {} } as any, { onDone: (f: () => void) => done.push(f) } as any);
  expect(r).toBeUndefined(); // ran at once
  return () => done.forEach((f) => f());
}

function render(apf: PriorityAndFairness | FlowControlSnapshot): string {
  const out: string[] = [];
  renderFlowControl(apf instanceof PriorityAndFairness ? apf.snapshot() : apf, (name, type, help, body) => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    body();
  }, out);
  return out.join('\n');
}

const made: PriorityAndFairness[] = [];
afterEach(() => {
  for (const a of made.splice(0)) a.stop();
});

describe('apiserver_flowcontrol_* series of the timing and virtual-time figures', () => {
  it('serves request_utilization, the virtual-time gauges and exempt timing with kube names, labels and buckets', async () => {
    const apf = filter();
    made.push(apf);
    const user = { name: 'someone', groups: ['system:authenticated'] };
    const admin = { name: 'admin', groups: ['system:masters', 'system:authenticated'] };
    const ends = [start(apf, user), start(apf, user, 'create'), start(apf, admin)];
    await new Promise((r) => setTimeout(r, 5));
    for (const e of ends) e();
    const text = render(apf);
    // the timing ratio histograms: nanoseconds, kube buckets, both phases of request_utilization
    expect(text).toContain('# HELP apiserver_flowcontrol_priority_level_request_utilization [ALPHA] ');
    expect(text).toContain('# TYPE apiserver_flowcontrol_priority_level_request_utilization histogram');
    expect(text).toMatch(/apiserver_flowcontrol_priority_level_request_utilization_bucket\{le="0.003",phase="executing",priority_level="global-default"\} \d/);
    expect(text).toMatch(/apiserver_flowcontrol_priority_level_request_utilization_bucket\{le="0.75",phase="waiting",priority_level="global-default"\} \d/);
    const count = Number(/apiserver_flowcontrol_priority_level_seat_utilization_count\{phase="executing",priority_level="global-default"\} (\S+)/.exec(text)![1]);
    expect(count).toBeGreaterThan(4e6); // at least the 5 ms waited, in nanoseconds
    expect(text).toMatch(/apiserver_flowcontrol_demand_seats_bucket\{le="1.7",priority_level="exempt"\} /);
    expect(text).toMatch(/apiserver_flowcontrol_read_vs_write_current_requests_bucket\{le="0.001",phase="executing",request_kind="mutating"\} /);
    // the read-only request executed for about 5 ms, one request of the 600 nominal seats: ~5e6 ns × 1/600 at least
    expect(Number(/apiserver_flowcontrol_read_vs_write_current_requests_sum\{phase="executing",request_kind="readOnly"\} (\S+)/.exec(text)![1])).toBeGreaterThan(4e6 / 600);
    // virtual time: R of every level, the dispatch figures of a level that dispatched from a queue
    expect(text).toMatch(/apiserver_flowcontrol_current_r\{priority_level="exempt"\} 0/);
    expect(text).toMatch(/apiserver_flowcontrol_current_r\{priority_level="global-default"\} \d/);
    expect(text).toMatch(/apiserver_flowcontrol_dispatch_r\{priority_level="global-default"\} /);
    expect(text).toMatch(/apiserver_flowcontrol_latest_s\{priority_level="global-default"\} /);
    expect(text).toMatch(/apiserver_flowcontrol_next_s_bounds\{bound="max",priority_level="global-default"\} /);
    expect(text).toMatch(/apiserver_flowcontrol_next_s_bounds\{bound="min",priority_level="global-default"\} /);
    expect(text).toMatch(/apiserver_flowcontrol_next_discounted_s_bounds\{bound="min",priority_level="global-default"\} /);
    expect(text).not.toMatch(/apiserver_flowcontrol_dispatch_r\{priority_level="exempt"\}/);
    // no epoch advance yet: no series (kube's empty counter vector is not written)
    expect(text).not.toContain('apiserver_flowcontrol_epoch_advance_total');
    // exempt requests are timed as kube's
    expect(text).toContain('apiserver_flowcontrol_request_execution_seconds_count{flow_schema="exempt",priority_level="exempt",type="regular"} 1');
    expect(text).toContain('apiserver_flowcontrol_dispatched_requests_total{flow_schema="exempt",priority_level="exempt"} 1');
    expect(text).not.toMatch(/request_wait_duration_seconds_count\{execute="true",flow_schema="exempt"/);
    // the deprecated pair is hidden in 1.33
    expect(text).not.toContain('request_concurrency_limit');
    expect(text).not.toContain('request_concurrency_in_use');
  });

  it('serves the deprecated request_concurrency_limit and request_concurrency_in_use with --show-hidden-metrics-for-version=1.32', () => {
    const apf = filter(true);
    made.push(apf);
    const end = start(apf, { name: 'someone', groups: ['system:authenticated'] });
    const text = render(apf);
    end();
    expect(text).toContain('# HELP apiserver_flowcontrol_request_concurrency_limit [ALPHA] (Deprecated since 1.30.0) ');
    expect(text).toContain('# TYPE apiserver_flowcontrol_request_concurrency_limit gauge');
    expect(text).toMatch(/apiserver_flowcontrol_request_concurrency_limit\{priority_level="global-default"\} [1-9]/);
    expect(text).toContain('# HELP apiserver_flowcontrol_request_concurrency_in_use [ALPHA] (Deprecated since 1.31.0) ');
    expect(text).toContain('apiserver_flowcontrol_request_concurrency_in_use{flow_schema="global-default",priority_level="global-default"} 1');
  });

  it("with the plain inflight limits, read_vs_write_current_requests alone, each kind over its limit (kube's max-inflight filter)", async () => {
    const limiter = new InflightLimiter({ maxReadonly: 4, maxMutating: 2 });
    const run = limiter.filter().run;
    const done: Array<() => void> = [];
    run({ user: { name: 'u', groups: [] }, requestInfo: info('get') } as any, { onDone: (f: () => void) => done.push(f) } as any);
    await new Promise((r) => setTimeout(r, 5));
    done.forEach((f) => f());
    const text = render({ flows: [], levels: [], readWrite: limiter.readWrite() });
    expect(text.match(/^# TYPE /gm)).toHaveLength(1);
    // one read-only request of 4 seats: a quarter, for at least the 5 ms
    const le = (b: string) => Number(new RegExp(`read_vs_write_current_requests_bucket\\{le="${b}",phase="executing",request_kind="readOnly"\\} (\\S+)`).exec(text)![1]);
    expect(le('0.3') - le('0.2')).toBeGreaterThan(4e6);
  });
});
