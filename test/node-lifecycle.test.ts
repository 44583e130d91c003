// The node lifecycle and taint eviction controllers (spec 3.4, issue 23's must-show), with
// nodes simulated through the API: each has a Node and a Lease in kube-node-lease that the
// test renews, as a node agent would. The grace period is shortened by the flags. When
// n-dead's heartbeats stop: Ready=Unknown with kube's message, the unreachable taints
// (NoSchedule and NoExecute), its pod without a toleration deleted at once (with the
// DisruptionTarget condition), the one tolerating for 3 s deleted after them, the one
// tolerating forever kept; n-alive (renewed all along) keeps the zone healthy, so that
// evictions go on (one dead node of one is kube's "full disruption", where they stop).
// Heartbeats again: Ready stays Unknown until the node posts Ready=True, then the taints
// go. Ready=False: the not-ready taints.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { request, startServer, until, type TestServer } from './helpers/server.js';

let s: TestServer;
const LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases';
const PODS = '/api/v1/namespaces/default/pods';
const UNREACHABLE = 'node.kubernetes.io/unreachable';
const NOT_READY = 'node.kubernetes.io/not-ready';
const GRACE_SECONDS = 3;

const micro = () => new Date().toISOString().replace('Z', '000Z');
const sec = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A simulated node agent: its Lease renewed every 500 ms while `renewing`. */
class FakeNode {
  renewing = true;
  private timer: NodeJS.Timeout | undefined;
  constructor(readonly name: string) {}

  async register(): Promise<void> {
    const node = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: this.name, labels: { 'kubernetes.io/hostname': this.name } },
      spec: {},
    };
    const r = await request(s, 'POST', '/api/v1/nodes', node);
    expect(r.status, r.body).toBe(201);
    await this.postStatus('True');
    const lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: this.name, namespace: 'kube-node-lease' }, spec: { holderIdentity: this.name, leaseDurationSeconds: 40, renewTime: micro() } };
    const l = await request(s, 'POST', LEASES, lease);
    expect(l.status, l.body).toBe(201);
    this.timer = setInterval(() => {
      if (this.renewing) void this.renew();
    }, 500);
  }

  async renew(): Promise<void> {
    await request(s, 'PATCH', `${LEASES}/${this.name}`, { spec: { renewTime: micro() } }, { 'content-type': 'application/merge-patch+json' });
  }

  /** The node's status with its Ready condition (a new heartbeat), as a kubelet posts it. */
  async postStatus(ready: 'True' | 'False'): Promise<void> {
    const now = sec();
    const cur = (await request(s, 'GET', `/api/v1/nodes/${this.name}`)).json();
    const prev = (cur.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
    const cond = (type: string, status: string, reason: string, message: string) => ({
      type,
      status,
      reason,
      message,
      lastHeartbeatTime: now,
      lastTransitionTime: type === 'Ready' && prev?.status === status ? prev.lastTransitionTime : now,
    });
    cur.status = {
      capacity: { cpu: '4', memory: '8Gi', pods: '110' },
      allocatable: { cpu: '4', memory: '8Gi', pods: '110' },
      conditions: [
        cond('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
        cond('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
        cond('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
        ready === 'True' ? cond('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status') : cond('Ready', 'False', 'KubeletNotReady', 'container runtime is down'),
      ],
    };
    const r = await request(s, 'PUT', `/api/v1/nodes/${this.name}/status`, cur);
    expect(r.status, r.body).toBe(200);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}

const alive = new FakeNode('n-alive');
const dead = new FakeNode('n-dead');

async function getNode(name: string): Promise<any> {
  return (await request(s, 'GET', `/api/v1/nodes/${name}`)).json();
}
const readyOf = (n: any) => (n.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
const hasTaint = (n: any, key: string, effect: string) => (n.spec?.taints ?? []).some((t: any) => t.key === key && t.effect === effect);

function pod(name: string, tolerations: any[]): any {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: { nodeName: 'n-dead', terminationGracePeriodSeconds: 30, tolerations, containers: [{ name: 'c', image: 'busybox' }] },
  };
}

beforeAll(async () => {
  s = await startServer({
    args: [
      '--node-monitor-period=500ms',
      `--node-monitor-grace-period=${GRACE_SECONDS}s`,
      '--node-startup-grace-period=5s',
      // (the rate limits have their unit tests: here a second taint need not wait 10 s)
      '--node-eviction-rate=50',
      // pods without tolerations of their own keep none (no 300 s defaults)
      '--disable-admission-plugins=DefaultTolerationSeconds',
      // (the test's pods are bound already; the scheduler is tested in scheduler.test.ts)
      '--controllers=*,-scheduler',
    ],
  });
  await alive.register();
  await dead.register();
}, 60_000);

afterAll(async () => {
  alive.stop();
  dead.stop();
  await s?.stop();
  s?.cleanup();
});

describe('node lifecycle: heartbeats, Ready=Unknown, taints, taint-based eviction', () => {
  it('a node renewing its Lease stays Ready, untainted, past the grace period', async () => {
    await sleep((GRACE_SECONDS + 1) * 1000);
    for (const n of [await getNode('n-alive'), await getNode('n-dead')]) {
      expect(readyOf(n).status).toBe('True');
      expect(n.spec?.taints ?? []).toEqual([]);
    }
  }, 20_000);

  it('heartbeats stopped: Ready=Unknown after the grace period, the unreachable taints, and its pods evicted per their tolerations', async () => {
    for (const [name, tols] of [
      ['doomed', []],
      ['patient', [{ key: UNREACHABLE, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 3 }]],
      ['forever', [{ key: UNREACHABLE, operator: 'Exists', effect: 'NoExecute' }]],
    ] as const) {
      const r = await request(s, 'POST', PODS, pod(name, [...tols]));
      expect(r.status, r.body).toBe(201);
    }
    const stoppedAt = Date.now();
    dead.renewing = false;

    const unknown = await until(async () => {
      const n = await getNode('n-dead');
      return readyOf(n)?.status === 'Unknown' ? n : undefined;
    }, 30_000);
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(GRACE_SECONDS * 1000 - 600);
    const ready = readyOf(unknown);
    expect(ready.reason).toBe('NodeStatusUnknown');
    expect(ready.message).toBe('Kubelet stopped posting node status.');
    for (const type of ['MemoryPressure', 'DiskPressure', 'PIDPressure']) {
      const c = unknown.status.conditions.find((x: any) => x.type === type);
      expect(c.status).toBe('Unknown');
      expect(c.message).toBe('Kubelet stopped posting node status.');
    }

    const tainted = await until(async () => {
      const n = await getNode('n-dead');
      return hasTaint(n, UNREACHABLE, 'NoSchedule') && hasTaint(n, UNREACHABLE, 'NoExecute') ? n : undefined;
    }, 30_000);
    const noExecute = tainted.spec.taints.find((t: any) => t.key === UNREACHABLE && t.effect === 'NoExecute');
    expect(noExecute.timeAdded).toBeTruthy();
    // the live node is left alone
    const other = await getNode('n-alive');
    expect(readyOf(other).status).toBe('True');
    expect(other.spec?.taints ?? []).toEqual([]);

    // the pod without a toleration: DisruptionTarget, then deleted (its grace period running)
    const doomed = await until(async () => {
      const p = (await request(s, 'GET', `${PODS}/doomed`)).json();
      return p.metadata?.deletionTimestamp ? p : undefined;
    }, 30_000);
    const dt = doomed.status.conditions.find((c: any) => c.type === 'DisruptionTarget');
    expect(dt).toMatchObject({ status: 'True', reason: 'DeletionByTaintManager', message: 'Taint manager: deleting due to NoExecute taint' });
    // the pod tolerating for 3 s is still there then, and goes after its 3 s
    const patientThen = (await request(s, 'GET', `${PODS}/patient`)).json();
    expect(patientThen.metadata.deletionTimestamp).toBeUndefined();
    const patient = await until(async () => {
      const p = (await request(s, 'GET', `${PODS}/patient`)).json();
      return p.metadata?.deletionTimestamp ? p : undefined;
    }, 30_000);
    const deletedAt = Date.parse(patient.metadata.deletionTimestamp) - 30_000;
    expect(deletedAt - Date.parse(noExecute.timeAdded)).toBeGreaterThanOrEqual(2_000);
    // tolerated forever: kept
    await sleep(1000);
    const forever = (await request(s, 'GET', `${PODS}/forever`)).json();
    expect(forever.metadata.deletionTimestamp).toBeUndefined();

    // events: the node's NodeNotReady and the eviction
    const evs = (await request(s, 'GET', '/api/v1/namespaces/default/events')).json().items;
    expect(evs.some((e: any) => e.reason === 'NodeNotReady' && e.involvedObject.name === 'n-dead' && e.source?.component === 'node-controller')).toBe(true);
    expect(evs.some((e: any) => e.reason === 'TaintManagerEviction' && e.message === 'Marking for deletion Pod default/doomed')).toBe(true);
  }, 90_000);

  it('heartbeats again: Ready comes back only with a Ready=True status, and the taints go', async () => {
    dead.renewing = true;
    await dead.renew();
    await sleep(1500);
    // a renewed Lease alone does not make the node Ready
    expect(readyOf(await getNode('n-dead')).status).toBe('Unknown');
    await dead.postStatus('True');
    const n = await until(async () => {
      const x = await getNode('n-dead');
      return readyOf(x).status === 'True' && (x.spec?.taints ?? []).length === 0 ? x : undefined;
    }, 30_000);
    expect(n.spec?.taints).toBeUndefined();
  }, 60_000);

  it('Ready=False: the not-ready taints (NoSchedule and NoExecute)', async () => {
    await dead.postStatus('False');
    const n = await until(async () => {
      const x = await getNode('n-dead');
      return hasTaint(x, NOT_READY, 'NoSchedule') && hasTaint(x, NOT_READY, 'NoExecute') ? x : undefined;
    }, 30_000);
    expect(hasTaint(n, UNREACHABLE, 'NoExecute')).toBe(false);
    expect(readyOf(n).status).toBe('False');
    await dead.postStatus('True');
    await until(async () => ((await getNode('n-dead')).spec?.taints ?? []).length === 0, 30_000);
  }, 60_000);
});
