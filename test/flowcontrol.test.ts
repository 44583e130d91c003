// API Priority and Fairness as kube-apiserver 1.33 has it on by default: the bootstrap
// configuration (mandatory and suggested FlowSchemas and PriorityLevelConfigurations), the
// Dangling condition, classification (the X-Kubernetes-PF-* headers), seats, queues and 429s.
import { describe, it, expect } from 'vitest';
import { request, useServer, type TestServer } from './helpers/server.js';
import { kubectl } from './helpers/kubectl.js';

let s: TestServer;
useServer((started) => (s = started), {}, 60_000);

/** Polls an async condition until it holds (the shared until() takes synchronous ones). */
async function eventually<T>(fn: () => Promise<T | undefined | false>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
}

const FS = '/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas';
const PL = '/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations';

// kube-apiserver 1.33's names (flowcontrol bootstrap: mandatory and suggested).
const KUBE_FLOWSCHEMAS = [
  'catch-all', 'endpoint-controller', 'exempt', 'global-default', 'kube-controller-manager', 'kube-scheduler',
  'kube-system-service-accounts', 'probes', 'service-accounts', 'system-leader-election', 'system-node-high',
  'system-nodes', 'workload-leader-election',
];
const KUBE_LEVELS = ['catch-all', 'exempt', 'global-default', 'leader-election', 'node-high', 'system', 'workload-high', 'workload-low'];

describe('bootstrap configuration', () => {
  it('kubectl lists kube 1.33 FlowSchemas and priority levels, auto-updated, none dangling', async () => {
    const fs = await kubectl(s, ['get', 'flowschemas', '-o', 'name']);
    expect(fs.code).toBe(0);
    expect(fs.stdout.trim().split('\n').map((l) => l.replace('flowschema.flowcontrol.apiserver.k8s.io/', '')).sort()).toEqual(KUBE_FLOWSCHEMAS);
    const pl = await kubectl(s, ['get', 'prioritylevelconfigurations', '-o', 'name']);
    expect(pl.stdout.trim().split('\n').map((l) => l.replace(/^.*\//, '')).sort()).toEqual(KUBE_LEVELS);
    const table = await kubectl(s, ['get', 'flowschemas']);
    expect(table.stdout).toMatch(/^NAME\s+PRIORITYLEVEL\s+MATCHINGPRECEDENCE\s+DISTINGUISHERMETHOD\s+AGE\s+MISSINGPL/);
    expect(table.stdout).toMatch(/\nexempt\s+exempt\s+1\s+<none>\s+\S+\s+False\n/);
    const list = (await request(s, 'GET', FS)).json();
    const ordered = list.items.map((o: any) => o.metadata.name);
    expect(ordered.length).toBe(KUBE_FLOWSCHEMAS.length);
    for (const o of list.items) {
      expect(o.metadata.annotations['apf.kubernetes.io/autoupdate-spec']).toBe('true');
    }
    await eventually(async () => {
      const l = (await request(s, 'GET', FS)).json();
      return l.items.every((o: any) => o.status?.conditions?.some((c: any) => c.type === 'Dangling' && c.status === 'False' && c.reason === 'Found'));
    });
    const levels = (await request(s, 'GET', PL)).json().items;
    const byName = Object.fromEntries(levels.map((o: any) => [o.metadata.name, o.spec]));
    expect(byName['exempt'].type).toBe('Exempt');
    expect(byName['catch-all'].limited).toMatchObject({ nominalConcurrencyShares: 5, lendablePercent: 0, limitResponse: { type: 'Reject' } });
    expect(byName['workload-low'].limited).toMatchObject({ nominalConcurrencyShares: 100, lendablePercent: 90, limitResponse: { type: 'Queue', queuing: { queues: 128, handSize: 6, queueLengthLimit: 50 } } });
  });

  it('a FlowSchema naming a missing level is Dangling, and stops being so when the level appears', async () => {
    const fs = {
      apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
      kind: 'FlowSchema',
      metadata: { name: 'orphan' },
      spec: { priorityLevelConfiguration: { name: 'nowhere' }, matchingPrecedence: 5000, rules: [{ subjects: [{ kind: 'User', user: { name: 'nobody' } }], nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/nope'] }] }] },
    };
    expect((await request(s, 'POST', FS, fs)).status).toBe(201);
    const dangling = await eventually(async () => {
      const o = (await request(s, 'GET', `${FS}/orphan`)).json();
      return o.status?.conditions?.find((c: any) => c.type === 'Dangling' && c.status === 'True');
    });
    expect(dangling).toMatchObject({ reason: 'NotFound', message: 'This FlowSchema references the PriorityLevelConfiguration object named "nowhere" but there is no such object' });
    const table = await kubectl(s, ['get', 'flowschema', 'orphan']);
    expect(table.stdout).toMatch(/\norphan\s+nowhere\s+5000\s+<none>\s+\S+\s+True\n/);
    const pl = { apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind: 'PriorityLevelConfiguration', metadata: { name: 'nowhere' }, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 1, limitResponse: { type: 'Reject' } } } };
    expect((await request(s, 'POST', PL, pl)).status).toBe(201);
    await eventually(async () => {
      const o = (await request(s, 'GET', `${FS}/orphan`)).json();
      return o.status?.conditions?.find((c: any) => c.type === 'Dangling' && c.status === 'False' && c.reason === 'Found');
    });
    await request(s, 'DELETE', `${FS}/orphan`);
    await request(s, 'DELETE', `${PL}/nowhere`);
  });

  it('a deleted mandatory object comes back; a suggested one set to autoupdate-spec "false" keeps its spec', async () => {
    expect((await request(s, 'DELETE', `${PL}/catch-all`)).status).toBe(200);
    await eventually(async () => (await request(s, 'GET', `${PL}/catch-all`)).status === 200);
    const patch = { metadata: { annotations: { 'apf.kubernetes.io/autoupdate-spec': 'false' } }, spec: { matchingPrecedence: 9950 } };
    const r = await request(s, 'PATCH', `${FS}/global-default`, patch, { 'content-type': 'application/merge-patch+json' });
    expect(r.status).toBe(200);
    expect(r.json().spec.matchingPrecedence).toBe(9950);
    // A restart ensures the configuration again: the user's spec stays, a changed auto-updated one is put back.
    await request(s, 'PATCH', `${FS}/probes`, { spec: { matchingPrecedence: 3 } }, { 'content-type': 'application/merge-patch+json' });
    await s.stop();
    await s.restart();
    expect((await request(s, 'GET', `${FS}/global-default`)).json().spec.matchingPrecedence).toBe(9950);
    expect((await request(s, 'GET', `${FS}/probes`)).json().spec.matchingPrecedence).toBe(2);
  });
});
