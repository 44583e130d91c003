// The verbs of issue #2 against a started server: generateName, cluster scope, finalizers,
// deletecollection, update, patch forms, watch events including DELETED.
import { describe, it, expect } from 'vitest';
import { openWatch, request, until, type TestServer, useServer } from './helpers/server.js';

let s: TestServer;
const CM = '/api/v1/namespaces/default/configmaps';

useServer((started) => (s = started));

describe('verbs', () => {
  it('create with generateName fills in name, uid, creationTimestamp, resourceVersion, namespace', async () => {
    const r = await request(s, 'POST', CM, { metadata: { generateName: 'gen-' } });
    expect(r.status).toBe(201);
    const m = r.json().metadata;
    expect(m.name).toMatch(/^gen-[a-z0-9]{5}$/);
    expect(m.namespace).toBe('default');
    expect(m.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(m.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(m.resourceVersion).toMatch(/^\d+$/);
  });

  it('a name the client gives wins over generateName, and a taken one is 409, not a generated name', async () => {
    expect((await request(s, 'POST', CM, { metadata: { name: 'gen-given' } })).status).toBe(201);
    const again = await request(s, 'POST', CM, { metadata: { name: 'gen-given', generateName: 'gen-' } });
    expect(again.status).toBe(409);
    expect(again.json()).toMatchObject({ reason: 'AlreadyExists', details: { name: 'gen-given' } });
    const dry = await request(s, 'POST', `${CM}?dryRun=All`, { metadata: { generateName: 'gen-' } });
    expect(dry.status).toBe(201);
    expect(dry.json().metadata.name).toMatch(/^gen-[a-z0-9]{5}$/);
  });

  it('cluster-scoped objects ignore a namespace and list at the cluster path', async () => {
    const r = await request(s, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', { metadata: { name: 'reader' }, rules: [] });
    expect(r.status).toBe(201);
    expect(r.json().metadata.namespace).toBeUndefined();
    const l = (await request(s, 'GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles')).json();
    expect(l.kind).toBe('ClusterRoleList');
    expect(l.items.map((i: any) => i.metadata.name)).toContain('reader');
  });

  it('lists across all namespaces', async () => {
    await request(s, 'POST', '/api/v1/namespaces/kube-system/configmaps', { metadata: { name: 'sys' } });
    const l = (await request(s, 'GET', '/api/v1/configmaps')).json();
    expect(l.kind).toBe('ConfigMapList');
    const keys = l.items.map((i: any) => `${i.metadata.namespace}/${i.metadata.name}`);
    expect(keys).toContain('kube-system/sys');
    expect([...keys].sort()).toEqual(keys);
  });

  it('update carries the resourceVersion and bumps it; a no-op update keeps it', async () => {
    const c = (await request(s, 'POST', CM, { metadata: { name: 'upd' }, data: { a: '1' } })).json();
    const u = await request(s, 'PUT', `${CM}/upd`, { ...c, data: { a: '2' } });
    expect(u.status).toBe(200);
    expect(Number(u.json().metadata.resourceVersion)).toBeGreaterThan(Number(c.metadata.resourceVersion));
    const same = await request(s, 'PUT', `${CM}/upd`, u.json());
    expect(same.json().metadata.resourceVersion).toBe(u.json().metadata.resourceVersion);
    const missing = await request(s, 'PUT', `${CM}/nope`, { metadata: { name: 'nope' } });
    expect(missing.status).toBe(404);
  });

  it('json patch and merge patch', async () => {
    await request(s, 'POST', CM, { metadata: { name: 'pt' }, data: { a: '1', b: '2' } });
    const j = await request(s, 'PATCH', `${CM}/pt`, [{ op: 'remove', path: '/data/a' }, { op: 'add', path: '/data/c', value: '3' }], { 'content-type': 'application/json-patch+json' });
    expect(j.json().data).toEqual({ b: '2', c: '3' });
    const m = await request(s, 'PATCH', `${CM}/pt`, { data: { b: null } }, { 'content-type': 'application/merge-patch+json' });
    expect(m.json().data).toEqual({ c: '3' });
  });

  it('finalizers hold a deleted object until the last one is removed', async () => {
    const w = openWatch(s, `${CM}?watch=1&fieldSelector=metadata.name%3Dfin`);
    await w.status;
    await request(s, 'POST', CM, { metadata: { name: 'fin', finalizers: ['example.com/hold'] } });
    const d = await request(s, 'DELETE', `${CM}/fin`);
    expect(d.status).toBe(200);
    expect(d.json().metadata.deletionTimestamp).toBeTruthy();
    const still = (await request(s, 'GET', `${CM}/fin`)).json();
    expect(still.metadata.deletionTimestamp).toBeTruthy();
    const p = await request(s, 'PATCH', `${CM}/fin`, { metadata: { finalizers: null } }, { 'content-type': 'application/merge-patch+json' });
    expect(p.status).toBe(200);
    expect((await request(s, 'GET', `${CM}/fin`)).status).toBe(404);
    await until(() => w.events.find((e) => e.type === 'DELETED'));
    expect(w.events.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
    w.close();
  });

  it('delete answers a Success Status; deletecollection removes what the selector matches', async () => {
    await request(s, 'POST', CM, { metadata: { name: 'del1' } });
    const d = await request(s, 'DELETE', `${CM}/del1`);
    expect(d.json()).toMatchObject({ kind: 'Status', status: 'Success', details: { name: 'del1', kind: 'configmaps' } });
    for (let i = 0; i < 5; i++) await request(s, 'POST', CM, { metadata: { name: `dc${i}`, labels: { batch: i < 3 ? 'x' : 'y' } } });
    const dc = await request(s, 'DELETE', `${CM}?labelSelector=batch%3Dx`);
    expect(dc.status).toBe(200);
    expect(dc.json().items).toHaveLength(3);
    const left = (await request(s, 'GET', `${CM}?labelSelector=batch`)).json().items.map((i: any) => i.metadata.name);
    expect(left.sort()).toEqual(['dc3', 'dc4']);
  });

  it('watch from now sees ADDED, MODIFIED and DELETED with increasing versions', async () => {
    const w = openWatch(s, '/api/v1/namespaces/kube-public/configmaps?watch=1&fieldSelector=metadata.name%3Dev'); // not kube-root-ca.crt
    await w.status;
    await request(s, 'POST', '/api/v1/namespaces/kube-public/configmaps', { metadata: { name: 'ev' } });
    await request(s, 'PATCH', '/api/v1/namespaces/kube-public/configmaps/ev', { data: { a: 'b' } }, { 'content-type': 'application/merge-patch+json' });
    await request(s, 'DELETE', '/api/v1/namespaces/kube-public/configmaps/ev');
    await until(() => w.events.length >= 3);
    expect(w.events.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
    const rvs = w.events.map((e) => Number(e.object.metadata.resourceVersion));
    expect(rvs[0] < rvs[1] && rvs[1] < rvs[2]).toBe(true);
    w.close();
  });
});
