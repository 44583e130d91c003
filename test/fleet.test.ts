// The simulated fleet (issue 23): `kubeshard node --simulate 20` against a started server:
// 20 Nodes Ready with a kubelet's status, their Leases renewed, 60 pods bound by nodeName
// Running and Ready with pod IPs, a graceful delete confirmed by the pod's node, and the
// watches of a pod's ConfigMap opened. The heartbeat interval is shortened by its flag.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { request, startServer, until, type TestServer } from './helpers/server.js';

const MAIN = join(process.cwd(), 'dist', 'src', 'main.js');
const N = 20;
const PODS = 60;
const NS = 'fleet';
let s: TestServer;
let fleet: ChildProcess;
let fleetOut = '';

beforeAll(async () => {
  // the node:http2 front end: the fleet multiplexes its nodes over HTTP/2 connections
  s = await startServer({ args: ['--front-end', 'http2'] });
  fleet = spawn(process.execPath, [MAIN, 'node', '--simulate', String(N), '--kubeconfig', s.kubeconfigPath, '--node-name-prefix', 'sim-', '--heartbeat-interval', '1s', '--streams-per-connection', '16'], { stdio: ['ignore', 'pipe', 'pipe'] });
  fleet.stdout!.on('data', (d) => (fleetOut += d));
  fleet.stderr!.on('data', (d) => (fleetOut += d));
  await until(() => fleetOut.includes('fleet ready') || fleet.exitCode !== null, 60_000);
  if (!fleetOut.includes('fleet ready')) throw new Error(`fleet did not start:\n${fleetOut}`);
}, 90_000);

afterAll(async () => {
  if (fleet && fleet.exitCode === null) {
    fleet.kill('SIGTERM');
    await new Promise((r) => fleet.once('exit', r));
  }
  await s?.stop();
  s?.cleanup();
});

describe('kubeshard node --simulate', () => {
  it('registers N Ready nodes with a kubelet-like status', async () => {
    expect(fleetOut).toMatch(new RegExp(`fleet ready: ${N} nodes registered in [\\d.]+ s over \\d+ h2 connections`));
    const nodes = (await request(s, 'GET', '/api/v1/nodes')).json().items.filter((n: any) => n.metadata.name.startsWith('sim-'));
    expect(nodes).toHaveLength(N);
    for (const n of nodes) {
      const ready = n.status.conditions.find((c: any) => c.type === 'Ready');
      expect(ready).toMatchObject({ status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' });
      expect(n.status.conditions.map((c: any) => c.type).sort()).toEqual(['DiskPressure', 'MemoryPressure', 'NetworkUnavailable', 'PIDPressure', 'Ready']);
      expect(n.status.addresses.map((a: any) => a.type)).toEqual(['InternalIP', 'Hostname']);
      expect(n.status.capacity).toMatchObject({ cpu: '32', pods: '110' });
      expect(n.status.nodeInfo).toMatchObject({ kubeletVersion: 'v1.33.0', operatingSystem: 'linux', architecture: 'amd64' });
      expect(n.metadata.labels['kubernetes.io/hostname']).toBe(n.metadata.name);
    }
  });

  it('each node renews its own Lease in kube-node-lease, owned by its Node', async () => {
    const first = await until(async () => {
      const l = (await request(s, 'GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases')).json().items.filter((x: any) => x.metadata.name.startsWith('sim-'));
      return l.length === N && l;
    }, 20_000);
    const nodes = new Map<string, any>((await request(s, 'GET', '/api/v1/nodes')).json().items.map((n: any) => [n.metadata.name, n]));
    for (const l of first) {
      expect(l.spec).toMatchObject({ holderIdentity: l.metadata.name, leaseDurationSeconds: 40 });
      expect(l.spec.renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      expect(l.metadata.ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Node', name: l.metadata.name, uid: nodes.get(l.metadata.name).metadata.uid }]);
    }
    const before = new Map<string, string>(first.map((l: any) => [l.metadata.name, l.spec.renewTime]));
    // every Lease renewed again (the interval is 1 s here)
    await until(async () => {
      const l = (await request(s, 'GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases')).json().items.filter((x: any) => x.metadata.name.startsWith('sim-'));
      return l.every((x: any) => x.spec.renewTime !== before.get(x.metadata.name));
    }, 20_000);
  });

  it('pods bound by nodeName become Running and Ready with pod IPs; their ConfigMap is watched', async () => {
    expect((await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: NS } })).status).toBe(201);
    expect((await request(s, 'POST', `/api/v1/namespaces/${NS}/configmaps`, { metadata: { name: 'settings' }, data: { a: '1' } })).status).toBe(201);
    for (let i = 0; i < PODS; i++) {
      const pod = {
        metadata: { name: `p-${i}` },
        spec: {
          nodeName: `sim-${i % N}`,
          containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', env: i === 0 ? [{ name: 'A', valueFrom: { configMapKeyRef: { name: 'settings', key: 'a' } } }] : undefined }],
        },
      };
      const r = await request(s, 'POST', `/api/v1/namespaces/${NS}/pods`, pod);
      expect(r.status).toBe(201);
    }
    const pods = await until(async () => {
      const p = (await request(s, 'GET', `/api/v1/namespaces/${NS}/pods`)).json().items;
      return p.length === PODS && p.every((x: any) => x.status?.phase === 'Running') && p;
    }, 30_000);
    const ips = new Set<string>();
    for (const p of pods) {
      expect(p.status.conditions.find((c: any) => c.type === 'Ready').status).toBe('True');
      expect(p.status.containerStatuses[0]).toMatchObject({ name: 'c', ready: true, started: true, restartCount: 0 });
      expect(p.status.containerStatuses[0].state.running.startedAt).toBeTruthy();
      const node = Number(p.spec.nodeName.slice(4));
      expect(p.status.hostIP).toBe(`10.200.0.${node}`);
      ips.add(p.status.podIP);
    }
    expect(ips.size).toBe(PODS);
    // the watch a kubelet opens on a ConfigMap its pod uses, seen by the server
    const metrics = (await request(s, 'GET', '/metrics')).body;
    const line = metrics.split('\n').find((l) => l.startsWith('apiserver_longrunning_requests') && l.includes('resource="configmaps"') && l.includes('verb="WATCH"'));
    expect(line).toBeTruthy();
  });

  it('a graceful delete is confirmed by the pod node at once', async () => {
    const r = await request(s, 'DELETE', `/api/v1/namespaces/${NS}/pods/p-1`, { gracePeriodSeconds: 300 });
    expect(r.status).toBe(200);
    await until(async () => (await request(s, 'GET', `/api/v1/namespaces/${NS}/pods/p-1`)).status === 404, 20_000);
  });

  it('stops on SIGTERM with its counters', async () => {
    fleet.kill('SIGTERM');
    const code = await new Promise((r) => fleet.once('exit', r));
    expect(code).toBe(0);
    const final = JSON.parse(fleetOut.trim().split('\n').pop()!);
    expect(final).toMatchObject({ final: true, nodes: N, podsStarted: PODS, podsDeleted: 1, leaseFailures: 0 });
    expect(final.leaseRenewals).toBeGreaterThan(N);
  });
});

describe('kubeshard node --simulate over HTTP/1.1 (the default uWebSockets.js front end)', () => {
  it('registers, runs and deletes pods with a connection per watch', async () => {
    const s1 = await startServer();
    let out = '';
    const f = spawn(process.execPath, [MAIN, 'node', '--simulate', '5', '--kubeconfig', s1.kubeconfigPath, '--node-name-prefix', 'h1-', '--heartbeat-interval', '1s'], { stdio: ['ignore', 'pipe', 'pipe'] });
    f.stdout!.on('data', (d) => (out += d));
    f.stderr!.on('data', (d) => (out += d));
    try {
      await until(() => out.includes('fleet ready') || f.exitCode !== null, 60_000);
      expect(out).toMatch(/fleet ready: 5 nodes registered in [\d.]+ s over \d+ http\/1\.1 connections/);
      for (let i = 0; i < 10; i++) {
        const r = await request(s1, 'POST', '/api/v1/namespaces/default/pods', { metadata: { name: `q-${i}` }, spec: { nodeName: `h1-${i % 5}`, containers: [{ name: 'c', image: 'x' }] } });
        expect(r.status).toBe(201);
      }
      await until(async () => {
        const p = (await request(s1, 'GET', '/api/v1/namespaces/default/pods')).json().items;
        return p.length === 10 && p.every((x: any) => x.status?.phase === 'Running');
      }, 30_000);
      expect((await request(s1, 'DELETE', '/api/v1/namespaces/default/pods')).status).toBe(200);
      await until(async () => (await request(s1, 'GET', '/api/v1/namespaces/default/pods')).json().items.length === 0, 30_000);
    } finally {
      f.kill('SIGTERM');
      await new Promise((r) => f.once('exit', r));
      await s1.stop();
      s1.cleanup();
    }
  }, 120_000);
});
