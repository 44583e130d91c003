// Backup and restore of the LMDB backend (issue 19): `kubeshard snapshot save` while the
// server serves writes, `restore` into a new data dir, and a server started on it. The
// snapshot must be one point of the global version order: every write acknowledged before
// the save began is in it with its resourceVersion, every write up to the snapshot's
// version is there, nothing after it is, and the restored server goes on from above it.
import { describe, it, expect, afterAll } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { onEtcd, openWatch, request, startServer, until, type TestServer } from './helpers/server.js';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');
const MAIN = join(ROOT, 'dist', 'src', 'main.js');
const CM = '/api/v1/namespaces/default/configmaps';
const SECRETS = '/api/v1/namespaces/default/secrets';
// (no root CA publisher: a restored data dir gets a new CA, and kube-root-ca.crt would change)
const COMMON = ['--controllers=*,-root-ca-certificate-publisher-controller', '--shard-map=configmaps=1,secrets=0'];

function kubeshard(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((res) => {
    execFile(process.execPath, [MAIN, ...args], { timeout: 60_000 }, (err, stdout, stderr) => res({ code: err ? ((err as any).code ?? 1) : 0, stdout, stderr }));
  });
}

async function status(file: string): Promise<any> {
  const r = await kubeshard(['snapshot', 'status', file, '--write-out', 'json']);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

interface Op {
  path: string;
  name: string;
  kind: 'write' | 'delete';
  rv: number;
  ackAt: number;
}

const dirs: string[] = [];
const servers: TestServer[] = [];
afterAll(async () => {
  for (const s of servers) {
    await s.stop();
    s.cleanup();
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'kubeshard-snap-'));
  dirs.push(d);
  return d;
}

async function started(opts: Parameters<typeof startServer>[0]): Promise<TestServer> {
  const s = await startServer(opts);
  servers.push(s);
  return s;
}

// (kubeshard snapshot is the LMDB backend's; etcd has etcdctl snapshot)
describe.skipIf(onEtcd)('snapshot save and restore', () => {
  it('a snapshot taken while writes go on is one point of the version order, and restores with every version', async () => {
    // B-tree transactions 2 s apart: what the snapshot holds comes largely from the
    // records the server keeps until its B-trees take them
    const a = await started({ args: [...COMMON, '--storage-batch-interval=2s'] });
    const ops: Op[] = [];
    let stop = false;
    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        // configmaps on shard 1, secrets on shard 0: a snapshot cuts across both
        const path = i % 2 ? SECRETS : CM;
        const r = await request(a, 'POST', path, { metadata: { name: `w${w}-${i}` }, data: {} });
        expect(r.status, r.body).toBe(201);
        ops.push({ path, name: `w${w}-${i}`, kind: 'write', rv: Number(r.json().metadata.resourceVersion), ackAt: performance.now() });
        if (i % 3 === 2) {
          const prev = `w${w}-${i - 1}`;
          const p = i % 2 ? CM : SECRETS;
          const u = await request(a, 'PATCH', `${p}/${prev}`, { metadata: { labels: { step: String(i) } } }, { 'content-type': 'application/merge-patch+json' });
          expect(u.status, u.body).toBe(200);
          ops.push({ path: p, name: prev, kind: 'write', rv: Number(u.json().metadata.resourceVersion), ackAt: performance.now() });
        }
        if (i % 5 === 4) {
          const gone = `w${w}-${i - 2}`;
          const p = i % 2 ? SECRETS : CM;
          const d = await request(a, 'DELETE', `${p}/${gone}`);
          expect(d.status, d.body).toBe(200);
          // (a delete answers with the object's last state, not the deletion's version)
          ops.push({ path: p, name: gone, kind: 'delete', rv: 0, ackAt: performance.now() });
        }
      }
    };
    const writers = [0, 1, 2, 3].map(writer);
    const dir = tempDir();
    const saves: Array<{ file: string; startedAt: number }> = [];
    await until(() => ops.length > 50);
    for (let n = 0; n < 3; n++) {
      const file = join(dir, `s${n}.snap`);
      const startedAt = performance.now();
      const r = await kubeshard(['snapshot', 'save', file, '--data-dir', a.dataDir]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('taken by the running server');
      saves.push({ file, startedAt });
      await until(() => ops.length > 50 * (n + 2));
    }
    stop = true;
    await Promise.all(writers);
    const maxAcked = Math.max(...ops.map((o) => o.rv));
    for (const s of saves) expect(statSync(s.file).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir).sort()).toEqual(['s0.snap', 's1.snap', 's2.snap']);

    // the middle one, taken with writes before and after it
    const snap = saves[1];
    const st = await status(snap.file);
    const S = st.revision;
    expect(st).toMatchObject({ shards: 2, shardMap: { configmaps: 1, secrets: 0 }, source: 'server', version: 1 });
    expect(S).toBeLessThan(maxAcked);

    // a restore keeps the placement: other flags are refused
    const restored = join(tempDir(), 'data');
    const wrong = await kubeshard(['snapshot', 'restore', snap.file, '--data-dir', restored, '--shards', '3']);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('taken with 2 shards');
    expect(existsSync(restored)).toBe(false);
    const ok = await kubeshard(['snapshot', 'restore', snap.file, '--data-dir', restored, '--shards', '2', '--shard-map', 'secrets=0,configmaps=1']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(statSync(restored).mode & 0o777).toBe(0o700);
    const again = await kubeshard(['snapshot', 'restore', snap.file, '--data-dir', restored]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('is not empty');

    const b = await started({ dataDir: restored, args: COMMON });
    const stored = new Map<string, number>();
    for (const path of [CM, SECRETS]) {
      const l = await request(b, 'GET', path);
      expect(l.status).toBe(200);
      for (const it of l.json().items) if (/^w\d/.test(it.metadata.name)) stored.set(`${path}/${it.metadata.name}`, Number(it.metadata.resourceVersion));
    }
    // per object, its writes in order
    const byName = new Map<string, Op[]>();
    for (const o of ops) {
      const k = `${o.path}/${o.name}`;
      if (!byName.has(k)) byName.set(k, []);
      byName.get(k)!.push(o);
    }
    for (const [k, list] of byName) {
      for (const o of list) if (o.kind === 'write' && o.ackAt < snap.startedAt) expect(o.rv, `${k}: acknowledged before the save began`).toBeLessThanOrEqual(S);
      const atS = list.filter((o) => o.kind === 'write' && o.rv <= S).pop();
      const del = list.find((o) => o.kind === 'delete');
      if (del && del.ackAt < snap.startedAt) expect(stored.has(k), `${k}: deleted before the save began`).toBe(false);
      else if (del) {
        // (the deletion's version is unknown here: before S it is gone, after it the object is as of S)
        if (stored.has(k)) expect(stored.get(k)).toBe(atS?.rv);
      } else if (atS) expect(stored.get(k), `${k}: written at ${atS.rv}, within the snapshot at ${S}`).toBe(atS.rv);
      else expect(stored.has(k), `${k}: first written after the snapshot's version ${S}`).toBe(false);
    }
    for (const [k, rv] of stored) expect(rv, k).toBeLessThanOrEqual(S);

    // a watch from a version inside the snapshot replays what came after it, up to S, then goes on
    const inside = ops.filter((o) => o.path === CM && o.kind === 'write' && o.rv <= S);
    const from = inside[Math.floor(inside.length / 2)].rv;
    const w = openWatch(b, `${CM}?watch=1&resourceVersion=${from}`);
    expect(await w.status).toBe(200);
    // the next write goes on from above everything in the snapshot
    const next = await request(b, 'POST', CM, { metadata: { name: 'after-restore' } });
    expect(next.status).toBe(201);
    const nextRv = Number(next.json().metadata.resourceVersion);
    expect(nextRv).toBeGreaterThan(S);
    await until(() => w.events.find((e) => e.object?.metadata?.name === 'after-restore'));
    w.close();
    const replay = w.events.filter((e) => e.object.metadata.name !== 'after-restore');
    const rvs = replay.map((e) => Number(e.object.metadata.resourceVersion));
    expect([...rvs].sort((x, y) => x - y)).toEqual(rvs);
    const expected = ops.filter((o) => o.path === CM && o.kind === 'write' && o.rv > from && o.rv <= S).sort((x, y) => x.rv - y.rv).map((o) => `${o.name}@${o.rv}`);
    expect(replay.filter((e) => e.type !== 'DELETED').map((e) => `${e.object.metadata.name}@${e.object.metadata.resourceVersion}`)).toEqual(expected);
    for (const e of replay) expect(Number(e.object.metadata.resourceVersion)).toBeLessThanOrEqual(S);

    // a stopped server's data dir is read directly: everything it acknowledged is there
    await a.stop();
    const offline = join(dir, 'offline.snap');
    const r = await kubeshard(['snapshot', 'save', offline, '--data-dir', a.dataDir]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('read from the data dir');
    const off = await status(offline);
    expect(off.source).toBe('data-dir');
    expect(off.revision).toBeGreaterThanOrEqual(maxAcked);
    expect(statSync(offline).mode & 0o777).toBe(0o600);
  });

  it('refuses a damaged file with a clear message, and a failed save leaves no file', async () => {
    const a = await started({ args: COMMON });
    await request(a, 'POST', CM, { metadata: { name: 'one' } });
    const dir = tempDir();
    const file = join(dir, 'good.snap');
    expect((await kubeshard(['snapshot', 'save', file, '--data-dir', a.dataDir])).code).toBe(0);
    const bytes = readFileSync(file);
    const at = bytes.indexOf('"name":"one"');
    expect(at).toBeGreaterThan(0);
    bytes[at + 9] ^= 0x20; // "one" becomes "One": the structure holds, the checksum does not
    writeFileSync(join(dir, 'bad.snap'), bytes);
    const target = join(dir, 'restored');
    const r = await kubeshard(['snapshot', 'restore', join(dir, 'bad.snap'), '--data-dir', target]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('the snapshot file is damaged: its SHA-256 checksum does not match its content');
    expect(existsSync(target)).toBe(false);
    expect(readdirSync(dir).sort()).toEqual(['bad.snap', 'good.snap']);
    const s = await kubeshard(['snapshot', 'status', join(dir, 'bad.snap')]);
    expect(s.code).toBe(1);
    expect(s.stderr).toContain('checksum');
    // no data dir there: the save fails, and leaves nothing behind
    const f = await kubeshard(['snapshot', 'save', join(dir, 'none.snap'), '--data-dir', join(dir, 'nowhere')]);
    expect(f.code).toBe(1);
    expect(f.stderr).toContain('not a kubeshard data dir');
    expect(readdirSync(dir).sort()).toEqual(['bad.snap', 'good.snap']);
  });

  it('keeps the compacted revision: a watch from before it is 410 Expired after the restore, as before; --bump-revision with --mark-compacted', async () => {
    const a = await started({ args: [...COMMON, '--history-retention=2s'] });
    const old = Number((await request(a, 'POST', CM, { metadata: { name: 'old' } })).json().metadata.resourceVersion);
    await request(a, 'PATCH', `${CM}/old`, { data: { x: 'y' } }, { 'content-type': 'application/merge-patch+json' });
    const expired = async (s: TestServer) => {
      const w = openWatch(s, `${CM}?watch=1&resourceVersion=${old - 1}`);
      await w.status;
      await until(() => w.events.length >= 1 || w.ended(), 5000).catch(() => false);
      w.close();
      return w.events[0]?.type === 'ERROR' && w.events[0].object.code === 410;
    };
    // (retention 2 s, compaction every second)
    await until(() => expired(a), 30_000);
    const dir = tempDir();
    const file = join(dir, 'c.snap');
    expect((await kubeshard(['snapshot', 'save', file, '--data-dir', a.dataDir])).code).toBe(0);
    const st = await status(file);
    expect(st.compactedRevisions[1]).toBeGreaterThanOrEqual(old);
    await a.stop();
    const restored = join(dir, 'data');
    expect((await kubeshard(['snapshot', 'restore', file, '--data-dir', restored])).code).toBe(0);
    const b = await started({ dataDir: restored, args: COMMON });
    const w = openWatch(b, `${CM}?watch=1&resourceVersion=${old - 1}`);
    expect(await w.status).toBe(200);
    await until(() => w.events.length >= 1);
    expect(w.events[0]).toMatchObject({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } });
    w.close();
    const got = await request(b, 'GET', `${CM}/old`);
    expect(got.json()).toMatchObject({ data: { x: 'y' } });
    await b.stop();

    // as etcdutl's: the versions go on far above the snapshot's, and every older watch is 410
    const S = st.revision;
    expect((await kubeshard(['snapshot', 'restore', file, '--data-dir', join(dir, 'bumped'), '--bump-revision', '1000'])).stderr).toContain('--bump-revision needs --mark-compacted');
    const bumped = await kubeshard(['snapshot', 'restore', file, '--data-dir', join(dir, 'bumped'), '--bump-revision', '1000', '--mark-compacted']);
    expect(bumped.code, bumped.stderr).toBe(0);
    const c = await started({ dataDir: join(dir, 'bumped'), args: COMMON });
    expect((await request(c, 'GET', `${CM}/old`)).json()).toMatchObject({ metadata: { resourceVersion: got.json().metadata.resourceVersion }, data: { x: 'y' } });
    const w2 = openWatch(c, `${CM}?watch=1&resourceVersion=${S}`);
    expect(await w2.status).toBe(200);
    await until(() => w2.events.length >= 1);
    expect(w2.events[0]).toMatchObject({ type: 'ERROR', object: { code: 410, reason: 'Expired' } });
    w2.close();
    const next = await request(c, 'POST', CM, { metadata: { name: 'after-bump' } });
    expect(Number(next.json().metadata.resourceVersion)).toBeGreaterThan(S + 1000);
    const list = (await request(c, 'GET', CM)).json();
    expect(Number(list.metadata.resourceVersion)).toBeGreaterThan(S + 1000);
  });
});
