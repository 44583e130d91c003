// kubeshard's minimal in-process scheduler (issue 23): pending pods are bound to a node
// that fits them, with kube-scheduler's basic filters (resources, taints and tolerations,
// nodeSelector) and Scheduled events; a pod no node fits gets PodScheduled=False and a
// FailedScheduling event with kube's "0/N nodes are available: ..." message, and is bound
// once room is made.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { request, startServer, until, type TestServer } from './helpers/server.js';

let s: TestServer;
const PODS = '/api/v1/namespaces/default/pods';

async function addNode(name: string, cpu: string, labels: Record<string, string> = {}, taints: any[] = []): Promise<void> {
  const r = await request(s, 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name, labels }, spec: taints.length ? { taints } : {} });
  expect(r.status, r.body).toBe(201);
  const n = r.json();
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  n.status = {
    capacity: { cpu, memory: '16Gi', pods: '110' },
    allocatable: { cpu, memory: '16Gi', pods: '110' },
    conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status', lastHeartbeatTime: now, lastTransitionTime: now }],
  };
  const u = await request(s, 'PUT', `/api/v1/nodes/${name}/status`, n);
  expect(u.status, u.body).toBe(200);
}

async function createPod(name: string, spec: any = {}, cpu?: string): Promise<void> {
  const container = { name: 'c', image: 'busybox', ...(cpu ? { resources: { requests: { cpu } } } : {}) };
  const r = await request(s, 'POST', PODS, { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default' }, spec: { containers: [container], ...spec } });
  expect(r.status, r.body).toBe(201);
}

async function boundTo(name: string): Promise<string> {
  return until(async () => (await request(s, 'GET', `${PODS}/${name}`)).json().spec?.nodeName, 20_000);
}

async function events(reason: string, pod: string): Promise<any[]> {
  const items = (await request(s, 'GET', '/api/v1/namespaces/default/events')).json().items;
  return items.filter((e: any) => e.reason === reason && e.involvedObject?.name === pod);
}

beforeAll(async () => {
  // (no heartbeats here: the node lifecycle controller is left out)
  s = await startServer({ args: ['--controllers=*,-node-lifecycle-controller'] });
  await addNode('s-small', '1');
  await addNode('s-big', '8', { disk: 'ssd' });
  await addNode('s-gpu', '8', { gpu: 'true' }, [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]);
}, 60_000);

afterAll(async () => {
  await s?.stop();
  s?.cleanup();
});

describe('scheduler', () => {
  it('binds a pending pod to the node whose free resources fit it, untainted, with a Scheduled event', async () => {
    await createPod('p-cpu2', {}, '2');
    expect(await boundTo('p-cpu2')).toBe('s-big');
    const p = (await request(s, 'GET', `${PODS}/p-cpu2`)).json();
    expect(p.status.conditions.find((c: any) => c.type === 'PodScheduled').status).toBe('True');
    const ev = await until(async () => (await events('Scheduled', 'p-cpu2'))[0], 10_000);
    expect(ev.message).toBe('Successfully assigned default/p-cpu2 to s-big');
    expect(ev.type).toBe('Normal');
    expect(ev.reportingComponent).toBe('default-scheduler');
    expect(ev.action).toBe('Binding');
  }, 30_000);

  it('follows nodeSelector, and tolerations open a tainted node', async () => {
    await createPod('p-ssd', { nodeSelector: { disk: 'ssd' } });
    await createPod('p-gpu', { nodeSelector: { gpu: 'true' }, tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }] });
    expect(await boundTo('p-ssd')).toBe('s-big');
    expect(await boundTo('p-gpu')).toBe('s-gpu');
  }, 30_000);

  it('counts the pods bound; a pod no node fits gets FailedScheduling with kube\'s message, and is bound once room is made', async () => {
    await createPod('p-fill', {}, '6');
    expect(await boundTo('p-fill')).toBe('s-big');
    await createPod('p-big', {}, '3');
    const message =
      '0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 Insufficient cpu. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.';
    const cond = await until(async () => {
      const p = (await request(s, 'GET', `${PODS}/p-big`)).json();
      return (p.status?.conditions ?? []).find((c: any) => c.type === 'PodScheduled' && c.status === 'False');
    }, 20_000);
    expect(cond).toMatchObject({ reason: 'Unschedulable', message });
    const ev = await until(async () => (await events('FailedScheduling', 'p-big'))[0], 10_000);
    expect(ev).toMatchObject({ type: 'Warning', message, reportingComponent: 'default-scheduler', action: 'Scheduling' });
    expect((await request(s, 'GET', `${PODS}/p-big`)).json().spec.nodeName).toBeUndefined();

    // room made on s-big: the pod is bound there
    const d = await request(s, 'DELETE', `${PODS}/p-fill?gracePeriodSeconds=0`);
    expect(d.status, d.body).toBe(200);
    expect(await boundTo('p-big')).toBe('s-big');
  }, 60_000);

  it('a node added later takes a pod that fitted nowhere', async () => {
    await createPod('p-huge', {}, '50');
    await until(async () => (await events('FailedScheduling', 'p-huge'))[0], 20_000);
    await addNode('s-huge', '64');
    expect(await boundTo('p-huge')).toBe('s-huge');
  }, 60_000);

  it('leaves pods of another scheduler alone', async () => {
    await createPod('p-other', { schedulerName: 'my-scheduler' });
    await new Promise((r) => setTimeout(r, 1500));
    expect((await request(s, 'GET', `${PODS}/p-other`)).json().spec.nodeName).toBeUndefined();
  }, 30_000);
});
