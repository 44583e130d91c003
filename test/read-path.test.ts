// The read path against a started server, cell by cell: the get and list tables of spec
// 4.6, the Invalid cells as kube-apiserver rejects them, the 400, 410 and 504 rules, the
// watch semantics of 6.1 (synthetic events, exact start, bookmarks, initial events, single
// objects, selector transitions, timeouts), and per-kind field selectors.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { openWatch, request, startServer, until, type TestServer } from './helpers/server.js';

let s: TestServer;
const NS = 't46';
const CM = `/api/v1/namespaces/${NS}/configmaps`;
/** versions of the fixture: `old` sees c0..c2 with c0 at v1; `now` sees c0 (v2) .. c4 */
let old = '';

const get = (path: string) => request(s, 'GET', path);
const names = (l: any) => l.items.map((i: any) => i.metadata.name);
const q = (params: Record<string, string | number | undefined>) =>
  Object.entries(params)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`)
    .join('&');

beforeAll(async () => {
  // Without kube-root-ca.crt: the lists below hold exactly the fixtures.
  s = await startServer({ args: ['--history-retention=8s', '--watch-bookmark-interval=1s', '--controllers=*,-root-ca-certificate-publisher-controller'] });
  expect((await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: NS } })).status).toBe(201);
  for (let i = 0; i < 3; i++) await request(s, 'POST', CM, { metadata: { name: `c${i}` }, data: { v: '1' } });
  old = (await get(`${CM}/c2`)).json().metadata.resourceVersion;
  await request(s, 'PATCH', `${CM}/c0`, { data: { v: '2' } }, { 'content-type': 'application/merge-patch+json' });
  for (let i = 3; i < 5; i++) await request(s, 'POST', CM, { metadata: { name: `c${i}` }, data: { v: '1' } });
});
afterAll(async () => {
  await s?.stop();
  s?.cleanup();
});

function expectInvalid(r: { status: number; json(): any }, cause: string) {
  expect(r.status).toBe(422);
  const st = r.json();
  expect(st).toMatchObject({ kind: 'Status', reason: 'Invalid', code: 422, details: { group: 'meta.k8s.io', kind: 'ListOptions', name: '' } });
  expect(st.message).toContain(`ListOptions.meta.k8s.io "" is invalid: `);
  expect(st.message).toContain(cause);
  expect(st.details.causes[0].field).toBe(cause.split(':')[0]);
}

describe('get (spec 4.6)', () => {
  // (the 504 of a version not reached yet is below, with the other slow cases)
  it('unset is the most recent, 0 any, another value not older than', async () => {
    expect((await get(`${CM}/c0`)).json().data.v).toBe('2');
    expect((await get(`${CM}/c0?resourceVersion=0`)).json().data.v).toBe('2');
    expect((await get(`${CM}/c0?resourceVersion=${old}`)).json().data.v).toBe('2');
  });

});

describe('list (spec 4.6), every cell', () => {
  const list = (p: Record<string, string | number | undefined>) => get(`${CM}?${q(p)}`);

  it('match unset, limit unset: most recent / any / not older than', async () => {
    const recent = (await list({})).json();
    expect(names(recent)).toEqual(['c0', 'c1', 'c2', 'c3', 'c4']);
    expect(recent.items[0].data.v).toBe('2');
    expect(recent.metadata.continue).toBeUndefined();
    expect(recent.metadata.remainingItemCount).toBeUndefined();
    expect(names((await list({ resourceVersion: '0' })).json())).toEqual(['c0', 'c1', 'c2', 'c3', 'c4']);
    const noOlder = (await list({ resourceVersion: old })).json();
    expect(names(noOlder)).toEqual(['c0', 'c1', 'c2', 'c3', 'c4']);
    expect(Number(noOlder.metadata.resourceVersion)).toBeGreaterThanOrEqual(Number(old));
  });

  it('match unset, limit=n: most recent / any / exact (from history, collection rv = the one asked)', async () => {
    const recent = (await list({ limit: 2 })).json();
    expect(names(recent)).toEqual(['c0', 'c1']);
    expect(recent.metadata.remainingItemCount).toBe(3);
    expect(recent.metadata.continue).toBeTruthy();
    const any = (await list({ resourceVersion: '0', limit: 2 })).json();
    expect(any.items.length).toBeGreaterThan(0);
    const exact = (await list({ resourceVersion: old, limit: 2 })).json();
    expect(exact.metadata.resourceVersion).toBe(old);
    expect(names(exact)).toEqual(['c0', 'c1']);
    expect(exact.items[0].data.v).toBe('1');
    expect(exact.metadata.remainingItemCount).toBe(1);
    const rest = (await list({ limit: 2, continue: exact.metadata.continue })).json();
    expect(rest.metadata.resourceVersion).toBe(old);
    expect(names(rest)).toEqual(['c2']);
    expect(rest.metadata.continue).toBeUndefined();
  });

  it('match unset, limit=n, continue: continuation with rv unset or 0; 400 with another rv', async () => {
    const first = (await list({ limit: 2 })).json();
    for (const rv of [undefined, '0']) {
      const next = (await list({ limit: 2, continue: first.metadata.continue, resourceVersion: rv })).json();
      expect(names(next)).toEqual(['c2', 'c3']);
      expect(next.metadata.resourceVersion).toBe(first.metadata.resourceVersion);
    }
    const bad = await list({ limit: 2, continue: first.metadata.continue, resourceVersion: old });
    expect(bad.status).toBe(400);
    expect(bad.json()).toMatchObject({ reason: 'BadRequest', message: 'specifying resource version is not allowed when using continue' });
    const garbage = await list({ limit: 2, continue: 'not-a-token' });
    expect(garbage.status).toBe(400);
  });

  it('Exact: Invalid with rv unset or 0; exact with another value, with and without limit', async () => {
    for (const limit of [undefined, 2]) {
      expectInvalid(await list({ resourceVersionMatch: 'Exact', limit }), 'resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided');
      expectInvalid(await list({ resourceVersionMatch: 'Exact', resourceVersion: '0', limit }), 'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"');
      const l = (await list({ resourceVersionMatch: 'Exact', resourceVersion: old, limit })).json();
      expect(l.metadata.resourceVersion).toBe(old);
      expect(names(l)).toEqual(limit ? ['c0', 'c1'] : ['c0', 'c1', 'c2']);
      expect(l.items[0].data.v).toBe('1');
    }
  });

  it('NotOlderThan: Invalid with rv unset; any with 0; not older than with another value, with and without limit', async () => {
    for (const limit of [undefined, 2]) {
      expectInvalid(await list({ resourceVersionMatch: 'NotOlderThan', limit }), 'resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided');
      expect((await list({ resourceVersionMatch: 'NotOlderThan', resourceVersion: '0', limit })).status).toBe(200);
      const l = (await list({ resourceVersionMatch: 'NotOlderThan', resourceVersion: old, limit })).json();
      expect(Number(l.metadata.resourceVersion)).toBeGreaterThanOrEqual(Number(old));
      expect(l.items[0].data.v).toBe('2');
      expect(names(l)).toEqual(limit ? ['c0', 'c1'] : ['c0', 'c1', 'c2', 'c3', 'c4']);
    }
  });

  it('other invalid options: match with continue, an unknown match, sendInitialEvents on a list', async () => {
    const first = (await list({ limit: 2 })).json();
    expectInvalid(await list({ limit: 2, continue: first.metadata.continue, resourceVersion: '0', resourceVersionMatch: 'NotOlderThan' }), 'resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided');
    expectInvalid(await list({ resourceVersion: '1', resourceVersionMatch: 'Bogus' }), 'resourceVersionMatch: Unsupported value: "Bogus": supported values: "Exact", "NotOlderThan", ""');
    expectInvalid(await list({ sendInitialEvents: 'true' }), 'sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list');
  });

  it('remainingItemCount is omitted with selectors and on the last chunk', async () => {
    const sel = (await list({ limit: 2, labelSelector: '!nothing' })).json();
    expect(sel.metadata.continue).toBeTruthy();
    expect(sel.metadata.remainingItemCount).toBeUndefined();
    const fsel = (await list({ limit: 2, fieldSelector: `metadata.namespace=${NS}` })).json();
    expect(fsel.metadata.continue).toBeTruthy();
    expect(fsel.metadata.remainingItemCount).toBeUndefined();
    const last = (await list({ limit: 5 })).json();
    expect(last.metadata.continue).toBeUndefined();
    expect(last.metadata.remainingItemCount).toBeUndefined();
  });
});

describe('selectors', () => {
  const SEL = '/api/v1/namespaces/sel/configmaps';
  const PODS = '/api/v1/namespaces/sel/pods';
  beforeAll(async () => {
    await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: 'sel' } });
    const mk = (name: string, labels: Record<string, string>) => request(s, 'POST', SEL, { metadata: { name, labels } });
    await mk('a', { app: 'web', tier: 'front' });
    await mk('b', { app: 'api', tier: 'back' });
    await mk('c', { app: 'db' });
    await mk('d', {});
    const pod = (name: string, node: string, hostNetwork = false) =>
      request(s, 'POST', PODS, { metadata: { name }, spec: { nodeName: node, hostNetwork, containers: [{ name: 'c', image: 'busybox' }] } });
    expect((await pod('p1', 'n1')).status).toBe(201);
    expect((await pod('p2', 'n2', true)).status).toBe(201);
  });

  it('label selectors: =, ==, !=, in, notin, exists, !', async () => {
    const ls = async (sel: string) => names((await get(`${SEL}?labelSelector=${encodeURIComponent(sel)}`)).json());
    expect(await ls('app=web')).toEqual(['a']);
    expect(await ls('app==api')).toEqual(['b']);
    expect(await ls('app!=web')).toEqual(['b', 'c', 'd']);
    expect(await ls('app in (web,db)')).toEqual(['a', 'c']);
    expect(await ls('app notin (web,db)')).toEqual(['b', 'd']);
    expect(await ls('tier')).toEqual(['a', 'b']);
    expect(await ls('!tier')).toEqual(['c', 'd']);
    expect(await ls('app,!tier')).toEqual(['c']);
    const bad = await get(`${SEL}?labelSelector=${encodeURIComponent('a b c')}`);
    expect(bad.status).toBe(400);
  });

  it('field selectors: metadata fields everywhere, per-kind fields, 400 for the rest', async () => {
    const fs = async (path: string, sel: string) => get(`${path}?fieldSelector=${encodeURIComponent(sel)}`);
    expect(names((await fs(SEL, 'metadata.name=b')).json())).toEqual(['b']);
    expect(names((await fs(SEL, 'metadata.name!=b')).json())).toEqual(['a', 'c', 'd']);
    expect(names((await fs('/api/v1/configmaps', 'metadata.namespace=sel')).json())).toEqual(['a', 'b', 'c', 'd']);
    expect(names((await fs(PODS, 'spec.nodeName=n2')).json())).toEqual(['p2']);
    expect(names((await fs(PODS, 'spec.host=n1')).json())).toEqual(['p1']);
    expect(names((await fs(PODS, 'spec.hostNetwork=true')).json())).toEqual(['p2']);
    expect(names((await fs(PODS, 'spec.hostNetwork=false,spec.nodeName=n1')).json())).toEqual(['p1']);
    const badPod = await fs(PODS, 'status.hostIP=1.2.3.4');
    expect(badPod.status).toBe(400);
    expect(badPod.json()).toMatchObject({ reason: 'BadRequest', message: 'field label not supported: status.hostIP' });
    const badCm = await fs(SEL, 'data.x=1');
    expect(badCm.status).toBe(400);
    expect(badCm.json().message).toBe('"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"');
    const badNode = await fs('/api/v1/nodes', 'metadata.namespace=x');
    expect(badNode.json().message).toBe('field label not supported: metadata.namespace');
    const VALUE_MSG =
      "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
    const badValue = await get(`${SEL}?labelSelector=${encodeURIComponent('idx=-bad-')}`);
    expect(badValue.status).toBe(400);
    expect(badValue.json()).toMatchObject({ reason: 'BadRequest', message: `unable to parse requirement: values[0][idx]: Invalid value: "-bad-": ${VALUE_MSG}` });
    const badKey = await get(`${SEL}?watch=1&labelSelector=${encodeURIComponent('-bad in (x)')}`);
    expect(badKey.status).toBe(400);
    expect(badKey.json().message).toMatch(/^unable to parse requirement: <nil>: Invalid value: "-bad": name part must consist of/);
    // "in ()" is the empty value: it selects nothing here, and is no error
    const empty = await get(`${SEL}?labelSelector=${encodeURIComponent('app in ()')}`);
    expect(empty.status).toBe(200);
    expect(names(empty.json())).toEqual([]);
    const badWatch = await get(`${PODS}?watch=1&fieldSelector=spec.bogus%3D1`);
    expect(badWatch.status).toBe(400);
    const secrets = await fs('/api/v1/namespaces/sel/secrets', 'type=Opaque');
    expect(secrets.status).toBe(200);
    const events = await fs('/api/v1/events', 'involvedObject.kind=Pod,reason=Started,source=kubelet,type=Normal,reportingComponent=x');
    expect(events.status).toBe(200);
    expect((await fs('/api/v1/namespaces', 'status.phase=Active')).json().items.length).toBeGreaterThan(0);
  });

  it('deletecollection honours selectors', async () => {
    const r = await request(s, 'DELETE', `${SEL}?labelSelector=app%20in%20(web,api)`);
    expect(r.status).toBe(200);
    expect(names((await get(SEL)).json())).toEqual(['c', 'd']);
    expect((await request(s, 'DELETE', `${SEL}?fieldSelector=data.x%3D1`)).status).toBe(400);
  });
});

describe('watch (spec 4.6, 6.1)', () => {
  const W = '/api/v1/namespaces/w/configmaps';
  beforeAll(async () => {
    await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: 'w' } });
    await request(s, 'POST', W, { metadata: { name: 'w0', labels: { pick: 'yes' } } });
  });

  it('unset and 0: synthetic ADDED first, then changes; another value starts exactly after it', async () => {
    for (const rv of ['', '0']) {
      const w = openWatch(s, `${W}?watch=1${rv ? `&resourceVersion=${rv}` : ''}`);
      await until(() => w.events.length >= 1);
      expect(w.events[0]).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'w0' } } });
      w.close();
    }
    const at = (await get(`${W}/w0`)).json().metadata.resourceVersion;
    const w = openWatch(s, `${W}?watch=1&resourceVersion=${at}`);
    expect(await w.status).toBe(200);
    await request(s, 'POST', W, { metadata: { name: 'w1' } });
    await until(() => w.events.length >= 1);
    expect(w.events[0]).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'w1' } } });
    w.close();
  });

  it('invalid watch options are 422 as kube words them', async () => {
    expectInvalid(await get(`${W}?watch=1&sendInitialEvents=true`), 'resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan');
    expectInvalid(await get(`${W}?watch=1&resourceVersionMatch=NotOlderThan&resourceVersion=0`), 'resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided');
    const r = await get(`${W}?watch=1&sendInitialEvents=true&resourceVersionMatch=Exact`);
    expect(r.json().message).toContain('resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"');
  });

  it('a resourceVersion that is not a number: the reason-less 500 kube gives, for watch, get and list', async () => {
    for (const path of [`${W}?watch=1&resourceVersion=abc`, `${W}/w0?resourceVersion=abc`, `${W}?resourceVersion=abc`, `${W}?resourceVersion=-1&limit=1`]) {
      const r = await get(path);
      const rv = new URLSearchParams(path.split('?')[1]).get('resourceVersion');
      expect(r.status, path).toBe(500);
      expect(r.json()).toEqual({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `resourceVersion: Invalid value: "${rv}": strconv.ParseUint: parsing "${rv}": invalid syntax`,
        code: 500,
      });
    }
  });

  it('query values as kube converts them: a bool is never refused, an integer is strconv.ParseInt', async () => {
    // watch=abc is true (only false and 0 are false)
    const w = openWatch(s, `${W}?watch=abc`);
    expect(await w.status).toBe(200);
    await until(() => w.events.length >= 1);
    expect(w.events[0].type).toBe('ADDED');
    w.close();
    expect((await get(`${W}?watch=FALSE`)).json().kind).toBe('ConfigMapList');
    expect((await get(`${W}?allowWatchBookmarks=maybe`)).status).toBe(200);
    const bad = await get(`${W}?watch=1&timeoutSeconds=0.1s`);
    expect(bad.status).toBe(400);
    expect(bad.json()).toMatchObject({ reason: 'BadRequest', message: 'strconv.ParseInt: parsing "0.1s": invalid syntax' });
    expect((await get(`${W}?limit=x`)).json().message).toBe('strconv.ParseInt: parsing "x": invalid syntax');
  });

  it('a named GET with ?watch is a plain get of the object', async () => {
    const r = await get(`${W}/w0?watch=1`);
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ kind: 'ConfigMap', metadata: { name: 'w0' } });
  });

  it('a single-object watch whose fieldSelector names another object is 400', async () => {
    const r = await get(`/api/v1/watch/namespaces/w/configmaps/w0?fieldSelector=metadata.name%3Dother`);
    expect(r.status).toBe(400);
    expect(r.json()).toMatchObject({ reason: 'BadRequest', code: 400, message: "fieldSelector metadata.name doesn't match requested name" });
    expect((await get(`/api/v1/watch/namespaces/w/configmaps/w0?fieldSelector=metadata.name!%3Dw0`)).status).toBe(400);
    // the same name, or other fields beside it, are fine
    const ok = openWatch(s, `/api/v1/watch/namespaces/w/configmaps/w0?fieldSelector=metadata.name%3Dw0,metadata.namespace%3Dw`);
    expect(await ok.status).toBe(200);
    await until(() => ok.events.length >= 1);
    expect(ok.events[0].object.metadata.name).toBe('w0');
    ok.close();
  });

  it('timeoutSeconds=0 is unset: the watch stays open (a random timeout of at least --min-request-timeout)', async () => {
    const at = (await get(W)).json().metadata.resourceVersion;
    const w = openWatch(s, `${W}?watch=1&timeoutSeconds=0&resourceVersion=${at}`);
    expect(await w.status).toBe(200);
    await new Promise((r) => setTimeout(r, 500));
    await request(s, 'POST', W, { metadata: { name: 'after-zero' } });
    await until(() => w.events.length >= 1);
    expect(w.events[0]).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'after-zero' } } });
    expect(w.ended()).toBe(false);
    w.close();
    await request(s, 'DELETE', `${W}/after-zero`);
  });

  it('sendInitialEvents: ADDED events, a BOOKMARK marking their end, then the stream', async () => {
    const w = openWatch(s, `${W}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`);
    await until(() => w.events.find((e) => e.type === 'BOOKMARK'));
    const bm = w.events.findIndex((e) => e.type === 'BOOKMARK');
    expect(w.events.slice(0, bm).every((e) => e.type === 'ADDED')).toBe(true);
    expect(w.events.slice(0, bm).map((e) => e.object.metadata.name)).toEqual(['w0', 'w1']);
    const b = w.events[bm].object;
    expect(b).toEqual({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: b.metadata.resourceVersion, annotations: { 'k8s.io/initial-events-end': 'true' } } });
    await request(s, 'POST', W, { metadata: { name: 'w2' } });
    await until(() => w.events.find((e) => e.type === 'ADDED' && e.object.metadata.name === 'w2'));
    w.close();
    // with a version: the state at least that new; without bookmarks: no bookmark
    const at = (await get(`${W}/w0`)).json().metadata.resourceVersion;
    const w2 = openWatch(s, `${W}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=${at}`);
    await until(() => w2.events.length >= 3);
    expect(w2.events.map((e) => e.type)).toEqual(['ADDED', 'ADDED', 'ADDED']);
    w2.close();
    // sendInitialEvents=false: no synthetic events
    const w3 = openWatch(s, `${W}?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan`);
    expect(await w3.status).toBe(200);
    await request(s, 'POST', W, { metadata: { name: 'w3' } });
    await until(() => w3.events.length >= 1);
    expect(w3.events[0]).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'w3' } } });
    w3.close();
  });

  it('allowWatchBookmarks: periodic BOOKMARK events carrying only the resourceVersion', async () => {
    const at = (await get(`${W}/w0`)).json().metadata.resourceVersion;
    const w = openWatch(s, `${W}?watch=1&resourceVersion=${at}&allowWatchBookmarks=true`);
    // a change elsewhere moves the shard's version; the idle watcher learns it by a bookmark
    await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'elsewhere' } });
    const b = await until(() => w.events.find((e) => e.type === 'BOOKMARK'), 15_000);
    expect(Object.keys(b.object.metadata)).toEqual(['resourceVersion']);
    expect(b.object.kind).toBe('ConfigMap');
    expect(Number(b.object.metadata.resourceVersion)).toBeGreaterThan(Number(at));
    w.close();
  });

  it('timeoutSeconds closes the stream', async () => {
    const w = openWatch(s, `${W}?watch=1&timeoutSeconds=1`);
    expect(await w.status).toBe(200);
    expect(await until(() => w.ended(), 10_000)).toBe(true);
  });

  it('single-object watches: fieldSelector metadata.name and the path form; DELETED carries the last state', async () => {
    const byField = openWatch(s, `${W}?watch=1&fieldSelector=metadata.name%3Dw1`);
    const byPath = openWatch(s, `/api/v1/watch/namespaces/w/configmaps/w1`);
    await until(() => byField.events.length >= 1 && byPath.events.length >= 1);
    await request(s, 'PATCH', `${W}/w1`, { data: { last: 'state' } }, { 'content-type': 'application/merge-patch+json' });
    await request(s, 'PATCH', `${W}/w0`, { data: { other: 'x' } }, { 'content-type': 'application/merge-patch+json' });
    await request(s, 'DELETE', `${W}/w1`);
    for (const w of [byField, byPath]) {
      await until(() => w.events.length >= 3);
      expect(w.events.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
      expect(w.events.every((e) => e.object.metadata.name === 'w1')).toBe(true);
      expect(w.events[2].object.data).toEqual({ last: 'state' });
      w.close();
    }
  });

  it('selector transitions: a watcher sees ADDED when an object starts matching and DELETED when it stops', async () => {
    const w = openWatch(s, `${W}?watch=1&labelSelector=pick%3Dyes`);
    await until(() => w.events.length >= 1);
    expect(w.events[0].object.metadata.name).toBe('w0');
    await request(s, 'PATCH', `${W}/w2`, { metadata: { labels: { pick: 'yes' } } }, { 'content-type': 'application/merge-patch+json' });
    await request(s, 'PATCH', `${W}/w2`, { data: { a: 'b' } }, { 'content-type': 'application/merge-patch+json' });
    await request(s, 'PATCH', `${W}/w2`, { metadata: { labels: { pick: 'no' } } }, { 'content-type': 'application/merge-patch+json' });
    await until(() => w.events.length >= 4);
    expect(w.events.slice(1).map((e) => [e.type, e.object.metadata.name])).toEqual([
      ['ADDED', 'w2'],
      ['MODIFIED', 'w2'],
      ['DELETED', 'w2'],
    ]);
    w.close();
  });
});

describe('504 and 410', () => {
  it('a version newer than any committed waits, then 504 Too large resource version with Retry-After', async () => {
    const r = await get(`${CM}/c0?resourceVersion=99999999`);
    expect(r.status).toBe(504);
    expect(r.json()).toMatchObject({ reason: 'Timeout', code: 504, details: { retryAfterSeconds: 1 } });
    expect(r.json().message).toMatch(/^Timeout: Too large resource version: \d+, current: \d+$/);
    expect(r.headers['retry-after']).toBe('1');
  });
  it('sendInitialEvents from a version not reached: waits, then 200 with the 504 as an ERROR event', async () => {
    const w = openWatch(s, `${CM}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=99999999`);
    expect(await w.status).toBe(200);
    await until(() => w.ended() && w.events.length >= 1, 15_000);
    expect(w.events).toHaveLength(1);
    const st = w.events[0].object;
    expect(w.events[0].type).toBe('ERROR');
    expect(st).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'Timeout', code: 504, details: { retryAfterSeconds: 1, causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }] } });
    expect(st.message).toMatch(/^Timeout: Too large resource version: 99999999, current: \d+$/);
  });
  it('a plain watch from a version not reached is not refused: it skips events up to it', async () => {
    const now = Number((await get(CM)).json().metadata.resourceVersion);
    const w = openWatch(s, `${CM}?watch=1&resourceVersion=${now + 1}`);
    expect(await w.status).toBe(200);
    await request(s, 'PATCH', `${CM}/c3`, { data: { v: 'skipped' } }, { 'content-type': 'application/merge-patch+json' });
    await request(s, 'PATCH', `${CM}/c3`, { data: { v: 'seen' } }, { 'content-type': 'application/merge-patch+json' });
    await until(() => w.events.length >= 1);
    expect(w.events[0]).toMatchObject({ type: 'MODIFIED', object: { data: { v: 'seen' } } });
    w.close();
  });
  it('a continue token older than 5 minutes is 410 with the inconsistent continue token', async () => {
    const first = (await get(`${CM}?limit=2`)).json();
    // the token is opaque to clients; here it is aged by hand rather than by waiting
    const tok = JSON.parse(Buffer.from(first.metadata.continue, 'base64url').toString());
    tok.t -= 5 * 60 * 1000 + 1000;
    const aged = Buffer.from(JSON.stringify(tok)).toString('base64url');
    const r = await get(`${CM}?limit=2&continue=${aged}`);
    expect(r.status).toBe(410);
    expect(r.json()).toMatchObject({ reason: 'Expired', code: 410 });
    const rest = (await get(`${CM}?limit=2&continue=${r.json().metadata.continue}`)).json();
    expect(names(rest)).toEqual(['c2', 'c3']);
  });

  it('a version not committed yet is waited for: a write meanwhile answers the get', async () => {
    const now = Number((await get(CM)).json().metadata.resourceVersion);
    const pending = get(`${CM}/c3?resourceVersion=${now + 1}`);
    const w = await request(s, 'PATCH', `${CM}/c4`, { data: { v: 'meanwhile' } }, { 'content-type': 'application/merge-patch+json' });
    expect(Number(w.json().metadata.resourceVersion)).toBeGreaterThanOrEqual(now + 1);
    const r = await pending;
    expect(r.status).toBe(200);
    expect(r.json().metadata.name).toBe('c3');
  });
  it('a version newer than any committed: 504 for not-older-than and exact lists', async () => {
    for (const m of ['NotOlderThan', 'Exact']) {
      const r = await get(`${CM}?${q({ resourceVersion: 99999999, resourceVersionMatch: m })}`);
      expect(r.status).toBe(504);
      expect(r.json().message).toMatch(/^Timeout: Too large resource version: \d+, current: \d+$/);
      expect(r.headers['retry-after']).toBe('1');
    }
  });

  it('Exact list, continue token (with the inconsistent token in the Status) and watch', async () => {
    const first = (await get(`${CM}?limit=2`)).json();
    const exactRv = first.metadata.resourceVersion;
    await request(s, 'PATCH', `${CM}/c1`, { data: { v: 'later' } }, { 'content-type': 'application/merge-patch+json' });
    // retention 8 s; compaction runs every second
    await new Promise((r) => setTimeout(r, 10_000));
    await request(s, 'POST', CM, { metadata: { name: 'c5' } });
    const exact = await get(`${CM}?resourceVersion=${exactRv}&resourceVersionMatch=Exact`);
    expect(exact.status).toBe(410);
    expect(exact.json()).toMatchObject({ reason: 'Expired', code: 410, message: 'The resourceVersion for the provided list is too old.' });
    const cont = await get(`${CM}?limit=2&continue=${first.metadata.continue}`);
    expect(cont.status).toBe(410);
    const st = cont.json();
    expect(st).toMatchObject({ reason: 'Expired', code: 410 });
    expect(st.message).toContain('The provided continue parameter is too old to display a consistent list result.');
    expect(st.metadata.continue).toBeTruthy();
    const rest = (await get(`${CM}?limit=10&continue=${st.metadata.continue}`)).json();
    expect(names(rest)).toEqual(['c2', 'c3', 'c4', 'c5']);
    const w = openWatch(s, `${W_ROOT}?watch=1&resourceVersion=${exactRv}`);
    await until(() => w.events.length >= 1);
    expect(w.events[0]).toMatchObject({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } });
    expect(w.events[0].object.message).toContain('too old resource version');
    w.close();
  });
});
const W_ROOT = CM;
