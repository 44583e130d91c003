// The heartbeats' schedule on a fake API server and a fake clock: the Lease is created,
// then renewed every quarter of its duration; failed renewals are retried after 200 ms,
// doubling to 7 s, and the 10 s rhythm comes back once one succeeds. The status is written
// when it changes (a Ready=Unknown written by someone else, reported as a transition for
// kubelet's node events) and not otherwise until the report period has passed.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError } from './api-client.js';
import { NodeHeartbeat } from './heartbeat.js';
import type { NodeSettings } from './node-status.js';

const settings: NodeSettings = {
  nodeName: 'n1',
  hostname: 'n1',
  nodeIP: '127.0.0.1',
  port: 10250,
  rootDir: '/tmp',
  maxPods: 110,
  systemReserved: {},
  kubeReserved: {},
  evictionHard: {},
  runtimeVersion: 'process://0.1.0',
  labels: {},
  taints: [],
};

function fakeApi(failPuts: number) {
  const calls: Array<{ at: number; method: string; path: string; ok: boolean }> = [];
  let node: any;
  let lease: any;
  let fails = failPuts;
  const api: any = {
    async post(path: string, body: any) {
      calls.push({ at: Date.now(), method: 'POST', path, ok: true });
      if (path === '/api/v1/nodes') return (node = { ...body, metadata: { ...body.metadata, uid: 'node-uid', resourceVersion: '1' } });
      return (lease = { ...body, metadata: { ...body.metadata, resourceVersion: '1' } });
    },
    async get(path: string) {
      calls.push({ at: Date.now(), method: 'GET', path, ok: true });
      if (path.includes('/leases/')) {
        if (!lease) throw new ApiError(404, { reason: 'NotFound' });
        return lease;
      }
      return node;
    },
    async put(path: string, body: any) {
      const ok = fails-- <= 0;
      calls.push({ at: Date.now(), method: 'PUT', path, ok });
      if (!ok) throw new Error('connection refused');
      return (lease = body);
    },
    async patch(path: string, body: any) {
      calls.push({ at: Date.now(), method: 'PATCH', path, ok: true });
      node = { ...node, status: body.status };
      return node;
    },
    setNode(n: any) {
      node = n;
    },
    node: () => node,
  };
  return { api, calls };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('node heartbeats', () => {
  it('creates the lease, renews it every 10 s, retries failures after 200 ms doubling to 7 s', async () => {
    vi.useFakeTimers();
    const { api, calls } = fakeApi(7);
    const hb = new NodeHeartbeat(api, settings, { statusUpdateMs: 10_000, statusReportMs: 300_000, leaseDurationSeconds: 40, log: () => {} });
    await hb.register();
    hb.start();
    const t0 = Date.now();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls.find((c) => c.method === 'PUT')!.at - t0).toBe(10_000);
    hb.stop();
    const leaseCalls = calls.filter((c) => c.path.includes('leases'));
    // GET (absent), POST (created), then PUTs
    expect(leaseCalls.slice(0, 2).map((c) => c.method)).toEqual(['GET', 'POST']);
    // the first renewal 10 s after the create fails, as do the next 6: each retried after
    // the doubling backoff (a failed PUT forgets the lease: the retry reads it first, at
    // once); after the first success, the 10 s rhythm again
    const attempts = calls.filter((c) => c.method === 'PUT' || (c.method === 'GET' && c.path.includes('/leases/') && c.at > t0));
    const starts = attempts.filter((c, i) => i === 0 || c.at !== attempts[i - 1].at).map((c) => c.at);
    const delays = starts.slice(1).map((t, i) => t - starts[i]);
    expect(delays.slice(0, 8)).toEqual([200, 400, 800, 1600, 3200, 6400, 7000, 10_000]);
    expect(calls.filter((c) => c.method === 'PUT' && c.ok).length).toBeGreaterThanOrEqual(2);
    expect(hb.healthy).toBe(true);
  });

  it('writes the status when it changed and not otherwise', async () => {
    vi.useFakeTimers();
    const { api, calls } = fakeApi(0);
    const transitions: string[] = [];
    const hb = new NodeHeartbeat(api, settings, { statusUpdateMs: 10_000, statusReportMs: 300_000, leaseDurationSeconds: 40, log: () => {}, onTransition: (t, st) => transitions.push(`${t}=${st}`) });
    await hb.register();
    const patches = () => calls.filter((c) => c.method === 'PATCH').length;
    expect(patches()).toBe(1); // the first status, at registration
    hb.start();
    await vi.advanceTimersByTimeAsync(35_000);
    expect(patches()).toBe(1); // nothing changed
    // the node lifecycle controller marks it Unknown: written back at the next update
    expect(transitions).toEqual([]);
    const n = api.node();
    api.setNode({ ...n, status: { ...n.status, conditions: n.status.conditions.map((c: any) => (c.type === 'Ready' || c.type === 'PIDPressure' ? { ...c, status: 'Unknown', reason: 'NodeStatusUnknown' } : c)) } });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(patches()).toBe(2);
    expect(api.node().status.conditions.find((c: any) => c.type === 'Ready').status).toBe('True');
    // kubelet's events for the conditions it turned back
    expect(transitions).toEqual(['PIDPressure=False', 'Ready=True']);
    // the report period passes: written even though unchanged
    await vi.advanceTimersByTimeAsync(300_000);
    expect(patches()).toBe(3);
    hb.stop();
  });
});
