// The Deployment and ReplicaSet controllers (issue 23), with the real kubectl 1.33: create a
// Deployment, roll it out, change its image, scale it, delete it. No node agent runs here:
// the test itself plays the kubelet, marking each new pod Running and Ready through
// pods/status (and binding it by nodeName), so rollouts can progress.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { request, startServer, until, type TestServer } from './helpers/server.js';
import { kubectl, kubectlOk, kubectlPath } from './helpers/kubectl.js';

let s: TestServer;
let stopKubelet = false;
let kubeletLoop: Promise<void> | undefined;
const NS = 'wl';
const k = (args: string[], input?: string) => kubectlOk(s, args, input);

async function pods(selector = ''): Promise<any[]> {
  const r = await request(s, 'GET', `/api/v1/namespaces/${NS}/pods${selector ? `?labelSelector=${encodeURIComponent(selector)}` : ''}`);
  return r.json().items;
}

/** The test's stand-in kubelet: every pod not yet Ready becomes Running and Ready. */
async function fakeKubelet(): Promise<void> {
  while (!stopKubelet) {
    for (const p of await pods().catch(() => [])) {
      if (p.metadata.deletionTimestamp) {
        // a kubelet confirms the end of a graceful deletion
        await request(s, 'DELETE', `/api/v1/namespaces/${NS}/pods/${p.metadata.name}`, { gracePeriodSeconds: 0, preconditions: { uid: p.metadata.uid } });
        continue;
      }
      if (p.status?.phase === 'Running') continue;
      const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      const status = {
        phase: 'Running',
        podIP: '10.244.0.9',
        startTime: now,
        conditions: ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => ({ type, status: 'True', lastTransitionTime: now })),
        containerStatuses: p.spec.containers.map((c: any) => ({ name: c.name, image: c.image, imageID: '', ready: true, started: true, restartCount: 0, state: { running: { startedAt: now } } })),
      };
      await request(s, 'PATCH', `/api/v1/namespaces/${NS}/pods/${p.metadata.name}/status`, { status }, { 'content-type': 'application/merge-patch+json' });
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  kubectlPath();
  s = await startServer();
  await k(['create', 'namespace', NS]);
});
afterAll(async () => {
  stopKubelet = true;
  await kubeletLoop;
  await s?.stop();
  s?.cleanup();
});

describe('Deployment and ReplicaSet controllers', () => {
  it('kubectl create deployment makes a ReplicaSet and 3 pods, owned', async () => {
    await k(['-n', NS, 'create', 'deployment', 'web', '--image=x', '--replicas=3']);
    const rsList = await until(async () => {
      const r = (await request(s, 'GET', `/apis/apps/v1/namespaces/${NS}/replicasets`)).json().items;
      return r.length === 1 && r;
    });
    const rs = rsList[0];
    const hash = rs.metadata.labels['pod-template-hash'];
    expect(hash).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]+$/);
    expect(rs.metadata.name).toBe(`web-${hash}`);
    expect(rs.metadata.annotations['deployment.kubernetes.io/revision']).toBe('1');
    expect(rs.metadata.annotations['deployment.kubernetes.io/desired-replicas']).toBe('3');
    expect(rs.metadata.annotations['deployment.kubernetes.io/max-replicas']).toBe('4');
    expect(rs.spec.selector.matchLabels).toEqual({ app: 'web', 'pod-template-hash': hash });
    const d = (await request(s, 'GET', `/apis/apps/v1/namespaces/${NS}/deployments/web`)).json();
    expect(rs.metadata.ownerReferences).toEqual([{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: d.metadata.uid, controller: true, blockOwnerDeletion: true }]);
    const ps = await until(async () => {
      const p = await pods();
      return p.length === 3 && p;
    });
    for (const p of ps) {
      expect(p.metadata.name.startsWith(`web-${hash}-`)).toBe(true);
      expect(p.metadata.ownerReferences).toEqual([{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: rs.metadata.name, uid: rs.metadata.uid, controller: true, blockOwnerDeletion: true }]);
      expect(p.metadata.labels).toEqual({ app: 'web', 'pod-template-hash': hash });
    }
    // no pod is ready yet: the Deployment says so
    const st = await until(async () => {
      const d = (await request(s, 'GET', `/apis/apps/v1/namespaces/${NS}/deployments/web`)).json();
      return d.status?.replicas === 3 && d.status;
    });
    expect(st.unavailableReplicas).toBe(3);
    expect(st.conditions.find((c: any) => c.type === 'Available')).toMatchObject({ status: 'False', reason: 'MinimumReplicasUnavailable', message: 'Deployment does not have minimum availability.' });
    expect(st.conditions.find((c: any) => c.type === 'Progressing')).toMatchObject({ status: 'True', reason: 'ReplicaSetUpdated' });
  });

  it('pods marked Running and Ready complete kubectl rollout status', async () => {
    kubeletLoop = fakeKubelet();
    const out = await k(['-n', NS, 'rollout', 'status', 'deployment/web', '--timeout=60s']);
    expect(out).toContain('deployment "web" successfully rolled out');
    const d = await until(async () => {
      const d = (await request(s, 'GET', `/apis/apps/v1/namespaces/${NS}/deployments/web`)).json();
      return d.status?.conditions?.find((c: any) => c.type === 'Progressing')?.reason === 'NewReplicaSetAvailable' && d;
    });
    expect(d.status).toMatchObject({ replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3, observedGeneration: d.metadata.generation });
    expect(d.metadata.annotations['deployment.kubernetes.io/revision']).toBe('1');
    const rs = (await request(s, 'GET', `/apis/apps/v1/namespaces/${NS}/replicasets`)).json().items[0];
    expect(rs.status).toMatchObject({ replicas: 3, fullyLabeledReplicas: 3, readyReplicas: 3, availableReplicas: 3, observedGeneration: 1 });
    const av = d.status.conditions.find((c: any) => c.type === 'Available');
    expect(av).toMatchObject({ status: 'True', reason: 'MinimumReplicasAvailable', message: 'Deployment has minimum availability.' });
    expect(d.status.conditions.find((c: any) => c.type === 'Progressing').message).toBe(`ReplicaSet "${rs.metadata.name}" has successfully progressed.`);
  });

  it('kubectl set image rolls out a new ReplicaSet to completion', async () => {
    const before = (await request(s, 'GET', `/apis/apps/v1/namespaces/${NS}/replicasets`)).json().items[0];
    await k(['-n', NS, 'set', 'image', 'deployment/web', 'x=y']);
    const out = await k(['-n', NS, 'rollout', 'status', 'deployment/web', '--timeout=60s']);
    expect(out).toContain('deployment "web" successfully rolled out');
    const sets = (await request(s, 'GET', `/apis/apps/v1/namespaces/${NS}/replicasets`)).json().items;
    expect(sets).toHaveLength(2);
    const old = sets.find((r: any) => r.metadata.uid === before.metadata.uid);
    const cur = sets.find((r: any) => r.metadata.uid !== before.metadata.uid);
    expect(old.spec.replicas).toBe(0);
    expect(cur.spec.replicas).toBe(3);
    expect(cur.spec.template.spec.containers[0].image).toBe('y');
    expect(cur.metadata.annotations['deployment.kubernetes.io/revision']).toBe('2');
    const d = (await request(s, 'GET', `/apis/apps/v1/namespaces/${NS}/deployments/web`)).json();
    expect(d.metadata.annotations['deployment.kubernetes.io/revision']).toBe('2');
    await until(async () => {
      const p = await pods();
      return p.length === 3 && p.every((x) => x.spec.containers[0].image === 'y' && x.status?.phase === 'Running');
    }, 30_000);
    const history = await k(['-n', NS, 'rollout', 'history', 'deployment/web']);
    expect(history).toMatch(/1\s/);
    expect(history).toMatch(/2\s/);
  });

  it('kubectl scale changes the pods and the status', async () => {
    await k(['-n', NS, 'scale', 'deployment/web', '--replicas=5']);
    await k(['-n', NS, 'rollout', 'status', 'deployment/web', '--timeout=60s']);
    await until(async () => (await pods()).filter((p) => !p.metadata.deletionTimestamp).length === 5, 30_000);
    await k(['-n', NS, 'scale', 'deployment/web', '--replicas=2']);
    await until(async () => {
      const d = (await request(s, 'GET', `/apis/apps/v1/namespaces/${NS}/deployments/web`)).json();
      return d.status?.replicas === 2 && d.status.availableReplicas === 2 && d.status.observedGeneration === d.metadata.generation;
    }, 30_000);
    const rs = (await request(s, 'GET', `/apis/apps/v1/namespaces/${NS}/replicasets`)).json().items.find((r: any) => r.spec.replicas > 0);
    expect(rs.spec.replicas).toBe(2);
    expect(rs.metadata.annotations['deployment.kubernetes.io/desired-replicas']).toBe('2');
  });

  it('Events as kube records them: ScalingReplicaSet on the Deployment, SuccessfulCreate and SuccessfulDelete on its ReplicaSet; describe shows them', async () => {
    const rs = (await request(s, 'GET', `/apis/apps/v1/namespaces/${NS}/replicasets`)).json().items.find((r: any) => r.spec.replicas > 0);
    const name = rs.metadata.name;
    const events = async () => (await request(s, 'GET', `/api/v1/namespaces/${NS}/events`)).json().items as any[];
    // (events are written one at a time after the scaling: wait for the last)
    const all = await until(async () => {
      const evs = await events();
      return evs.some((e) => e.message === `Scaled down replica set ${name} from 5 to 2`) && evs.filter((e) => e.reason === 'SuccessfulDelete' && e.involvedObject.name === name).length >= 3 ? evs : undefined;
    }, 30_000);
    const scaling = all.filter((e) => e.reason === 'ScalingReplicaSet');
    for (const e of scaling) {
      expect(e).toMatchObject({ type: 'Normal', source: { component: 'deployment-controller' }, involvedObject: { kind: 'Deployment', apiVersion: 'apps/v1', name: 'web', namespace: NS } });
    }
    const messages = scaling.map((e) => e.message);
    expect(messages).toContain(`Scaled up replica set ${name} from 3 to 5`);
    expect(messages).toContain(`Scaled down replica set ${name} from 5 to 2`);
    // the first ReplicaSet was made with its replicas (kube's "from 0 to")
    expect(messages.some((m) => /^Scaled up replica set web-[a-z0-9]+ from 0 to 3$/.test(m))).toBe(true);
    // and emptied by the rollout of the second
    expect(messages.some((m) => /^Scaled down replica set web-[a-z0-9]+ from \d+ to 0$/.test(m))).toBe(true);
    const created = all.filter((e) => e.reason === 'SuccessfulCreate' && e.involvedObject.name === name);
    expect(created.length).toBeGreaterThanOrEqual(5);
    for (const e of created) {
      expect(e).toMatchObject({ type: 'Normal', source: { component: 'replicaset-controller' }, involvedObject: { kind: 'ReplicaSet', apiVersion: 'apps/v1', uid: rs.metadata.uid } });
      expect(e.message).toMatch(new RegExp(`^Created pod: ${name}-[a-z0-9]{5}$`));
    }
    const deleted = all.filter((e) => e.reason === 'SuccessfulDelete' && e.involvedObject.name === name);
    for (const e of deleted) expect(e.message).toMatch(new RegExp(`^Deleted pod: ${name}-[a-z0-9]{5}$`));
    const describe = await k(['-n', NS, 'describe', 'deployment', 'web']);
    expect(describe).toMatch(new RegExp(`Normal\\s+ScalingReplicaSet\\s+.*deployment-controller\\s+Scaled down replica set ${name} from 5 to 2`));
    const describeRs = await k(['-n', NS, 'describe', 'replicaset', name]);
    expect(describeRs).toMatch(/Normal\s+SuccessfulCreate\s+.*replicaset-controller\s+Created pod: /);
    const get = await k(['-n', NS, 'get', 'events', '--field-selector', 'reason=ScalingReplicaSet']);
    expect(get).toContain(`Scaled up replica set ${name} from 3 to 5`);
  });

  it('a pod deleted by hand is replaced; an orphan matching the selector is adopted', async () => {
    const rs = (await request(s, 'GET', `/apis/apps/v1/namespaces/${NS}/replicasets`)).json().items.find((r: any) => r.spec.replicas > 0);
    const [victim] = (await pods()).filter((p) => !p.metadata.deletionTimestamp);
    await request(s, 'DELETE', `/api/v1/namespaces/${NS}/pods/${victim.metadata.name}`, { gracePeriodSeconds: 0 });
    await until(async () => {
      const p = (await pods()).filter((p) => !p.metadata.deletionTimestamp);
      return p.length === 2 && !p.some((x) => x.metadata.uid === victim.metadata.uid);
    }, 30_000);
    // an orphan with the ReplicaSet's labels is adopted, and one pod too many is removed
    const labels = rs.spec.selector.matchLabels;
    const r = await request(s, 'POST', `/api/v1/namespaces/${NS}/pods`, { metadata: { name: 'stray', labels }, spec: { containers: [{ name: 'x', image: 'y' }] } });
    expect(r.status).toBe(201);
    await until(async () => {
      const p = (await pods()).filter((p) => !p.metadata.deletionTimestamp);
      return p.length === 2 && p.every((x) => x.metadata.ownerReferences?.[0]?.uid === rs.metadata.uid);
    }, 30_000);
  });

  it('Recreate: old pods go before new ones come', async () => {
    await k(['-n', NS, 'create', 'deployment', 'batch', '--image=a', '--replicas=2']);
    await k(['-n', NS, 'rollout', 'status', 'deployment/batch', '--timeout=60s']);
    await k(['-n', NS, 'patch', 'deployment/batch', '--type=merge', '-p', '{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}']);
    await k(['-n', NS, 'set', 'image', 'deployment/batch', 'a=b']);
    const out = await k(['-n', NS, 'rollout', 'status', 'deployment/batch', '--timeout=60s']);
    expect(out).toContain('deployment "batch" successfully rolled out');
    const p = (await pods('app=batch')).filter((p) => !p.metadata.deletionTimestamp);
    expect(p.map((x) => x.spec.containers[0].image)).toEqual(['b', 'b']);
  });

  it('revisionHistoryLimit removes the oldest emptied ReplicaSets', async () => {
    await k(['-n', NS, 'patch', 'deployment/web', '--type=merge', '-p', '{"spec":{"revisionHistoryLimit":1}}']);
    for (const img of ['y2', 'y3']) {
      await k(['-n', NS, 'set', 'image', 'deployment/web', `x=${img}`]);
      await k(['-n', NS, 'rollout', 'status', 'deployment/web', '--timeout=60s']);
    }
    await until(async () => (await request(s, 'GET', `/apis/apps/v1/namespaces/${NS}/replicasets?labelSelector=app%3Dweb`)).json().items.length === 2, 30_000);
  });

  it('paused: a template change makes no new ReplicaSet until resumed', async () => {
    await k(['-n', NS, 'rollout', 'pause', 'deployment/web']);
    await until(async () => {
      const d = (await request(s, 'GET', `/apis/apps/v1/namespaces/${NS}/deployments/web`)).json();
      return d.status?.conditions?.find((c: any) => c.type === 'Progressing')?.reason === 'DeploymentPaused';
    });
    await k(['-n', NS, 'set', 'image', 'deployment/web', 'x=z']);
    await new Promise((r) => setTimeout(r, 500));
    const images = (await request(s, 'GET', `/apis/apps/v1/namespaces/${NS}/replicasets?labelSelector=app%3Dweb`)).json().items.map((r: any) => r.spec.template.spec.containers[0].image);
    expect(images).not.toContain('z');
    await k(['-n', NS, 'rollout', 'resume', 'deployment/web']);
    await k(['-n', NS, 'rollout', 'status', 'deployment/web', '--timeout=60s']);
    const after = (await request(s, 'GET', `/apis/apps/v1/namespaces/${NS}/replicasets?labelSelector=app%3Dweb`)).json().items.map((r: any) => r.spec.template.spec.containers[0].image);
    expect(after).toContain('z');
  });

  it('deleting the Deployment removes its ReplicaSets and pods (garbage collector)', async () => {
    await k(['-n', NS, 'delete', 'deployment', 'web']);
    await until(async () => (await request(s, 'GET', `/apis/apps/v1/namespaces/${NS}/replicasets?labelSelector=app%3Dweb`)).json().items.length === 0, 30_000);
    await until(async () => (await pods('app=web')).length === 0, 30_000);
    const r = await kubectl(s, ['-n', NS, 'get', 'deployment', 'web']);
    expect(r.code).not.toBe(0);
  });
});
