// --event-ttl: Events (core v1 and events.k8s.io v1, one stored resource) are deleted that
// long after their last write, as kube's Event registry has etcd do with leases: by the
// shard's TTL index on LMDB, by etcd leases on etcd3. Watchers see a DELETED event; an
// update starts the TTL again; a restart keeps the TTLs.
import { describe, it, expect } from 'vitest';
import { openWatch, request, startServer, until } from './helpers/server.js';

const CORE = '/api/v1/namespaces/default/events';
const NEW = '/apis/events.k8s.io/v1/namespaces/default/events';

const coreEvent = (name: string) => ({
  metadata: { name },
  involvedObject: { kind: 'Pod', name: 'p', namespace: 'default' },
  reason: 'Tested',
  message: 'm',
  type: 'Normal',
  source: { component: 'event-ttl-test' },
});

const newEvent = (name: string) => ({
  metadata: { name },
  eventTime: new Date().toISOString().replace('Z', '000Z'),
  reportingController: 'kubeshard.io/test',
  reportingInstance: 'i',
  action: 'Test',
  reason: 'Tested',
  regarding: { kind: 'Pod', name: 'p', namespace: 'default' },
  type: 'Normal',
});

describe('--event-ttl', () => {
  it('deletes events after the TTL from their last write, with a DELETED event for watchers, also across a restart', async () => {
    const s = await startServer({ args: ['--event-ttl=3s'] });
    try {
      const w = openWatch(s, `${CORE}?watch=1`);
      expect(await w.status).toBe(200);
      const a = await request(s, 'POST', CORE, coreEvent('a'));
      expect(a.status).toBe(201);
      const b = await request(s, 'POST', CORE, coreEvent('b'));
      expect(b.status).toBe(201);
      const n = await request(s, 'POST', NEW, newEvent('n'));
      expect(n.status).toBe(201);
      const cm = await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'stays' } });
      expect(cm.status).toBe(201);
      // b is written again halfway: its TTL starts again
      await new Promise((r) => setTimeout(r, 1500));
      const bb = await request(s, 'PUT', `${CORE}/b`, { ...b.json(), message: 'again' });
      expect(bb.status).toBe(200);

      await until(async () => (await request(s, 'GET', `${CORE}/a`)).status === 404, 20_000);
      // a is gone, b (written 1.5 s after it) is not yet
      expect((await request(s, 'GET', `${CORE}/b`)).status).toBe(200);
      await until(async () => (await request(s, 'GET', `${NEW}/n`)).status === 404, 20_000);
      await until(async () => (await request(s, 'GET', `${CORE}/b`)).status === 404, 20_000);
      // the watcher saw each expiry as a deletion of the object's last state
      await until(() => w.events.filter((e) => e.type === 'DELETED').length === 3, 10_000);
      const deleted = w.events.filter((e) => e.type === 'DELETED');
      expect(deleted.map((e) => e.object.metadata.name).sort()).toEqual(['a', 'b', 'n']);
      expect(deleted.find((e) => e.object.metadata.name === 'b').object.message).toBe('again');
      for (const e of deleted) expect(Number(e.object.metadata.resourceVersion)).toBeGreaterThan(Number(bb.json().metadata.resourceVersion));
      w.close();
      // other kinds never expire
      expect((await request(s, 'GET', '/api/v1/namespaces/default/configmaps/stays')).status).toBe(200);

      // a TTL that runs out while the server is down (or across a restart) still ends the event
      expect((await request(s, 'POST', CORE, coreEvent('c'))).status).toBe(201);
      await s.kill9();
      await s.restart();
      expect((await request(s, 'GET', `${CORE}/c`)).status).toBe(200);
      await until(async () => (await request(s, 'GET', `${CORE}/c`)).status === 404, 20_000);
      // and across a clean restart (LMDB: the key index comes from the cache index file then)
      expect((await request(s, 'POST', CORE, coreEvent('d'))).status).toBe(201);
      expect(await s.stop('SIGTERM')).toBe(0);
      await s.restart();
      await until(async () => (await request(s, 'GET', `${CORE}/d`)).status === 404, 20_000);
      const list = await request(s, 'GET', CORE);
      expect(list.json().items).toEqual([]);
    } finally {
      await s.stop().catch(() => undefined);
      s.cleanup();
    }
  }, 90_000);

  it('--event-ttl=0 keeps events', async () => {
    const s = await startServer({ args: ['--event-ttl=0s'] });
    try {
      expect((await request(s, 'POST', CORE, coreEvent('k'))).status).toBe(201);
      await new Promise((r) => setTimeout(r, 1500));
      expect((await request(s, 'GET', `${CORE}/k`)).status).toBe(200);
    } finally {
      await s.stop().catch(() => undefined);
      s.cleanup();
    }
  }, 60_000);
});
