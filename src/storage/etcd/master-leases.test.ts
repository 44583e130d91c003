// The endpoint reconciler's master leases and the NodePort RangeAllocation on a real etcd:
// kube's keys and values, expiry of a lease not renewed, and compare-and-swap claims that two
// writers cannot both win. Skips with a message when etcd is missing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdClient } from './client.js';
import { decodeFromStorage } from './codec.js';
import { EtcdMasterLeases } from './master-leases.js';
import { decodeRangeAllocation, EtcdNodePortClaims, encodeRangeAllocation } from './range-allocation.js';
import { etcdAvailable, startCluster, type TestCluster } from './test-cluster.js';

const have = etcdAvailable();
if (!have) console.warn('skipping the master lease tests: /usr/bin/etcd is missing (apt-get install etcd-server)');

let cluster: TestCluster | undefined;
let client: EtcdClient | undefined;

/** kube-apiserver's protobuf of a RangeAllocation: k8s\0 + Unknown{typeMeta, raw}, raw = {1 metadata, 2 range, 3 data}. */
function kubeProtobuf(range: string, data: Buffer): Buffer {
  const ld = (field: number, b: Buffer) => Buffer.concat([Buffer.from([(field << 3) | 2, b.length]), b]);
  const typeMeta = Buffer.concat([ld(1, Buffer.from('v1')), ld(2, Buffer.from('RangeAllocation'))]);
  const raw = Buffer.concat([ld(1, Buffer.alloc(0)), ld(2, Buffer.from(range)), ld(3, data)]);
  return Buffer.concat([Buffer.from('k8s\0', 'latin1'), ld(1, typeMeta), ld(2, raw), ld(3, Buffer.alloc(0)), ld(4, Buffer.alloc(0))]);
}

describe.skipIf(!have)('etcd master leases and node port claims', () => {
  beforeAll(async () => {
    cluster = await startCluster(1);
    client = new EtcdClient({ endpoints: cluster.endpoints });
  }, 60_000);
  afterAll(async () => {
    client?.close();
    await cluster?.stop();
  });

  it('keeps each replica under <prefix>/masterleases/<ip> as kube writes it, and forgets one not renewed', async () => {
    const leases = new EtcdMasterLeases(client!, '/registry');
    await leases.renew('192.0.2.1', 60);
    await leases.renew('192.0.2.2', 2);
    await leases.renew('192.0.2.1', 60);
    expect((await leases.list()).sort()).toEqual(['192.0.2.1', '192.0.2.2']);
    const { kv } = await client!.get('/registry/masterleases/192.0.2.1');
    // a v1 Endpoints in kube's protobuf envelope, its generation bumped at every renewal, under an etcd lease
    expect(kv!.value.subarray(0, 4).toString('latin1')).toBe('k8s\0');
    expect(kv!.lease).not.toBe('0');
    const obj = decodeFromStorage({ group: '', resource: 'endpoints' }, kv!.value, kv!.modRevision).obj;
    expect(obj).toMatchObject({ apiVersion: 'v1', kind: 'Endpoints', metadata: { generation: 2 }, subsets: [{ addresses: [{ ip: '192.0.2.1' }] }] });
    // the one not renewed goes when its TTL runs out
    const deadline = Date.now() + 15_000;
    while ((await leases.list()).includes('192.0.2.2') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(await leases.list()).toEqual(['192.0.2.1']);
    await leases.remove('192.0.2.1');
    expect(await leases.list()).toEqual([]);
  }, 30_000);

  it('claims node ports in the RangeAllocation: all or none, never one port to two writers', async () => {
    const x = new EtcdNodePortClaims(client!, '/claims-a', 30000, 30009);
    const y = new EtcdNodePortClaims(client!, '/claims-a', 30000, 30009);
    expect(await x.claim([30000, 30005])).toEqual([]);
    expect(await y.claim([30001, 30005])).toEqual([30005]);
    // none of a refused claim was taken
    expect(await y.claim([30001])).toEqual([]);
    const stored = decodeRangeAllocation((await client!.get('/claims-a/ranges/servicenodeports')).kv!.value);
    expect(stored.range).toBe('30000-30009');
    expect(stored.bits).toBe(0b100011n);
    // many writers racing for the same few ports: each port won once
    const racers = Array.from({ length: 8 }, () => new EtcdNodePortClaims(client!, '/claims-b', 30000, 30009));
    const won = await Promise.all(racers.map(async (r) => ((await r.claim([30003])).length === 0 ? 1 : 0)));
    expect(won.reduce((s: number, v) => s + v, 0)).toBe(1);
    await x.release([30000, 30005]);
    expect(decodeRangeAllocation((await client!.get('/claims-a/ranges/servicenodeports')).kv!.value).bits).toBe(0b10n);
    expect(await x.snapshot()).toEqual(new Set([30001]));
  });

  it('reads the RangeAllocation kube-apiserver writes (protobuf) and writes one it reads (JSON)', () => {
    // kube's bitmap: big.Int bytes, big-endian, bit i for offset i
    const kube = decodeRangeAllocation(kubeProtobuf('30000-32767', Buffer.from([0x01, 0x02])));
    expect(kube).toEqual({ range: '30000-32767', bits: 0x0102n });
    const json = JSON.parse(encodeRangeAllocation('30000-32767', 0x0102n).toString());
    expect(json).toMatchObject({ kind: 'RangeAllocation', apiVersion: 'v1', range: '30000-32767', data: Buffer.from([1, 2]).toString('base64') });
  });
});
