// /metrics as a Prometheus scrape and kubectl see it: kube-apiserver's stable request,
// inflight, long-running, deprecated-API and storage-object metrics, and the process's own.
import { describe, it, expect } from 'vitest';
import { openWatch, request, startServer, until, useServer, type TestServer } from './helpers/server.js';
import { scrape } from './helpers/metrics.js';
import { kubectlOk } from './helpers/kubectl.js';

let s: TestServer;
useServer((started) => (s = started), { args: ['--disabled-metrics', 'apiserver_response_sizes,nodejs_eventloop_lag_seconds'] }, 60_000);


const value = (samples: Array<{ labels: Record<string, string>; value: number }>, want: Record<string, string>) =>
  samples.find((x) => Object.entries(want).every(([k, v]) => x.labels[k] === v))?.value;

describe('/metrics', () => {
  it('counts requests by verb, resource, scope, dry run and code, with their durations', async () => {
    const ns = '/api/v1/namespaces/default/configmaps';
    expect((await request(s, 'POST', ns, { metadata: { name: 'm1' } })).status).toBe(201);
    expect((await request(s, 'POST', `${ns}?dryRun=All`, { metadata: { name: 'm2' } })).status).toBe(201);
    expect((await request(s, 'GET', `${ns}/m1`)).status).toBe(200);
    expect((await request(s, 'GET', `${ns}/missing`)).status).toBe(404);
    expect((await request(s, 'GET', '/api/v1/configmaps')).status).toBe(200);
    const apply = await request(s, 'PATCH', `${ns}/m1?fieldManager=t`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'm1' }, data: { a: 'b' } }, { 'content-type': 'application/apply-patch+yaml' });
    expect(apply.status).toBe(200);

    const total = await scrape(s, 'apiserver_request_total');
    const cm = { component: 'apiserver', group: '', version: 'v1', resource: 'configmaps', subresource: '' };
    expect(value(total, { ...cm, verb: 'POST', scope: 'resource', dry_run: '', code: '201' })).toBe(1);
    expect(value(total, { ...cm, verb: 'POST', scope: 'resource', dry_run: 'All', code: '201' })).toBe(1);
    expect(value(total, { ...cm, verb: 'GET', scope: 'resource', code: '200' })).toBe(1);
    expect(value(total, { ...cm, verb: 'GET', scope: 'resource', code: '404' })).toBe(1);
    expect(value(total, { ...cm, verb: 'LIST', scope: 'cluster', code: '200' })).toBe(1);
    expect(value(total, { ...cm, verb: 'APPLY', scope: 'resource', code: '200' })).toBe(1);

    const count = await scrape(s, 'apiserver_request_duration_seconds_count');
    expect(value(count, { ...cm, verb: 'GET', scope: 'resource' })).toBe(2);
    const buckets = await scrape(s, 'apiserver_request_duration_seconds_bucket');
    expect(value(buckets, { ...cm, verb: 'GET', scope: 'resource', le: '+Inf' })).toBe(2);
    expect(value(buckets, { ...cm, verb: 'GET', scope: 'resource', le: '60' })).toBe(2);

    expect(value(await scrape(s, 'apiserver_current_inflight_requests'), { request_kind: 'mutating' })).toBe(0);
    expect(value(await scrape(s, 'apiserver_storage_objects'), { resource: 'configmaps' })).toBeGreaterThanOrEqual(2);
    expect((await scrape(s, 'process_resident_memory_bytes'))[0].value).toBeGreaterThan(10 * 2 ** 20);
    expect((await scrape(s, 'process_start_time_seconds'))[0].value).toBeGreaterThan(1.7e9);
  });

  it('an open watch is a long-running request until it ends, then a WATCH in the totals', async () => {
    const w = openWatch(s, '/api/v1/namespaces/default/configmaps?watch=1');
    expect(await w.status).toBe(200);
    const labels = { verb: 'WATCH', resource: 'configmaps', scope: 'namespace' };
    expect(value(await scrape(s, 'apiserver_longrunning_requests'), labels)).toBe(1);
    w.close();
    await until(async () => (value(await scrape(s, 'apiserver_request_total'), { ...labels, code: '200' }) ?? 0) >= 1 || undefined);
    expect(value(await scrape(s, 'apiserver_longrunning_requests'), labels) ?? 0).toBe(0);
  });

  it('a deprecated API, once requested, sets apiserver_requested_deprecated_apis', async () => {
    expect(value(await scrape(s, 'apiserver_requested_deprecated_apis'), { resource: 'componentstatuses' })).toBeUndefined();
    expect((await request(s, 'GET', '/api/v1/componentstatuses')).status).toBe(200);
    expect(value(await scrape(s, 'apiserver_requested_deprecated_apis'), { group: '', version: 'v1', resource: 'componentstatuses', subresource: '', removed_release: '' })).toBe(1);
  });

  it('--disabled-metrics leaves the named metrics out; kubectl reads the text', async () => {
    const text = await kubectlOk(s, ['get', '--raw', '/metrics']);
    expect(text).toContain('# TYPE apiserver_request_total counter');
    expect(text).not.toContain('apiserver_response_sizes');
    expect(text).not.toContain('nodejs_eventloop_lag_seconds ');
    expect(text).toContain('nodejs_heap_size_used_bytes');
  });

  it('--show-hidden-metrics-for-version takes only the previous minor release', async () => {
    await expect(startServer({ args: ['--show-hidden-metrics-for-version', '1.31'] })).rejects.toThrow(/only the previous minor version 1\.32/);
  });
});
