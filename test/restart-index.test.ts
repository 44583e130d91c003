// Restart from the persisted cache index (workers/shard/cache-index.ts): a clean shutdown
// writes it, the next start loads the caches from it; after a kill -9 that followed more
// writes it is stale and must be ignored (the store is loaded instead), and so must a
// damaged one. In every case the objects are readable, listable in key order per namespace
// and cluster-wide, and watchable from the list's version.
import { describe, it, expect } from 'vitest';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { onEtcd, openWatch, request, startServer, until, type TestServer } from './helpers/server.js';

const cm = (ns: string) => `/api/v1/namespaces/${ns}/configmaps`;

async function create(s: TestServer, ns: string, name: string, v: string): Promise<void> {
  const r = await request(s, 'POST', cm(ns), { metadata: { name }, data: { v } });
  expect(r.status, r.text).toBe(201);
}

/** name -> data.v of the test's configmaps, per namespace and cluster-wide (checked to be in key order). */
async function state(s: TestServer): Promise<{ a: string[]; ab: string[]; all: string[]; rv: string }> {
  const names = async (path: string) => {
    const r = await request(s, 'GET', path);
    expect(r.status).toBe(200);
    const items = r.json().items.filter((i: any) => i.metadata.namespace.startsWith('ri-'));
    return { list: items.map((i: any) => `${i.metadata.namespace}/${i.metadata.name}=${i.data.v}`), rv: r.json().metadata.resourceVersion };
  };
  const a = (await names(cm('ri-a'))).list;
  const ab = (await names(cm('ri-a-b'))).list;
  const all = await names('/api/v1/configmaps');
  // key order: by name, as the keys sort
  for (const l of [a, ab]) expect(l.map((x) => x.split('=')[0])).toEqual(l.map((x) => x.split('=')[0]).sort());
  return { a, ab, all: all.list, rv: all.rv };
}

const indexFiles = (dir: string) =>
  readdirSync(dir)
    .filter((n) => n.startsWith('shard-'))
    .map((n) => join(dir, n, 'cache-index.bin'))
    .filter((f) => existsSync(f));

// (the LMDB shards' cache index file)
describe.skipIf(onEtcd)('restart from the cache index', () => {
  it('a clean restart uses it; after kill -9 following more writes it is ignored; a damaged one is ignored', async () => {
    const s = await startServer();
    try {
      for (const ns of ['ri-a', 'ri-a-b']) expect((await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: ns } })).status).toBe(201);
      for (let i = 0; i < 30; i++) await create(s, i % 3 ? 'ri-a' : 'ri-a-b', `cm-${i}`, `v${i}`);
      expect((await request(s, 'PATCH', `${cm('ri-a')}/cm-1`, { data: { v: 'patched' } }, { 'content-type': 'application/merge-patch+json' })).status).toBe(200);
      expect((await request(s, 'DELETE', `${cm('ri-a')}/cm-2`)).status).toBe(200);
      const before = await state(s);
      expect(before.a).toContain('ri-a/cm-1=patched');
      expect(before.a.some((x) => x.startsWith('ri-a/cm-2='))).toBe(false);

      // 1. clean stop: an index per shard; the restart loads from it
      expect(await s.stop()).toBe(0);
      expect(indexFiles(s.dataDir).length).toBeGreaterThan(0);
      await s.restart();
      expect(s.output()).not.toMatch(/cache index not used/);
      const warm = await state(s);
      expect({ a: warm.a, ab: warm.ab, all: warm.all }).toEqual({ a: before.a, ab: before.ab, all: before.all });
      expect((await request(s, 'GET', `${cm('ri-a')}/cm-1`)).json().data.v).toBe('patched');
      // watchable from the list's version: a change after it arrives
      const w = openWatch(s, `${cm('ri-a')}?watch=1&resourceVersion=${warm.rv}`);
      expect((await request(s, 'PATCH', `${cm('ri-a')}/cm-4`, { data: { v: 'after-restart' } }, { 'content-type': 'application/merge-patch+json' })).status).toBe(200);
      await until(() => w.events.find((e) => e.type === 'MODIFIED' && e.object.metadata.name === 'cm-4'));
      w.close();
      // more writes after the index was read, then a crash
      await create(s, 'ri-a', 'late', 'late');
      expect((await request(s, 'DELETE', `${cm('ri-a')}/cm-5`)).status).toBe(200);
      await s.kill9();

      // 2. the index names an older store: ignored, and the store's own state is served
      await s.restart();
      expect(s.output()).toMatch(/cache index not used \(index at resource version \d+, the store at \d+\)/);
      const afterCrash = await state(s);
      expect(afterCrash.a).toContain('ri-a/late=late');
      expect(afterCrash.a).toContain('ri-a/cm-4=after-restart');
      expect(afterCrash.a.some((x) => x.startsWith('ri-a/cm-5='))).toBe(false);

      // 3. a damaged index: ignored
      expect(await s.stop()).toBe(0);
      for (const f of indexFiles(s.dataDir)) {
        const b = readFileSync(f);
        b[b.length - 2] ^= 0x01;
        writeFileSync(f, b);
      }
      const mark = s.output().length;
      await s.restart();
      expect(s.output().slice(mark)).toMatch(/cache index not used \(index checksum mismatch\)/);
      const afterDamage = await state(s);
      expect({ a: afterDamage.a, ab: afterDamage.ab, all: afterDamage.all }).toEqual({ a: afterCrash.a, ab: afterCrash.ab, all: afterCrash.all });
    } finally {
      await s.stop().catch(() => undefined);
      s.cleanup();
    }
  });
});
