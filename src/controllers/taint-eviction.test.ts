// The taint eviction controller over an in-memory store, its deletion timers faked.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TaintEvictionController } from './taint-eviction.js';

type Observer = (cache: any, evs: any[]) => void;

function fakeCluster() {
  const caches = new Map<string, Map<string, any>>();
  const observers: Observer[] = [];
  let rv = 1;
  const cache = (gr: string) => {
    let m = caches.get(gr);
    if (!m) caches.set(gr, (m = new Map()));
    return m;
  };
  const put = (gr: string, ns: string, name: string, obj: any, type = 'MODIFIED') => {
    const e = { key: `${ns}/${name}`, ns, name, rv: rv++, json: Buffer.from(JSON.stringify(obj)), obj };
    if (type === 'DELETED') cache(gr).delete(e.key);
    else cache(gr).set(e.key, e);
    for (const o of observers) o({ gr }, [{ type, entry: e, rv: e.rv }]);
  };
  const events: any[] = [];
  const deleted: string[] = [];
  const store = {
    cacheOf: (t: any) => ({ items: cache(t.gr) }),
    async storageUpdate(t: any, ns: string, name: string, _dry: boolean, mutate: (o: any) => void) {
      const cur = cache(t.gr).get(`${ns}/${name}`);
      if (!cur) throw Object.assign(new Error('not found'), { code: 404 });
      const obj = structuredClone(cur.obj);
      mutate(obj);
      put(t.gr, ns, name, obj);
      return { code: 200, json: Buffer.from('{}') };
    },
    async delete(t: any, ns: string, name: string) {
      deleted.push(`${ns}/${name}`);
      const cur = cache(t.gr).get(`${ns}/${name}`);
      put(t.gr, ns, name, cur.obj, 'DELETED');
      return { deleted: true };
    },
    async create(t: any, _ns: string, obj: any) {
      if (t.gr === 'events') events.push(obj);
      return { code: 201, json: Buffer.from('{}') };
    },
  };
  const cacher = { observe: (fn: Observer) => (observers.push(fn), () => undefined) };
  const targets = { resolve: (_g: string, _v: string, r: string) => ({ gr: r }) };
  return { store, cacher, targets, put, cache, events, deleted };
}

const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};
const UNREACHABLE = { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' };
const node = (taints: any[]) => ({ metadata: { name: 'n1' }, spec: taints.length ? { taints } : {} });
const pod = (name: string, tolerations: any[]) => ({ metadata: { name, namespace: 'default', uid: `uid-${name}` }, spec: { nodeName: 'n1', tolerations }, status: { phase: 'Running' } });

describe('TaintEvictionController', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('deletes at once without a toleration, after tolerationSeconds with one, never when tolerated forever; the taint removed cancels', async () => {
    const k = fakeCluster();
    k.put('nodes', '', 'n1', node([]), 'ADDED');
    k.put('pods', 'default', 'bare', pod('bare', []), 'ADDED');
    k.put('pods', 'default', 'ten', pod('ten', [{ key: UNREACHABLE.key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 10 }]), 'ADDED');
    k.put('pods', 'default', 'forever', pod('forever', [{ operator: 'Exists' }]), 'ADDED');
    let t = 1_000_000;
    const c = new TaintEvictionController(k.store as any, k.cacher as any, k.targets as any, () => undefined, () => t);
    c.start();
    await settle();

    k.put('nodes', '', 'n1', node([UNREACHABLE]));
    await vi.advanceTimersByTimeAsync(0);
    await settle();
    expect(k.deleted).toEqual(['default/bare']);
    expect(c.scheduled()).toEqual(['default/ten']);
    expect(k.events.map((e) => e.message)).toContain('Marking for deletion Pod default/bare');

    // the taint goes before the 10 s are over: the deletion is cancelled
    t += 5_000;
    await vi.advanceTimersByTimeAsync(5_000);
    k.put('nodes', '', 'n1', node([]));
    expect(c.scheduled()).toEqual([]);
    expect(k.events.map((e) => e.message)).toContain('Cancelling deletion of Pod default/ten');
    t += 10_000;
    await vi.advanceTimersByTimeAsync(10_000);
    await settle();
    expect(k.deleted).toEqual(['default/bare']);

    // tainted again: the 10 s count from now, then the pod goes with DisruptionTarget first
    k.put('nodes', '', 'n1', node([UNREACHABLE]));
    t += 9_000;
    await vi.advanceTimersByTimeAsync(9_000);
    await settle();
    expect(k.deleted).toEqual(['default/bare']);
    t += 1_000;
    await vi.advanceTimersByTimeAsync(1_000);
    await settle();
    expect(k.deleted).toEqual(['default/bare', 'default/ten']);
    expect(c.scheduled()).toEqual([]);
    c.stop();
  });

  it('a pod coming to a tainted node, or losing its toleration, is judged then', async () => {
    const k = fakeCluster();
    k.put('nodes', '', 'n1', node([UNREACHABLE]), 'ADDED');
    const t = 1_000_000;
    const c = new TaintEvictionController(k.store as any, k.cacher as any, k.targets as any, () => undefined, () => t);
    c.start();
    await settle();
    k.put('pods', 'default', 'p', pod('p', [{ operator: 'Exists' }]), 'ADDED');
    await settle();
    expect(c.scheduled()).toEqual([]);
    k.put('pods', 'default', 'p', pod('p', []));
    await vi.advanceTimersByTimeAsync(0);
    await settle();
    expect(k.deleted).toEqual(['default/p']);
    c.stop();
  });
});
