// Encryption at rest shared with kube-apiserver on one etcd, at the storage level: the
// reference kube-apiserver (../shared/reference, 1.24) and kubeshard's etcd3 backend
// (EtcdStorage) are given one EncryptionConfiguration (aescbc for Secrets); a Secret
// kube-apiserver wrote is read by the backend (its start-up listing, getAt), and one the
// backend wrote is read through kube-apiserver with kubectl. (test/etcd-shared.test.ts does
// the same through whole servers once the server runs on etcd.)
//
// Skips with a message when the reference or etcd is absent.
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EncryptionTransformers } from '../src/storage/encryption/index.js';
import { EtcdClient } from '../src/storage/etcd/client.js';
import { EtcdStorage } from '../src/storage/etcd/etcd-storage.js';
import { etcdAvailable, startCluster, type TestCluster } from '../src/storage/etcd/test-cluster.js';
import { freePort } from './helpers/server.js';
import { kubectlPath } from './helpers/kubectl.js';

const REF = process.env.KUBESHARD_REFERENCE ?? join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', 'shared', 'reference');
const missing = [!existsSync(join(REF, 'start.sh')) ? `the reference kube-apiserver (${REF})` : '', !etcdAvailable() ? '/usr/bin/etcd' : ''].filter(Boolean);
if (missing.length) console.warn(`skipping the shared-etcd encryption test: ${missing.join(' and ')} missing`);

describe.skipIf(missing.length > 0)('encryption at rest shared with kube-apiserver on one etcd', () => {
  let cluster: TestCluster;
  let dir: string;
  let refDir: string;
  let config: string;
  let enc: EncryptionTransformers;
  let storage: EtcdStorage;
  const seen = new Map<string, any>();

  const ref = (args: string[], input?: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const p = execFile(kubectlPath(), ['--kubeconfig', join(refDir, 'kubeconfig'), ...args], { timeout: 30_000 }, (err, stdout, stderr) => (err ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr}`)) : resolve(stdout)));
      if (input !== undefined) p.stdin!.end(input);
    });

  beforeAll(async () => {
    cluster = await startCluster(1);
    dir = mkdtempSync(join(tmpdir(), 'kubeshard-enc-shared-'));
    config = join(dir, 'encryption.yaml');
    writeFileSync(config, `apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc: {keys: [{name: shared, secret: "${randomBytes(32).toString('base64')}"}]}\n  - identity: {}\n`);
    refDir = join(dir, 'ref');
    mkdirSync(join(refDir, 'run'), { recursive: true });
    // start.sh starts no etcd of its own when its pid file names a live one
    writeFileSync(join(refDir, 'run', 'etcd.pid'), String(cluster.members[0].proc!.pid));
    execFileSync(join(REF, 'start.sh'), [refDir, '--', `--encryption-provider-config=${config}`], {
      env: { ...process.env, ETCD_PORT: new URL(cluster.endpoints[0]).port, ETCD_PEER_PORT: String(await freePort()), APISERVER_PORT: String(await freePort()) },
      stdio: 'ignore',
      timeout: 180_000,
    });
    await ref(['apply', '-f', '-'], 'apiVersion: v1\nkind: Secret\nmetadata: {name: from-kube, namespace: default}\ntype: Opaque\nstringData: {password: pw-kube}\n');
    enc = await EncryptionTransformers.start({ configFile: config, automaticReload: false });
    storage = new EtcdStorage({ endpoints: cluster.endpoints, compactionIntervalMs: 0, callTimeoutMs: 5000 });
    storage.useEncryption(enc);
    // (the state at start comes through load(), the changes after it through change())
    const keep = (gr: string, key: string, bytes: Buffer) => gr === 'secrets' && seen.set(key, JSON.parse(bytes.toString()));
    storage.subscribe({ change: (_t, gr, key, _rv, bytes) => keep(gr, key, bytes), end: () => {}, load: (gr, key, _rv, bytes) => keep(gr, key, bytes) });
    await storage.start();
  }, 300_000);

  afterAll(async () => {
    await storage?.close();
    enc?.close();
    if (refDir) {
      rmSync(join(refDir, 'run', 'etcd.pid'), { force: true });
      execFileSync(join(REF, 'stop.sh'), [refDir], { stdio: 'ignore', timeout: 60_000 });
    }
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("each reads the other's encrypted Secrets", async () => {
    const client = new EtcdClient({ endpoints: cluster.endpoints });
    try {
      const kube = (await client.get('/registry/secrets/default/from-kube')).kv!;
      expect(kube.value.subarray(0, 25).toString()).toBe('k8s:enc:aescbc:v1:shared:');
      // kube-apiserver's Secret, through the start-up listing and a read at its revision
      expect(Buffer.from(seen.get('default/from-kube').data.password, 'base64').toString()).toBe('pw-kube');
      const got = await storage.getAt('secrets', 'default/from-kube', kube.modRevision);
      expect(Buffer.from(JSON.parse(got!.json.toString()).data.password, 'base64').toString()).toBe('pw-kube');
      // the backend's Secret, through kube-apiserver
      const obj = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'from-kubeshard', namespace: 'default', uid: '7b0c3a55-0000-4000-8000-000000000001', creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }, type: 'Opaque', data: { password: Buffer.from('pw-kubeshard').toString('base64') } };
      await storage.write({ type: 'ADDED', gr: 'secrets', key: 'default/from-kubeshard', expect: -1, obj });
      const mine = (await client.get('/registry/secrets/default/from-kubeshard')).kv!;
      expect(mine.value.subarray(0, 25).toString()).toBe('k8s:enc:aescbc:v1:shared:');
      expect(mine.value.includes('pw-kubeshard')).toBe(false);
      const s = JSON.parse(await ref(['get', 'secret', 'from-kubeshard', '-o', 'json']));
      expect(Buffer.from(s.data.password, 'base64').toString()).toBe('pw-kubeshard');
    } finally {
      client.close();
    }
  }, 60_000);
});
