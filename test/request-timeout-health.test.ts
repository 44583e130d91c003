// Issue 22, Bounded requests and Health, against a started server: --request-timeout's 504
// Status and ?timeout= (kube's WithRequestDeadline and timeout filter), the post-start hook
// checks in /readyz?verbose, an unknown check's 404, and --delete-collection-workers.
import { describe, it, expect } from 'vitest';
import { openWatch, request, useServer, type TestServer } from './helpers/server.js';
import { kubectl } from './helpers/kubectl.js';

let s: TestServer;
useServer((x) => (s = x), { args: ['--request-timeout=2s', '--delete-collection-workers=3'] });

/** A GET the server holds (storage waits for a resource version it has not reached, then answers 504 itself). */
const SLOW_LIST = '/api/v1/namespaces?resourceVersion=999999999&resourceVersionMatch=NotOlderThan';

describe('--request-timeout', () => {
  it("answers a request past its deadline with kube's timeout Status, as its timeout filter writes it", async () => {
    const r = await request(s, 'GET', SLOW_LIST);
    expect(r.status).toBe(504);
    // (json.Encoder of the bare Status: no kind or apiVersion, and Go's sniffed content type)
    expect(r.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(r.body).toBe('{"metadata":{},"status":"Failure","message":"Timeout: request did not complete within the allotted timeout","reason":"Timeout","details":{},"code":504}\n');
    // the priority-and-fairness headers were for the handler's answer, not this one
    expect(r.headers['x-kubernetes-pf-flowschema-uid']).toBeUndefined();
    // the connection is still good for the next request
    expect((await request(s, 'GET', '/api/v1/namespaces/default')).status).toBe(200);
  });

  it('takes a shorter ?timeout=, and refuses one Go cannot parse with a 400 Status', async () => {
    const short = await request(s, 'GET', `${SLOW_LIST}&timeout=500ms`);
    expect(short.status).toBe(504);
    expect(short.body).toContain('"message":"Timeout: request did not complete within the allotted timeout"');
    const bad = await request(s, 'GET', '/api/v1/namespaces?timeout=bad');
    expect(bad.status).toBe(400);
    expect(bad.json()).toMatchObject({ kind: 'Status', reason: 'BadRequest', code: 400, message: 'invalid timeout specified in the request URL - time: invalid duration "bad"' });
    const unit = await request(s, 'GET', '/api/v1/namespaces?timeout=5');
    expect(unit.json().message).toBe('invalid timeout specified in the request URL - time: missing unit in duration "5"');
    // 0 and values past the server's own are the server's timeout
    expect((await request(s, 'GET', '/api/v1/namespaces?timeout=0s')).status).toBe(200);
    expect((await request(s, 'GET', '/api/v1/namespaces?timeout=1h')).status).toBe(200);
  });

  it("reads in kubectl as kube-apiserver's timeout does", async () => {
    const r = await kubectl(s, ['get', '--raw', SLOW_LIST]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('Error from server (Timeout): the server was unable to return a response in the time allotted, but may still be processing the request');
    const bad = await kubectl(s, ['get', '--raw', '/api/v1/namespaces?timeout=bad']);
    expect(bad.stderr).toContain('Error from server (BadRequest): invalid timeout specified in the request URL - time: invalid duration "bad"');
  });

  it('leaves long-running requests alone: a watch outlives it', async () => {
    const w = openWatch(s, '/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=30&timeout=1s');
    expect(await w.status).toBe(200);
    await new Promise((r) => setTimeout(r, 3000));
    expect(w.ended()).toBe(false);
    expect((await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'after-the-timeout' } })).status).toBe(201);
    const deadline = Date.now() + 10_000;
    while (!w.events.some((e) => e.object?.metadata?.name === 'after-the-timeout') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(w.events.some((e) => e.object?.metadata?.name === 'after-the-timeout')).toBe(true);
    w.close();
  }, 20_000);
});

describe('health endpoints', () => {
  it("list kube's checks, a poststarthook per start-up step, in kube's format", async () => {
    const r = await request(s, 'GET', '/readyz?verbose');
    expect(r.status).toBe(200);
    const lines = r.body.split('\n');
    expect(lines.slice(0, 5)).toEqual(['[+]ping ok', '[+]log ok', '[+]etcd ok', '[+]etcd-readiness ok', '[+]informer-sync ok']);
    for (const hook of ['rbac/bootstrap-roles', 'priority-and-fairness-config-producer', 'bootstrap-controller', 'start-service-ip-repair-controllers', 'scheduling/bootstrap-system-priority-classes', 'start-apiextensions-controllers', 'crd-informer-synced']) {
      expect(lines).toContain(`[+]poststarthook/${hook} ok`);
    }
    expect(lines.slice(-3)).toEqual(['[+]shutdown ok', 'readyz check passed', '']);
    const livez = await request(s, 'GET', '/livez?verbose');
    expect(livez.body).not.toContain('shutdown');
    expect(livez.body).not.toContain('[+]informer-sync ok');
    expect(livez.body.endsWith('livez check passed\n')).toBe(true);
    expect(await request(s, 'GET', '/readyz')).toMatchObject({ status: 200, body: 'ok' });
  });

  it('serve each check on its own path, and 404 an unknown one', async () => {
    expect(await request(s, 'GET', '/readyz/poststarthook/rbac/bootstrap-roles')).toMatchObject({ status: 200, body: 'ok' });
    expect(await request(s, 'GET', '/livez/etcd')).toMatchObject({ status: 200, body: 'ok' });
    expect(await request(s, 'GET', '/readyz/no-such-check')).toMatchObject({ status: 404, body: '404 page not found\n' });
    expect((await request(s, 'GET', '/livez/shutdown')).status).toBe(404);
    expect((await request(s, 'GET', '/healthz/poststarthook/nope')).status).toBe(404);
  });
});

describe('--delete-collection-workers', () => {
  it('deletes every object of the collection, a few at a time', async () => {
    const ns = 'dc-workers';
    expect((await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: ns } })).status).toBe(201);
    for (let i = 0; i < 20; i++) expect((await request(s, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: `c${i}`, labels: { set: 'x' } } })).status).toBe(201);
    const r = await request(s, 'DELETE', `/api/v1/namespaces/${ns}/configmaps?labelSelector=set%3Dx`);
    expect(r.status).toBe(200);
    expect(r.json().items).toHaveLength(20);
    expect((await request(s, 'GET', `/api/v1/namespaces/${ns}/configmaps?labelSelector=set%3Dx`)).json().items).toHaveLength(0);
  });

});
