// /metrics as a Prometheus scrape and kubectl see it: kube-apiserver's stable request,
// inflight, long-running, deprecated-API and storage-object metrics, and the process's own.
import { describe, it, expect } from 'vitest';
import { connect } from 'node:net';
import { onEtcd, openWatch, request, startServer, until, useServer, type TestServer } from './helpers/server.js';
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

    // the last second's most (kube's watermark): the creates above, then nothing once a period has passed without one
    await until(async () => value(await scrape(s, 'apiserver_current_inflight_requests'), { request_kind: 'mutating' }) === 0, 5000);
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

  it("kube's other families: SLI durations, authentication, authorization, admission plugins, watch events, the watch cache, storage requests and size", async () => {
    const ns = '/api/v1/namespaces/default/configmaps';
    const w = openWatch(s, `${ns}?watch=1&resourceVersion=0`);
    expect(await w.status).toBe(200);
    expect((await request(s, 'POST', ns, { metadata: { name: 'fam1' }, data: { k: 'v' } })).status).toBe(201);
    expect((await request(s, 'GET', `${ns}/fam1`)).status).toBe(200);
    expect((await request(s, 'GET', `${ns}/fam1`, undefined, { authorization: 'Bearer not-a-token' })).status).toBe(401);
    await until(() => (w.events.some((e) => e.object?.metadata?.name === 'fam1') ? true : undefined));
    w.close();

    // the SLI histogram: the request labels without dry_run, kube's buckets from 0.05 s
    const sli = await scrape(s, 'apiserver_request_sli_duration_seconds_bucket');
    const get = { component: 'apiserver', group: '', version: 'v1', resource: 'configmaps', subresource: '', verb: 'GET', scope: 'resource' };
    expect(value(sli, { ...get, le: '0.05' })).toBeGreaterThanOrEqual(1);
    expect(value(sli, { ...get, le: '60' })).toBeGreaterThanOrEqual(1);
    expect(sli.find((x) => x.labels.le === '0.025')).toBeUndefined();
    expect(sli.every((x) => !('dry_run' in x.labels))).toBe(true);

    expect(value(await scrape(s, 'authentication_attempts'), { result: 'success' })).toBeGreaterThanOrEqual(3);
    expect(value(await scrape(s, 'authentication_attempts'), { result: 'failure' })).toBeGreaterThanOrEqual(1);
    expect(value(await scrape(s, 'authentication_duration_seconds_bucket'), { result: 'success', le: '0.001' })).toBeGreaterThanOrEqual(1);
    expect((await scrape(s, 'authenticated_user_requests')).reduce((n, x) => n + x.value, 0)).toBeGreaterThanOrEqual(3);
    expect(value(await scrape(s, 'authorization_attempts_total'), { result: 'allowed' })).toBeGreaterThanOrEqual(3);
    expect(value(await scrape(s, 'authorization_duration_seconds_count'), { result: 'allowed' })).toBeGreaterThanOrEqual(3);

    const plugin = await scrape(s, 'apiserver_admission_controller_admission_duration_seconds_count');
    expect(value(plugin, { name: 'NamespaceLifecycle', operation: 'CREATE', rejected: 'false', type: 'admit' })).toBeGreaterThanOrEqual(1);

    const cm = { group: '', version: 'v1', kind: 'ConfigMap' };
    expect(value(await scrape(s, 'apiserver_watch_events_total'), cm)).toBeGreaterThanOrEqual(1);
    expect(value(await scrape(s, 'apiserver_watch_events_sizes_bucket'), { ...cm, le: '1024' })).toBeGreaterThanOrEqual(1);

    expect(value(await scrape(s, 'apiserver_watch_cache_events_received_total'), { resource: 'configmaps' })).toBeGreaterThanOrEqual(1);
    expect(value(await scrape(s, 'apiserver_watch_cache_events_dispatched_total'), { resource: 'configmaps' })).toBeGreaterThanOrEqual(1);
    expect(value(await scrape(s, 'apiserver_watch_cache_initializations_total'), { resource: 'configmaps' })).toBe(1);
    expect(value(await scrape(s, 'apiserver_watch_cache_resource_version'), { resource: 'configmaps' })).toBeGreaterThan(0);
    expect(value(await scrape(s, 'watch_cache_capacity'), { resource: 'configmaps' })).toBeGreaterThan(0);

    expect(value(await scrape(s, 'etcd_request_duration_seconds_count'), { operation: 'create', type: 'configmaps' })).toBeGreaterThanOrEqual(1);
    expect(value(await scrape(s, 'etcd_requests_total'), { operation: 'create', type: 'configmaps' })).toBeGreaterThanOrEqual(1);
    if (!onEtcd) expect(value(await scrape(s, 'apiserver_storage_size_bytes'), { storage_cluster_id: 'lmdb' })).toBeGreaterThan(0);

    // LISTs: from the watch cache, under kube's resource prefix; from storage at an exact older version
    expect((await request(s, 'GET', ns)).status).toBe(200);
    expect(value(await scrape(s, 'apiserver_cache_list_total'), { resource_prefix: '/configmaps', index: '' })).toBeGreaterThanOrEqual(1);
    expect(value(await scrape(s, 'apiserver_cache_list_returned_objects_total'), { resource_prefix: '/configmaps' })).toBeGreaterThanOrEqual(1);
    const rv = (await request(s, 'GET', `${ns}/fam1`)).json().metadata.resourceVersion;
    expect((await request(s, 'POST', ns, { metadata: { name: 'fam2' } })).status).toBe(201);
    expect((await request(s, 'GET', `${ns}?resourceVersion=${rv}&resourceVersionMatch=Exact`)).status).toBe(200);
    expect(value(await scrape(s, 'apiserver_storage_list_total'), { resource: 'configmaps' })).toBeGreaterThanOrEqual(1);
    expect(value(await scrape(s, 'apiserver_storage_list_returned_objects_total'), { resource: 'configmaps' })).toBeGreaterThanOrEqual(1);

    // counters without labels are written from start, at zero
    expect((await scrape(s, 'apiserver_tls_handshake_errors_total'))[0].value).toBe(0);
    expect((await scrape(s, 'apiserver_audit_event_total'))[0].value).toBe(0);
  });

  it('--disabled-metrics leaves the named metrics out; kubectl reads the text', async () => {
    const text = await kubectlOk(s, ['get', '--raw', '/metrics']);
    expect(text).toContain('# TYPE apiserver_request_total counter');
    expect(text).not.toContain('apiserver_response_sizes');
    expect(text).not.toContain('nodejs_eventloop_lag_seconds ');
    expect(text).toContain('nodejs_heap_size_used_bytes');
  });

  it('apiserver_tls_handshake_errors_total counts failed handshakes on the node:http2 front end', async () => {
    const h2 = await startServer({ args: ['--front-end', 'http2'] });
    try {
      // plain text where a TLS ClientHello belongs
      await new Promise<void>((done) => {
        const sock = connect(h2.port, '127.0.0.1', () => sock.end('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
        sock.on('close', () => done());
        sock.on('error', () => {});
      });
      await until(async () => ((await scrape(h2, 'apiserver_tls_handshake_errors_total'))[0]?.value ?? 0) >= 1 || undefined);
    } finally {
      await h2.stop();
      h2.cleanup();
    }
  });

  it('--show-hidden-metrics-for-version takes only the previous minor release', async () => {
    await expect(startServer({ args: ['--show-hidden-metrics-for-version', '1.31'] })).rejects.toThrow(/only the previous minor version 1\.32/);
  });
});
