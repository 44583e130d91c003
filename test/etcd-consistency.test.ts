// Two kubeshard servers on one etcd (--storage-backend=etcd3, one --etcd-prefix): a write
// acknowledged by one is seen by the other's "most recent" reads at once (kube's
// ConsistentListFromCache: the current revision asked of etcd, then the cache waited for),
// and the other's writes are decided on the object as etcd holds it, not as its cache last
// heard (conflict, already exists, not found answered as kube-apiserver answers them).
//
// Skips when /usr/bin/etcd is absent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { etcdAvailable, startCluster, type TestCluster } from '../src/storage/etcd/test-cluster.js';
import { request, startServer, type TestServer } from './helpers/server.js';

describe.skipIf(!etcdAvailable())('two servers on one etcd: consistent reads and writes across them', () => {
  let cluster: TestCluster;
  let a: TestServer;
  let b: TestServer;
  const CM = '/api/v1/namespaces/default/configmaps';

  beforeAll(async () => {
    cluster = await startCluster(1);
    const args = ['--storage-backend', 'etcd3', '--etcd-servers', cluster.endpoints[0], '--etcd-prefix', '/registry-consistency'];
    a = await startServer({ args });
    b = await startServer({ args });
  }, 120_000);

  afterAll(async () => {
    for (const s of [a, b]) {
      await s?.stop();
      s?.cleanup();
    }
    await cluster?.stop();
  });

  it('a write through one is read at once through the other, by get and by list', async () => {
    for (let i = 0; i < 20; i++) {
      const made = await request(a, 'POST', CM, { metadata: { name: `seen-${i}` }, data: { i: String(i) } });
      expect(made.status).toBe(201);
      const rv = JSON.parse(made.body).metadata.resourceVersion;
      const got = await request(b, 'GET', `${CM}/seen-${i}`);
      expect(got.status).toBe(200);
      expect(JSON.parse(got.body).metadata.resourceVersion).toBe(rv);
      const list = JSON.parse((await request(b, 'GET', CM)).body);
      expect(Number(list.metadata.resourceVersion)).toBeGreaterThanOrEqual(Number(rv));
      expect(list.items.map((o: any) => o.metadata.name)).toContain(`seen-${i}`);
    }
  });

  it('an update through one of an object just changed through the other: conflict on a stale version, success on the current one', async () => {
    const made = JSON.parse((await request(a, 'POST', CM, { metadata: { name: 'upd' }, data: { v: '1' } })).body);
    const changed = JSON.parse((await request(a, 'PUT', `${CM}/upd`, { ...made, data: { v: '2' } })).body);
    // the version b was not told of yet is the current one: accepted
    const viaB = await request(b, 'PUT', `${CM}/upd`, { ...changed, data: { v: '3' } });
    expect(viaB.status).toBe(200);
    expect(JSON.parse(viaB.body).data).toEqual({ v: '3' });
    // the old version: kube's conflict
    const stale = await request(a, 'PUT', `${CM}/upd`, { ...made, data: { v: '4' } });
    expect(stale.status).toBe(409);
    expect(JSON.parse(stale.body).reason).toBe('Conflict');
    // an unconditional patch through either applies to the current object
    const patched = await request(a, 'PATCH', `${CM}/upd`, { data: { w: 'x' } }, { 'content-type': 'application/merge-patch+json' });
    expect(patched.status).toBe(200);
    expect(JSON.parse(patched.body).data).toEqual({ v: '3', w: 'x' });
  });

  it('create, delete and recreate across the two: already exists, not found and success as kube answers them', async () => {
    expect((await request(a, 'POST', CM, { metadata: { name: 'life' } })).status).toBe(201);
    const dup = await request(b, 'POST', CM, { metadata: { name: 'life' } });
    expect(dup.status).toBe(409);
    expect(JSON.parse(dup.body).reason).toBe('AlreadyExists');
    expect((await request(b, 'DELETE', `${CM}/life`)).status).toBe(200);
    const gone = await request(a, 'DELETE', `${CM}/life`);
    expect(gone.status).toBe(404);
    expect((await request(a, 'GET', `${CM}/life`)).status).toBe(404);
    // created again through a, whose cache may still be catching up with b's delete
    expect((await request(a, 'POST', CM, { metadata: { name: 'life' }, data: { again: 'yes' } })).status).toBe(201);
    const back = await request(b, 'GET', `${CM}/life`);
    expect(JSON.parse(back.body).data).toEqual({ again: 'yes' });
  });

  it('a delete with a resourceVersion precondition the other server wrote', async () => {
    await request(a, 'POST', CM, { metadata: { name: 'pre' } });
    const changed = JSON.parse((await request(a, 'PATCH', `${CM}/pre`, { data: { x: '1' } }, { 'content-type': 'application/merge-patch+json' })).body);
    const del = await request(b, 'DELETE', `${CM}/pre`, { preconditions: { resourceVersion: changed.metadata.resourceVersion } });
    expect(del.status).toBe(200);
  });
});
