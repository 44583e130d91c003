import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AesCbcTransformer, AesGcmTransformer, HkdfGcmTransformer } from './aes.js';
import { EncryptionTransformers } from './encryption-transformers.js';
import { EncryptionMetrics } from './metrics.js';
import { SecretboxTransformer } from './secretbox-transformer.js';
import { IDENTITY, PrefixTransformers, type FromStorage, type ValueTransformer } from './transformer.js';

const KEY = '/registry/secrets/default/db';
const PLAIN = Buffer.concat([Buffer.from('k8s\0'), randomBytes(300)]);
const b64 = (n: number) => randomBytes(n).toString('base64');
const sync = (r: FromStorage | Promise<FromStorage>): FromStorage => {
  if (r instanceof Promise) throw new Error('expected a synchronous read');
  return r;
};

function configFile(body: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'enc-'));
  const path = join(dir, 'enc.yaml');
  writeFileSync(path, body);
  return path;
}

const provider = (type: string, ...keys: Array<[string, string]>) => `  - ${type}:\n      keys:\n${keys.map(([n, s]) => `      - name: ${n}\n        secret: ${s}`).join('\n')}`;
const yaml = (resources: string[], ...providers: string[]) => `apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [${resources.join(', ')}]\n  providers:\n${providers.join('\n')}\n`;

async function load(body: string): Promise<EncryptionTransformers> {
  return EncryptionTransformers.start({ configFile: configFile(body), automaticReload: false });
}

describe.each([
  ['aescbc', [16, 24, 32], (k: Buffer) => new AesCbcTransformer(k)],
  ['aesgcm', [16, 24, 32], (k: Buffer) => new AesGcmTransformer(k)],
  ['secretbox', [32], (k: Buffer) => new SecretboxTransformer(k)],
  ['kms v2 seed (HKDF + AES-GCM)', [32], (k: Buffer) => new HkdfGcmTransformer(k)],
] as Array<[string, number[], (k: Buffer) => ValueTransformer]>)('%s', (_name, sizes, make) => {
  it.each(sizes)('round-trips with a %i-byte key, every length up to 70', (size) => {
    const t = make(randomBytes(size));
    for (let n = 0; n <= 70; n++) {
      const data = randomBytes(n);
      const stored = t.toStorage(data, KEY);
      expect(stored.equals(data)).toBe(n === 0 ? stored.length === 0 : false);
      expect(sync(t.fromStorage(stored, KEY)).data.equals(data)).toBe(true);
    }
  });
  it('refuses a wrong key', () => {
    const stored = make(randomBytes(32)).toStorage(PLAIN, KEY);
    // CBC has no authentication: a wrong key fails on the padding almost always
    expect(() => make(randomBytes(32)).fromStorage(stored, KEY)).toThrow();
  });
  it('refuses tampered data', () => {
    const t = make(randomBytes(32));
    const stored = t.toStorage(PLAIN, KEY);
    const bad = Buffer.from(stored);
    bad[bad.length - 1] ^= 0x55;
    expect(() => t.fromStorage(bad, KEY)).toThrow();
    expect(() => t.fromStorage(stored.subarray(0, 10), KEY)).toThrow('the stored data was shorter than the required size');
  });
});

describe('authenticated storage key', () => {
  it('aesgcm and the kms seed mode refuse a value moved under another key; aescbc and secretbox do not bind it (as kube)', () => {
    const k = randomBytes(32);
    for (const t of [new AesGcmTransformer(k), new HkdfGcmTransformer(k)]) expect(() => t.fromStorage(t.toStorage(PLAIN, KEY), '/registry/secrets/default/other')).toThrow('cipher: message authentication failed');
    for (const t of [new AesCbcTransformer(k), new SecretboxTransformer(k)]) expect(sync(t.fromStorage(t.toStorage(PLAIN, KEY), '/registry/secrets/x/y')).data.equals(PLAIN)).toBe(true);
  });
  it('kube\'s messages for a secretbox or CBC value that does not open', () => {
    const k = randomBytes(32);
    const box = new SecretboxTransformer(k).toStorage(PLAIN, KEY);
    box[30] ^= 1;
    expect(() => new SecretboxTransformer(k).fromStorage(box, KEY)).toThrow('output array was not large enough for encryption');
    expect(() => new AesCbcTransformer(k).fromStorage(randomBytes(16 + 15), KEY)).toThrow('the stored data is not a multiple of the block size');
  });
});

describe('identity', () => {
  it('hands back the very same buffer, synchronously', () => {
    const data = Buffer.from('{"kind":"Secret"}');
    expect(IDENTITY.toStorage(data, KEY)).toBe(data);
    expect(sync(IDENTITY.fromStorage(data, KEY)).data).toBe(data);
  });
  it('refuses to read encrypted data', () => {
    expect(() => IDENTITY.fromStorage(Buffer.from('k8s:enc:aescbc:v1:k1:xxxx'), KEY)).toThrow('identity transformer tried to read encrypted data');
  });
});

describe('prefix transformers', () => {
  const metrics = new EncryptionMetrics();
  it('writes with the first, reads by prefix, and marks reads by later ones stale', () => {
    const a = new AesGcmTransformer(randomBytes(32));
    const b = new AesCbcTransformer(randomBytes(32));
    const first = new PrefixTransformers([{ prefix: Buffer.from('A:'), transformer: a }, { prefix: Buffer.from('B:'), transformer: b }], 'no matching prefix found', metrics);
    const stored = first.toStorage(PLAIN, KEY);
    expect(stored.subarray(0, 2).toString()).toBe('A:');
    expect(sync(first.fromStorage(stored, KEY))).toEqual({ data: PLAIN, stale: false });
    const second = new PrefixTransformers([{ prefix: Buffer.from('B:'), transformer: b }, { prefix: Buffer.from('A:'), transformer: a }], 'no matching prefix found', metrics);
    expect(sync(second.fromStorage(stored, KEY))).toEqual({ data: PLAIN, stale: true });
    expect(() => second.fromStorage(Buffer.from('C:xyz'), KEY)).toThrow('no matching prefix found');
  });
  it('tries a later transformer with the same prefix when the first fails (rotation within a provider type)', () => {
    const oldKey = new AesCbcTransformer(randomBytes(32));
    const newKey = new AesCbcTransformer(randomBytes(32));
    const p = Buffer.from('k8s:enc:aescbc:v1:');
    const stored = new PrefixTransformers([{ prefix: p, transformer: oldKey }], 'x', metrics).toStorage(PLAIN, KEY);
    const both = new PrefixTransformers([{ prefix: p, transformer: newKey }, { prefix: p, transformer: oldKey }], 'x', metrics);
    expect(sync(both.fromStorage(stored, KEY))).toEqual({ data: PLAIN, stale: true });
  });
});

describe('EncryptionConfiguration', () => {
  it('writes kube\'s prefixes with the first provider\'s first key, and reads every key of every provider', async () => {
    const [k1, k2, k3, k4] = [b64(32), b64(32), b64(16), b64(32)];
    const enc = await load(yaml(['secrets'], provider('aescbc', ['k1', k1], ['k2', k2]), provider('aesgcm', ['g1', k3]), provider('secretbox', ['s1', k4]), '  - identity: {}'));
    const t = enc.transformerFor('secrets');
    expect(t.identity).toBe(false);
    const stored = t.toStorage(PLAIN, KEY);
    expect(stored.subarray(0, 21).toString()).toBe('k8s:enc:aescbc:v1:k1:');
    expect(sync(t.fromStorage(stored, KEY))).toEqual({ data: PLAIN, stale: false });
    // values written under each of the other keys and providers: readable, stale
    const others = [
      await load(yaml(['secrets'], provider('aescbc', ['k2', k2]))),
      await load(yaml(['secrets'], provider('aesgcm', ['g1', k3]))),
      await load(yaml(['secrets'], provider('secretbox', ['s1', k4]))),
      await load(yaml(['secrets'], '  - identity: {}')),
    ];
    const prefixes = ['k8s:enc:aescbc:v1:k2:', 'k8s:enc:aesgcm:v1:g1:', 'k8s:enc:secretbox:v1:s1:', 'k8s\0'];
    others.forEach((o, i) => {
      const s = o.transformerFor('secrets').toStorage(PLAIN, KEY);
      expect(s.subarray(0, prefixes[i].length).toString('latin1')).toBe(prefixes[i]);
      expect(sync(t.fromStorage(s, KEY))).toEqual({ data: PLAIN, stale: true });
    });
  });

  it('an unknown key name, or a wrong key under a known name, is refused with kube\'s messages', async () => {
    const t = (await load(yaml(['secrets'], provider('aesgcm', ['a', b64(32)])))).transformerFor('secrets');
    const other = (await load(yaml(['secrets'], provider('aesgcm', ['b', b64(32)])))).transformerFor('secrets');
    expect(() => t.fromStorage(other.toStorage(PLAIN, KEY), KEY)).toThrow('no matching key was found for the provided AES transformer');
    const sameName = (await load(yaml(['secrets'], provider('aesgcm', ['a', b64(32)])))).transformerFor('secrets');
    expect(() => t.fromStorage(sameName.toStorage(PLAIN, KEY), KEY)).toThrow('cipher: message authentication failed');
  });

  it('picks resource, then *.group, then *.*, then identity; *. covers the core group', async () => {
    const body = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers: [{aescbc: {keys: [{name: a, secret: "${b64(32)}"}]}}]
- resources: ["*.apps"]
  providers: [{aesgcm: {keys: [{name: b, secret: "${b64(32)}"}]}}]
- resources: ["*."]
  providers: [{secretbox: {keys: [{name: c, secret: "${b64(32)}"}]}}]
`;
    const enc = await load(body);
    const prefixOf = (gr: string) => enc.transformerFor(gr).toStorage(PLAIN, KEY).subarray(0, 18).toString('latin1');
    expect(prefixOf('secrets')).toBe('k8s:enc:aescbc:v1:');
    expect(prefixOf('deployments.apps')).toBe('k8s:enc:aesgcm:v1:');
    expect(prefixOf('configmaps')).toBe('k8s:enc:secretbox:');
    expect(enc.transformerFor('jobs.batch')).toBe(enc.transformerFor('jobs.batch'));
    expect(enc.transformerFor('jobs.batch').identity).toBe(true);
    const all = await load(yaml(['"*.*"'], provider('aesgcm', ['x', b64(32)])));
    expect(all.transformerFor('jobs.batch').identity).toBe(false);
  });

  it('no configuration: identity for everything', async () => {
    const enc = await EncryptionTransformers.start({ configFile: '', automaticReload: false });
    const t = enc.transformerFor('secrets');
    expect(t.identity).toBe(true);
    expect(t.toStorage(PLAIN, KEY)).toBe(PLAIN);
  });

  it('counts transformations in kube\'s metrics', async () => {
    const enc = await load(yaml(['secrets'], provider('aesgcm', ['k', b64(32)])));
    const t = enc.transformerFor('secrets');
    sync(t.fromStorage(t.toStorage(PLAIN, KEY), KEY));
    expect(() => t.fromStorage(Buffer.from('garbage'), KEY)).toThrow('no matching prefix found');
    const text = await enc.metrics.text();
    expect(text).toContain('apiserver_storage_transformation_operations_total{resource="secrets",transformation_type="to_storage",transformer_prefix="k8s:enc:aesgcm:v1:",status="OK"} 1');
    expect(text).toContain('apiserver_storage_transformation_operations_total{resource="secrets",transformation_type="from_storage",transformer_prefix="k8s:enc:aesgcm:v1:",status="OK"} 1');
    expect(text).toContain('apiserver_storage_transformation_operations_total{resource="secrets",transformation_type="from_storage",transformer_prefix="unknown",status="unknown-non-grpc"} 1');
    expect(text).toContain('apiserver_storage_transformation_duration_seconds_count{transformation_type="to_storage",transformer_prefix="k8s:enc:aesgcm:v1:"} 1');
    expect(text).toContain('apiserver_storage_transformation_duration_seconds_bucket{le="0.000005",transformation_type="to_storage"');
  });
});
