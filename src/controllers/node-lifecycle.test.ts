// The node lifecycle controller's rate limits and zone states, over an in-memory store and
// a clock the test moves (the monitor and tainting passes are called by the test).
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { NodeLifecycleController } from './node-lifecycle.js';

type Observer = (cache: any, evs: any[]) => void;

/** The store and cache-layer calls the controller makes, over plain maps. */
function fakeCluster() {
  const caches = new Map<string, Map<string, any>>();
  const observers: Observer[] = [];
  let rv = 1;
  const cache = (gr: string) => {
    let m = caches.get(gr);
    if (!m) caches.set(gr, (m = new Map()));
    return m;
  };
  const entry = (ns: string, name: string, obj: any) => ({ key: `${ns}/${name}`, ns, name, rv: rv++, json: Buffer.from(JSON.stringify(obj)), obj });
  const put = (gr: string, ns: string, name: string, obj: any, type = 'MODIFIED') => {
    const e = entry(ns, name, obj);
    cache(gr).set(e.key, e);
    for (const o of observers) o({ gr }, [{ type, entry: e, rv: e.rv }]);
  };
  const events: any[] = [];
  const store = {
    cacheOf: (t: any) => ({ items: cache(t.gr), list: (ns: string) => [...cache(t.gr).values()].filter((e) => e.ns === ns) }),
    async storageUpdate(t: any, ns: string, name: string, _dry: boolean, mutate: (o: any) => void) {
      const cur = cache(t.gr).get(`${ns}/${name}`);
      if (!cur) throw Object.assign(new Error('not found'), { code: 404 });
      const obj = structuredClone(cur.obj);
      mutate(obj);
      put(t.gr, ns, name, obj);
      return { code: 200, json: Buffer.from('{}') };
    },
    async create(t: any, _ns: string, obj: any) {
      if (t.gr === 'events') events.push(obj);
      return { code: 201, json: Buffer.from('{}') };
    },
  };
  const cacher = { observe: (fn: Observer) => (observers.push(fn), () => undefined) };
  const targets = { resolve: (_g: string, _v: string, r: string) => ({ gr: r }) };
  return { store, cacher, targets, put, cache, events };
}

const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

describe('NodeLifecycleController: eviction rates and zones', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('taints one node per 1/--node-eviction-rate seconds, none in a disrupted small zone, and lifts them all when no node is Ready', async () => {
    const k = fakeCluster();
    let t = 1_000_000_000_000;
    const names = Array.from({ length: 10 }, (_, i) => `n${i}`);
    const hb = new Date(t).toISOString();
    for (const name of names) {
      k.put('nodes', '', name, { metadata: { name, uid: `uid-${name}`, creationTimestamp: hb }, status: { conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: hb, lastTransitionTime: hb }] } }, 'ADDED');
      k.put('leases', 'kube-node-lease', name, { metadata: { name, namespace: 'kube-node-lease' }, spec: { renewTime: new Date(t).toISOString() } }, 'ADDED');
    }
    const c = new NodeLifecycleController(k.store as any, k.cacher as any, k.targets as any, { monitorPeriodMs: 1e9, monitorGraceMs: 50_000, evictionRate: 0.1, secondaryEvictionRate: 0.01, largeClusterThreshold: 50, unhealthyZoneThreshold: 0.55 }, () => undefined, () => t);
    c.start();
    const any = c as any;
    const renew = (alive: string[]) => {
      for (const name of alive) k.put('leases', 'kube-node-lease', name, { metadata: { name, namespace: 'kube-node-lease' }, spec: { renewTime: new Date(t).toISOString() } });
    };
    const node = (name: string) => k.cache('nodes').get(`/${name}`).obj;
    const ready = (name: string) => node(name).status.conditions.find((x: any) => x.type === 'Ready').status;
    const noExecute = () => names.filter((n) => (node(n).spec?.taints ?? []).some((x: any) => x.effect === 'NoExecute'));
    const pass = async () => {
      any.monitor();
      await settle();
    };

    // 4 of 10 go silent: Unknown, then queued for the unreachable taint (zone Normal: rate 0.1)
    t += 60_000;
    renew(names.slice(4));
    await pass();
    expect(names.filter((n) => ready(n) === 'Unknown')).toEqual(['n0', 'n1', 'n2', 'n3']);
    await pass();
    expect(c.zoneInfo()).toEqual({ qps: 0.1, state: 'Normal' });
    any.taintingPass();
    await settle();
    expect(noExecute()).toHaveLength(1);
    any.taintingPass();
    await settle();
    expect(noExecute()).toHaveLength(1);
    t += 10_000;
    renew(names.slice(4));
    any.taintingPass();
    await settle();
    expect(noExecute()).toHaveLength(2);
    // the unreachable taints (NoSchedule from the condition, NoExecute from the queue)
    const tainted = node(noExecute()[0]).spec.taints;
    expect(tainted.map((x: any) => `${x.key}:${x.effect}`).sort()).toEqual(['node.kubernetes.io/unreachable:NoExecute', 'node.kubernetes.io/unreachable:NoSchedule']);

    // 7 of 10 not Ready: PartialDisruption; 10 nodes is not above --large-cluster-size-threshold: rate 0
    t += 60_000;
    renew(names.slice(7));
    await pass();
    await pass();
    expect(c.zoneInfo()).toEqual({ qps: 0, state: 'PartialDisruption' });
    const before = noExecute().length;
    t += 100_000;
    renew(names.slice(7));
    any.taintingPass();
    await settle();
    expect(noExecute()).toHaveLength(before);

    // none Ready: full disruption stops evictions and lifts the NoExecute taints
    t += 60_000;
    await pass();
    await pass();
    expect(names.every((n) => ready(n) === 'Unknown')).toBe(true);
    expect(c.zoneInfo().state).toBe('FullDisruption');
    expect(noExecute()).toEqual([]);
    t += 100_000;
    any.taintingPass();
    await settle();
    expect(noExecute()).toEqual([]);

    expect(k.events.filter((e) => e.reason === 'RegisteredNode')).toHaveLength(10);
    expect(k.events.some((e) => e.reason === 'NodeNotReady' && e.message === 'Node n0 status is now: NodeNotReady')).toBe(true);
    c.stop();
  });

  it('a large zone in partial disruption evicts at --secondary-node-eviction-rate', async () => {
    const k = fakeCluster();
    let t = 1_000_000_000_000;
    const names = Array.from({ length: 60 }, (_, i) => `n${i}`);
    const hb = new Date(t).toISOString();
    for (const name of names) {
      k.put('nodes', '', name, { metadata: { name, uid: `uid-${name}`, creationTimestamp: hb }, status: { conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: hb, lastTransitionTime: hb }] } }, 'ADDED');
    }
    const c = new NodeLifecycleController(k.store as any, k.cacher as any, k.targets as any, { monitorPeriodMs: 1e9 }, () => undefined, () => t);
    c.start();
    const any = c as any;
    t += 60_000;
    // 40 of 60 silent
    for (const name of names.slice(40)) {
      const n = structuredClone(k.cache('nodes').get(`/${name}`).obj);
      n.status.conditions[0].lastHeartbeatTime = new Date(t).toISOString();
      k.put('nodes', '', name, n);
    }
    any.monitor();
    await settle();
    any.monitor();
    await settle();
    expect(c.zoneInfo()).toEqual({ qps: 0.01, state: 'PartialDisruption' });
    c.stop();
  });
});
