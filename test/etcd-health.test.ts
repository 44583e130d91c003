// kubeshard on etcd (--storage-backend=etcd3): the `etcd` checks of /healthz and /livez and
// `etcd-readiness` of /readyz follow etcd's reachability with kube's names and message, and
// apiserver_storage_objects is counted in etcd every --etcd-count-metric-poll-period.
//
// Skips when /usr/bin/etcd is absent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { etcdAvailable, startCluster, type TestCluster } from '../src/storage/etcd/test-cluster.js';
import { request, startServer, until, type TestServer } from './helpers/server.js';
import { scrape } from './helpers/metrics.js';

describe.skipIf(!etcdAvailable())('on etcd: health checks and apiserver_storage_objects', () => {
  let cluster: TestCluster;
  let s: TestServer;

  beforeAll(async () => {
    cluster = await startCluster(1);
    s = await startServer({ args: ['--storage-backend', 'etcd3', '--etcd-servers', cluster.endpoints[0], '--etcd-count-metric-poll-period', '1s'] });
  }, 60_000);

  afterAll(async () => {
    await s?.stop();
    s?.cleanup();
    await cluster?.stop();
  });

  it('apiserver_storage_objects counts the objects in etcd', async () => {
    for (let i = 0; i < 3; i++) expect((await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: `counted-${i}` } })).status).toBe(201);
    // kube-root-ca.crt of each namespace is a ConfigMap too: the count is etcd's, whatever it holds
    const inEtcd = JSON.parse((await request(s, 'GET', '/api/v1/configmaps')).body).items.length;
    await until(async () => (await scrape(s, 'apiserver_storage_objects')).find((x) => x.labels.resource === 'configmaps')?.value === inEtcd, 10_000);
  });

  it('the etcd checks pass while etcd answers, fail with kube\'s message while it does not, and pass again once it is back', async () => {
    expect((await request(s, 'GET', '/livez/etcd')).body).toBe('ok');
    const ready = await request(s, 'GET', '/readyz?verbose');
    expect(ready.body).toContain('[+]etcd ok');
    expect(ready.body).toContain('[+]etcd-readiness ok');
    await cluster.kill(0);
    try {
      const one = await until(async () => {
        const r = await request(s, 'GET', '/livez/etcd');
        return r.status === 500 && r;
      }, 15_000);
      expect(one.body).toMatch(/^internal server error: error getting data from etcd: /);
      for (const [path, failing] of [['/healthz?verbose', ['etcd']], ['/livez?verbose', ['etcd']], ['/readyz?verbose', ['etcd', 'etcd-readiness']]] as const) {
        const r = await request(s, 'GET', path);
        expect(r.status).toBe(500);
        for (const name of failing) expect(r.body).toContain(`[-]${name} failed: reason withheld`);
      }
    } finally {
      await cluster.restart(0);
    }
    await until(async () => (await request(s, 'GET', '/readyz')).status === 200, 30_000);
    expect((await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'after' } })).status).toBe(201);
  });
});
