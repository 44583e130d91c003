// --etcd-servers-overrides: Events stored on an etcd cluster of their own (kube's
// `/events#<servers>`), everything else on --etcd-servers. Each object is found under kube's
// key in its own cluster only, and reads, writes and watches of both work as one API.
//
// Skips when /usr/bin/etcd is absent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdClient } from '../src/storage/etcd/client.js';
import { objectKey } from '../src/storage/etcd/keys.js';
import { etcdAvailable, startCluster, type TestCluster } from '../src/storage/etcd/test-cluster.js';
import { openWatch, request, startServer, until, type TestServer } from './helpers/server.js';

describe.skipIf(!etcdAvailable())('--etcd-servers-overrides', () => {
  let main: TestCluster;
  let events: TestCluster;
  let s: TestServer;
  const clients: EtcdClient[] = [];
  const client = (c: TestCluster) => {
    const e = new EtcdClient({ endpoints: c.endpoints });
    clients.push(e);
    return e;
  };

  beforeAll(async () => {
    [main, events] = await Promise.all([startCluster(1), startCluster(1)]);
    s = await startServer({ args: ['--storage-backend', 'etcd3', '--etcd-servers', main.endpoints[0], '--etcd-servers-overrides', `/events#${events.endpoints[0]}`] });
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) c.close();
    await s?.stop();
    s?.cleanup();
    await Promise.all([main?.stop(), events?.stop()]);
  });

  it('stores Events on their own cluster and the rest on --etcd-servers, under kube\'s keys', async () => {
    const ev = { metadata: { name: 'ev1' }, involvedObject: { kind: 'ConfigMap', name: 'cm1', namespace: 'default' }, reason: 'Tested', message: 'hello' };
    expect((await request(s, 'POST', '/api/v1/namespaces/default/events', ev)).status).toBe(201);
    expect((await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'cm1' } })).status).toBe(201);
    const evKey = objectKey('/registry', '', 'events', 'default', 'ev1');
    const cmKey = objectKey('/registry', '', 'configmaps', 'default', 'cm1');
    const [m, e] = [client(main), client(events)];
    expect((await e.get(evKey)).kv).toBeDefined();
    expect((await m.get(evKey)).kv).toBeUndefined();
    expect((await m.get(cmKey)).kv).toBeDefined();
    expect((await e.get(cmKey)).kv).toBeUndefined();
    // both read back through the API, Events through either group
    expect(JSON.parse((await request(s, 'GET', '/api/v1/namespaces/default/events/ev1')).body).message).toBe('hello');
    expect(JSON.parse((await request(s, 'GET', '/apis/events.k8s.io/v1/namespaces/default/events')).body).items.map((i: any) => i.metadata.name)).toContain('ev1');
    expect((await request(s, 'GET', '/api/v1/namespaces/default/configmaps/cm1')).status).toBe(200);
  });

  it('watches and updates of the overridden resource work as any other', async () => {
    const list = JSON.parse((await request(s, 'GET', '/api/v1/namespaces/default/events')).body);
    const w = openWatch(s, `/api/v1/namespaces/default/events?watch=1&resourceVersion=${list.metadata.resourceVersion}`);
    try {
      await w.status;
      const patched = await request(s, 'PATCH', '/api/v1/namespaces/default/events/ev1', { message: 'changed' }, { 'content-type': 'application/merge-patch+json' });
      expect(patched.status).toBe(200);
      await until(() => w.events.find((x) => x.type === 'MODIFIED'));
      expect(w.events.find((x) => x.type === 'MODIFIED').object.message).toBe('changed');
    } finally {
      w.close();
    }
    expect((await request(s, 'DELETE', '/api/v1/namespaces/default/events/ev1')).status).toBe(200);
    expect((await request(s, 'GET', '/api/v1/namespaces/default/events/ev1')).status).toBe(404);
  });
});
