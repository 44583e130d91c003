// The storage conformance suite (src/storage/conformance.ts, from the storage seam) on the
// etcd3 backend, against a real etcd: each test gets a backend over a key prefix of its own.
// Skips with a message when etcd or the suite is missing.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EtcdStorage } from './etcd-storage.js';
import { etcdAvailable, startCluster, type TestCluster } from './test-cluster.js';

const suitePath = fileURLToPath(new URL('../conformance.ts', import.meta.url));
const haveSuite = existsSync(suitePath);
const have = etcdAvailable();
if (!have) console.warn('skipping the etcd3 storage conformance suite: /usr/bin/etcd is missing (apt-get install etcd-server)');
if (!haveSuite) console.warn('skipping the etcd3 storage conformance suite: src/storage/conformance.ts is not in this tree');

let cluster: TestCluster | undefined;
let n = 0;

if (have && haveSuite) {
  const { storageConformance } = await import('../conformance.js');
  beforeAll(async () => {
    cluster = await startCluster(1);
  });
  afterAll(async () => {
    await cluster?.stop();
  });
  storageConformance('etcd3', async () => {
    const storage = new EtcdStorage({ endpoints: cluster!.endpoints, prefix: `/kubeshard-test-${process.pid}-${n++}`, compactionIntervalMs: 0, callTimeoutMs: 5000 });
    return {
      storage,
      compact: () => storage.compactTo(storage.currentRv('configmaps')),
    };
  });

  describe('latestRv', () => {
    it('shares one etcd read among concurrent callers, and never answers a caller with a read begun before it', async () => {
      const storage = new EtcdStorage({ endpoints: cluster!.endpoints, prefix: `/kubeshard-test-${process.pid}-${n++}`, compactionIntervalMs: 0, callTimeoutMs: 5000 });
      const client = (storage as any).client;
      const range = client.range.bind(client);
      let reads = 0;
      client.range = (...a: any[]) => (reads++, range(...a));
      try {
        // 100 callers in one turn of the event loop share one read
        await Promise.all(Array.from({ length: 100 }, () => storage.latestRv()));
        expect(reads).toBe(1);
        // a caller that arrives while a read is in flight gets a read that began after it
        const first = storage.latestRv();
        const put = await client.txn({ compare: [], success: [{ put: { key: `/other-${process.pid}`, value: Buffer.from('x') } }], failure: [] });
        const later = await Promise.all(Array.from({ length: 10 }, () => storage.latestRv()));
        await first;
        for (const rv of later) expect(rv).toBeGreaterThanOrEqual(put.revision);
      } finally {
        client.range = range;
        storage.close();
      }
    });
  });
} else {
  describe.skip('storage conformance: etcd3', () => {
    it('needs etcd and the conformance suite', () => {});
  });
}
