import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EncryptionTransformers } from './encryption-transformers.js';
import type { FromStorage } from './transformer.js';

const KEY = '/registry/secrets/default/db';
const PLAIN = Buffer.from('k8s\0 value');
const K1 = randomBytes(32).toString('base64');
const K2 = randomBytes(32).toString('base64');
const config = (...keys: Array<[string, string]>) =>
  `apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n${keys.map(([n, s]) => `      - {name: ${n}, secret: "${s}"}`).join('\n')}\n`;

let closers: Array<() => void> = [];
afterEach(() => {
  closers.forEach((c) => c());
  closers = [];
});

async function until(cond: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('condition not met');
}

describe('--encryption-provider-config-automatic-reload', () => {
  it('picks up a changed file (new first key writes, the old key still reads), and keeps the configuration when a new file is bad', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'enc-')), 'enc.yaml');
    writeFileSync(path, config(['k1', K1]));
    const errors: Error[] = [];
    const enc = await EncryptionTransformers.start({ configFile: path, automaticReload: true, reloadIntervalMs: 20, apiServerId: 'kube-apiserver-test', onReloadError: (e) => errors.push(e) });
    closers.push(() => enc.close());
    const prefix = () => enc.transformerFor('secrets').toStorage(PLAIN, KEY).subarray(0, 21).toString();
    expect(prefix()).toBe('k8s:enc:aescbc:v1:k1:');
    const old = enc.transformerFor('secrets').toStorage(PLAIN, KEY);

    writeFileSync(path, config(['k2', K2], ['k1', K1]));
    await until(() => prefix() === 'k8s:enc:aescbc:v1:k2:');
    expect(enc.transformerFor('secrets').fromStorage(old, KEY) as FromStorage).toEqual({ data: PLAIN, stale: true });
    const text = await enc.metrics.text();
    const id = 'sha256:' + (await import('node:crypto')).createHash('sha256').update('kube-apiserver-test').digest('hex');
    expect(text).toContain(`apiserver_encryption_config_controller_automatic_reloads_total{status="success",apiserver_id_hash="${id}"} 1`);
    expect(text).toMatch(new RegExp(`apiserver_encryption_config_controller_automatic_reload_last_timestamp_seconds\\{status="success",apiserver_id_hash="${id}"\\} \\d+`));

    writeFileSync(path, config(['k3', randomBytes(7).toString('base64')]));
    await until(async () => (await enc.metrics.text()).includes('automatic_reloads_total{status="failure"'));
    expect(prefix()).toBe('k8s:enc:aescbc:v1:k2:');
    expect(errors[0].message).toContain(`error processing encryption config file ${path}: error while parsing file: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 7, expected one of [16 24 32]`);
  });

  it('shows the reload counters kube deprecated in 1.30 only with the 1.32 hidden metrics', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'enc-')), 'enc.yaml');
    writeFileSync(path, config(['k1', K1]));
    const shown = await EncryptionTransformers.start({ configFile: path, automaticReload: true, reloadIntervalMs: 20, showHiddenMetrics: true });
    const hidden = await EncryptionTransformers.start({ configFile: path, automaticReload: true, reloadIntervalMs: 20 });
    closers.push(() => shown.close(), () => hidden.close());
    writeFileSync(path, config(['k2', K2]));
    await until(async () => (await shown.metrics.text()).includes('apiserver_encryption_config_controller_automatic_reload_success_total{apiserver_id_hash=""} 1'));
    await until(async () => (await hidden.metrics.text()).includes('automatic_reloads_total{status="success"'));
    expect(await hidden.metrics.text()).not.toContain('automatic_reload_success_total');
  });
});

describe('ForwardedMetrics', () => {
  it("keeps another thread's measurements until the serving thread counts them", async () => {
    const { ForwardedMetrics, EncryptionMetrics } = await import('./metrics.js');
    const fwd = new ForwardedMetrics();
    fwd.transformation('secrets', 'to_storage', 'k8s:enc:aescbc:v1:', performance.now(), null);
    fwd.cacheMiss();
    const main = new EncryptionMetrics();
    main.add(fwd.take()!);
    expect(fwd.take()).toBeNull();
    const text = await main.text();
    expect(text).toMatch(/apiserver_storage_transformation_operations_total\{resource="secrets",transformation_type="to_storage",transformer_prefix="k8s:enc:aescbc:v1:",status="OK"\} 1/);
    expect(text).toMatch(/apiserver_storage_envelope_transformation_cache_misses_total 1/);
  });
});
