// Deletion against a started server: namespace deletion with a few hundred objects, the
// three propagation policies through the garbage collector, preconditions, graceful pod
// deletion, and the DeleteOptions rules.
import { describe, it, expect } from 'vitest';
import { openWatch, request, until, type TestServer, useServer } from './helpers/server.js';
import { kubectl } from './helpers/kubectl.js';

let s: TestServer;

// a bare API server, as kube-apiserver without kube-controller-manager: no ReplicaSet or Deployment controller writes the workloads these tests look at
useServer((started) => (s = started), { args: ['--controllers=*,-replicaset-controller,-deployment-controller'] });

const pod = (name: string, extra: any = {}) => ({
  metadata: { name, ...(extra.metadata ?? {}) },
  spec: { containers: [{ name: 'c', image: 'busybox' }], ...(extra.spec ?? {}) },
});

async function waitGone(path: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if ((await request(s, 'GET', path)).status === 404) return;
    if (Date.now() > deadline) throw new Error(`${path} still there`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function mkNamespace(name: string): Promise<void> {
  expect((await request(s, 'POST', '/api/v1/namespaces', { metadata: { name } })).status).toBe(201);
}

function owner(kind: string, apiVersion: string, o: any, block = true) {
  return { apiVersion, kind, name: o.metadata.name, uid: o.metadata.uid, controller: true, blockOwnerDeletion: block };
}

describe('namespace deletion', () => {
  it('removes a few hundred objects of several types, then the namespace; refuses new objects meanwhile', async () => {
    await mkNamespace('doomed');
    const base = '/api/v1/namespaces/doomed';
    const creates: Promise<any>[] = [];
    for (let i = 0; i < 150; i++) creates.push(request(s, 'POST', `${base}/configmaps`, { metadata: { name: `cm-${i}` }, data: { i: String(i) } }));
    for (let i = 0; i < 100; i++) creates.push(request(s, 'POST', `${base}/secrets`, { metadata: { name: `sec-${i}` } }));
    for (let i = 0; i < 50; i++) creates.push(request(s, 'POST', `${base}/pods`, pod(`p-${i}`)));
    for (let i = 0; i < 20; i++) creates.push(request(s, 'POST', `${base}/services`, { metadata: { name: `svc-${i}` }, spec: { ports: [{ port: 80 }] } }));
    for (let i = 0; i < 10; i++) creates.push(request(s, 'POST', '/apis/apps/v1/namespaces/doomed/deployments', { metadata: { name: `d-${i}` }, spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'x' }] } } } }));
    const rs = await Promise.all(creates);
    expect(rs.every((r) => r.status === 201)).toBe(true);
    // One object holds a finalizer of its own: the namespace waits for it.
    expect((await request(s, 'POST', `${base}/configmaps`, { metadata: { name: 'held', finalizers: ['example.com/hold'] } })).status).toBe(201);

    const del = await request(s, 'DELETE', '/api/v1/namespaces/doomed');
    expect(del.status).toBe(200);
    const ns = del.json();
    expect(ns.metadata.deletionTimestamp).toBeTruthy();
    expect(ns.status.phase).toBe('Terminating');
    expect(ns.spec.finalizers).toEqual(['kubernetes']);

    const refused = await request(s, 'POST', `${base}/configmaps`, { metadata: { name: 'late' } });
    expect(refused.status).toBe(403);
    expect(refused.json().reason).toBe('Forbidden');
    expect(refused.json().message).toBe('configmaps "late" is forbidden: unable to create new content in namespace doomed because it is being terminated');

    // Everything but the held object goes; the conditions say what is left.
    const deadline = Date.now() + 30_000;
    let nsNow: any;
    for (;;) {
      nsNow = (await request(s, 'GET', '/api/v1/namespaces/doomed')).json();
      const cond = (nsNow.status?.conditions ?? []).find((c: any) => c.type === 'NamespaceFinalizersRemaining');
      if (cond?.status === 'True') break;
      if (Date.now() > deadline) throw new Error('conditions never showed the held object: ' + JSON.stringify(nsNow.status));
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(nsNow.status.conditions.find((c: any) => c.type === 'NamespaceFinalizersRemaining').message).toBe(
      'Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances',
    );
    expect(nsNow.status.conditions.find((c: any) => c.type === 'NamespaceContentRemaining').message).toBe('Some resources are remaining: configmaps. has 1 resource instances');
    for (const path of [`${base}/secrets`, `${base}/pods`, `${base}/services`, '/apis/apps/v1/namespaces/doomed/deployments']) {
      expect((await request(s, 'GET', path)).json().items).toHaveLength(0);
    }
    // Released: the held object loses its finalizer, then the namespace goes.
    const held = await request(s, 'PATCH', `${base}/configmaps/held`, { metadata: { finalizers: null } }, { 'content-type': 'application/merge-patch+json' });
    expect([200, 404]).toContain(held.status);
    await waitGone('/api/v1/namespaces/doomed', 30_000);
    expect((await request(s, 'GET', `${base}/configmaps`)).json().items).toHaveLength(0);
  });

  it('kubectl delete namespace returns once the namespace and everything in it are gone', async () => {
    expect((await kubectl(s, ['create', 'namespace', 'kdoomed'])).code).toBe(0);
    const items = [
      ...Array.from({ length: 60 }, (_, i) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: 'kdoomed' }, data: { i: String(i) } })),
      ...Array.from({ length: 20 }, (_, i) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name: `s-${i}`, namespace: 'kdoomed' }, stringData: { k: 'v' } })),
    ];
    const created = await kubectl(s, ['create', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }), timeoutMs: 60_000 });
    expect(created.code).toBe(0);
    const del = await kubectl(s, ['delete', 'namespace', 'kdoomed', '--timeout=60s'], { timeoutMs: 70_000 });
    expect(del.stderr).toBe('');
    expect(del.stdout.trim()).toBe('namespace "kdoomed" deleted');
    expect((await request(s, 'GET', '/api/v1/namespaces/kdoomed')).status).toBe(404);
    expect((await request(s, 'GET', '/api/v1/namespaces/kdoomed/configmaps')).json().items).toHaveLength(0);
    expect((await request(s, 'GET', '/api/v1/namespaces/kdoomed/secrets')).json().items).toHaveLength(0);
  });

  it('namespaces/finalize replaces spec.finalizers; a terminating namespace goes when none is left', async () => {
    await mkNamespace('fin');
    const body = (f: string[]) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'fin' }, spec: { finalizers: f } });
    const put = await request(s, 'PUT', '/api/v1/namespaces/fin/finalize', body(['kubernetes', 'example.com/x']));
    expect(put.status).toBe(200);
    expect(put.json().spec.finalizers).toEqual(['kubernetes', 'example.com/x']);
    expect((await request(s, 'DELETE', '/api/v1/namespaces/fin')).status).toBe(200);
    // The lifecycle drops `kubernetes`; the other finalizer holds the namespace.
    const deadline = Date.now() + 15_000;
    for (;;) {
      const ns = (await request(s, 'GET', '/api/v1/namespaces/fin')).json();
      if (JSON.stringify(ns.spec.finalizers) === JSON.stringify(['example.com/x'])) break;
      if (Date.now() > deadline) throw new Error('kubernetes finalizer not removed: ' + JSON.stringify(ns));
      await new Promise((r) => setTimeout(r, 100));
    }
    expect((await request(s, 'PUT', '/api/v1/namespaces/fin/finalize', body([]))).status).toBe(200);
    expect((await request(s, 'GET', '/api/v1/namespaces/fin')).status).toBe(404);
  });

  it('the initial namespaces cannot be deleted', async () => {
    const r = await request(s, 'DELETE', '/api/v1/namespaces/default');
    expect(r.status).toBe(403);
  });
});

describe('propagation through the garbage collector', () => {
  const RS = '/apis/apps/v1/namespaces/default/replicasets';
  const PODS = '/api/v1/namespaces/default/pods';
  const rsBody = (name: string) => ({
    metadata: { name },
    spec: { replicas: 2, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'x' }] } } },
  });

  async function family(name: string, n = 3): Promise<any> {
    const rs = (await request(s, 'POST', RS, rsBody(name))).json();
    for (let i = 0; i < n; i++) {
      const r = await request(s, 'POST', PODS, pod(`${name}-${i}`, { metadata: { labels: { app: name }, ownerReferences: [owner('ReplicaSet', 'apps/v1', rs)] } }));
      expect(r.status).toBe(201);
    }
    return rs;
  }

  const podsOf = async (name: string) => (await request(s, 'GET', `${PODS}?labelSelector=app%3D${name}`)).json().items;

  it('Foreground: dependents go first, then the owner', async () => {
    await family('fg');
    const w = openWatch(s, '/apis/apps/v1/namespaces/default/replicasets?watch=true&fieldSelector=metadata.name%3Dfg');
    const wp = openWatch(s, `${PODS}?watch=true&labelSelector=app%3Dfg`);
    await until(() => w.events.length >= 1 && wp.events.length >= 3);
    const del = await request(s, 'DELETE', `${RS}/fg`, { propagationPolicy: 'Foreground' });
    expect(del.status).toBe(200);
    expect(del.json().metadata.finalizers).toEqual(['foregroundDeletion']);
    expect(del.json().metadata.deletionTimestamp).toBeTruthy();
    await waitGone(`${RS}/fg`);
    expect(await podsOf('fg')).toHaveLength(0);
    await until(() => w.events.some((e) => e.type === 'DELETED') && wp.events.filter((e) => e.type === 'DELETED').length === 3);
    const ownerGone = Number(w.events.find((e) => e.type === 'DELETED').object.metadata.resourceVersion);
    const podsGone = wp.events.filter((e) => e.type === 'DELETED').map((e) => Number(e.object.metadata.resourceVersion));
    for (const rv of podsGone) expect(rv).toBeLessThan(ownerGone);
    w.close();
    wp.close();
  });

  it('kubectl delete --cascade=foreground returns once the owner is gone, its dependents gone before it', async () => {
    await family('kfg');
    const wp = openWatch(s, `${PODS}?watch=true&labelSelector=app%3Dkfg`);
    await until(() => wp.events.length >= 3);
    const del = await kubectl(s, ['delete', 'replicaset', 'kfg', '-n', 'default', '--cascade=foreground', '--timeout=30s'], { timeoutMs: 40_000 });
    expect(del.stderr).toBe('');
    expect(del.stdout.trim()).toBe('replicaset.apps "kfg" deleted');
    expect((await request(s, 'GET', `${RS}/kfg`)).status).toBe(404);
    expect(await podsOf('kfg')).toHaveLength(0);
    await until(() => wp.events.filter((e) => e.type === 'DELETED').length === 3);
    wp.close();
  });

  it('Background (the default for apps): the owner goes at once, dependents after', async () => {
    await family('bg');
    const del = await request(s, 'DELETE', `${RS}/bg`);
    expect(del.status).toBe(200);
    expect(del.json().kind).toBe('Status');
    expect((await request(s, 'GET', `${RS}/bg`)).status).toBe(404);
    const deadline = Date.now() + 15_000;
    while ((await podsOf('bg')).length > 0) {
      if (Date.now() > deadline) throw new Error('dependents not collected');
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  it('Orphan: dependents stay and lose their reference; the owner goes', async () => {
    const rs = await family('or');
    const del = await request(s, 'DELETE', `${RS}/or?propagationPolicy=Orphan`);
    expect(del.status).toBe(200);
    expect(del.json().metadata.finalizers).toEqual(['orphan']);
    await waitGone(`${RS}/or`);
    const pods = await podsOf('or');
    expect(pods).toHaveLength(3);
    for (const p of pods) expect((p.metadata.ownerReferences ?? []).some((r: any) => r.uid === rs.metadata.uid)).toBe(false);
  });

  it('the deprecated orphanDependents works too, and cannot be combined with propagationPolicy', async () => {
    await family('od', 1);
    const both = await request(s, 'DELETE', `${RS}/od`, { orphanDependents: true, propagationPolicy: 'Orphan' });
    expect(both.status).toBe(422);
    expect(both.json().message).toBe('DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set');
    const del = await request(s, 'DELETE', `${RS}/od`, { orphanDependents: true });
    expect(del.status).toBe(200);
    await waitGone(`${RS}/od`);
    expect(await podsOf('od')).toHaveLength(1);
  });

  it('a dependent with another live owner only loses the reference to the deleted one', async () => {
    const a = (await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'owner-a' } })).json();
    const b = (await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'owner-b' } })).json();
    await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'shared-dep', ownerReferences: [owner('ConfigMap', 'v1', a, false), owner('ConfigMap', 'v1', b, false)].map((r, i) => ({ ...r, controller: i === 0 })) } });
    await request(s, 'DELETE', '/api/v1/namespaces/default/configmaps/owner-a');
    const deadline = Date.now() + 10_000;
    for (;;) {
      const d = (await request(s, 'GET', '/api/v1/namespaces/default/configmaps/shared-dep')).json();
      if (d.metadata.ownerReferences?.length === 1) {
        expect(d.metadata.ownerReferences[0].uid).toBe(b.metadata.uid);
        break;
      }
      if (Date.now() > deadline) throw new Error('reference not removed');
      await new Promise((r) => setTimeout(r, 100));
    }
  });
});

describe('delete options', () => {
  const CM = '/api/v1/namespaces/default/configmaps';

  it('preconditions on uid and resourceVersion give 409 with kube wording', async () => {
    const cm = (await request(s, 'POST', CM, { metadata: { name: 'pre' } })).json();
    const badUid = await request(s, 'DELETE', `${CM}/pre`, { preconditions: { uid: 'nope' } });
    expect(badUid.status).toBe(409);
    expect(badUid.json().message).toBe(`Operation cannot be fulfilled on configmaps "pre": Precondition failed: UID in precondition: nope, UID in object meta: ${cm.metadata.uid}`);
    const badRv = await request(s, 'DELETE', `${CM}/pre`, { preconditions: { resourceVersion: '1' } });
    expect(badRv.status).toBe(409);
    expect(badRv.json().message).toBe(`Operation cannot be fulfilled on configmaps "pre": Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: ${cm.metadata.resourceVersion}`);
    const ok = await request(s, 'DELETE', `${CM}/pre`, { preconditions: { uid: cm.metadata.uid, resourceVersion: cm.metadata.resourceVersion } });
    expect(ok.status).toBe(200);
  });

  it('a bound pod is deleted gracefully and goes when its period ends; an unscheduled pod goes at once', async () => {
    const P = '/api/v1/namespaces/default/pods';
    await request(s, 'POST', P, pod('bound', { spec: { nodeName: 'node-1', terminationGracePeriodSeconds: 2 } }));
    const del = await request(s, 'DELETE', `${P}/bound`);
    expect(del.status).toBe(200);
    expect(del.json().metadata.deletionGracePeriodSeconds).toBe(2);
    expect(del.json().metadata.deletionTimestamp).toBeTruthy();
    expect((await request(s, 'GET', `${P}/bound`)).status).toBe(200);
    // A second delete with a longer period changes nothing.
    const again = await request(s, 'DELETE', `${P}/bound`, { gracePeriodSeconds: 60 });
    expect(again.json().metadata.deletionGracePeriodSeconds).toBe(2);
    await waitGone(`${P}/bound`, 10_000);

    await request(s, 'POST', P, pod('confirm', { spec: { nodeName: 'node-1', terminationGracePeriodSeconds: 600 } }));
    expect((await request(s, 'DELETE', `${P}/confirm`)).json().metadata.deletionGracePeriodSeconds).toBe(600);
    // The node agent confirms: grace 0 removes it now.
    const now = await request(s, 'DELETE', `${P}/confirm?gracePeriodSeconds=0`);
    expect(now.status).toBe(200);
    expect((await request(s, 'GET', `${P}/confirm`)).status).toBe(404);

    await request(s, 'POST', P, pod('loose'));
    expect((await request(s, 'DELETE', `${P}/loose`)).status).toBe(200);
    expect((await request(s, 'GET', `${P}/loose`)).status).toBe(404);
  });

  it('dry-run delete changes nothing', async () => {
    await request(s, 'POST', CM, { metadata: { name: 'dry' } });
    const r = await request(s, 'DELETE', `${CM}/dry?dryRun=All`);
    expect(r.status).toBe(200);
    expect((await request(s, 'GET', `${CM}/dry`)).status).toBe(200);
    const bad = await request(s, 'DELETE', `${CM}/dry?dryRun=Some`);
    expect(bad.status).toBe(400);
  });
});
