import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startKmsPlugin, type KmsPlugin } from '../../../test/kms-plugin.js';
import { EncryptionTransformers } from './encryption-transformers.js';
import { decodeEncryptedObject, HKDF_SHA256_XNONCE_AES_GCM_SEED, KMS_TIMINGS, type KmsTimings } from './kmsv2.js';
import type { FromStorage } from './transformer.js';

const KEY = '/registry/secrets/default/db';
const PLAIN = Buffer.from('k8s\0 a secret value');
const PREFIX = 'k8s:enc:kms:v2:vault:';

let cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function setup(timings: Partial<KmsTimings> = {}, extraProviders = '') {
  const dir = mkdtempSync(join(tmpdir(), 'kms-'));
  const plugin = await startKmsPlugin(join(dir, 'kms.sock'));
  cleanup.push(() => plugin.close());
  const path = join(dir, 'enc.yaml');
  writeFileSync(
    path,
    `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - kms: {apiVersion: v2, name: vault, endpoint: "${plugin.endpoint}", timeout: 2s}
${extraProviders}`,
  );
  const clock = { now: Date.now() };
  const enc = await EncryptionTransformers.start({ configFile: path, automaticReload: false, kmsTimings: { ...KMS_TIMINGS, now: () => clock.now, ...timings } });
  cleanup.push(() => enc.close());
  return { plugin, enc, clock, t: enc.transformerFor('secrets') };
}

async function read(r: FromStorage | Promise<FromStorage>): Promise<FromStorage> {
  return r;
}

describe('KMS v2 over gRPC on a unix socket', () => {
  it('stores kube\'s EncryptedObject under k8s:enc:kms:v2:<name>:, with a seed encrypted once', async () => {
    const { plugin, t } = await setup();
    expect(plugin.calls).toMatchObject({ status: 1, encrypt: 1 });
    const a = t.toStorage(PLAIN, KEY);
    const b = t.toStorage(PLAIN, KEY);
    expect(plugin.calls.encrypt).toBe(1); // writes use the local seed: no call per write
    expect(a.subarray(0, PREFIX.length).toString()).toBe(PREFIX);
    const o = decodeEncryptedObject(a.subarray(PREFIX.length));
    expect(o.keyId).toBe('key-1');
    expect(o.encryptedDEKSourceType).toBe(HKDF_SHA256_XNONCE_AES_GCM_SEED);
    expect(o.encryptedData.length).toBe(32 + 12 + PLAIN.length + 16);
    expect(decodeEncryptedObject(b.subarray(PREFIX.length)).encryptedDEKSource.equals(o.encryptedDEKSource)).toBe(true);
    // this server's own writes are read from the cache, synchronously
    const r = t.fromStorage(a, KEY);
    expect(r).not.toBeInstanceOf(Promise);
    expect(r).toEqual({ data: PLAIN, stale: false });
    expect(plugin.calls.decrypt).toBe(0);
  });

  it('another server\'s data: one Decrypt (a cache miss, counted), then cached', async () => {
    const first = await setup();
    const stored = first.t.toStorage(PLAIN, KEY);
    // a second "server" with an empty cache, on the same plugin
    const dir = mkdtempSync(join(tmpdir(), 'kms-'));
    const path = join(dir, 'enc.yaml');
    writeFileSync(path, `apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - kms: {apiVersion: v2, name: vault, endpoint: "${first.plugin.endpoint}"}\n`);
    const other = await EncryptionTransformers.start({ configFile: path, automaticReload: false });
    cleanup.push(() => other.close());
    const t = other.transformerFor('secrets');
    const r = t.fromStorage(stored, KEY);
    expect(r).toBeInstanceOf(Promise);
    expect(await r).toEqual({ data: PLAIN, stale: false });
    expect(first.plugin.calls.decrypt).toBe(1);
    expect(await read(t.fromStorage(stored, KEY))).toEqual({ data: PLAIN, stale: false });
    expect(first.plugin.calls.decrypt).toBe(1);
    expect(await other.metrics.text()).toContain('apiserver_storage_envelope_transformation_cache_misses_total 1');
  });

  it('refuses data tampered with, or moved under another key', async () => {
    const { t } = await setup();
    const stored = t.toStorage(PLAIN, KEY);
    // (the data key is cached: the refusal is synchronous)
    expect(() => t.fromStorage(stored, '/registry/secrets/default/other')).toThrow('cipher: message authentication failed');
    const bad = Buffer.from(stored);
    bad[PREFIX.length + 40] ^= 1; // inside encryptedData (field 1 comes first)
    expect(() => t.fromStorage(bad, KEY)).toThrow('cipher: message authentication failed');
    // the source type changed to AES_GCM_KEY: the plugin is asked, and the seed does not open the data as a key
    const retyped = Buffer.from(stored);
    retyped[retyped.length - 1] = 0;
    await expect(read(t.fromStorage(retyped, KEY))).rejects.toThrow('cipher: message authentication failed');
  });

  it('a key id change at the plugin rotates the seed at the next Status; old data stays readable and is stale', async () => {
    const { plugin, t, clock, enc } = await setup({ healthyTtlMs: 0 });
    const old = t.toStorage(PLAIN, KEY);
    plugin.keyId = 'key-2';
    clock.now += 61_000;
    await enc.healthChecks()[0].check();
    expect(plugin.calls.encrypt).toBe(2);
    const fresh = t.toStorage(PLAIN, KEY);
    expect(decodeEncryptedObject(fresh.subarray(PREFIX.length)).keyId).toBe('key-2');
    expect(await read(t.fromStorage(old, KEY))).toEqual({ data: PLAIN, stale: true });
    expect(await read(t.fromStorage(fresh, KEY))).toEqual({ data: PLAIN, stale: false });
  });

  it('a failing plugin: reads of cached keys go on; writes go on for the write TTL, then fail', async () => {
    const { plugin, t, clock, enc } = await setup({ healthyTtlMs: 0, unhealthyTtlMs: 0 });
    const stored = t.toStorage(PLAIN, KEY);
    plugin.failing = 'plugin down';
    clock.now += 1000;
    await expect(enc.healthChecks()[0].check()).rejects.toThrow(
      'kms-provider-0: failed to perform status section of the healthz check for KMS Provider vault, error: rpc error: code = Unavailable desc = plugin down',
    );
    expect(t.toStorage(PLAIN, KEY).length).toBeGreaterThan(0);
    expect(await read(t.fromStorage(stored, KEY))).toEqual({ data: PLAIN, stale: false });
    clock.now += 181_000;
    expect(() => t.toStorage(PLAIN, KEY)).toThrow(/^encryptedDEKSource with keyID hash "sha256:[0-9a-f]{64}" expired at /);
    expect(await enc.metrics.text()).toContain('apiserver_storage_transformation_operations_total{resource="secrets",transformation_type="to_storage",transformer_prefix="k8s:enc:kms:v2:vault:",status="unknown-non-grpc"} 1');
  });

  it('an unhealthy Status (wrong version, bad healthz) is reported in kube\'s words', async () => {
    const { plugin, clock, enc } = await setup({ healthyTtlMs: 0, unhealthyTtlMs: 0 });
    plugin.healthz = 'sick';
    clock.now += 1000;
    await expect(enc.healthChecks()[0].check()).rejects.toThrow('kms-provider-0: kmsv2 Provider vault is not healthy, error: got unexpected healthz status: sick');
  });

  it('a plugin not up at start: reads and writes fail until a Status succeeds', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kms-'));
    const sock = join(dir, 'kms.sock');
    const path = join(dir, 'enc.yaml');
    writeFileSync(path, `apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - kms: {apiVersion: v2, name: vault, endpoint: "unix://${sock}", timeout: 1s}\n`);
    const enc = await EncryptionTransformers.start({ configFile: path, automaticReload: false, kmsTimings: { ...KMS_TIMINGS, negativeIntervalMs: 50, unhealthyTtlMs: 0 } });
    cleanup.push(() => enc.close());
    const t = enc.transformerFor('secrets');
    expect(() => t.toStorage(PLAIN, KEY)).toThrow('got unexpected nil transformer');
    const plugin: KmsPlugin = await startKmsPlugin(sock);
    cleanup.push(() => plugin.close());
    for (let i = 0; i < 100 && plugin.calls.encrypt === 0; i++) await new Promise((r) => setTimeout(r, 50));
    for (let i = 0; i < 100; i++) {
      try {
        t.toStorage(PLAIN, KEY);
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    expect(await read(t.fromStorage(t.toStorage(PLAIN, KEY), KEY))).toEqual({ data: PLAIN, stale: false });
  });
});
