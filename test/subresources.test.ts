// Subresources against a started server: status, scale (with kubectl scale), eviction
// against PodDisruptionBudgets, binding, and subresources as their own resources to the
// authorizer.
import { describe, it, expect } from 'vitest';
import { request, startServer, type TestServer, useServer } from './helpers/server.js';
import { kubectl } from './helpers/kubectl.js';

let s: TestServer;
const DEP = '/apis/apps/v1/namespaces/default/deployments';
const PODS = '/api/v1/namespaces/default/pods';
const PDB = '/apis/policy/v1/namespaces/default/poddisruptionbudgets';
const MERGE = { 'content-type': 'application/merge-patch+json' };

// a bare API server, as kube-apiserver without kube-controller-manager: no ReplicaSet or Deployment controller writes the workloads these tests look at
useServer((started) => (s = started), { args: ['--controllers=*,-replicaset-controller,-deployment-controller'] });

const deployment = (name: string, replicas = 1) => ({
  metadata: { name },
  spec: {
    replicas,
    selector: { matchLabels: { app: name }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['web', 'api'] }] },
    template: { metadata: { labels: { app: name, tier: 'web' } }, spec: { containers: [{ name: 'c', image: 'x' }] } },
  },
});
const pod = (name: string, labels: Record<string, string> = {}) => ({ metadata: { name, labels }, spec: { containers: [{ name: 'c', image: 'x' }] } });

describe('status', () => {
  it('the main resource ignores status; status writes ignore spec', async () => {
    const d = (await request(s, 'POST', DEP, deployment('st'))).json();
    const main = await request(s, 'PATCH', `${DEP}/st`, { spec: { replicas: 2 }, status: { replicas: 7 } }, MERGE);
    expect(main.status).toBe(200);
    expect(main.json().spec.replicas).toBe(2);
    expect(main.json().status?.replicas).toBeUndefined();
    const st = await request(s, 'PATCH', `${DEP}/st/status`, { spec: { replicas: 5 }, status: { replicas: 7 } }, MERGE);
    expect(st.status).toBe(200);
    expect(st.json().spec.replicas).toBe(2);
    expect(st.json().status.replicas).toBe(7);
    const got = (await request(s, 'GET', `${DEP}/st/status`)).json();
    expect(got.kind).toBe('Deployment');
    expect(got.metadata.uid).toBe(d.metadata.uid);
    expect(got.status.replicas).toBe(7);
  });
});

describe('status writes and metadata (per-kind status strategies)', () => {
  it('keep label and annotation changes, reset the spec; the status writer owns the labels it set', async () => {
    const RS = '/apis/apps/v1/namespaces/default/replicasets';
    const rs = { metadata: { name: 'meta-rs', labels: { a: '1' } }, spec: { replicas: 1, selector: { matchLabels: { app: 'm' } }, template: { metadata: { labels: { app: 'm' } }, spec: { containers: [{ name: 'c', image: 'x' }] } } } };
    expect((await request(s, 'POST', RS, rs)).status).toBe(201);
    const r = await request(s, 'PATCH', `${RS}/meta-rs/status?fieldManager=ctl`, { metadata: { labels: { b: '2' }, annotations: { note: 'x' } }, spec: { replicas: 9 }, status: { replicas: 1 } }, MERGE);
    expect(r.status).toBe(200);
    const o = r.json();
    expect(o.metadata.labels).toEqual({ a: '1', b: '2' });
    expect(o.metadata.annotations).toEqual({ note: 'x' });
    expect(o.spec.replicas).toBe(1);
    expect(o.status.replicas).toBe(1);
    const ctl = o.metadata.managedFields.find((e: any) => e.manager === 'ctl');
    expect(ctl).toMatchObject({ subresource: 'status', fieldsV1: { 'f:metadata': { 'f:labels': { 'f:b': {} }, 'f:annotations': { 'f:note': {} } }, 'f:status': { 'f:replicas': {} } } });
  });

  it('deployments/status keeps the stored labels; pods/status the stored owner references', async () => {
    await request(s, 'POST', DEP, { ...deployment('meta-dep'), metadata: { name: 'meta-dep', labels: { a: '1' } } });
    const d = await request(s, 'PATCH', `${DEP}/meta-dep/status`, { metadata: { labels: { b: '2' }, annotations: { note: 'x' } } }, MERGE);
    expect(d.json().metadata.labels).toEqual({ a: '1' });
    expect(d.json().metadata.annotations).toEqual({ note: 'x' });
    await request(s, 'POST', PODS, pod('meta-pod'));
    const owner = { apiVersion: 'v1', kind: 'ConfigMap', name: 'o', uid: '6a1f0b1e-0000-4000-8000-000000000001' };
    const p = await request(s, 'PATCH', `${PODS}/meta-pod/status`, { metadata: { labels: { b: '2' }, ownerReferences: [owner] } }, MERGE);
    expect(p.status).toBe(200);
    expect(p.json().metadata.labels).toEqual({ b: '2' });
    expect(p.json().metadata.ownerReferences).toBeUndefined();
  });
});

describe('status validation', () => {
  const JOBS = '/apis/batch/v1/namespaces/default/jobs';
  const job = (name: string) => ({ metadata: { name }, spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'x' }] } } } });

  it('jobs/status: negative counts, Complete without its prerequisites, as ValidateJobStatusUpdate', async () => {
    expect((await request(s, 'POST', JOBS, job('sv'))).status).toBe(201);
    const neg = await request(s, 'PATCH', `${JOBS}/sv/status`, { status: { active: -1, succeeded: -2 } }, MERGE);
    expect(neg.status).toBe(422);
    expect(neg.json().message).toBe('Job.batch "sv" is invalid: [status.active: Invalid value: -1: must be greater than or equal to 0, status.succeeded: Invalid value: -2: must be greater than or equal to 0, status.succeeded: Invalid value: -2: cannot decrease the succeeded counter]');
    const complete = await request(s, 'PATCH', `${JOBS}/sv/status`, { status: { conditions: [{ type: 'Complete', status: 'True' }] } }, MERGE);
    expect(complete.status).toBe(422);
    expect(complete.json().message).toBe(
      'Job.batch "sv" is invalid: [status.completionTime: Required value: completionTime is required for Complete jobs, status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition, status.startTime: Required value: startTime is required for finished job]',
    );
    const t = '2026-01-01T00:00:00Z';
    const ok = await request(
      s,
      'PATCH',
      `${JOBS}/sv/status`,
      { status: { startTime: t, completionTime: t, succeeded: 1, conditions: [{ type: 'SuccessCriteriaMet', status: 'True' }, { type: 'Complete', status: 'True' }] } },
      MERGE,
    );
    expect(ok.status).toBe(200);
    const back = await request(s, 'PATCH', `${JOBS}/sv/status`, { status: { succeeded: 0 } }, MERGE);
    expect(back.status).toBe(422);
    expect(back.json().message).toBe('Job.batch "sv" is invalid: status.succeeded: Invalid value: 0: cannot decrease the succeeded counter');
  });

  it('namespaces/status: Terminating only with a deletionTimestamp', async () => {
    expect((await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: 'ns-status' } })).status).toBe(201);
    const r = await request(s, 'PATCH', '/api/v1/namespaces/ns-status/status', { status: { phase: 'Terminating' } }, MERGE);
    expect(r.status).toBe(422);
    expect(r.json().message).toBe('Namespace "ns-status" is invalid: status.Phase: Invalid value: "Terminating": may only be \'Active\' if `deletionTimestamp` is empty');
    expect((await request(s, 'PATCH', '/api/v1/namespaces/ns-status/status', { status: { conditions: [] } }, MERGE)).status).toBe(200);
  });
});

describe('scale', () => {
  it('is an autoscaling/v1 Scale view with the selector as a string', async () => {
    await request(s, 'POST', DEP, deployment('web', 2));
    const r = await request(s, 'GET', `${DEP}/web/scale`);
    expect(r.status).toBe(200);
    const sc = r.json();
    expect(sc.kind).toBe('Scale');
    expect(sc.apiVersion).toBe('autoscaling/v1');
    expect(sc.spec.replicas).toBe(2);
    expect(sc.status.selector).toBe('app=web,tier in (api,web)');
  });

  it('kubectl scale changes spec.replicas', async () => {
    const out = await kubectl(s, ['scale', 'deployment', 'web', '--replicas=3']);
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    expect(out.stdout).toContain('deployment.apps/web scaled');
    expect((await request(s, 'GET', `${DEP}/web`)).json().spec.replicas).toBe(3);
  });

  it('update with a stale resourceVersion is 409; negative replicas 422', async () => {
    const sc = (await request(s, 'GET', `${DEP}/web/scale`)).json();
    const ok = await request(s, 'PUT', `${DEP}/web/scale`, { ...sc, spec: { replicas: 4 } });
    expect(ok.status).toBe(200);
    expect(ok.json().spec.replicas).toBe(4);
    const stale = await request(s, 'PUT', `${DEP}/web/scale`, { ...sc, spec: { replicas: 5 } });
    expect(stale.status).toBe(409);
    const neg = await request(s, 'PATCH', `${DEP}/web/scale`, { spec: { replicas: -1 } }, MERGE);
    expect(neg.status).toBe(422);
    expect(neg.json().message).toBe('Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0');
  });

  it('kubectl scale takes spec.replicas from the applier: a re-apply without replicas keeps the scaled count', async () => {
    const manifest = (replicas?: number) =>
      [
        'apiVersion: apps/v1',
        'kind: Deployment',
        'metadata: {name: owned}',
        'spec:',
        ...(replicas === undefined ? [] : [`  replicas: ${replicas}`]),
        '  selector: {matchLabels: {app: owned}}',
        '  template:',
        '    metadata: {labels: {app: owned}}',
        '    spec: {containers: [{name: c, image: x}]}',
      ].join('\n');
    const a = await kubectl(s, ['apply', '--server-side', '-f', '-'], { input: manifest(2) });
    expect(a.stderr).toBe('');
    const sc = await kubectl(s, ['scale', 'deployment', 'owned', '--replicas=6']);
    expect(sc.code).toBe(0);
    const mf = (await request(s, 'GET', `${DEP}/owned`)).json().metadata.managedFields;
    const scaler = mf.find((e: any) => e.subresource === 'scale');
    expect(scaler).toMatchObject({ manager: 'kubectl', operation: 'Update', apiVersion: 'apps/v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } });
    expect(scaler.time).toBeUndefined();
    const applier = mf.find((e: any) => e.operation === 'Apply');
    expect(applier.fieldsV1['f:spec']['f:replicas']).toBeUndefined();
    expect(applier.fieldsV1['f:spec']['f:selector']).toBeDefined();
    const again = await kubectl(s, ['apply', '--server-side', '-f', '-'], { input: manifest() });
    expect(again.stderr).toBe('');
    expect((await request(s, 'GET', `${DEP}/owned`)).json().spec.replicas).toBe(6);
    // Applying replicas again conflicts with the scaler, as on kube-apiserver.
    const conflict = await kubectl(s, ['apply', '--server-side', '-f', '-'], { input: manifest(3) });
    expect(conflict.code).not.toBe(0);
    expect(conflict.stderr).toContain('conflict with "kubectl" with subresource "scale" using apps/v1: .spec.replicas');
  });

  it('server-side apply on /scale owns spec.replicas and conflicts with another manager', async () => {
    await request(s, 'POST', DEP, deployment('ssa', 1));
    const APPLY = { 'content-type': 'application/apply-patch+yaml' };
    const cfg = (n: number) => `apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {name: ssa}\nspec: {replicas: ${n}}\n`;
    // The creator (an Update) owns spec.replicas: taking it needs force.
    const first = await request(s, 'PATCH', `${DEP}/ssa/scale?fieldManager=hpa`, cfg(4), APPLY);
    expect(first.status).toBe(409);
    expect(first.json().details.causes).toEqual([expect.objectContaining({ reason: 'FieldManagerConflict', field: '.spec.replicas' })]);
    expect(first.json().message).toMatch(/^Apply failed with 1 conflict: conflict with ".*" using autoscaling\/v1: \.spec\.replicas$/);
    const r = await request(s, 'PATCH', `${DEP}/ssa/scale?fieldManager=hpa&force=true`, cfg(4), APPLY);
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ kind: 'Scale', spec: { replicas: 4 } });
    const d = (await request(s, 'GET', `${DEP}/ssa`)).json();
    expect(d.spec.replicas).toBe(4);
    const hpa = d.metadata.managedFields.find((e: any) => e.manager === 'hpa');
    expect(hpa).toMatchObject({ operation: 'Apply', apiVersion: 'apps/v1', subresource: 'scale', fieldsV1: { 'f:spec': { 'f:replicas': {} } } });
    // the creator lost spec.replicas to the applier
    const creator = d.metadata.managedFields.find((e: any) => e.operation === 'Update' && !e.subresource);
    expect(creator.fieldsV1['f:spec']['f:replicas']).toBeUndefined();
    const other = await request(s, 'PATCH', `${DEP}/ssa/scale?fieldManager=other`, cfg(5), APPLY);
    expect(other.status).toBe(409);
    expect(other.json().message).toBe('Apply failed with 1 conflict: conflict with "hpa" with subresource "scale": .spec.replicas');
    const forced = await request(s, 'PATCH', `${DEP}/ssa/scale?fieldManager=other&force=true`, cfg(5), APPLY);
    expect(forced.status).toBe(200);
    expect((await request(s, 'GET', `${DEP}/ssa`)).json().spec.replicas).toBe(5);
    const wrongKind = await request(s, 'PATCH', `${DEP}/ssa/scale?fieldManager=hpa`, 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: ssa}\n', APPLY);
    expect(wrongKind.status).toBe(400);
  });

  it('replicationcontrollers print their map selector', async () => {
    await request(s, 'POST', '/api/v1/namespaces/default/replicationcontrollers', {
      metadata: { name: 'rc' },
      spec: { replicas: 1, selector: { b: '2', a: '1' }, template: { metadata: { labels: { a: '1', b: '2' } }, spec: { containers: [{ name: 'c', image: 'x' }] } } },
    });
    const sc = (await request(s, 'GET', '/api/v1/namespaces/default/replicationcontrollers/rc/scale')).json();
    expect(sc.status.selector).toBe('a=1,b=2');
  });
});

describe('eviction', () => {
  const evict = (name: string) => request(s, 'POST', `${PODS}/${name}/eviction`, { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name } });
  async function runningPod(name: string): Promise<void> {
    await request(s, 'POST', PODS, pod(name, { app: 'guarded' }));
    // Ready: an unready pod may go without the budget (IfHealthyBudget)
    const st = await request(s, 'PATCH', `${PODS}/${name}/status`, { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } }, MERGE);
    expect(st.json().status.phase).toBe('Running');
  }

  it('429 when the budget allows no disruption; deletes and uses one up when it does', async () => {
    await runningPod('g1');
    await request(s, 'POST', PDB, { metadata: { name: 'budget' }, spec: { minAvailable: 1, selector: { matchLabels: { app: 'guarded' } } } });
    // As the disruption controller would report it:
    const setStatus = (allowed: number) =>
      request(s, 'PATCH', `${PDB}/budget/status`, { status: { observedGeneration: 1, disruptionsAllowed: allowed, currentHealthy: 1, desiredHealthy: 1, expectedPods: 1 } }, MERGE);
    expect((await setStatus(0)).status).toBe(200);
    const no = await evict('g1');
    expect(no.status).toBe(429);
    expect(no.json().reason).toBe('TooManyRequests');
    expect(no.json().message).toBe("Cannot evict pod as it would violate the pod's disruption budget.");
    expect(no.json().details.causes).toEqual([{ reason: 'DisruptionBudget', message: 'The disruption budget budget needs 1 healthy pods and has 1 currently' }]);
    expect((await request(s, 'GET', `${PODS}/g1`)).status).toBe(200);

    await setStatus(1);
    const yes = await evict('g1');
    expect(yes.status).toBe(201);
    expect(yes.json()).toMatchObject({ kind: 'Status', status: 'Success' });
    expect((await request(s, 'GET', `${PODS}/g1`)).status).toBe(404);
    const budget = (await request(s, 'GET', `${PDB}/budget`)).json();
    expect(budget.status.disruptionsAllowed).toBe(0);
    expect(Object.keys(budget.status.disruptedPods)).toEqual(['g1']);
  });

  it('a pod no budget covers, or that is not running, is deleted at once', async () => {
    await request(s, 'POST', PODS, pod('free', { app: 'other' }));
    expect((await evict('free')).status).toBe(201);
    expect((await request(s, 'GET', `${PODS}/free`)).status).toBe(404);
    expect((await evict('missing')).status).toBe(404);
  });
});

describe('eviction: readiness, unhealthyPodEvictionPolicy and DisruptionTarget', () => {
  const evict = (name: string) => request(s, 'POST', `${PODS}/${name}/eviction`, { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name } });
  async function podIn(name: string, app: string, ready: boolean, finalizer = false): Promise<void> {
    const p = pod(name, { app });
    expect((await request(s, 'POST', PODS, finalizer ? { ...p, metadata: { ...p.metadata, finalizers: ['example.com/hold'] } } : p)).status).toBe(201);
    const conditions = [{ type: 'Ready', status: ready ? 'True' : 'False' }];
    expect((await request(s, 'PATCH', `${PODS}/${name}/status`, { status: { phase: 'Running', conditions } }, MERGE)).status).toBe(200);
  }
  async function budget(name: string, app: string, status: Record<string, number>, policy?: string): Promise<void> {
    const spec: any = { minAvailable: 1, selector: { matchLabels: { app } } };
    if (policy) spec.unhealthyPodEvictionPolicy = policy;
    expect((await request(s, 'POST', PDB, { metadata: { name }, spec })).status).toBe(201);
    const st = await request(s, 'PATCH', `${PDB}/${name}/status`, { status: { observedGeneration: 1, expectedPods: 2, ...status } }, MERGE);
    expect(st.status).toBe(200);
  }

  it('an unready pod goes without using the budget while the application is healthy (IfHealthyBudget)', async () => {
    await podIn('u1', 'unready-ok', false);
    await budget('b-ok', 'unready-ok', { disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 1 });
    expect((await evict('u1')).status).toBe(201);
    expect((await request(s, 'GET', `${PODS}/u1`)).status).toBe(404);
    expect((await request(s, 'GET', `${PDB}/b-ok`)).json().status.disruptionsAllowed).toBe(0);
  });

  it('an unready pod of an unhealthy application needs the budget, unless the policy is AlwaysAllow', async () => {
    await podIn('u2', 'unready-bad', false);
    await budget('b-bad', 'unready-bad', { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 1 });
    const no = await evict('u2');
    expect(no.status).toBe(429);
    expect(no.json().details.causes[0].message).toBe('The disruption budget b-bad needs 1 healthy pods and has 0 currently');
    await podIn('u3', 'unready-always', false);
    await budget('b-always', 'unready-always', { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 1 }, 'AlwaysAllow');
    expect((await evict('u3')).status).toBe(201);
    expect((await request(s, 'GET', `${PODS}/u3`)).status).toBe(404);
  });

  it('marks the pod with DisruptionTarget before deleting it, and a used-up budget reports DisruptionAllowed False', async () => {
    await podIn('r1', 'ready', true, true);
    await budget('b-ready', 'ready', { disruptionsAllowed: 1, currentHealthy: 2, desiredHealthy: 1 });
    expect((await evict('r1')).status).toBe(201);
    const p = (await request(s, 'GET', `${PODS}/r1`)).json();
    expect(p.metadata.deletionTimestamp).toBeDefined();
    const dt = p.status.conditions.find((c: any) => c.type === 'DisruptionTarget');
    expect(dt).toMatchObject({ type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI', message: 'Eviction API: evicting' });
    expect(dt.lastTransitionTime).toBeDefined();
    const b = (await request(s, 'GET', `${PDB}/b-ready`)).json();
    expect(b.status.disruptionsAllowed).toBe(0);
    expect(b.status.disruptedPods.r1).toBeDefined();
    expect(b.status.conditions).toEqual([expect.objectContaining({ type: 'DisruptionAllowed', status: 'False', reason: 'InsufficientPods', observedGeneration: 1 })]);
    await request(s, 'PATCH', `${PODS}/r1`, { metadata: { finalizers: null } }, MERGE);
  });

  it('a dry run neither marks nor deletes the pod', async () => {
    await podIn('dr', 'dry', true);
    const r = await request(s, 'POST', `${PODS}/dr/eviction?dryRun=All`, { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'dr' } });
    expect(r.status).toBe(201);
    const p = (await request(s, 'GET', `${PODS}/dr`)).json();
    expect(p.status.conditions.some((c: any) => c.type === 'DisruptionTarget')).toBe(false);
  });
});

describe('kubectl drain', () => {
  it('cordons the node and evicts its pods through pods/eviction, waiting until they are gone', async () => {
    expect((await request(s, 'POST', '/api/v1/nodes', { metadata: { name: 'drained' } })).status).toBe(201);
    for (const name of ['d1', 'd2']) {
      const p = pod(name, { app: 'drain' });
      const r = await request(s, 'POST', PODS, { ...p, spec: { ...p.spec, nodeName: 'drained', terminationGracePeriodSeconds: 1 } });
      expect(r.status).toBe(201);
    }
    const r = await kubectl(s, ['drain', 'drained', '--force', '--grace-period=1', '--timeout=30s'], { timeoutMs: 40_000 });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('node/drained cordoned');
    expect(r.stdout).toContain('pod/d1 evicted');
    expect(r.stdout).toContain('pod/d2 evicted');
    expect(r.stdout).toContain('node/drained drained');
    expect((await request(s, 'GET', '/api/v1/nodes/drained')).json().spec.unschedulable).toBe(true);
    expect((await request(s, 'GET', `${PODS}?labelSelector=app%3Ddrain`)).json().items).toHaveLength(0);
  });
});

describe('binding', () => {
  it('binds once through pods/binding and the bindings resource; a second bind is 409', async () => {
    await request(s, 'POST', PODS, pod('b1'));
    const r = await request(s, 'POST', `${PODS}/b1/binding`, { apiVersion: 'v1', kind: 'Binding', metadata: { name: 'b1' }, target: { kind: 'Node', name: 'node-a' } });
    expect(r.status).toBe(201);
    const p = (await request(s, 'GET', `${PODS}/b1`)).json();
    expect(p.spec.nodeName).toBe('node-a');
    expect(p.status.conditions.find((c: any) => c.type === 'PodScheduled').status).toBe('True');
    const again = await request(s, 'POST', `${PODS}/b1/binding`, { metadata: { name: 'b1' }, target: { name: 'node-b' } });
    expect(again.status).toBe(409);
    expect(again.json().message).toBe('Operation cannot be fulfilled on pods/binding "b1": pod b1 is already assigned to node "node-a"');

    await request(s, 'POST', PODS, pod('b2'));
    const viaRes = await request(s, 'POST', '/api/v1/namespaces/default/bindings', { metadata: { name: 'b2' }, target: { kind: 'Node', name: 'node-c' } });
    expect(viaRes.status).toBe(201);
    expect((await request(s, 'GET', `${PODS}/b2`)).json().spec.nodeName).toBe('node-c');
  });
});

describe('authorization', () => {
  it('sees a subresource as a resource of its own', async () => {
    const deny = await startServer({ args: ['--authorization-mode', 'AlwaysDeny'] });
    try {
      const r = await request(deny, 'POST', `${PODS}/x/eviction`, { metadata: { name: 'x' } });
      expect(r.status).toBe(403);
      expect(r.json().message).toContain('cannot create resource "pods/eviction" in API group "" in the namespace "default"');
    } finally {
      await deny.stop();
      deny.cleanup();
    }
  });
});
