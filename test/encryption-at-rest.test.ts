// Encryption at rest on the LMDB backend, through a whole server: with
// --encryption-provider-config, a Secret's value is nowhere in the data dir's files (log,
// B-tree, cache index) while a ConfigMap's is; everything reads the Secret back (GET, LIST,
// a list at an exact older version from the history, a restart's load); the metrics count
// the transformations; kube's documented key rotation (a new first key, `kubectl get secrets
// -A -o json | kubectl replace -f -`, then the old key removed); automatic reload; KMS v2
// with a local plugin and its health check.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { onEtcd, request, startServer, until, type TestServer } from './helpers/server.js';
import { kubectlOk } from './helpers/kubectl.js';
import { scrape } from './helpers/metrics.js';
import { startKmsPlugin, type KmsPlugin } from './kms-plugin.js';

const work = mkdtempSync(join(tmpdir(), 'kubeshard-enc-'));
const servers: TestServer[] = [];
let plugin: KmsPlugin | null = null;
afterAll(async () => {
  for (const s of servers) s.cleanup();
  await plugin?.close();
  rmSync(work, { recursive: true, force: true });
});

const key = () => randomBytes(32).toString('base64');
const KEY1 = key();
const KEY2 = key();

function configFile(name: string, providers: string[]): string {
  const path = join(work, name);
  writeFileSync(path, `apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n${providers.map((p) => `  - ${p}`).join('\n')}\n`);
  return path;
}
const aescbc = (...keys: Array<[string, string]>) => `aescbc: {keys: [${keys.map(([n, s]) => `{name: ${n}, secret: "${s}"}`).join(', ')}]}`;

/** Every file under dir, as bytes. */
function filesOf(dir: string): Array<[string, Buffer]> {
  const out: Array<[string, Buffer]> = [];
  for (const n of readdirSync(dir)) {
    const p = join(dir, n);
    const st = statSync(p);
    if (st.isDirectory()) out.push(...filesOf(p));
    else if (st.isFile()) out.push([p, readFileSync(p)]);
  }
  return out;
}
const filesHolding = (dir: string, text: string) => filesOf(dir).filter(([, b]) => b.includes(text)).map(([p]) => p);

async function start(args: string[], env?: Record<string, string>): Promise<TestServer> {
  const s = await startServer({ args, env });
  servers.push(s);
  return s;
}

async function createSecret(s: TestServer, name: string, value: string): Promise<any> {
  const r = await request(s, 'POST', '/api/v1/namespaces/default/secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name }, stringData: { v: value } });
  expect(r.status).toBe(201);
  return r.json();
}

async function secretValue(s: TestServer, name: string): Promise<string> {
  const r = await request(s, 'GET', `/api/v1/namespaces/default/secrets/${name}`);
  expect(r.status).toBe(200);
  return Buffer.from(r.json().data.v, 'base64').toString();
}

// (about the LMDB backend's files and shard workers; on etcd: src/storage/etcd/etcd-encryption.test.ts and test/etcd-encryption-shared.test.ts)
describe.skipIf(onEtcd)('encryption at rest (LMDB)', () => {
  it('aescbc: a Secret is encrypted in the data dir and read back everywhere; rotation to a new key with kubectl replace', async () => {
    const plain = `plaintext-${randomBytes(8).toString('hex')}`;
    const cmValue = `configmap-${randomBytes(8).toString('hex')}`;
    const cfg1 = configFile('cbc1.yaml', [aescbc(['key1', KEY1]), 'identity: {}']);
    const s = await start(['--encryption-provider-config', cfg1]);
    const created = await createSecret(s, 'db', plain);
    const updated = (await request(s, 'PUT', '/api/v1/namespaces/default/secrets/db', { ...created, stringData: { v: plain + '-2' } })).json();
    expect(updated.metadata.resourceVersion).not.toBe(created.metadata.resourceVersion);
    expect((await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm' }, data: { v: cmValue } })).status).toBe(201);
    expect(await secretValue(s, 'db')).toBe(plain + '-2');
    // the history: the list as it was at the create, read from storage
    const exact = await request(s, 'GET', `/api/v1/namespaces/default/secrets?resourceVersion=${created.metadata.resourceVersion}&resourceVersionMatch=Exact`);
    expect(exact.status).toBe(200);
    expect(Buffer.from(exact.json().items[0].data.v, 'base64').toString()).toBe(plain);
    // the files: the ConfigMap's value is there (the search works), the Secret's is not, in either form
    expect(filesHolding(s.dataDir, cmValue).length).toBeGreaterThan(0);
    expect(filesHolding(s.dataDir, plain)).toEqual([]);
    expect(filesHolding(s.dataDir, Buffer.from(plain).toString('base64').slice(0, 16))).toEqual([]);
    expect(filesHolding(s.dataDir, 'k8s:enc:aescbc:v1:key1:').length).toBeGreaterThan(0);
    const ops = await scrape(s, 'apiserver_storage_transformation_operations_total');
    expect(ops.find((x) => x.labels.resource === 'secrets' && x.labels.transformation_type === 'to_storage' && x.labels.transformer_prefix === 'k8s:enc:aescbc:v1:' && x.labels.status === 'OK')?.value).toBeGreaterThanOrEqual(2);
    expect(ops.find((x) => x.labels.transformation_type === 'from_storage' && x.labels.status === 'OK')?.value).toBeGreaterThanOrEqual(1);
    expect(ops.some((x) => x.labels.resource === 'configmaps')).toBe(false);

    // a restart loads the Secret from the B-tree (decrypted before the caches take it)
    await s.stop();
    await s.restart();
    expect(await secretValue(s, 'db')).toBe(plain + '-2');
    const list = await request(s, 'GET', '/api/v1/namespaces/default/secrets');
    expect(list.json().items.map((i: any) => i.metadata.name)).toContain('db');

    // rotation (kube's documented steps): a new key first, the old one still there to read
    await s.stop();
    writeFileSync(cfg1, readFileSync(configFile('cbc2.yaml', [aescbc(['key2', KEY2], ['key1', KEY1]), 'identity: {}'])));
    await s.restart();
    expect(await secretValue(s, 'db')).toBe(plain + '-2');
    const before = (await request(s, 'GET', '/api/v1/namespaces/default/secrets/db')).json().metadata.resourceVersion;
    const all = await kubectlOk(s, ['get', 'secrets', '-A', '-o', 'json']);
    await kubectlOk(s, ['replace', '-f', '-'], all);
    // the update changed nothing, but the stored value was stale (written with key1): it was written again
    const after = (await request(s, 'GET', '/api/v1/namespaces/default/secrets/db')).json().metadata.resourceVersion;
    expect(after).not.toBe(before);
    // a second replace changes nothing: the value is current, no write
    await kubectlOk(s, ['replace', '-f', '-'], await kubectlOk(s, ['get', 'secrets', '-A', '-o', 'json']));
    expect((await request(s, 'GET', '/api/v1/namespaces/default/secrets/db')).json().metadata.resourceVersion).toBe(after);
    // then the old key goes: every Secret still reads, after a restart too
    await s.stop();
    writeFileSync(cfg1, readFileSync(configFile('cbc3.yaml', [aescbc(['key2', KEY2]), 'identity: {}'])));
    await s.restart();
    expect(await secretValue(s, 'db')).toBe(plain + '-2');
    expect(s.output()).not.toMatch(/unable to transform/);
  }, 120_000);

  it('secretbox, with automatic reload to a new first key', async () => {
    const plain = `sbx-${randomBytes(8).toString('hex')}`;
    const box = `secretbox: {keys: [{name: box1, secret: "${KEY1}"}]}`;
    const cfg = configFile('reload.yaml', [box, 'identity: {}']);
    const s = await start(['--encryption-provider-config', cfg, '--encryption-provider-config-automatic-reload'], { KUBESHARD_ENCRYPTION_RELOAD_INTERVAL_MS: '200' });
    await createSecret(s, 'one', plain);
    expect(filesHolding(s.dataDir, plain)).toEqual([]);
    expect(filesHolding(s.dataDir, 'k8s:enc:secretbox:v1:box1:').length).toBeGreaterThan(0);
    // a new first key, written while the server runs
    writeFileSync(cfg, readFileSync(configFile('reload2.yaml', [aescbc(['key2', KEY2]), box, 'identity: {}'])));
    await until(async () => (await scrape(s, 'apiserver_encryption_config_controller_automatic_reloads_total')).some((x) => x.labels.status === 'success' && x.value >= 1), 20_000);
    // the shard workers reload after the main thread: a Secret written now is under the new key
    await until(async () => {
      await createSecret(s, `two-${randomBytes(3).toString('hex')}`, plain);
      return filesHolding(s.dataDir, 'k8s:enc:aescbc:v1:key2:').length > 0;
    }, 10_000);
    expect(await secretValue(s, 'one')).toBe(plain);
    expect(filesHolding(s.dataDir, plain)).toEqual([]);
    await s.stop();
    await s.restart();
    expect(await secretValue(s, 'one')).toBe(plain);
  }, 120_000);

  it('kms v2 with a local plugin: encrypted, read back after a restart, health check fails while the plugin is down', async () => {
    plugin = await startKmsPlugin(join(work, 'kms.sock'));
    const plain = `kms-${randomBytes(8).toString('hex')}`;
    const cfg = configFile('kms.yaml', [`kms: {apiVersion: v2, name: testkms, endpoint: "${plugin.endpoint}", timeout: 3s}`, 'identity: {}']);
    // (fault injection: the shard worker that takes a write of default/crash ends after its log append, unanswered)
    const s = await start(['--encryption-provider-config', cfg], { KUBESHARD_FAULT_SHARD_EXIT_AFTER_LOG_KEY: 'default/crash' });
    await createSecret(s, 'k', plain);
    // the restarted worker has a data key of its own; the record its predecessor logged is
    // read back from the B-tree and decrypted (the main thread asks the plugin for that key)
    const crashed = await request(s, 'POST', '/api/v1/namespaces/default/secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'crash' }, stringData: { v: plain + '-crash' } });
    expect(crashed.status).toBe(500);
    await until(async () => (await request(s, 'GET', '/api/v1/namespaces/default/secrets/crash')).status === 200, 30_000);
    expect(await secretValue(s, 'crash')).toBe(plain + '-crash');
    expect(s.output()).toMatch(/committed change\(s\) the caches had not taken, applied from its log/);
    expect(s.output()).not.toMatch(/unable to transform/);
    await createSecret(s, 'after-crash', plain);
    expect(await secretValue(s, 'k')).toBe(plain);
    expect(filesHolding(s.dataDir, plain)).toEqual([]);
    expect(filesHolding(s.dataDir, 'k8s:enc:kms:v2:testkms:').length).toBeGreaterThan(0);
    // a restart: the main thread never saw the shard's data key, and asks the plugin for it
    await s.stop();
    await s.restart();
    expect(await secretValue(s, 'k')).toBe(plain);
    expect(await secretValue(s, 'crash')).toBe(plain + '-crash');
    expect(await secretValue(s, 'after-crash')).toBe(plain);
    expect((await request(s, 'GET', '/readyz/kms-providers')).status).toBe(200);
    plugin.failing = 'plugin down';
    await until(async () => (await request(s, 'GET', '/readyz/kms-providers')).status === 500, 40_000);
    expect((await request(s, 'GET', '/livez')).status).toBe(500);
    plugin.failing = null;
    await until(async () => (await request(s, 'GET', '/readyz')).status === 200, 40_000);
  }, 120_000);
});
