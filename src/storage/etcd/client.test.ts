// The etcd client against a real 3-member etcd cluster (Debian's etcd 3.4): KV calls, guarded
// transactions, watches from a revision with progress requests, the compaction error, and
// failover when the endpoint in use is killed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:net';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EtcdClient, EtcdCompactedError, EtcdError, prefixEnd, type WatchEvent } from './client.js';
import { etcdAvailable, startCluster, type TestCluster } from './test-cluster.js';

const have = etcdAvailable();
if (!have) console.warn('skipping the etcd client tests: /usr/bin/etcd is missing (apt-get install etcd-server)');

function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  return new Promise((res, rej) => {
    const tick = () => {
      if (cond()) return res();
      if (Date.now() > end) return rej(new Error('condition not met in time'));
      setTimeout(tick, 20);
    };
    tick();
  });
}

describe.skipIf(!have)('etcd client', () => {
  let cluster: TestCluster;
  let c: EtcdClient;
  beforeAll(async () => {
    cluster = await startCluster(3);
    c = new EtcdClient({ endpoints: cluster.endpoints, callTimeoutMs: 5000 });
  });
  afterAll(async () => {
    c?.close();
    await cluster?.stop();
  });

  it('puts, gets, ranges a prefix and deletes', async () => {
    const p1 = await c.put('/t/a/1', 'one');
    const p2 = await c.put('/t/a/2', Buffer.from([0, 1, 2]));
    expect(p2.revision).toBe(p1.revision + 1);
    const g = await c.get('/t/a/1');
    expect(g.kv?.value.toString()).toBe('one');
    expect(g.kv?.createRevision).toBe(p1.revision);
    expect(g.kv?.modRevision).toBe(p1.revision);
    expect(g.kv?.version).toBe(1);
    const r = await c.range('/t/a/', { rangeEnd: prefixEnd('/t/a/') });
    expect(r.kvs.map((kv) => kv.key.toString())).toEqual(['/t/a/1', '/t/a/2']);
    expect(r.kvs[1].value).toEqual(Buffer.from([0, 1, 2]));
    expect(r.count).toBe(2);
    const paged = await c.range('/t/a/', { rangeEnd: prefixEnd('/t/a/'), limit: 1 });
    expect(paged.more).toBe(true);
    expect(paged.kvs).toHaveLength(1);
    const counted = await c.range('/t/a/', { rangeEnd: prefixEnd('/t/a/'), countOnly: true });
    expect(counted.count).toBe(2);
    // a read at an older revision sees the older state
    const old = await c.range('/t/a/', { rangeEnd: prefixEnd('/t/a/'), revision: p1.revision });
    expect(old.kvs).toHaveLength(1);
    const d = await c.deleteRange('/t/a/1', { prevKv: true });
    expect(d.deleted).toBe(1);
    expect(d.prevKvs[0].value.toString()).toBe('one');
    expect((await c.get('/t/a/1')).kv).toBeUndefined();
  });

  it('guards a create on create_revision and an update on mod_revision', async () => {
    const create = (v: string) =>
      c.txn({
        compare: [{ key: '/t/g', target: 'createRevision', result: '=', value: 0 }],
        success: [{ put: { key: '/t/g', value: v } }],
        failure: [{ range: { key: '/t/g' } }],
      });
    const first = await create('v1');
    expect(first.succeeded).toBe(true);
    const second = await create('v2');
    expect(second.succeeded).toBe(false);
    const cur = (second.responses[0] as any).range.kvs[0];
    expect(cur.value.toString()).toBe('v1');
    expect(cur.modRevision).toBe(first.revision);

    const update = (modRevision: number, v: string) =>
      c.txn({
        compare: [{ key: '/t/g', target: 'modRevision', result: '=', value: modRevision }],
        success: [{ put: { key: '/t/g', value: v } }],
        failure: [{ range: { key: '/t/g' } }],
      });
    const ok = await update(first.revision, 'v3');
    expect(ok.succeeded).toBe(true);
    expect(ok.revision).toBeGreaterThan(first.revision);
    const stale = await update(first.revision, 'v4');
    expect(stale.succeeded).toBe(false);
    expect((stale.responses[0] as any).range.kvs[0].modRevision).toBe(ok.revision);
    const del = await c.txn({
      compare: [{ key: '/t/g', target: 'modRevision', result: '=', value: ok.revision }],
      success: [{ deleteRange: { key: '/t/g', prevKv: true } }],
    });
    expect(del.succeeded).toBe(true);
    expect((del.responses[0] as any).deleteRange.prevKvs[0].value.toString()).toBe('v3');
  });

  it('watches a prefix from a revision, with prev_kv and progress requests', async () => {
    const base = (await c.put('/t/w/0', 'x')).revision;
    await c.put('/t/w/1', 'a');
    await c.put('/t/w/1', 'b');
    await c.deleteRange('/t/w/1');
    const got: WatchEvent[] = [];
    const progress: number[] = [];
    const w = c.watch(
      { key: '/t/w/', rangeEnd: prefixEnd('/t/w/'), startRevision: base + 1, prevKv: true, progressNotify: true },
      { onEvents: (evs) => got.push(...evs), onProgress: (rev) => progress.push(rev), onError: (e) => { throw e; } },
    );
    await w.created;
    await until(() => got.length === 3);
    expect(got.map((e) => [e.type, e.kv.key.toString(), e.kv.value.toString()])).toEqual([
      ['PUT', '/t/w/1', 'a'],
      ['PUT', '/t/w/1', 'b'],
      ['DELETE', '/t/w/1', ''],
    ]);
    expect(got[1].prevKv?.value.toString()).toBe('a');
    expect(got[2].prevKv?.value.toString()).toBe('b');
    // a write elsewhere moves the revision; the progress answer covers it
    const other = (await c.put('/t/elsewhere', 'z')).revision;
    const rev = await c.requestProgress();
    expect(rev).toBeGreaterThanOrEqual(other);
    await until(() => progress.some((p) => p >= other));
    // live events still arrive after the progress answer
    await c.put('/t/w/2', 'c');
    await until(() => got.length === 4);
    expect(got[3].kv.key.toString()).toBe('/t/w/2');
    w.cancel();
  });

  it('ends a watch below the compacted revision with the compaction error', async () => {
    const first = (await c.put('/t/cmp', '1')).revision;
    await c.put('/t/cmp', '2');
    const last = (await c.put('/t/cmp', '3')).revision;
    await c.compact(last, true);
    // a read below the compaction is refused too
    await expect(c.range('/t/cmp', { revision: first })).rejects.toThrow(/compacted/);
    const err = await new Promise<Error>((resolve) => {
      c.watch({ key: '/t/cmp', startRevision: first }, { onEvents: () => {}, onError: resolve });
    });
    expect(err).toBeInstanceOf(EtcdCompactedError);
    expect((err as EtcdCompactedError).compactRevision).toBe(last);
  });

  it('a silent endpoint is a timeout error, not a hang', async () => {
    // accepts TCP connections and never answers
    const socks: any[] = [];
    const srv: Server = createServer((s) => socks.push(s));
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const port = (srv.address() as any).port;
    const dead = new EtcdClient({ endpoints: [`http://127.0.0.1:${port}`], callTimeoutMs: 500 });
    try {
      const e = await dead.get('/x').then(() => undefined, (err) => err);
      expect(e).toBeInstanceOf(EtcdError);
      const w = await new Promise<Error>((resolve) => dead.watch({ key: '/x' }, { onEvents: () => {}, onError: resolve }));
      expect(w).toBeInstanceOf(EtcdError);
    } finally {
      dead.close();
      for (const s of socks) s.destroy();
      srv.close();
    }
  });

  it('fails over to the next endpoint when the one in use is killed, and the watch resumes there', async () => {
    const f = new EtcdClient({ endpoints: cluster.endpoints, callTimeoutMs: 5000 });
    try {
      expect(f.currentEndpoint).toBe(cluster.endpoints[0].replace(/\/$/, ''));
      const start = (await f.put('/t/f/0', 'before')).revision;
      const got: WatchEvent[] = [];
      const errors: Error[] = [];
      const w = f.watch({ key: '/t/f/', rangeEnd: prefixEnd('/t/f/'), startRevision: start }, { onEvents: (e) => got.push(...e), onError: (e) => errors.push(e) });
      await w.created;
      await until(() => got.length === 1);
      await cluster.kill(0);
      // the next calls land on a living member (if the killed one led, a write may fail, in
      // bounded time, while the others elect a new leader: it is tried again)
      let p: { revision: number } | undefined;
      for (let i = 0; !p; i++) {
        try {
          p = await f.put('/t/f/1', 'after');
        } catch (e) {
          expect(e).toBeInstanceOf(EtcdError);
          if (i > 5) throw e;
        }
      }
      expect(f.currentEndpoint).not.toBe(cluster.endpoints[0].replace(/\/$/, ''));
      expect((await f.get('/t/f/1')).kv?.value.toString()).toBe('after');
      // the watch was re-created on a living member from the revision after the last it saw
      await until(() => got.length === 2);
      expect(got.map((e) => e.kv.modRevision)).toEqual([start, p.revision]);
      expect(errors).toEqual([]);
      expect(await f.requestProgress()).toBeGreaterThanOrEqual(p.revision);
      w.cancel();
      const st = await f.status();
      expect(st.version).toMatch(/^3\./);
    } finally {
      f.close();
    }
  });
});

describe.skipIf(!have)('etcd client over TLS', () => {
  let cluster: TestCluster;
  let dir: string;
  const f = (n: string) => join(dir, n);
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kubeshard-etcd-tls-'));
    const ssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
    ssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=test-etcd-ca']);
    for (const [name, ext] of [
      ['server', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n'],
      ['client', 'extendedKeyUsage=clientAuth\n'],
    ]) {
      ssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`]);
      writeFileSync(f(`${name}.ext`), ext);
      ssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1', '-extfile', `${name}.ext`, '-out', `${name}.crt`]);
    }
    cluster = await startCluster(1, [], { certFile: f('server.crt'), keyFile: f('server.key'), caFile: f('ca.crt'), clientCertFile: f('client.crt'), clientKeyFile: f('client.key') });
  });
  afterAll(async () => {
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('talks to etcd with the CA, client certificate and key (--etcd-cafile, --etcd-certfile, --etcd-keyfile)', async () => {
    expect(cluster.endpoints[0]).toMatch(/^https:/);
    const c = new EtcdClient({ endpoints: cluster.endpoints, caFile: f('ca.crt'), certFile: f('client.crt'), keyFile: f('client.key'), callTimeoutMs: 5000 });
    try {
      const p = await c.put('/tls/a', 'x');
      expect((await c.get('/tls/a')).kv?.modRevision).toBe(p.revision);
      const got: WatchEvent[] = [];
      const w = c.watch({ key: '/tls/', rangeEnd: prefixEnd('/tls/'), startRevision: p.revision }, { onEvents: (e) => got.push(...e), onError: () => {} });
      await until(() => got.length === 1);
      w.cancel();
    } finally {
      c.close();
    }
  });

  it('without a client certificate etcd refuses, and the call fails in bounded time', async () => {
    const c = new EtcdClient({ endpoints: cluster.endpoints, caFile: f('ca.crt'), callTimeoutMs: 2000 });
    try {
      await expect(c.get('/tls/a')).rejects.toBeInstanceOf(EtcdError);
    } finally {
      c.close();
    }
  });
});

describe.skipIf(!have)('etcd client: leases and fragmented watch responses', () => {
  let cluster: TestCluster;
  let c: EtcdClient;
  beforeAll(async () => {
    // a small request limit: etcd splits a watch response larger than it into fragments
    cluster = await startCluster(1, ['--max-request-bytes', '20000']);
    c = new EtcdClient({ endpoints: cluster.endpoints, callTimeoutMs: 5000 });
  });
  afterAll(async () => {
    c?.close();
    await cluster?.stop();
  });

  it('grants, keeps alive and revokes a lease; a key under it goes with it', async () => {
    const l = await c.leaseGrant(30);
    expect(l.ttl).toBe(30);
    await c.put('/lease/k', 'v', { lease: l.id });
    expect((await c.get('/lease/k')).kv?.lease).toBe(l.id);
    expect(await c.leaseKeepAliveOnce(l.id)).toBeGreaterThan(0);
    await c.leaseRevoke(l.id);
    expect((await c.get('/lease/k')).kv).toBeUndefined();
    // a lease that is gone: keep-alive says so with a TTL of 0 or less
    expect(await c.leaseKeepAliveOnce(l.id)).toBeLessThanOrEqual(0);
  });

  it('joins a watch response etcd sent in fragments', async () => {
    const big = (i: number) => Buffer.alloc(8000, String.fromCharCode(97 + i));
    let first = 0;
    for (let i = 0; i < 6; i += 2) {
      const r = await c.txn({ success: [{ put: { key: `/frag/${i}`, value: big(i) } }, { put: { key: `/frag/${i + 1}`, value: big(i + 1) } }] });
      if (!first) first = r.revision;
    }
    const got: WatchEvent[] = [];
    const w = c.watch({ key: '/frag/', rangeEnd: prefixEnd('/frag/'), startRevision: first }, { onEvents: (e) => got.push(...e), onError: (e) => { throw e; } });
    await until(() => got.length === 6);
    expect(got.map((e) => e.kv.key.toString())).toEqual(['/frag/0', '/frag/1', '/frag/2', '/frag/3', '/frag/4', '/frag/5']);
    got.forEach((e, i) => expect(e.kv.value.equals(big(i))).toBe(true));
    w.cancel();
  });
});
