// The etcd3 backend as several replicas use it: two EtcdStorage instances on one etcd
// prefix see each other's writes on their feeds, refuse each other's stale writes, read
// consistently after a revision read from etcd, and share kube's compactor; the stored
// values are kube's. Against a real etcd; skips with a message when etcd is missing.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EtcdClient } from './client.js';
import { EtcdStorage } from './etcd-storage.js';
import { etcdAvailable, startCluster, type TestCluster } from './test-cluster.js';
import { CompactedError, Expect, WriteRejected, type ChangeSink, type ChangeType } from '../interface.js';

const have = etcdAvailable();
if (!have) console.warn('skipping the etcd3 replica tests: /usr/bin/etcd is missing (apt-get install etcd-server)');

class Sink implements ChangeSink {
  changes: Array<{ type: ChangeType; gr: string; key: string; rv: number; json: any; obj: any }> = [];
  change(type: ChangeType, gr: string, key: string, rv: number, bytes: Buffer, obj: any): void {
    this.changes.push({ type, gr, key, rv, json: JSON.parse(bytes.toString()), obj });
  }
  end(): void {}
  loads: Array<{ gr: string; key: string; rv: number; at: number }> = [];
  load(gr: string, key: string, rv: number, _bytes: Buffer, at: number): void {
    this.loads.push({ gr, key, rv, at });
  }
}

const cm = (ns: string, name: string, data: Record<string, string>) => ({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace: ns, uid: `uid-${name}` }, data });

function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  return new Promise((res, rej) => {
    const tick = () => (cond() ? res() : Date.now() > end ? rej(new Error('condition not met in time')) : setTimeout(tick, 20));
    tick();
  });
}

describe.skipIf(!have)('etcd3 backend replicas', () => {
  let cluster: TestCluster;
  let raw: EtcdClient;
  let n = 0;
  const open: EtcdStorage[] = [];
  beforeAll(async () => {
    cluster = await startCluster(1);
    raw = new EtcdClient({ endpoints: cluster.endpoints });
  });
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
  });
  afterAll(async () => {
    raw?.close();
    await cluster?.stop();
  });

  async function replicas(count: number, prefix = `/replicas-${n++}`): Promise<Array<{ s: EtcdStorage; sink: Sink }>> {
    const out = [];
    for (let i = 0; i < count; i++) {
      const s = new EtcdStorage({ endpoints: cluster.endpoints, prefix, compactionIntervalMs: 0, callTimeoutMs: 5000 });
      const sink = new Sink();
      s.subscribe(sink);
      await s.start();
      open.push(s);
      out.push({ s, sink });
    }
    return out;
  }

  it('each replica sees the other\'s writes on its feed, and stale writes are refused across them', async () => {
    const [a, b] = await replicas(2);
    const obj = cm('ns1', 'x', { v: '1' });
    const c = await a.s.write({ type: 'ADDED', gr: 'configmaps', key: 'ns1/x', expect: Expect.Absent, obj }, obj);
    await until(() => b.sink.changes.some((ch) => ch.rv === c.rv));
    const seen = b.sink.changes.find((ch) => ch.rv === c.rv)!;
    expect(seen).toMatchObject({ type: 'ADDED', gr: 'configmaps', key: 'ns1/x', obj: undefined });
    expect(seen.json).toEqual(JSON.parse(c.json.toString()));
    // B updates at A's version; A's next update at the old version is a conflict
    const o2 = cm('ns1', 'x', { v: '2' });
    const u = await b.s.write({ type: 'MODIFIED', gr: 'configmaps', key: 'ns1/x', expect: c.rv, obj: o2 }, o2);
    const o3 = cm('ns1', 'x', { v: '3' });
    await expect(a.s.write({ type: 'MODIFIED', gr: 'configmaps', key: 'ns1/x', expect: c.rv, obj: o3 }, o3)).rejects.toEqual(new WriteRejected('conflict'));
    await until(() => a.sink.changes.some((ch) => ch.rv === u.rv && ch.type === 'MODIFIED'));
    // a create of the same key on the other replica: exists
    const again = cm('ns1', 'x', { v: '9' });
    await expect(a.s.write({ type: 'ADDED', gr: 'configmaps', key: 'ns1/x', expect: Expect.Absent, obj: again }, again)).rejects.toEqual(new WriteRejected('exists'));
    // a delete on A shows on B with the object's last state at the deletion's version
    const d = await a.s.write({ type: 'DELETED', gr: 'configmaps', key: 'ns1/x', expect: u.rv, obj: o2 }, o2);
    await until(() => b.sink.changes.some((ch) => ch.rv === d.rv));
    const del = b.sink.changes.find((ch) => ch.rv === d.rv)!;
    expect(del.type).toBe('DELETED');
    expect(del.json.data).toEqual({ v: '2' });
    expect(del.json.metadata.resourceVersion).toBe(String(d.rv));
  });

  it('a consistent read on one replica waits for the other replica\'s write (etcd revision, then a progress request)', async () => {
    const [a, b] = await replicas(2);
    const obj = cm('ns1', 'y', { v: '1' });
    const c = await a.s.write({ type: 'ADDED', gr: 'configmaps', key: 'ns1/y', expect: Expect.Absent, obj }, obj);
    const rv = await b.s.latestRv();
    expect(rv).toBeGreaterThanOrEqual(c.rv);
    expect(await b.s.waitFresh('configmaps', rv, 5000)).toBe(true);
    expect(b.sink.changes.some((ch) => ch.rv === c.rv)).toBe(true);
    // with no write to come, the progress request still moves the feed to etcd's revision
    const now = await b.s.latestRv();
    expect(await b.s.waitFresh('configmaps', now, 5000)).toBe(true);
  });

  it('a replica started later loads the current objects first (not changes), then the feed', async () => {
    const prefix = `/replicas-${n++}`;
    const [a] = await replicas(1, prefix);
    const obj = cm('ns1', 'z', { v: '1' });
    const c = await a.s.write({ type: 'ADDED', gr: 'configmaps', key: 'ns1/z', expect: Expect.Absent, obj }, obj);
    const lease = { kind: 'Lease', apiVersion: 'coordination.k8s.io/v1', metadata: { name: 'l', namespace: 'kube-system' }, spec: { holderIdentity: 'a' } };
    await a.s.write({ type: 'ADDED', gr: 'leases.coordination.k8s.io', key: 'kube-system/l', expect: Expect.Absent, obj: lease }, lease);
    const node = { kind: 'Node', apiVersion: 'v1', metadata: { name: 'n1' } };
    await a.s.write({ type: 'ADDED', gr: 'nodes', key: '/n1', expect: Expect.Absent, obj: node }, node);
    const [b] = await replicas(1, prefix);
    expect(b.sink.loads.map((l) => [l.gr, l.key])).toEqual([
      ['configmaps', 'ns1/z'],
      ['leases.coordination.k8s.io', 'kube-system/l'],
      ['nodes', '/n1'],
    ]);
    expect(b.sink.changes).toEqual([]);
    expect(b.sink.loads[0].rv).toBe(c.rv);
    expect(b.sink.loads[0].at).toBeGreaterThanOrEqual(b.sink.loads[2].rv);
    expect(b.s.freshRv('configmaps')).toBeGreaterThanOrEqual(c.rv);
    // under kube's keys, in kube's format, without the resourceVersion
    const { kv } = await raw.get(`${prefix}/minions/n1`);
    expect(kv!.value.subarray(0, 4).toString('latin1')).toBe('k8s\0');
    expect((await raw.get(`${prefix}/leases/kube-system/l`)).kv).toBeDefined();
    expect(await b.s.count('configmaps')).toBe(1);
    expect(await b.s.count('nodes')).toBe(1);
  });

  it('shares kube\'s compactor: one replica compacts per round, to the revision of the round before', async () => {
    const [a, b] = await replicas(2);
    const obj = cm('ns1', 'c', { v: '1' });
    const c = await a.s.write({ type: 'ADDED', gr: 'configmaps', key: 'ns1/c', expect: Expect.Absent, obj }, obj);
    // the coordination key is shared by the whole etcd: start from its current version
    const v0 = (await raw.get('compact_rev_key')).kv?.version ?? 0;
    (a.s as any).compactTime = v0;
    (b.s as any).compactTime = v0;
    await a.s.compactRound(); // A wins round 1: records the revision, nothing to compact yet
    const recorded = (a.s as any).compactRev as number;
    expect(recorded).toBeGreaterThanOrEqual(c.rv);
    await b.s.compactRound(); // B lost round 1: learns the key's version
    expect(a.s.compactedRv('configmaps')).toBe(0);
    const o2 = cm('ns1', 'c', { v: '2' });
    await a.s.write({ type: 'MODIFIED', gr: 'configmaps', key: 'ns1/c', expect: c.rv, obj: o2 }, o2);
    await b.s.compactRound(); // B wins round 2 and compacts to what round 1 recorded
    expect(b.s.compactedRv('configmaps')).toBe(recorded);
    expect((await raw.get('compact_rev_key')).kv?.value.toString()).toBe(String(recorded));
    await expect(Promise.resolve().then(() => b.s.getAt('configmaps', 'ns1/c', c.rv - 1))).rejects.toBeInstanceOf(CompactedError);
    // A learns the compaction from etcd when it reads below it
    await expect(Promise.resolve().then(() => a.s.getAt('configmaps', 'ns1/c', c.rv - 1))).rejects.toBeInstanceOf(CompactedError);
  });

  it('reports an unreachable etcd: health check and writes fail in bounded time', async () => {
    const dead = new EtcdStorage({ endpoints: ['http://127.0.0.1:1'], callTimeoutMs: 500, compactionIntervalMs: 0 });
    try {
      await expect(dead.healthCheck()).rejects.toThrow();
      expect(dead.storageProblem()).toMatch(/etcd is unreachable/);
      const obj = cm('ns1', 'd', {});
      const err: any = await dead.write({ type: 'ADDED', gr: 'configmaps', key: 'ns1/d', expect: Expect.Absent, obj }, obj).catch((e) => e);
      expect(err.code).toBe(503);
    } finally {
      await dead.close();
    }
    const [a] = await replicas(1);
    await a.s.healthCheck();
    expect(a.s.storageProblem()).toBe('');
  });
});
