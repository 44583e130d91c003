// Revision history: watch from an older resourceVersion, Exact lists, chunked lists with
// a stable collection version, and 410 once history is compacted away.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { openWatch, request, startServer, until, type TestServer } from './helpers/server.js';

let s: TestServer;
const CM = '/api/v1/namespaces/default/configmaps';

beforeAll(async () => {
  // a short retention so that compaction can be observed within the test
  s = await startServer({ args: ['--history-retention=3s', '--default-watch-cache-size=4', '--controllers=*,-root-ca-certificate-publisher-controller'] });
});
afterAll(async () => {
  await s?.stop();
  s?.cleanup();
});

describe('revision history', () => {
  it('watch from an older version replays every change since, in order, then streams', async () => {
    const first = (await request(s, 'POST', CM, { metadata: { name: 'h0' }, data: { v: '0' } })).json();
    const from = first.metadata.resourceVersion;
    for (let i = 1; i <= 10; i++) await request(s, 'POST', CM, { metadata: { name: `h${i}` } });
    await request(s, 'PATCH', `${CM}/h0`, { data: { v: '1' } }, { 'content-type': 'application/merge-patch+json' });
    await request(s, 'DELETE', `${CM}/h1`);
    // the ring holds 4 events: the rest must come from the shard's revision log
    const w = openWatch(s, `${CM}?watch=1&resourceVersion=${from}`);
    expect(await w.status).toBe(200);
    await until(() => w.events.length >= 12);
    expect(w.events.slice(0, 10).map((e) => e.type)).toEqual(Array(10).fill('ADDED'));
    expect(w.events[10]).toMatchObject({ type: 'MODIFIED', object: { metadata: { name: 'h0' }, data: { v: '1' } } });
    expect(w.events[11]).toMatchObject({ type: 'DELETED', object: { metadata: { name: 'h1' } } });
    const rvs = w.events.map((e) => Number(e.object.metadata.resourceVersion));
    expect([...rvs].sort((a, b) => a - b)).toEqual(rvs);
    await request(s, 'POST', CM, { metadata: { name: 'live' } });
    await until(() => w.events.find((e) => e.object.metadata.name === 'live'));
    w.close();
  });

  it('an Exact list at an older version shows the collection as it was', async () => {
    const a = (await request(s, 'POST', CM, { metadata: { name: 'ex-a' } })).json();
    const at = a.metadata.resourceVersion;
    await request(s, 'POST', CM, { metadata: { name: 'ex-b' } });
    await request(s, 'DELETE', `${CM}/ex-a`);
    const l = (await request(s, 'GET', `${CM}?resourceVersion=${at}&resourceVersionMatch=Exact`)).json();
    expect(l.metadata.resourceVersion).toBe(at);
    const names = l.items.map((i: any) => i.metadata.name);
    expect(names).toContain('ex-a');
    expect(names).not.toContain('ex-b');
  });

  it('chunked lists keep one collection version and a continue token', async () => {
    for (let i = 0; i < 7; i++) await request(s, 'POST', '/api/v1/namespaces/kube-public/configmaps', { metadata: { name: `page-${i}` } });
    const p1 = (await request(s, 'GET', '/api/v1/namespaces/kube-public/configmaps?limit=3')).json();
    expect(p1.items).toHaveLength(3);
    expect(p1.metadata.remainingItemCount).toBe(4);
    await request(s, 'POST', '/api/v1/namespaces/kube-public/configmaps', { metadata: { name: 'page-zz-late' } });
    const p2 = (await request(s, 'GET', `/api/v1/namespaces/kube-public/configmaps?limit=3&continue=${p1.metadata.continue}`)).json();
    const p3 = (await request(s, 'GET', `/api/v1/namespaces/kube-public/configmaps?limit=3&continue=${p2.metadata.continue}`)).json();
    expect(p2.metadata.resourceVersion).toBe(p1.metadata.resourceVersion);
    expect(p3.metadata.resourceVersion).toBe(p1.metadata.resourceVersion);
    const all = [...p1.items, ...p2.items, ...p3.items].map((i: any) => i.metadata.name);
    expect(all).toEqual(['page-0', 'page-1', 'page-2', 'page-3', 'page-4', 'page-5', 'page-6']);
    expect(p3.metadata.continue ?? '').toBe('');
  });

  it('a get at a version newer than any committed waits, then is 504', async () => {
    const r = await request(s, 'GET', `${CM}/h0?resourceVersion=999999999`);
    expect(r.status).toBe(504);
    expect(r.json().message).toContain('Too large resource version');
    expect(r.headers['retry-after']).toBe('1');
  });

  it('after compaction, a watch from a compacted version gets a 410 ERROR event', async () => {
    const old = (await request(s, 'POST', CM, { metadata: { name: 'soon-gone' } })).json().metadata.resourceVersion;
    await request(s, 'PATCH', `${CM}/soon-gone`, { data: { x: 'y' } }, { 'content-type': 'application/merge-patch+json' });
    // retention 3 s, compaction every second
    await new Promise((r) => setTimeout(r, 5000));
    await request(s, 'POST', CM, { metadata: { name: 'after-compaction' } });
    const w = openWatch(s, `${CM}?watch=1&resourceVersion=${Number(old) - 1}`);
    expect(await w.status).toBe(200);
    await until(() => w.events.length >= 1);
    expect(w.events[0]).toMatchObject({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } });
    const l = await request(s, 'GET', `${CM}?resourceVersion=${Number(old) - 1}&resourceVersionMatch=Exact`);
    expect(l.status).toBe(410);
    w.close();
  });
});

// The B-tree takes the log's records once per --storage-batch-interval; every read of the
// revision history (here all of them: the watch cache is off) must see the newer records,
// which the front holds until then, without waiting for the B-tree.
describe('reads of records the B-tree has not taken yet', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startServer({ args: ['--storage-batch-interval=1h', '--watch-cache=false', '--controllers=*,-root-ca-certificate-publisher-controller'] });
  });
  afterAll(async () => {
    await t?.stop();
    t?.cleanup();
  });

  it('get, list, an Exact list at an older version and a watch replay all see them; a restart keeps them', async () => {
    const a = (await request(t, 'POST', CM, { metadata: { name: 'n-a' }, data: { v: '1' } })).json();
    const b = (await request(t, 'POST', CM, { metadata: { name: 'n-b' } })).json();
    await request(t, 'PATCH', `${CM}/n-a`, { data: { v: '2' } }, { 'content-type': 'application/merge-patch+json' });
    expect((await request(t, 'DELETE', `${CM}/n-b`)).status).toBe(200);

    const got = await request(t, 'GET', `${CM}/n-a`);
    expect(got.status).toBe(200);
    expect(got.json().data).toEqual({ v: '2' });
    expect((await request(t, 'GET', `${CM}/n-b`)).status).toBe(404);
    const names = (r: { json(): any }) => r.json().items.map((i: any) => i.metadata.name).filter((n: string) => n.startsWith('n-'));
    expect(names(await request(t, 'GET', CM))).toEqual(['n-a']);
    const then = await request(t, 'GET', `${CM}?resourceVersion=${b.metadata.resourceVersion}&resourceVersionMatch=Exact`);
    expect(then.status).toBe(200);
    expect(names(then)).toEqual(['n-a', 'n-b']);
    expect(then.json().items[0].data).toEqual({ v: '1' });

    const w = openWatch(t, `${CM}?watch=1&resourceVersion=${a.metadata.resourceVersion}`);
    expect(await w.status).toBe(200);
    await until(() => w.events.length >= 3);
    expect(w.events.map((e) => [e.type, e.object.metadata.name])).toEqual([
      ['ADDED', 'n-b'],
      ['MODIFIED', 'n-a'],
      ['DELETED', 'n-b'],
    ]);
    w.close();

    // a clean stop hands the B-tree everything; a kill leaves it to the log's replay
    await t.stop();
    await t.restart();
    expect((await request(t, 'GET', `${CM}/n-a`)).json().data).toEqual({ v: '2' });
    await request(t, 'POST', CM, { metadata: { name: 'n-c' } });
    await t.kill9();
    await t.restart();
    expect(names(await request(t, 'GET', CM))).toEqual(['n-a', 'n-c']);
  });
});
