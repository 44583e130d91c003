// Durability: an acknowledged create survives kill -9; a clean restart keeps every
// resourceVersion and hands out larger ones afterwards.
import { describe, it, expect } from 'vitest';
import { onEtcd, request, startServer } from './helpers/server.js';

const CM = '/api/v1/namespaces/default/configmaps';

describe('durability', () => {
  it('every create that got a 201 survives kill -9 under 50 concurrent clients', async () => {
    const s = await startServer();
    try {
      const acked = new Map<string, string>();
      let stop = false;
      const client = async (c: number) => {
        for (let i = 0; !stop; i++) {
          const name = `c${c}-${i}`;
          const data = { v: `${name}-${'x'.repeat(200)}` };
          try {
            const r = await request(s, 'POST', CM, { metadata: { name }, data });
            if (r.status === 201) acked.set(name, data.v);
          } catch {
            return; // the server died under us
          }
        }
      };
      const clients = Array.from({ length: 50 }, (_, c) => client(c));
      await new Promise((r) => setTimeout(r, 2500));
      await s.kill9();
      stop = true;
      await Promise.all(clients);
      expect(acked.size).toBeGreaterThan(100);
      await s.restart();
      const list = (await request(s, 'GET', CM)).json();
      const stored = new Map<string, string>(list.items.map((i: any) => [i.metadata.name, i.data?.v]));
      for (const [name, v] of acked) expect(stored.get(name), name).toBe(v);
    } finally {
      await s.stop().catch(() => undefined);
      s.cleanup();
    }
  });

  // (LMDB's write-ahead log and B-tree: etcd has its own; with several front threads the
  // others would wait for the held B-tree before loading their caches, and never start)
  it.skipIf(onEtcd || process.env.KUBESHARD_TEST_FRONT_THREADS)('writes acknowledged from the log alone, before the B-tree took them, are applied again at start-up', async () => {
    // The fault holds every batch out of the B-tree: the log is all there is when the process dies.
    const env: Record<string, string | undefined> = { KUBESHARD_FAULT_HOLD_TREE: '1' };
    const s = await startServer({ env });
    try {
      const rvs = new Map<string, string>();
      for (let i = 0; i < 30; i++) {
        const r = await request(s, 'POST', CM, { metadata: { name: `w${i}` }, data: { i: String(i) } });
        expect(r.status).toBe(201);
        rvs.set(`w${i}`, r.json().metadata.resourceVersion);
      }
      const upd = await request(s, 'PUT', `${CM}/w0`, { metadata: { name: 'w0', resourceVersion: rvs.get('w0') }, data: { i: 'changed' } });
      expect(upd.status).toBe(200);
      rvs.set('w0', upd.json().metadata.resourceVersion);
      expect((await request(s, 'DELETE', `${CM}/w1`)).status).toBe(200);
      rvs.delete('w1');
      await s.kill9();
      env.KUBESHARD_FAULT_HOLD_TREE = undefined;
      await s.restart();
      const list = (await request(s, 'GET', CM)).json();
      const got = new Map<string, any>(list.items.map((i: any) => [i.metadata.name, i]));
      for (const [name, rv] of rvs) expect(got.get(name)?.metadata.resourceVersion, name).toBe(rv);
      expect(got.get('w0').data.i).toBe('changed');
      expect(got.has('w1')).toBe(false);
      // the history is back too: the object as it was before the update
      const old = await request(s, 'GET', `${CM}?resourceVersion=${Number(rvs.get('w2'))}&resourceVersionMatch=Exact&fieldSelector=metadata.name=w0`);
      expect(old.status).toBe(200);
      expect(old.json().items[0].data.i).toBe('0');
      // and new versions are above everything replayed
      const r = await request(s, 'POST', CM, { metadata: { name: 'after' } });
      expect(Number(r.json().metadata.resourceVersion)).toBeGreaterThan(Math.max(...[...rvs.values()].map(Number)));
    } finally {
      await s.stop().catch(() => undefined);
      s.cleanup();
    }
  });

  // (a fault injected into LMDB's write-ahead log)
  it.skipIf(onEtcd)('a write the log cannot take is a 500 InternalError, and nothing of it is stored', async () => {
    const s = await startServer({ env: { KUBESHARD_FAULT_FAIL_LOG_KEY: 'default/lost' } });
    try {
      const r = await request(s, 'POST', CM, { metadata: { name: 'lost' } });
      expect(r.status).toBe(500);
      expect(r.json()).toMatchObject({ kind: 'Status', reason: 'InternalError', code: 500 });
      expect(r.json().message).toContain('storage write failed');
      expect((await request(s, 'GET', `${CM}/lost`)).status).toBe(404);
      expect((await request(s, 'GET', '/readyz')).status).toBe(200);
    } finally {
      await s.stop().catch(() => undefined);
      s.cleanup();
    }
  });

  it('a clean restart keeps every resourceVersion, and new writes get larger ones', async () => {
    const s = await startServer();
    try {
      const rvs = new Map<string, string>();
      for (let i = 0; i < 20; i++) {
        const r = await request(s, 'POST', CM, { metadata: { name: `r${i}` }, data: { i: String(i) } });
        expect(r.status).toBe(201);
        rvs.set(`r${i}`, r.json().metadata.resourceVersion);
      }
      expect(await s.stop('SIGTERM')).toBe(0);
      await s.restart();
      let max = 0;
      for (const [name, rv] of rvs) {
        const g = (await request(s, 'GET', `${CM}/${name}`)).json();
        expect(g.metadata.resourceVersion).toBe(rv);
        max = Math.max(max, Number(rv));
      }
      const r = await request(s, 'POST', CM, { metadata: { name: 'after' } });
      expect(Number(r.json().metadata.resourceVersion)).toBeGreaterThan(max);
    } finally {
      await s.stop().catch(() => undefined);
      s.cleanup();
    }
  });
});
