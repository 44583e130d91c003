// Encryption at rest on the etcd3 backend, against a real etcd: the values of configured
// resources are stored encrypted under kube's prefixes and read back through every path (the
// feed, another replica's start-up listing, getAt, rangeAt, eventsSince with previous
// values); kube's stale flag after a rotation; KMS v2 values written by one replica are read
// by another, which must ask the plugin for the data key (the feed waits for it, in order).
// Skips with a message when etcd is missing.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EncryptionTransformers } from '../encryption/index.js';
import { startKmsPlugin, type KmsPlugin } from '../../../test/kms-plugin.js';
import type { ChangeSink, ChangeType } from '../interface.js';
import { EtcdClient } from './client.js';
import { EtcdStorage } from './etcd-storage.js';
import { etcdAvailable, startCluster, type TestCluster } from './test-cluster.js';

const have = etcdAvailable();
if (!have) console.warn('skipping the etcd3 encryption tests: /usr/bin/etcd is missing (apt-get install etcd-server)');

const KEY1 = randomBytes(32).toString('base64');
const KEY2 = randomBytes(32).toString('base64');
/** a change's object; null for stored bytes this reader cannot decrypt (handed on as they are stored) */
const parsed = (b: Buffer): any => (b.subarray(0, 8).toString() === 'k8s:enc:' ? null : JSON.parse(b.toString()));

describe.skipIf(!have)('etcd3 storage: encryption at rest', () => {
  let cluster: TestCluster;
  let work: string;
  let plugin: KmsPlugin;
  let n = 0;
  const closers: Array<() => unknown> = [];

  beforeAll(async () => {
    cluster = await startCluster(1);
    work = mkdtempSync(join(tmpdir(), 'kubeshard-etcd-enc-'));
    plugin = await startKmsPlugin(join(work, 'kms.sock'));
  }, 60_000);
  afterAll(async () => {
    for (const c of closers.reverse()) await c();
    await plugin?.close();
    await cluster?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  const config = (providers: string[]) => {
    const path = join(work, `enc-${n++}.yaml`);
    writeFileSync(path, `apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n${providers.map((p) => `  - ${p}`).join('\n')}\n`);
    return path;
  };
  const aescbc = (...keys: Array<[string, string]>) => `aescbc: {keys: [${keys.map(([k, s]) => `{name: ${k}, secret: "${s}"}`).join(', ')}]}`;

  /** A started backend over prefix with the configuration, and the changes its feed delivered. */
  async function backend(prefix: string, configFile: string) {
    const enc = await EncryptionTransformers.start({ configFile, automaticReload: false });
    const storage = new EtcdStorage({ endpoints: cluster.endpoints, prefix, compactionIntervalMs: 0, callTimeoutMs: 5000 });
    storage.useEncryption(enc);
    const changes: Array<{ type: ChangeType; gr: string; key: string; rv: number; json: any }> = [];
    // (the state at start comes through load(): recorded as ADDED, as the feed's first view of it)
    const sink: ChangeSink = {
      change: (type, gr, key, rv, bytes) => changes.push({ type, gr, key, rv, json: parsed(bytes) }),
      end: () => {},
      load: (gr, key, rv, bytes) => changes.push({ type: 'ADDED', gr, key, rv, json: parsed(bytes) }),
    };
    storage.subscribe(sink);
    await storage.start();
    closers.push(() => storage.close(), () => enc.close());
    return { storage, changes, enc };
  }
  const secret = (name: string, value: string) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'default', uid: `uid-${name}`, creationTimestamp: '2026-01-01T00:00:00Z' }, type: 'Opaque', data: { v: Buffer.from(value).toString('base64') } });
  const valueOf = (json: any) => Buffer.from(json.data.v, 'base64').toString();

  async function raw(key: string): Promise<Buffer> {
    const c = new EtcdClient({ endpoints: cluster.endpoints });
    try {
      return (await c.get(key)).kv!.value;
    } finally {
      c.close();
    }
  }

  it('aescbc: stored encrypted under the etcd key, read back by the feed, another replica, getAt, rangeAt and eventsSince; stale after a rotation', async () => {
    const prefix = `/enc-${process.pid}-a`;
    const cfg1 = config([aescbc(['key1', KEY1]), 'identity: {}']);
    const a = await backend(prefix, cfg1);
    const plain = `pw-${randomBytes(6).toString('hex')}`;
    const c1 = await a.storage.write({ type: 'ADDED', gr: 'secrets', key: 'default/db', expect: -1, obj: secret('db', plain) });
    const c2 = await a.storage.write({ type: 'MODIFIED', gr: 'secrets', key: 'default/db', expect: c1.rv, obj: secret('db', plain + '-2') });
    await a.storage.write({ type: 'ADDED', gr: 'configmaps', key: 'default/cm', expect: -1, obj: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'default', uid: 'u' }, data: { v: plain } } });
    const stored = await raw(`${prefix}/secrets/default/db`);
    expect(stored.subarray(0, 23).toString()).toBe('k8s:enc:aescbc:v1:key1:');
    expect(stored.includes(plain)).toBe(false);
    expect((await raw(`${prefix}/configmaps/default/cm`)).includes(plain)).toBe(true);
    // (a writer's own changes come with its object: the feed's plaintext is checked on a second replica)
    const b = await backend(prefix, cfg1);
    expect(valueOf(b.changes.find((c) => c.key === 'default/db')!.json)).toBe(plain + '-2');
    await a.storage.write({ type: 'MODIFIED', gr: 'secrets', key: 'default/db', expect: c2.rv, obj: secret('db', plain + '-3') });
    await expect.poll(() => b.changes.filter((c) => c.key === 'default/db').map((c) => valueOf(c.json))).toContain(plain + '-3');
    expect(valueOf(JSON.parse((await b.storage.getAt('secrets', 'default/db', c1.rv))!.json.toString()))).toBe(plain);
    expect([...(await b.storage.rangeAt('secrets', c2.rv, 'default', ''))].map((o) => valueOf(JSON.parse(o.json.toString())))).toEqual([plain + '-2']);
    const events = await b.storage.eventsSince('secrets', c1.rv - 1, c2.rv, true);
    expect(events.map((e) => [e.type, valueOf(JSON.parse(e.json.toString())), e.prevJson && valueOf(JSON.parse(e.prevJson.toString()))])).toEqual([
      ['ADDED', plain, undefined],
      ['MODIFIED', plain + '-2', plain],
    ]);
    const cur = b.changes.filter((c) => c.key === 'default/db').at(-1)!.rv;
    expect(await b.storage.storedStale('secrets', 'default/db', cur)).toBe(false);
    // a new first key: what key1 wrote is stale (an update that changes nothing writes it again), and still reads
    const c = await backend(prefix, config([aescbc(['key2', KEY2], ['key1', KEY1]), 'identity: {}']));
    expect(valueOf(c.changes.find((x) => x.key === 'default/db')!.json)).toBe(plain + '-3');
    expect(await c.storage.storedStale('secrets', 'default/db', cur)).toBe(true);
    await c.storage.write({ type: 'MODIFIED', gr: 'secrets', key: 'default/db', expect: cur, obj: secret('db', plain + '-3') });
    expect((await raw(`${prefix}/secrets/default/db`)).subarray(0, 23).toString()).toBe('k8s:enc:aescbc:v1:key2:');
    // an unconfigured reader cannot read it (the codec refuses encrypted values): it hands on
    // the stored bytes, which the cache layer keeps aside as a corrupt object
    const plainReader = new EtcdStorage({ endpoints: cluster.endpoints, prefix, compactionIntervalMs: 0 });
    const seen: string[] = [];
    plainReader.subscribe({ change: (_t, _gr, key) => seen.push(key), end: () => {}, load: (_gr, key, _rv, bytes) => seen.push(`${key} ${bytes.subarray(0, 15)}`) });
    await plainReader.start();
    closers.push(() => plainReader.close());
    expect(seen).toEqual(['default/cm {"kind":"Config', 'default/db k8s:enc:aescbc:']);
  }, 60_000);

  it('kms v2: a value one replica wrote is read by another, which asks the plugin for its data key; the feed keeps its order meanwhile', async () => {
    const prefix = `/enc-${process.pid}-k`;
    const cfg = config([`kms: {apiVersion: v2, name: testkms, endpoint: "${plugin.endpoint}", timeout: 3s}`, 'identity: {}']);
    const a = await backend(prefix, cfg);
    const b = await backend(prefix, cfg);
    const decrypts = plugin.calls.decrypt;
    await a.storage.write({ type: 'ADDED', gr: 'secrets', key: 'default/k1', expect: -1, obj: secret('k1', 'one') });
    await a.storage.write({ type: 'ADDED', gr: 'configmaps', key: 'default/after', expect: -1, obj: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'after', namespace: 'default', uid: 'u2' } } });
    await a.storage.write({ type: 'ADDED', gr: 'secrets', key: 'default/k2', expect: -1, obj: secret('k2', 'two') });
    expect((await raw(`${prefix}/secrets/default/k1`)).subarray(0, 23).toString()).toBe('k8s:enc:kms:v2:testkms:');
    await expect.poll(() => b.changes.length).toBe(3);
    expect(b.changes.map((c) => c.key)).toEqual(['default/k1', 'default/after', 'default/k2']);
    expect(valueOf(b.changes[0].json)).toBe('one');
    expect(valueOf(b.changes[2].json)).toBe('two');
    // one data key, asked for once
    expect(plugin.calls.decrypt - decrypts).toBe(1);
  }, 60_000);
});
