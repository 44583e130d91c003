// Issue 17, item 4: a shard worker that ends, for any cause. Its unanswered writes fail at
// once with a Status, writes for it fail fast (503 with Retry-After) while it is started
// again from its log, reads and the other shard go on, /readyz and /livez fail the storage
// check meanwhile, nothing waits forever, and nothing acknowledged is lost; a write the
// worker made durable before it ended reaches the caches and watchers after the restart.
// The faults are environment variables of the server process (workers/shard/shard-worker.ts).
import { describe, it, expect } from 'vitest';
import { onEtcd, openWatch, request, startServer, until, type TestServer } from './helpers/server.js';
import { expectAllStored, within } from './helpers/acknowledged.js';

const CM = '/api/v1/namespaces/default/configmaps';
const SECRETS = '/api/v1/namespaces/default/secrets';
// configmaps alone in shard 0, secrets in shard 1: the death of one leaves the other serving
const ARGS = ['--shards', '2', '--shard-map', 'configmaps=0,secrets=1'];

const cm = (name: string, v = name) => ({ metadata: { name }, data: { v } });

async function createAcked(s: TestServer, n: number, prefix: string, acked: Map<string, string>): Promise<void> {
  for (let i = 0; i < n; i++) {
    const r = await request(s, 'POST', CM, cm(`${prefix}${i}`));
    expect(r.status).toBe(201);
    acked.set(`${prefix}${i}`, `${prefix}${i}`);
  }
}

/** A server whose shard workers are told (by env) where to end; stopped and removed after fn, whatever it did. */
async function withFaultyServer(env: Record<string, string>, fn: (s: TestServer) => Promise<void>): Promise<void> {
  const s = await startServer({ args: ARGS, env });
  try {
    await fn(s);
  } finally {
    if (process.env.SHOW_OUTPUT) console.log(s.output());
    await s.stop().catch(() => undefined);
    s.cleanup();
  }
}

// (LMDB's shard worker threads: there are none on etcd)
describe.skipIf(onEtcd)('a shard worker that ends', () => {
  it('fails its writes fast with a Status, is started again from its log, and the server serves on', async () => {
    await withFaultyServer({ KUBESHARD_FAULT_SHARD_EXIT_KEY: 'default/boom', KUBESHARD_FAULT_SHARD_RESTART_DELAY_MS: '3000' }, async (s) => {
    const acked = new Map<string, string>();
    await createAcked(s, 20, 'a', acked);
    const watch = openWatch(s, `${CM}?watch=true&resourceVersion=0`);
    await until(() => watch.events.length >= 20);

    // the batch that kills the worker: every write in it is answered at once
    const t0 = Date.now();
    const [boom, sibling] = await Promise.all([
      within(request(s, 'POST', CM, cm('boom')), 5000, 'the killing write'),
      within(request(s, 'POST', CM, cm('sibling')), 5000, 'a write of the same batch'),
    ]);
    expect(Date.now() - t0).toBeLessThan(5000);
    for (const r of [boom, sibling]) {
      expect([500, 503]).toContain(r.status);
      expect(r.json().kind).toBe('Status');
    }
    expect(boom.status).toBe(500);
    expect(boom.json().reason).toBeUndefined();
    expect(boom.json().message).toMatch(/^storage shard 0 stopped before it answered this write .*may or may not have been committed/);

    // while it is down: writes for it fail fast with 503 and Retry-After ...
    const down = await within(request(s, 'POST', CM, cm('while-down')), 2000, 'a write while the shard is down');
    expect(down.status).toBe(503);
    expect(down.json().reason).toBe('ServiceUnavailable');
    expect(down.headers['retry-after']).toBe('1');
    expect(down.json().message).toMatch(/^storage is unavailable: shard 0 is being restarted from its log/);
    // ... the storage check fails ...
    const ready = await request(s, 'GET', '/readyz');
    expect(ready.status).toBe(500);
    expect(ready.body).toContain('[-]etcd failed: reason withheld\n');
    expect((await request(s, 'GET', '/livez')).status).toBe(500);
    expect((await request(s, 'GET', '/readyz/etcd')).body).toMatch(/^internal server error: shard 0 is not running: /);
    // ... reads of it are served, consistent ones included, and the other shard takes writes
    await expectAllStored(s, acked);
    expect((await within(request(s, 'GET', `${CM}/a0`), 5000, 'get')).status).toBe(200);
    expect((await within(request(s, 'POST', SECRETS, { metadata: { name: 'other-shard' } }), 5000, 'other shard')).status).toBe(201);

    // it comes back by itself, with the versions going on above everything before
    await until(async () => (await request(s, 'GET', '/readyz')).status === 200, 20_000);
    const after = await request(s, 'POST', CM, cm('after'));
    expect(after.status).toBe(201);
    acked.set('after', 'after');
    const lastBefore = Math.max(...watch.events.map((e) => Number(e.object.metadata.resourceVersion)));
    expect(Number(after.json().metadata.resourceVersion)).toBeGreaterThan(lastBefore);
    // the watch opened before lived through it and sees the new write
    await until(() => watch.events.some((e) => e.object.metadata.name === 'after'));
    expect(watch.ended()).toBe(false);
    watch.close();
    // neither the refused writes nor anything else leaked in
    const names = (await request(s, 'GET', CM)).json().items.map((i: any) => i.metadata.name);
    expect(names).not.toContain('boom');
    expect(names).not.toContain('while-down');

    await s.kill9();
    await s.restart();
    await expectAllStored(s, acked);
    });
  }, 120_000);

  it('a write made durable just before the worker ended reaches the caches and the watchers after its restart', async () => {
    await withFaultyServer({ KUBESHARD_FAULT_SHARD_EXIT_AFTER_LOG_KEY: 'default/durable' }, async (s) => {
    const acked = new Map<string, string>();
    await createAcked(s, 10, 'b', acked);
    const watch = openWatch(s, `${CM}?watch=true&resourceVersion=0`);
    await until(() => watch.events.length >= 10);
    const r = await within(request(s, 'POST', CM, cm('durable')), 5000, 'the write the worker logged and never answered');
    expect(r.status).toBe(500);
    expect(r.json().message).toContain('may or may not have been committed');
    // the restarted shard replays its log; the caches take the write, and the watch sees it
    await until(async () => (await request(s, 'GET', `${CM}/durable`)).status === 200, 20_000);
    await until(() => watch.events.some((e) => e.type === 'ADDED' && e.object.metadata.name === 'durable'));
    expect((await request(s, 'GET', '/readyz')).status).toBe(200);
    const next = await request(s, 'POST', CM, cm('next'));
    expect(next.status).toBe(201);
    acked.set('next', 'next');
    acked.set('durable', 'durable');
    watch.close();
    await s.kill9();
    await s.restart();
    await expectAllStored(s, acked);
    });
  }, 120_000);

  it('a worker that ends in the middle of a B-tree transaction is started again, and its acknowledged writes are there', async () => {
    await withFaultyServer({ KUBESHARD_FAULT_SHARD_EXIT_IN_TREE_KEY: 'default/in-tree' }, async (s) => {
    const acked = new Map<string, string>();
    await createAcked(s, 10, 'c', acked);
    // acknowledged from the log; the worker ends while its B-tree takes it
    const r = await within(request(s, 'POST', CM, cm('in-tree')), 5000, 'the write whose B-tree transaction ends the worker');
    expect(r.status).toBe(201);
    acked.set('in-tree', 'in-tree');
    await until(async () => (await request(s, 'GET', '/readyz')).status === 500 || s.output().includes('is running again'), 10_000);
    await until(async () => (await request(s, 'GET', '/readyz')).status === 200, 30_000);
    const next = await within(request(s, 'POST', CM, cm('next')), 5000, 'a write after the restart');
    expect(next.status).toBe(201);
    acked.set('next', 'next');
    await expectAllStored(s, acked);
    await s.kill9();
    await s.restart();
    await expectAllStored(s, acked);
    });
  }, 120_000);
});
