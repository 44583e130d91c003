// Issue 17, item 8: storage holds objects up to --max-object-size-bytes (etcd's 1.5 MiB
// request limit by default). A larger one is refused, by every write that would store it,
// with kube-apiserver's answer to etcd's refusal; a smaller one is stored and read back.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { request, startServer, useServer, type TestServer } from './helpers/server.js';

let s: TestServer;
// a bare API server, as kube-apiserver without kube-controller-manager: no ReplicaSet or Deployment controller writes the workloads these tests look at
useServer((x) => (s = x), { args: ['--controllers=*,-replicaset-controller,-deployment-controller'] });

/** What kube-apiserver answers when etcd refuses a write as too large (the error passes through unconverted). */
const TOO_LARGE = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'etcdserver: request is too large', code: 500 };

const PODS = '/api/v1/namespaces/default/pods';
const DEP = '/apis/apps/v1/namespaces/default/deployments';
const CM = '/api/v1/namespaces/default/configmaps';
const MB = 1_000_000;

function deployment(name: string, argBytes: number): any {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'busybox', args: ['x'.repeat(argBytes)] }] } },
    },
  };
}

/** Over the limit; past 2 MiB kube's etcd client refuses it first, naming its size. */
function expectTooLarge(r: { status: number; json(): any; body: string }, overTwoMiB = false) {
  expect(r.status, r.body.slice(0, 300)).toBe(500);
  if (!overTwoMiB) expect(r.json()).toEqual(TOO_LARGE);
  else expect(r.json()).toEqual({ ...TOO_LARGE, message: expect.stringMatching(/^rpc error: code = ResourceExhausted desc = trying to send message larger than max \(\d+ vs\. 2097152\)$/) });
}

describe('the default limit, 1.5 MiB', () => {
  it('a 2.5 MB Pod is refused and not stored', async () => {
    const pod = { metadata: { name: 'huge' }, spec: { containers: [{ name: 'c', image: 'busybox', args: ['x'.repeat(2.5 * MB)] }] } };
    // past 2 MiB, kube's etcd client refuses to send it (kube-apiserver 1.24 measured:
    // "... larger than max (2500477 vs. 2097152)"; the size is its protobuf request's, ours the JSON's)
    expectTooLarge(await request(s, 'POST', PODS, pod), true);
    expect((await request(s, 'GET', `${PODS}/huge`)).status).toBe(404);
  });

  it('a 1.4 MB Deployment is stored and read back; 1.6 MB by create is refused', async () => {
    const ok = await request(s, 'POST', DEP, deployment('big', 1.4 * MB));
    expect(ok.status).toBe(201);
    const back = await request(s, 'GET', `${DEP}/big`);
    expect(back.status).toBe(200);
    expect(back.json().spec.template.spec.containers[0].args[0]).toHaveLength(1.4 * MB);
    expectTooLarge(await request(s, 'POST', DEP, deployment('bigger', 1.6 * MB)));
    expect((await request(s, 'GET', `${DEP}/bigger`)).status).toBe(404);
  });

  it('growing the stored 1.4 MB Deployment past the limit is refused by update, every patch and apply', async () => {
    const before = (await request(s, 'GET', `${DEP}/big`)).json();
    const grown = deployment('big', 1.6 * MB);
    grown.metadata.resourceVersion = before.metadata.resourceVersion;
    expectTooLarge(await request(s, 'PUT', `${DEP}/big`, grown));
    const args = { spec: { template: { spec: { containers: [{ name: 'c', args: ['x'.repeat(1.6 * MB)] }] } } } };
    // a merge patch replaces the list: the container lost its image, and validation answers
    // first, as kube's (measured on kube-apiserver 1.24: 422 "...containers[0].image: Required value")
    const invalid = await request(s, 'PATCH', `${DEP}/big`, args, { 'content-type': 'application/merge-patch+json' });
    expect(invalid.status).toBe(422);
    expect(invalid.json().message).toContain('spec.template.spec.containers[0].image: Required value');
    const whole = { spec: { template: { spec: { containers: [{ name: 'c', image: 'busybox', args: ['x'.repeat(1.6 * MB)] }] } } } };
    expectTooLarge(await request(s, 'PATCH', `${DEP}/big`, whole, { 'content-type': 'application/merge-patch+json' }));
    expectTooLarge(await request(s, 'PATCH', `${DEP}/big`, args, { 'content-type': 'application/strategic-merge-patch+json' }));
    const jp = [{ op: 'add', path: '/spec/template/spec/containers/0/args/-', value: 'y'.repeat(0.3 * MB) }];
    expectTooLarge(await request(s, 'PATCH', `${DEP}/big`, jp, { 'content-type': 'application/json-patch+json' }));
    // copies within json-patch's 3 MiB allowance that grow the object past storage's limit
    const copies = [{ op: 'copy', from: '/spec/template/spec/containers/0/args/0', path: '/spec/template/spec/containers/0/args/-' }];
    expectTooLarge(await request(s, 'PATCH', `${DEP}/big`, copies, { 'content-type': 'application/json-patch+json' }), true);
    const apply = await request(s, 'PATCH', `${DEP}/big?fieldManager=tester&force=true`, JSON.stringify(deployment('big', 1.6 * MB)), { 'content-type': 'application/apply-patch+yaml' });
    expectTooLarge(apply);
    const after = (await request(s, 'GET', `${DEP}/big`)).json();
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });

  it('a status write past the limit is refused too', async () => {
    const cur = (await request(s, 'GET', `${DEP}/big`)).json();
    cur.status = { conditions: [{ type: 'Available', status: 'True', reason: 'Big', message: 'm'.repeat(0.3 * MB) }] };
    expectTooLarge(await request(s, 'PUT', `${DEP}/big/status`, cur));
  });

  it('a dry run never reaches storage, and answers whatever its size (as kube)', async () => {
    const r = await request(s, 'POST', `${DEP}?dryRun=All`, deployment('dry', 1.6 * MB));
    expect(r.status).toBe(201);
  });

  it('the large object still deletes', async () => {
    expect((await request(s, 'DELETE', `${DEP}/big`)).status).toBe(200);
    expect((await request(s, 'GET', `${DEP}/big`)).status).toBe(404);
  });
});

describe('--max-object-size-bytes', () => {
  let small: TestServer;
  beforeAll(async () => {
    small = await startServer({ args: ['--max-object-size-bytes', '100000', '--controllers=*,-replicaset-controller,-deployment-controller'] });
  }, 120_000);
  afterAll(async () => {
    await small?.stop();
    small?.cleanup();
  });

  it('a ConfigMap over the flag is refused by create, update and patch; under it is stored', async () => {
    expectTooLarge(await request(small, 'POST', CM, { metadata: { name: 'over' }, data: { a: 'x'.repeat(150_000) } }));
    const ok = await request(small, 'POST', CM, { metadata: { name: 'under' }, data: { a: 'x'.repeat(90_000) } });
    expect(ok.status).toBe(201);
    const cur = ok.json();
    cur.data.a = 'x'.repeat(150_000);
    expectTooLarge(await request(small, 'PUT', `${CM}/under`, cur));
    expectTooLarge(await request(small, 'PATCH', `${CM}/under`, { data: { b: 'y'.repeat(20_000) } }, { 'content-type': 'application/merge-patch+json' }));
    const back = (await request(small, 'GET', `${CM}/under`)).json();
    expect(back.data.a).toHaveLength(90_000);
    expect(back.data.b).toBeUndefined();
  });

  it('a write too large only for its managedFields is stored without them (kube drops them and retries); an apply is not', async () => {
    const r0 = await request(small, 'POST', CM, { metadata: { name: 'edge' }, data: { a: 'x'.repeat(90_000) } });
    expect(r0.status).toBe(201);
    const o = r0.json();
    expect(o.metadata.managedFields).toBeDefined();
    const withMf = r0.body.length;
    const mf = JSON.stringify(o.metadata.managedFields).length + '"managedFields":,'.length;
    // content just under the limit, managedFields taking it over
    const grow = 100_000 - withMf + mf - 100;
    expect(grow).toBeGreaterThan(0);
    const r1 = await request(small, 'PATCH', `${CM}/edge?fieldManager=grower`, { data: { b: 'y'.repeat(grow) } }, { 'content-type': 'application/merge-patch+json' });
    expect(r1.status, r1.body.slice(0, 300)).toBe(200);
    expect(r1.json().metadata.managedFields).toBeUndefined();
    // (stored with the managedFields it came with, it would have been over the limit)
    expect(r1.body.length + mf).toBeGreaterThan(100_000);
    expect(r1.json().data.b).toHaveLength(grow);
    // an apply of the same size keeps its managedFields, and storage refuses it
    const cfg = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'edge-apply' }, data: { a: 'x'.repeat(90_000), b: 'y'.repeat(grow) } };
    expectTooLarge(await request(small, 'PATCH', `${CM}/edge-apply?fieldManager=applier`, JSON.stringify(cfg), { 'content-type': 'application/apply-patch+yaml' }));
  });

  it('refuses a value below 1024 at start-up', async () => {
    await expect(startServer({ args: ['--max-object-size-bytes', '10'] })).rejects.toThrow(/must be at least 1024/);
  });
});
