// Encryption at rest with several front threads: each thread that encrypts or decrypts
// counts it, and /metrics (answered by the main thread) adds every thread's counts up, so the
// apiserver_storage_transformation_* series tell the whole process's work (on etcd each front
// thread has a storage of its own and encrypts its own writes).
import { randomBytes } from 'node:crypto';
import https from 'node:https';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { request, startServer, type TestServer } from './helpers/server.js';
import { scrape } from './helpers/metrics.js';

const work = mkdtempSync(join(tmpdir(), 'kubeshard-encm-'));
let s: TestServer | undefined;
afterAll(() => {
  s?.cleanup();
  rmSync(work, { recursive: true, force: true });
});

it('counts the transformations of every front thread', async () => {
  const cfg = join(work, 'enc.yaml');
  writeFileSync(
    cfg,
    `apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc: {keys: [{name: k1, secret: "${randomBytes(32).toString('base64')}"}]}\n  - identity: {}\n`,
    { mode: 0o600 },
  );
  s = await startServer({ args: ['--encryption-provider-config', cfg, '--front-threads', '2'] });
  // each create on a connection of its own: the kernel spreads new connections over the threads
  const n = 24;
  for (let i = 0; i < n; i++) {
    const agent = new https.Agent({ keepAlive: false, ca: s.ca });
    const r = await request(s, 'POST', '/api/v1/namespaces/default/secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name: `s${i}` }, stringData: { v: String(i) } }, {}, agent);
    expect(r.status).toBe(201);
  }
  const ops = await scrape(s, 'apiserver_storage_transformation_operations_total');
  const toStorage = ops.filter((x) => x.labels.resource === 'secrets' && x.labels.transformation_type === 'to_storage' && x.labels.status === 'OK').reduce((a, x) => a + x.value, 0);
  expect(toStorage).toBeGreaterThanOrEqual(n);
}, 60_000);
