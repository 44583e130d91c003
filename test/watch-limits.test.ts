// Watch limits and cache switches against started servers: a slow watcher gets a bounded
// buffer and is closed when it cannot keep up (writers and other watchers never wait on
// it, and it resumes from the last version it got); one that falls behind within its
// budget catches up; a watch without timeoutSeconds is closed between
// --min-request-timeout and twice that; --watch-cache-sizes with 0 for one resource and
// --watch-cache=false serve reads from storage with the same results.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import https from 'node:https';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { openWatch, request, startServer, until, type TestServer } from './helpers/server.js';

let s: TestServer;
const NS = 'lim';
const CM = `/api/v1/namespaces/${NS}/configmaps`;
const SECRETS = `/api/v1/namespaces/${NS}/secrets`;
const MERGE = { 'content-type': 'application/merge-patch+json' };

beforeAll(async () => {
  s = await startServer({ args: ['--min-request-timeout=1', '--watch-cache-sizes=secrets#0', '--controllers=*,-root-ca-certificate-publisher-controller'] });
  expect((await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: NS } })).status).toBe(201);
});
afterAll(async () => {
  await s?.stop();
  s?.cleanup();
});

/** A watch whose reader is paused until resume(): its events pile up in the server. */
function pausedWatch(path: string) {
  const events: any[] = [];
  let buf = '';
  let ended = false;
  let res: import('node:http').IncomingMessage | undefined;
  const status = new Promise<number>((ok, fail) => {
    const req = https.request({ host: '127.0.0.1', port: s.port, path, ca: s.ca, headers: { authorization: `Bearer ${s.token}` } }, (r) => {
      res = r;
      r.pause();
      ok(r.statusCode!);
      r.on('data', (d) => {
        buf += d;
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i).trim();
          buf = buf.slice(i + 1);
          if (line) events.push(JSON.parse(line));
        }
      });
      // a clean end, or the socket dropped: either way the server is done with it
      r.on('end', () => (ended = true));
      r.on('close', () => (ended = true));
      r.on('error', () => (ended = true));
    });
    req.on('error', fail);
    req.end();
  });
  return { events, status, ended: () => ended, resume: () => res!.resume() };
}

const MiB = 1 << 20;
/** the size of one big write's object */
const WRITE_BYTES = 700_000;

/** What the kernel may hold of a stream nobody reads: the sender's buffer at most, the receiver's default. */
function kernelBuffers(): number {
  try {
    const wmem = readFileSync('/proc/sys/net/ipv4/tcp_wmem', 'utf8').trim().split(/\s+/).map(Number);
    const rmem = readFileSync('/proc/sys/net/ipv4/tcp_rmem', 'utf8').trim().split(/\s+/).map(Number);
    return wmem[2] + rmem[1];
  } catch {
    return 8 * MiB;
  }
}

/** Modifies the n objects round-robin, `count` times in all, each write ~700 KB, 4 at a time. */
async function bigWrites(names: string[], count: number): Promise<number> {
  let next = 0;
  let last = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let i = next++; i < count; i = next++) {
        const r = await request(s, 'PATCH', `${CM}/${names[i % names.length]}`, { data: { v: randomBytes((WRITE_BYTES / 4) * 3).toString('base64') } }, MERGE);
        expect(r.status).toBe(200);
        last = Math.max(last, Number(r.json().metadata.resourceVersion));
      }
    }),
  );
  return last;
}

describe('slow watchers', () => {
  const names = ['b0', 'b1', 'b2', 'b3'];
  beforeAll(async () => {
    for (const n of names) await request(s, 'POST', CM, { metadata: { name: n } });
  });

  it('one that falls behind within its budget catches up once it reads again', async () => {
    const from = (await request(s, 'GET', CM)).json().metadata.resourceVersion;
    const w = pausedWatch(`${CM}?watch=1&resourceVersion=${from}&timeoutSeconds=120`);
    expect(await w.status).toBe(200);
    // ~10 MB: past what the kernel takes, within the 16 MiB budget
    const last = await bigWrites(names, 14);
    w.resume();
    await until(() => w.events.length >= 14, 30_000);
    expect(w.events.map((e) => e.type)).toEqual(Array(14).fill('MODIFIED'));
    expect(Number(w.events[13].object.metadata.resourceVersion)).toBe(last);
    expect(w.ended()).toBe(false);
  });

  it('one that cannot keep up is closed; writers and other watchers go on; it resumes from its last version', async () => {
    const from = (await request(s, 'GET', CM)).json().metadata.resourceVersion;
    const slow = pausedWatch(`${CM}?watch=1&resourceVersion=${from}&timeoutSeconds=120`);
    const other = openWatch(s, `${CM}?watch=1&resourceVersion=${from}&timeoutSeconds=120`);
    expect(await slow.status).toBe(200);
    expect(await other.status).toBe(200);
    // far past the 16 MiB budget plus what the kernel buffers for a reader that does not
    // read (the sender's buffer grows up to tcp_wmem's max, the receiver's stays near its
    // default), ~35 MB on a usual Linux; every write succeeds
    const COUNT = Math.ceil((16 * MiB + kernelBuffers() + 12 * MiB) / WRITE_BYTES);
    const last = await bigWrites(names, COUNT);
    await until(() => other.events.length >= COUNT, 30_000);
    expect(Number(other.events[COUNT - 1].object.metadata.resourceVersion)).toBe(last);
    expect(other.ended()).toBe(false);
    slow.resume();
    await until(() => slow.ended(), 30_000);
    const got = slow.events.length;
    expect(got).toBeLessThan(COUNT);
    // the client resumes from the last version it saw and gets exactly the rest
    const lastSeen = got ? slow.events[got - 1].object.metadata.resourceVersion : from;
    const resumed = openWatch(s, `${CM}?watch=1&resourceVersion=${lastSeen}&timeoutSeconds=120`);
    await until(() => resumed.events.length >= COUNT - got, 30_000);
    const rvs = [...slow.events, ...resumed.events].map((e) => Number(e.object.metadata.resourceVersion));
    expect(rvs).toEqual(other.events.map((e) => Number(e.object.metadata.resourceVersion)));
    other.close();
    resumed.close();
  }, 90_000);
});

describe('--min-request-timeout', () => {
  it('a watch without timeoutSeconds is closed by the server (between 1 and 2 s here)', async () => {
    const w = openWatch(s, `${CM}?watch=1`);
    expect(await w.status).toBe(200);
    await until(() => w.ended(), 10_000);
    // the names are there: synthetic ADDED events came first
    expect(w.events.filter((e) => e.type === 'ADDED').length).toBeGreaterThan(0);
  });
});

/**
 * The same reads against a type whose watch cache is on or off give the same answers:
 * get, lists (consistent, any, chunked, Exact from history, selectors) and watches
 * (from a version, synthetic, initial events with their bookmark, live).
 */
async function sameReads(srv: TestServer, path: string): Promise<void> {
  const get = (p: string) => request(srv, 'GET', p);
  const names = (l: any) => l.items.map((i: any) => i.metadata.name);
  for (let i = 0; i < 3; i++) expect((await request(srv, 'POST', path, { metadata: { name: `o${i}`, labels: { i: String(i) } } })).status).toBe(201);
  const old = (await get(path)).json().metadata.resourceVersion;
  const patched = (await request(srv, 'PATCH', `${path}/o0`, { metadata: { labels: { x: 'changed' } } }, MERGE)).json();
  for (let i = 3; i < 5; i++) expect((await request(srv, 'POST', path, { metadata: { name: `o${i}` } })).status).toBe(201);

  expect((await get(`${path}/o0`)).json().metadata.labels.x).toBe('changed');
  expect((await get(`${path}/o0?resourceVersion=0`)).json().metadata.resourceVersion).toBe(patched.metadata.resourceVersion);
  expect((await get(`${path}/o0?resourceVersion=${old}`)).json().metadata.labels.x).toBe('changed');
  expect((await get(`${path}/nope`)).status).toBe(404);
  const all = (await get(path)).json();
  expect(names(all)).toEqual(['o0', 'o1', 'o2', 'o3', 'o4']);
  expect(names((await get(`${path}?resourceVersion=0`)).json())).toEqual(['o0', 'o1', 'o2', 'o3', 'o4']);
  const p1 = (await get(`${path}?limit=2`)).json();
  expect(names(p1)).toEqual(['o0', 'o1']);
  expect(p1.metadata.remainingItemCount).toBe(3);
  const p2 = (await get(`${path}?limit=2&continue=${encodeURIComponent(p1.metadata.continue)}`)).json();
  expect(names(p2)).toEqual(['o2', 'o3']);
  expect(p2.metadata.resourceVersion).toBe(p1.metadata.resourceVersion);
  const exact = (await get(`${path}?resourceVersion=${old}&resourceVersionMatch=Exact`)).json();
  expect(exact.metadata.resourceVersion).toBe(old);
  expect(names(exact)).toEqual(['o0', 'o1', 'o2']);
  expect(exact.items[0].metadata.labels.x).toBeUndefined();
  expect(names((await get(`${path}?labelSelector=x%3Dchanged`)).json())).toEqual(['o0']);
  expect(names((await get(`${path}?fieldSelector=metadata.name%3Do3`)).json())).toEqual(['o3']);

  const fromOld = openWatch(srv, `${path}?watch=1&resourceVersion=${old}&timeoutSeconds=60`);
  const synthetic = openWatch(srv, `${path}?watch=1&timeoutSeconds=60`);
  const initial = openWatch(srv, `${path}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=60`);
  // filtered watchers from a version judge each replayed event by the object's previous state
  const hasI = openWatch(srv, `${path}?watch=1&resourceVersion=${old}&labelSelector=i&timeoutSeconds=60`);
  const hasX = openWatch(srv, `${path}?watch=1&resourceVersion=${old}&labelSelector=x&timeoutSeconds=60`);
  await until(() => fromOld.events.length >= 3 && synthetic.events.length >= 5 && initial.events.length >= 6 && hasI.events.length >= 1 && hasX.events.length >= 1, 15_000);
  expect(fromOld.events.map((e) => [e.type, e.object.metadata.name])).toEqual([['MODIFIED', 'o0'], ['ADDED', 'o3'], ['ADDED', 'o4']]);
  expect(hasI.events.map((e) => [e.type, e.object.metadata.name])).toEqual([['MODIFIED', 'o0']]);
  expect(hasX.events.map((e) => [e.type, e.object.metadata.name])).toEqual([['ADDED', 'o0']]);
  hasI.close();
  hasX.close();
  expect(synthetic.events.map((e) => e.type)).toEqual(Array(5).fill('ADDED'));
  expect(initial.events.map((e) => e.type)).toEqual([...Array(5).fill('ADDED'), 'BOOKMARK']);
  expect(initial.events[5].object.metadata.annotations).toEqual({ 'k8s.io/initial-events-end': 'true' });
  await request(srv, 'DELETE', `${path}/o4`);
  for (const w of [fromOld, synthetic, initial]) {
    const d = await until(() => w.events.find((e) => e.type === 'DELETED'), 15_000);
    expect(d.object.metadata.name).toBe('o4');
    w.close();
  }
}

describe('watch cache switches', () => {
  it('--watch-cache-sizes=secrets#0: secrets are read from storage, with the same results', async () => {
    await sameReads(s, SECRETS);
  });
  it('and configmaps, still cached, answer the same reads alike', async () => {
    await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: 'lim2' } });
    await sameReads(s, '/api/v1/namespaces/lim2/configmaps');
  });
  it('--watch-cache=false: every type is read from storage, with the same results', async () => {
    const s2 = await startServer({ args: ['--watch-cache=false', '--controllers=*,-root-ca-certificate-publisher-controller'] });
    try {
      await sameReads(s2, '/api/v1/namespaces/default/configmaps');
    } finally {
      await s2.stop();
      s2.cleanup();
    }
  });
});
