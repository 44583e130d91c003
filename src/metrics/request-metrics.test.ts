import { describe, it, expect } from 'vitest';
import { RequestMetrics } from './request-metrics.js';
import type { ApiRequest } from '../http/types.js';

const gauges = { inflight: () => ({ readOnly: 0, mutating: 0 }), storageObjects: () => [] as Array<[string, number]> };
const req = (verb: string, extra: Partial<ApiRequest> = {}, info: Record<string, unknown> = {}): ApiRequest =>
  ({
    method: verb === 'create' ? 'POST' : 'GET',
    path: '/api/v1/namespaces/default/pods',
    rawQuery: '',
    headers: {},
    requestInfo: { isResourceRequest: true, verb, apiGroup: '', apiVersion: 'v1', resource: 'pods', subresource: '', namespace: 'default', name: '', ...info },
    ...extra,
  }) as unknown as ApiRequest;

describe('RequestMetrics', () => {
  it("the SLI duration leaves out what the request waited for (queueing, webhooks); kube's SLI buckets", () => {
    const m = new RequestMetrics(gauges);
    m.finished(req('create', { sliExcludedSeconds: 2.5 }), 201, 10, 2.58);
    const text = m.render();
    expect(text).toContain('apiserver_request_sli_duration_seconds_bucket{component="apiserver",group="",le="0.05",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 0');
    expect(text).toContain('apiserver_request_sli_duration_seconds_bucket{component="apiserver",group="",le="0.1",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 1');
    expect(text).toContain('apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",le="2",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 0');
  });

  it("a create is scope=resource (kube's CleanScope); log, exec, attach, portforward and proxy are CONNECT", () => {
    const m = new RequestMetrics(gauges);
    m.finished(req('get', {}, { subresource: 'log', name: 'p' }), 200, 10, 0.01);
    m.finished(req('list'), 200, 10, 0.01);
    const text = m.render();
    expect(text).toContain('apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="log",verb="CONNECT",version="v1"} 1');
    expect(text).toContain('apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 1');
  });

  it('apiserver_request_terminations_total counts what the server ended in self-defense, once it has', () => {
    const m = new RequestMetrics(gauges);
    expect(m.render()).not.toContain('apiserver_request_terminations_total');
    m.terminated(req('list'), 429);
    expect(m.render()).toContain('apiserver_request_terminations_total{code="429",component="apiserver",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 1');
  });
});
