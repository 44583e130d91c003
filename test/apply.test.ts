// The write path of issue #6 items 1-3 against a started server and real kubectl:
// client-side apply (strategic merge patch), server-side apply by two field managers with
// a conflict, forced ownership and --show-managed-fields, and the update rules (409 on a
// stale resourceVersion, unforgeable metadata, managedFields handling).
import { describe, it, expect } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { request, type TestServer, useServer } from './helpers/server.js';
import { kubectl, kubectlOk } from './helpers/kubectl.js';

let s: TestServer;

// a bare API server, as kube-apiserver without kube-controller-manager: no ReplicaSet or Deployment controller writes the workloads these tests look at
useServer((started) => (s = started), { args: ['--controllers=*,-replicaset-controller,-deployment-controller'] });

const k = (args: string[], input?: string) => kubectlOk(s, args, input);

function deployment(name: string, podSpec: any, extra: any = {}): string {
  return JSON.stringify({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'default', labels: { app: name } },
    spec: { replicas: 2, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: podSpec }, ...extra },
  });
}

// Fields the server may default (per-kind defaults); the comparison is about what apply merged.
const DEFAULTED = new Set(['protocol', 'terminationMessagePath', 'terminationMessagePolicy', 'imagePullPolicy', 'resources', 'defaultMode']);
function strip(v: any): any {
  if (Array.isArray(v)) return v.map(strip);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).filter(([k]) => !DEFAULTED.has(k)).map(([k, x]) => [k, strip(x)]));
  return v;
}

describe('client-side apply (strategic merge patch)', () => {
  it('a sequence of kubectl apply adds, changes and removes containers, ports, env and volumes', async () => {
    const steps = [
      {
        containers: [{ name: 'nginx', image: 'nginx:1.25', ports: [{ containerPort: 80 }], env: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }] }],
        volumes: [{ name: 'data', emptyDir: {} }],
      },
      {
        containers: [
          { name: 'nginx', image: 'nginx:1.26', ports: [{ containerPort: 8080 }, { containerPort: 443, name: 'https' }], env: [{ name: 'B', value: '3' }, { name: 'C', value: '4' }] },
          { name: 'sidecar', image: 'busybox', command: ['sleep', '3600'] },
        ],
        volumes: [{ name: 'cache', emptyDir: {} }],
      },
      {
        containers: [
          { name: 'sidecar', image: 'busybox:2', command: ['sleep', '60'] },
          { name: 'nginx', image: 'nginx:1.27', ports: [{ containerPort: 443, name: 'https' }], env: [{ name: 'C', value: '4' }] },
        ],
        volumes: [{ name: 'cache', emptyDir: {} }, { name: 'cfg', configMap: { name: 'cm' } }],
      },
      {
        containers: [{ name: 'nginx', image: 'nginx:1.27', ports: [{ containerPort: 443, name: 'https' }] }],
        volumes: [{ name: 'cfg', configMap: { name: 'cm' } }],
      },
    ];
    for (const spec of steps) {
      await k(['apply', '-f', '-'], deployment('csa', spec));
      const live = JSON.parse(await k(['get', 'deployment', 'csa', '-n', 'default', '-o', 'json']));
      const got = strip(live.spec.template.spec);
      expect({ containers: got.containers, volumes: got.volumes }).toEqual(spec);
    }
    const live = JSON.parse(await k(['get', 'deployment', 'csa', '-n', 'default', '-o', 'json', '--show-managed-fields']));
    expect(live.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']).toContain('nginx:1.27');
    const mf = live.metadata.managedFields.map((e: any) => `${e.manager}/${e.operation}`);
    expect(mf).toContain('kubectl-client-side-apply/Update');
    expect(live.metadata.generation).toBe(4);
  });
});

describe('server-side apply', () => {
  const cfg = (replicas: number) => deployment('ssa', { containers: [{ name: 'app', image: 'nginx:1.25' }] }).replace('"replicas":2', `"replicas":${replicas}`);

  it('two field managers: conflict naming the field and manager, --force-conflicts moves ownership, --show-managed-fields shows it', async () => {
    await k(['apply', '--server-side', '--field-manager', 'alice', '-f', '-'], cfg(2));
    const conflict = await kubectl(s, ['apply', '--server-side', '--field-manager', 'bob', '-f', '-'], { input: cfg(5) });
    expect(conflict.code).not.toBe(0);
    expect(conflict.stderr).toContain('Apply failed with 1 conflict: conflict with "alice": .spec.replicas');

    await k(['apply', '--server-side', '--field-manager', 'bob', '--force-conflicts', '-f', '-'], cfg(5));
    const y = parseYaml(await k(['get', 'deployment', 'ssa', '-n', 'default', '-o', 'yaml', '--show-managed-fields']));
    expect(y.spec.replicas).toBe(5);
    const byManager = Object.fromEntries(y.metadata.managedFields.map((e: any) => [e.manager, e]));
    expect(byManager.bob).toMatchObject({ operation: 'Apply', apiVersion: 'apps/v1', fieldsType: 'FieldsV1' });
    expect(byManager.bob.time).toMatch(/Z$/);
    expect(byManager.bob.fieldsV1['f:spec']['f:replicas']).toEqual({});
    expect(byManager.alice.fieldsV1['f:spec']['f:replicas']).toBeUndefined();
    // both still own the container they agree on
    expect(byManager.alice.fieldsV1['f:spec']['f:template']['f:spec']['f:containers']['k:{"name":"app"}']['f:image']).toEqual({});
    // without the flag, managedFields are hidden
    const plain = parseYaml(await k(['get', 'deployment', 'ssa', '-n', 'default', '-o', 'yaml']));
    expect(plain.metadata.managedFields).toBeUndefined();
  });

  it('kubectl apply --server-side takes over from its client-side apply without conflicts', async () => {
    const spec = { containers: [{ name: 'app', image: 'nginx:1.25' }] };
    await k(['apply', '-f', '-'], deployment('mig', spec));
    await k(['apply', '--server-side', '-f', '-'], deployment('mig', spec).replace('"replicas":2', '"replicas":4'));
    const live = JSON.parse(await k(['get', 'deployment', 'mig', '-n', 'default', '-o', 'json', '--show-managed-fields']));
    expect(live.spec.replicas).toBe(4);
    const owners = Object.fromEntries(live.metadata.managedFields.map((e: any) => [`${e.manager}/${e.operation}`, e.fieldsV1]));
    expect(owners['kubectl/Apply']['f:spec']['f:replicas']).toEqual({});
    expect(owners['kubectl-client-side-apply/Update']?.['f:spec']?.['f:replicas']).toBeUndefined();
  });

  it('the conflict Status carries a cause per field; an update never conflicts and takes ownership', async () => {
    const path = '/apis/apps/v1/namespaces/default/deployments/ssa';
    const body = cfg(9);
    const r = await request(s, 'PATCH', `${path}?fieldManager=alice`, body, { 'content-type': 'application/apply-patch+yaml' });
    expect(r.status).toBe(409);
    const st = r.json();
    expect(st.reason).toBe('Conflict');
    expect(st.details.causes).toEqual([{ reason: 'FieldManagerConflict', message: 'conflict with "bob"', field: '.spec.replicas' }]);

    const m = await request(s, 'PATCH', `${path}?fieldManager=scaler`, { spec: { replicas: 4 } }, { 'content-type': 'application/merge-patch+json' });
    expect(m.status).toBe(200);
    const owners = Object.fromEntries(m.json().metadata.managedFields.map((e: any) => [`${e.manager}/${e.operation}`, e.fieldsV1]));
    expect(owners['scaler/Update']['f:spec']).toEqual({ 'f:replicas': {} });
    expect(owners['bob/Apply']['f:spec']['f:replicas']).toBeUndefined();
  });

  it('apply creates a missing object (201); fieldManager is required; a body with managedFields is refused', async () => {
    const path = '/api/v1/namespaces/default/configmaps/applied';
    const body = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: "1"\n';
    const noManager = await request(s, 'PATCH', path, body, { 'content-type': 'application/apply-patch+yaml' });
    expect(noManager.status).toBe(422);
    expect(noManager.json().message).toBe('PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch');
    const created = await request(s, 'PATCH', `${path}?fieldManager=me`, body, { 'content-type': 'application/apply-patch+yaml' });
    expect(created.status).toBe(201);
    expect(created.json().data).toEqual({ a: '1' });
    expect(created.json().metadata.managedFields[0]).toMatchObject({ manager: 'me', operation: 'Apply', fieldsV1: { 'f:data': { 'f:a': {} } } });
    // sole owner omits a key: it goes
    const again = await request(s, 'PATCH', `${path}?fieldManager=me`, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  b: "2"\n', { 'content-type': 'application/apply-patch+yaml' });
    expect(again.status).toBe(200);
    expect(again.json().data).toEqual({ b: '2' });
    const withMf = await request(s, 'PATCH', `${path}?fieldManager=me`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'applied', managedFields: [{ manager: 'x' }] } }, { 'content-type': 'application/apply-patch+yaml' });
    expect(withMf.status).toBe(400);
    const force = await request(s, 'PATCH', `${path}?force=true`, { data: { c: '3' } }, { 'content-type': 'application/merge-patch+json' });
    expect(force.status).toBe(422);
  });

  it('the manager of other writes comes from the User-Agent; [{}] resets managedFields', async () => {
    const path = '/api/v1/namespaces/default/configmaps';
    const c = await request(s, 'POST', path, { metadata: { name: 'ua' }, data: { a: '1' } }, { 'user-agent': 'my-tool/v1.2 (linux)' });
    expect(c.status).toBe(201);
    expect(c.json().metadata.managedFields).toEqual([
      { manager: 'my-tool', operation: 'Update', apiVersion: 'v1', time: c.json().metadata.creationTimestamp, fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { '.': {}, 'f:a': {} } } },
    ]);
    const reset = await request(s, 'PATCH', `${path}/ua`, { metadata: { managedFields: [{}] }, data: { b: '2' } }, { 'content-type': 'application/merge-patch+json', 'user-agent': 'resetter' });
    expect(reset.status).toBe(200);
    expect(reset.json().metadata.managedFields.map((e: any) => e.manager)).toEqual(['resetter']);
    expect(reset.json().metadata.managedFields[0].fieldsV1).toEqual({ 'f:data': { 'f:b': {} } });
  });
});

describe('update', () => {
  const D = '/apis/apps/v1/namespaces/default/deployments';

  it('a stale resourceVersion on PUT and on a conditional PATCH gives 409 with kube\'s message', async () => {
    const body = JSON.parse(deployment('upd', { containers: [{ name: 'a', image: 'a' }] }));
    const c = (await request(s, 'POST', D, body)).json();
    const u = await request(s, 'PUT', `${D}/upd`, { ...c, spec: { ...c.spec, replicas: 3 } });
    expect(u.status).toBe(200);
    const stale = await request(s, 'PUT', `${D}/upd`, { ...c, spec: { ...c.spec, replicas: 4 } });
    expect(stale.status).toBe(409);
    expect(stale.json().message).toBe('Operation cannot be fulfilled on deployments.apps "upd": the object has been modified; please apply your changes to the latest version and try again');
    const cond = await request(s, 'PATCH', `${D}/upd`, { metadata: { resourceVersion: c.metadata.resourceVersion }, spec: { replicas: 5 } }, { 'content-type': 'application/merge-patch+json' });
    expect(cond.status).toBe(409);
    const smp = await request(s, 'PATCH', `${D}/upd`, { metadata: { resourceVersion: c.metadata.resourceVersion }, spec: { replicas: 5 } }, { 'content-type': 'application/strategic-merge-patch+json' });
    expect(smp.status).toBe(409);
    const fresh = await request(s, 'PATCH', `${D}/upd`, { metadata: { resourceVersion: u.json().metadata.resourceVersion }, spec: { replicas: 5 } }, { 'content-type': 'application/strategic-merge-patch+json' });
    expect(fresh.status).toBe(200);
  });

  it('a status write records ownership with its subresource; a bad fieldManager is 422', async () => {
    const cur = (await request(s, 'GET', `${D}/upd`)).json();
    const st = await request(s, 'PATCH', `${D}/upd/status?fieldManager=ctrl`, { status: { observedGeneration: 1 } }, { 'content-type': 'application/merge-patch+json' });
    expect(st.status).toBe(200);
    const e = st.json().metadata.managedFields.find((x: any) => x.manager === 'ctrl');
    expect(e).toMatchObject({ operation: 'Update', subresource: 'status', fieldsV1: { 'f:status': { 'f:observedGeneration': {} } } });
    expect(st.json().spec).toEqual(cur.spec);
    const bad = await request(s, 'PATCH', `${D}/upd?fieldManager=${encodeURIComponent('a\u0001b')}`, { spec: {} }, { 'content-type': 'application/merge-patch+json' });
    expect(bad.status).toBe(422);
    expect(bad.json().message).toContain('PatchOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value');
  });

  it('a PUT of the same object with its keys in another order changes nothing', async () => {
    const cur = (await request(s, 'GET', `${D}/upd`)).json();
    const reorder = (v: any): any => (Array.isArray(v) ? v.map(reorder) : v && typeof v === 'object' ? Object.fromEntries(Object.keys(v).reverse().map((k) => [k, reorder(v[k])])) : v);
    const r = await request(s, 'PUT', `${D}/upd`, reorder(cur));
    expect(r.status).toBe(200);
    expect(r.json().metadata.resourceVersion).toBe(cur.metadata.resourceVersion);
    expect(r.json().metadata.generation).toBe(cur.metadata.generation);
  });

  it('generated fields cannot be forged', async () => {
    const c = (await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'forge', uid: 'mine', creationTimestamp: '2000-01-01T00:00:00Z', generation: 7 } })).json();
    expect(c.metadata.uid).not.toBe('mine');
    expect(c.metadata.creationTimestamp).not.toBe('2000-01-01T00:00:00Z');
    const p = '/api/v1/namespaces/default/configmaps/forge';
    const wrongUid = await request(s, 'PUT', p, { ...c, metadata: { ...c.metadata, uid: 'other' } });
    expect(wrongUid.status).toBe(409);
    expect(wrongUid.json().message).toContain('Precondition failed: UID in precondition: other');
    const patchUid = await request(s, 'PATCH', p, { metadata: { uid: 'other' } }, { 'content-type': 'application/merge-patch+json' });
    expect(patchUid.status).toBe(422);
    const del = await request(s, 'PATCH', p, { metadata: { deletionTimestamp: '2030-01-01T00:00:00Z' } }, { 'content-type': 'application/merge-patch+json' });
    expect(del.status).toBe(422);
    const ts = await request(s, 'PATCH', p, { metadata: { creationTimestamp: '2000-01-01T00:00:00Z' }, data: { x: '1' } }, { 'content-type': 'application/merge-patch+json' });
    expect(ts.status).toBe(200);
    expect(ts.json().metadata.creationTimestamp).toBe(c.metadata.creationTimestamp);
  });

  it('PUT creates where the kind allows it (services, leases) and is 404 where it does not', async () => {
    const svc = await request(s, 'PUT', '/api/v1/namespaces/default/services/put-made', { metadata: { name: 'put-made' }, spec: { ports: [{ port: 80 }] } });
    expect(svc.status).toBe(201);
    const cm = await request(s, 'PUT', '/api/v1/namespaces/default/configmaps/put-made', { metadata: { name: 'put-made' } });
    expect(cm.status).toBe(404);
  });

  it('strategic merge patch is refused where no patch markers exist, as kube refuses it for custom resources', async () => {
    // every served kind is built in; check the accepted list the 415 names for a bad type instead
    const r = await request(s, 'PATCH', `${D}/upd`, '{}', { 'content-type': 'application/bogus-patch+json' });
    expect(r.status).toBe(415);
    expect(r.json().message).toContain('application/strategic-merge-patch+json');
    expect(r.json().message).toContain('application/apply-patch+yaml');
  });
});

describe('strategic merge patch errors through kubectl patch', () => {
  it('an item without its merge key is the plain error kube gives back; $retainKeys that leave out a set field is a 400', async () => {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'smp-err' }, spec: { containers: [{ name: 'c', image: 'x' }] } };
    expect((await request(s, 'POST', '/api/v1/namespaces/default/pods', pod)).status).toBe(201);
    const r = await kubectl(s, ['patch', 'pod', 'smp-err', '-p', '{"spec":{"containers":[{"image":"y"}]}}']);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim()).toBe('Error from server: map: map[image:y] does not contain declared merge key: name');
    const dep = {
      metadata: { name: 'smp-rk' },
      spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'x' }] } } },
    };
    expect((await request(s, 'POST', '/apis/apps/v1/namespaces/default/deployments', dep)).status).toBe(201);
    const rk = await request(s, 'PATCH', '/apis/apps/v1/namespaces/default/deployments/smp-rk', { spec: { strategy: { $retainKeys: ['type'], type: 'Recreate', rollingUpdate: { maxSurge: 2 } } } }, {
      'content-type': 'application/strategic-merge-patch+json',
    });
    expect(rk.status).toBe(400);
    expect(rk.json()).toMatchObject({ reason: 'BadRequest', message: 'invalid patch format of retainKeys' });
  });
});
