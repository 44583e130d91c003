// Encryption at rest against the real kube-apiserver (../shared/reference, 1.24, on its
// own etcd): for each of aescbc, aesgcm and secretbox, a Secret kube-apiserver encrypted
// is decrypted by our transformer, and a value our transformer encrypted (under the same
// etcd key, with a changed data value) is read back by kube-apiserver through kubectl.
// KMS v2 is left out: 1.24's kms v2 wire form is not 1.33's.
//
// Skips, saying why, where the reference or etcd is absent. Uses its own ports (etcd
// 24790/24800, kube-apiserver 17443) and work dir (/tmp/ref-enc).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EncryptionTransformers } from '../src/storage/encryption/index.js';
import { kubectlPath } from './helpers/kubectl.js';

const REF = '/work/shared/reference';
const WORK = '/tmp/ref-enc';
const ENV = { ...process.env, ETCD_PORT: '24790', ETCD_PEER_PORT: '24800', APISERVER_PORT: '17443' };
const ETCD = 'http://127.0.0.1:24790';

function missing(): string | null {
  if (!existsSync(join(REF, 'start.sh'))) return `no reference kube-apiserver at ${REF}`;
  try {
    execFileSync('sh', ['-c', 'command -v etcd'], { stdio: 'ignore' });
  } catch {
    return 'no etcd on PATH';
  }
  return null;
}
const why = missing();
if (why) console.warn(`encryption-interop: skipped: ${why}`);

const KEYS = { aescbc: randomBytes(32).toString('base64'), aesgcm: randomBytes(32).toString('base64'), secretbox: randomBytes(32).toString('base64') };
type Provider = keyof typeof KEYS;

/** The configuration with `first` writing, the other two (and identity) reading. */
function config(first: Provider): string {
  const order: Provider[] = [first, ...(['aescbc', 'aesgcm', 'secretbox'] as Provider[]).filter((p) => p !== first)];
  return `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
${order.map((p) => `  - ${p}: {keys: [{name: key-${p}, secret: "${KEYS[p]}"}]}`).join('\n')}
  - identity: {}
`;
}

/** etcd's JSON gateway (no etcdctl here); a fresh connection each time, as etcd restarts between cases */
function etcd(path: string, body: object): Promise<any> {
  return new Promise((resolve, reject) => {
    const req = request(`${ETCD}/v3/kv/${path}`, { method: 'POST', agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        if (res.statusCode !== 200) reject(new Error(`etcd ${path}: ${res.statusCode} ${text}`));
        else resolve(JSON.parse(text));
      });
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

let fresh = true;
function restartReference(first: Provider): void {
  mkdirSync(WORK, { recursive: true, mode: 0o700 });
  writeFileSync(join(WORK, 'enc.yaml'), config(first), { mode: 0o600 });
  execFileSync(join(REF, 'stop.sh'), [WORK], { env: ENV, stdio: 'ignore' });
  // this run's keys are new: Secrets an earlier run left in etcd would stop kube-apiserver's cache from listing
  if (fresh) rmSync(join(WORK, 'etcd'), { recursive: true, force: true });
  fresh = false;
  execFileSync(join(REF, 'start.sh'), [WORK, '--', `--encryption-provider-config=${join(WORK, 'enc.yaml')}`], { env: ENV, stdio: 'pipe', timeout: 180_000 });
}

function kubectl(...args: string[]): string {
  return execFileSync(kubectlPath(), ['--kubeconfig', join(WORK, 'kubeconfig'), ...args], { encoding: 'utf8', timeout: 60_000 });
}

describe.skipIf(why !== null)('encryption at rest, interoperable with kube-apiserver on etcd', () => {
  afterAll(() => {
    if (!why) execFileSync(join(REF, 'stop.sh'), [WORK], { env: ENV, stdio: 'ignore' });
  });

  it.each(['aescbc', 'aesgcm', 'secretbox'] as Provider[])(
    '%s: kube-apiserver\'s Secret decrypts here, and ours decrypts there',
    async (first) => {
      restartReference(first);
      const name = `enc-${first}-${Date.now().toString(36)}`;
      const key = `/registry/secrets/default/${name}`;
      kubectl('create', 'secret', 'generic', name, '--from-literal=password=value-1');

      const range = await etcd('range', { key: b64(key) });
      const stored = Buffer.from(range.kvs[0].value, 'base64');
      expect(stored.subarray(0, `k8s:enc:${first}:v1:key-${first}:`.length).toString()).toBe(`k8s:enc:${first}:v1:key-${first}:`);

      const file = join(WORK, `ours-${first}.yaml`);
      writeFileSync(file, config(first), { mode: 0o600 });
      const enc = await EncryptionTransformers.start({ configFile: file, automaticReload: false });
      try {
        const t = enc.transformerFor('secrets');
        const { data, stale } = await t.fromStorage(stored, key);
        expect(stale).toBe(false);
        expect(data.subarray(0, 4).equals(Buffer.from('k8s\0'))).toBe(true);
        const at = data.indexOf('value-1');
        expect(at).toBeGreaterThan(0);

        // our encryption of kube's plaintext, with the value changed (same length), under the same key
        const changed = Buffer.from(data);
        changed.write('value-2', at);
        const ours = t.toStorage(changed, key);
        expect(ours.equals(stored)).toBe(false);
        await etcd('put', { key: b64(key), value: b64(ours) });
        const got = kubectl('get', 'secret', name, '-o', 'jsonpath={.data.password}');
        expect(Buffer.from(got, 'base64').toString()).toBe('value-2');

        // and a value written by a configuration whose first provider is another one: kube reads it too
        const other: Provider = first === 'aescbc' ? 'secretbox' : 'aescbc';
        const otherFile = join(WORK, `ours-${other}.yaml`);
        writeFileSync(otherFile, config(other), { mode: 0o600 });
        const enc2 = await EncryptionTransformers.start({ configFile: otherFile, automaticReload: false });
        changed.write('value-3', at);
        await etcd('put', { key: b64(key), value: b64(enc2.transformerFor('secrets').toStorage(changed, key)) });
        enc2.close();
        expect(Buffer.from(kubectl('get', 'secret', name, '-o', 'jsonpath={.data.password}'), 'base64').toString()).toBe('value-3');
      } finally {
        enc.close();
      }
    },
    240_000,
  );
});
