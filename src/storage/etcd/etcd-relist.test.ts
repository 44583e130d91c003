// The feed falling below etcd's compaction (a partition longer than the compaction
// interval): the backend lists the state again and the cache layer replaces its own (kube's
// reflector relist): watchers ended, the state brought to etcd's, the in-process observers
// told what the lost events did, history starting at the relist, and the feed following on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cacher } from '../cacher.js';
import { Expect } from '../interface.js';
import { EtcdStorage } from './etcd-storage.js';
import { etcdAvailable, startCluster, type TestCluster } from './test-cluster.js';

const have = etcdAvailable();
const GR = 'configmaps';
const cm = (ns: string, name: string, v: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: { v } });

async function until(fn: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.skipIf(!have)('etcd3: relist after the feed fell below the compaction', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startCluster(1);
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('replaces the cache with etcd state, ends the watchers, tells the observers, and follows on', async () => {
    const prefix = `/kubeshard-relist-${process.pid}`;
    const opts = { endpoints: cluster.endpoints, prefix, compactionIntervalMs: 0, callTimeoutMs: 5000 };
    const storage = new EtcdStorage(opts);
    const other = new EtcdStorage(opts);
    const cacher = new Cacher(storage, { watchCacheCapacity: 100, watchCacheSizes: {} });
    await cacher.start();
    await other.start();
    const write = (s: EtcdStorage, type: 'ADDED' | 'MODIFIED' | 'DELETED', name: string, expect: number, v = '1') => {
      const obj = cm('ns1', name, v);
      return s.write({ type, gr: GR, key: `ns1/${name}`, expect, obj }, obj);
    };
    try {
      const a = await write(storage, 'ADDED', 'a', Expect.Absent);
      const b = await write(storage, 'ADDED', 'b', Expect.Absent);
      await write(storage, 'ADDED', 'c', Expect.Absent);
      const cache = cacher.cache(GR);
      expect(cache.items.size).toBe(3);

      // the feed stops; meanwhile another writer changes things and etcd compacts them away
      const feed = (storage as any).feed;
      const stoppedAt = storage.freshRv(GR);
      feed.cancel();
      const a2 = await write(other, 'MODIFIED', 'a', a.rv, '2');
      await write(other, 'DELETED', 'b', b.rv);
      await write(other, 'ADDED', 'd', Expect.Absent);
      await other.compactTo(other.currentRv(GR));

      const seen: string[] = [];
      cacher.observe((_c, evs) => {
        for (const e of evs) seen.push(`${e.type} ${e.entry.key}`);
      });
      let closed = 0;
      const closeAll = cache.watchers.closeAll.bind(cache.watchers);
      cache.watchers.closeAll = () => (closed++, closeAll());

      // the feed resumes where it stopped: below the compaction, so it relists
      (storage as any).startFeed(stoppedAt + 1);
      await until(() => cache.items.has('ns1/d'));

      expect([...cache.items.get('ns1/a')!.json.toString().matchAll(/"v":"(\d)"/g)].map((m) => m[1])).toEqual(['2']);
      expect(cache.items.get('ns1/a')!.rv).toBe(a2.rv);
      expect(cache.items.has('ns1/b')).toBe(false);
      expect(cache.items.has('ns1/c')).toBe(true);
      expect(seen.sort()).toEqual(['ADDED ns1/d', 'DELETED ns1/b', 'MODIFIED ns1/a']);
      expect(closed).toBe(1);
      // history before the relist is gone: a watch from before it reads etcd (410 there)
      expect(cache.startRv).toBe(storage.freshRv(GR));
      expect(cache.eventsAfter(stoppedAt)).toBeNull();
      expect(storage.storageProblem?.() ?? '').toBe('');

      // and the feed follows on from the relist
      const e = await write(other, 'ADDED', 'e', Expect.Absent);
      await until(() => cache.items.get('ns1/e')?.rv === e.rv);
      expect(cache.eventsAfter(cache.startRv)!.map((x) => x.entry.key)).toEqual(['ns1/e']);
    } finally {
      await other.close();
      await cacher.close();
    }
  });
});
