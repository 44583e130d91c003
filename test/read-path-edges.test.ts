// Read-path edges checked against kube-apiserver 1.33 (issue 5, second pass): empty numeric
// parameters, fields.ParseSelector's grammar end to end, a resource whose watch cache is off
// (etcd's wording and its at-once 504), the 410 ERROR frame in every stream representation,
// and get/list/watch through converted versions (events.k8s.io over core events, HPA v1/v2):
// selector transitions, bookmarks, continue tokens across versions, and a client-node informer.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { KubeConfig, ListWatch, Watch, type KubernetesObject } from '@kubernetes/client-node';
import { openWatch, request, startServer, until, type TestServer } from './helpers/server.js';
import { kubectl, kubectlStream } from './helpers/kubectl.js';

let s: TestServer;
const NS = 'edges';
const CM = `/api/v1/namespaces/${NS}/configmaps`;
const SECRETS = `/api/v1/namespaces/${NS}/secrets`;
const CORE_EV = `/api/v1/namespaces/${NS}/events`;
const NEW_EV = `/apis/events.k8s.io/v1/namespaces/${NS}/events`;
const HPA1 = `/apis/autoscaling/v1/namespaces/${NS}/horizontalpodautoscalers`;
const HPA2 = `/apis/autoscaling/v2/namespaces/${NS}/horizontalpodautoscalers`;
const MERGE = { 'content-type': 'application/merge-patch+json' };
/** versions compacted away by the time the tests run (retention 3 s), per resource (shards compact apart) */
let compacted = '';
let compactedSecret = '';

const get = (path: string, headers: Record<string, string> = {}) => request(s, 'GET', path, undefined, headers);
const names = (l: any) => l.items.map((i: any) => i.metadata.name);
const rvOf = async (path: string) => (await get(path)).json().metadata.resourceVersion as string;
const coreEvent = (name: string, regarding: string) => ({
  metadata: { name },
  involvedObject: { kind: 'Pod', namespace: NS, name: regarding, apiVersion: 'v1' },
  reason: 'Started',
  message: 'started',
  type: 'Normal',
});
const hpa = (name: string) => ({
  metadata: { name },
  spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }, minReplicas: 1, maxReplicas: 3, targetCPUUtilizationPercentage: 50 },
});

beforeAll(async () => {
  s = await startServer({ args: ['--history-retention=3s', '--watch-bookmark-interval=1s', '--watch-cache-sizes=secrets#0', '--feature-gates=CBORServingAndStorage=true', '--controllers=*,-root-ca-certificate-publisher-controller'] });
  expect((await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: NS } })).status).toBe(201);
  for (let i = 0; i < 3; i++) {
    const c = await request(s, 'POST', CM, { metadata: { name: `c${i}` } });
    const x = await request(s, 'POST', SECRETS, { metadata: { name: `s${i}` } });
    expect([c.status, x.status]).toEqual([201, 201]);
    if (i === 0) [compacted, compactedSecret] = [c.json().metadata.resourceVersion, x.json().metadata.resourceVersion];
  }
  // past the retention (compaction runs every second), then one more write so the window moves
  await new Promise((r) => setTimeout(r, 5_000));
  expect((await request(s, 'POST', CM, { metadata: { name: 'c3' } })).status).toBe(201);
  expect((await request(s, 'POST', SECRETS, { metadata: { name: 's3' } })).status).toBe(201);
}, 60_000);
afterAll(async () => {
  await s?.stop();
  s?.cleanup();
});

describe('query parameters', () => {
  it('an empty limit= or timeoutSeconds= is 400, as strconv.ParseInt("")', async () => {
    for (const p of ['limit=', 'timeoutSeconds=', 'watch=1&timeoutSeconds=']) {
      const r = await get(`${CM}?${p}`);
      expect(r.status, p).toBe(400);
      expect(r.json()).toMatchObject({ kind: 'Status', reason: 'BadRequest', code: 400, message: 'strconv.ParseInt: parsing "": invalid syntax' });
    }
    // read in kube's order: timeoutSeconds before limit, both before the selectors
    const both = await get(`${CM}?limit=x&timeoutSeconds=y&labelSelector=a%3D%3D%3D`);
    expect(both.json().message).toBe('strconv.ParseInt: parsing "y": invalid syntax');
    const sel = await get(`${CM}?fieldSelector=x&labelSelector=a%3D%3D%3D`);
    expect(sel.json().message).toMatch(/^unable to parse requirement|^found/);
    // an empty selector is everything
    expect(names((await get(`${CM}?fieldSelector=&labelSelector=`)).json())).toEqual(['c0', 'c1', 'c2', 'c3']);
  });

  it("field selectors: ==, !=, escapes, and kube's errors for list and watch", async () => {
    const fs = (sel: string, extra = '') => get(`${CM}?${extra}fieldSelector=${encodeURIComponent(sel)}`);
    expect(names((await fs('metadata.name==c1')).json())).toEqual(['c1']);
    expect(names((await fs('metadata.name!=c1,metadata.name!=c2')).json())).toEqual(['c0', 'c3']);
    const cases: Array<[string, string]> = [
      ['metadata.name = c1', '"metadata.name " is not a known field selector: only "metadata.name", "metadata.namespace"'],
      [' ', "invalid selector: ' '; can't understand ' '"],
      ['metadata.name=c1,x', "invalid selector: 'metadata.name=c1,x'; can't understand 'x'"],
      ['metadata.name=a\\x', 'invalid field selector: invalid escape sequence: \\x'],
      ['metadata.name=a=b', 'invalid field selector: unescaped character in value: 61'],
    ];
    for (const [sel, message] of cases) {
      for (const extra of ['', 'watch=1&']) {
        const r = await fs(sel, extra);
        expect(r.status, `${extra}${sel}`).toBe(400);
        expect(r.json()).toMatchObject({ reason: 'BadRequest', message });
      }
    }
    // an escaped comma stays in the value, and selects nothing here rather than failing
    expect(names((await fs('metadata.name=c1\\,c2')).json())).toEqual([]);
  });
});

describe('single-object watches', () => {
  it('the /watch/ path with a name not there is a 200 stream that sees it created, with bookmarks when asked', async () => {
    const from = await rvOf(CM);
    const w = openWatch(s, `/api/v1/watch/namespaces/${NS}/configmaps/ghost?resourceVersion=${from}&allowWatchBookmarks=true`);
    expect(await w.status).toBe(200);
    expect((await request(s, 'POST', CM, { metadata: { name: 'ghost' } })).status).toBe(201);
    expect((await request(s, 'POST', CM, { metadata: { name: 'ghost2' } })).status).toBe(201);
    await until(() => w.events.some((e) => e.type === 'ADDED'));
    const bm = await until(() => w.events.find((e) => e.type === 'BOOKMARK'), 5_000);
    expect(bm.object).toMatchObject({ kind: 'ConfigMap', apiVersion: 'v1' });
    expect(w.events.filter((e) => e.type !== 'BOOKMARK').map((e) => e.object.metadata.name)).toEqual(['ghost']);
    w.close();
    for (const n of ['ghost', 'ghost2']) expect((await request(s, 'DELETE', `${CM}/${n}`)).status).toBe(200);
  });
});

describe('a resource with its watch cache off (--watch-cache-sizes=secrets#0)', () => {
  it('a watch from a compacted version ends with etcd’s 410 wording', async () => {
    const w = openWatch(s, `${SECRETS}?watch=1&resourceVersion=${compactedSecret}`);
    expect(await w.status).toBe(200);
    await until(() => w.ended() && w.events.length === 1);
    expect(w.events[0]).toMatchObject({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'The resourceVersion for the provided watch is too old.' } });
    // the cached kind keeps the cacher's wording
    const c = openWatch(s, `${CM}?watch=1&resourceVersion=${compacted}`);
    await until(() => c.ended() && c.events.length === 1);
    expect(c.events[0].object.message).toMatch(/^too old resource version: \d+ \(\d+\)$/);
  });

  it('every other start: synthetic events from "" and "0", exact replay from a recent version, initial events', async () => {
    for (const rv of ['', '0']) {
      const w = openWatch(s, `${SECRETS}?watch=1&timeoutSeconds=1${rv === '' ? '' : `&resourceVersion=${rv}`}`);
      await until(() => w.ended());
      expect(w.events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(['ADDED s0', 'ADDED s1', 'ADDED s2', 'ADDED s3']);
    }
    const from = await rvOf(SECRETS);
    const w = openWatch(s, `${SECRETS}?watch=1&resourceVersion=${from}`);
    expect(await w.status).toBe(200);
    await request(s, 'PATCH', `${SECRETS}/s1`, { stringData: { k: 'v' } }, MERGE);
    await until(() => w.events.length >= 1);
    expect(w.events[0]).toMatchObject({ type: 'MODIFIED', object: { metadata: { name: 's1' } } });
    w.close();
    const i = openWatch(s, `${SECRETS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=${from}`);
    await until(() => i.events.some((e) => e.type === 'BOOKMARK'));
    expect(i.events.slice(0, 4).map((e) => e.object.metadata.name)).toEqual(['s0', 's1', 's2', 's3']);
    expect(i.events[4]).toMatchObject({ type: 'BOOKMARK', object: { metadata: { annotations: { 'k8s.io/initial-events-end': 'true' } } } });
    i.close();
  });

  it('a version not reached is 504 at once, without a retry hint (etcd’s validateMinimumResourceVersion)', async () => {
    const t0 = Date.now();
    for (const p of [`${SECRETS}/s0?resourceVersion=99999999`, `${SECRETS}?resourceVersion=99999999`]) {
      const r = await get(p);
      expect(r.status, p).toBe(504);
      expect(r.json().message).toMatch(/^Timeout: Too large resource version: 99999999, current: \d+$/);
      expect(r.json().details.retryAfterSeconds).toBeUndefined();
      expect(r.headers['retry-after']).toBeUndefined();
    }
    expect(Date.now() - t0).toBeLessThan(2_500);
    // a version reached by another resource (on whichever shard) is reached for secrets too
    const cm = await request(s, 'POST', CM, { metadata: { name: 'later' } });
    const at = cm.json().metadata.resourceVersion;
    expect((await get(`${SECRETS}/s0?resourceVersion=${at}`)).status).toBe(200);
    expect((await get(`${SECRETS}?resourceVersion=${at}&resourceVersionMatch=NotOlderThan`)).status).toBe(200);
    expect((await request(s, 'DELETE', `${CM}/later`)).status).toBe(200);
    // the cached kind still waits, then hints a retry
    const c = await get(`${CM}/c0?resourceVersion=99999999`);
    expect(c.status).toBe(504);
    expect(c.headers['retry-after']).toBe('1');
  });
});

describe('the 410 ERROR frame in every stream representation', () => {
  it('protobuf: a Status (kind Status, code 410, reason Expired) inside a length-prefixed frame', async () => {
    const r = await get(`${CM}?watch=1&resourceVersion=${compacted}`, { accept: 'application/vnd.kubernetes.protobuf;stream=watch' });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/vnd.kubernetes.protobuf;stream=watch');
    expect(r.raw.readUInt32BE(0)).toBe(r.raw.length - 4);
    const body = r.raw.subarray(4);
    expect(body.includes(Buffer.from('ERROR'))).toBe(true);
    expect(body.includes(Buffer.from('k8s\0'))).toBe(true);
    expect(body.includes(Buffer.from('Expired'))).toBe(true);
    expect(body.includes(Buffer.from([0x30, 0x9a, 0x03]))).toBe(true); // Status.code = 410
  });
  it('CBOR: one self-described event map with the Status', async () => {
    const r = await get(`${CM}?watch=1&resourceVersion=${compacted}`, { accept: 'application/cbor' });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/cbor-seq');
    expect(r.raw.subarray(0, 3)).toEqual(Buffer.from([0xd9, 0xd9, 0xf7]));
    expect(r.raw.includes(Buffer.from('ERROR'))).toBe(true);
    expect(r.raw.includes(Buffer.from('Expired'))).toBe(true);
    expect(r.raw.includes(Buffer.from([0x19, 0x01, 0x9a]))).toBe(true); // 410 as a CBOR uint16
  });
});

describe('converted versions', () => {
  it('events.k8s.io watch with a regarding.* selector: transitions by core writes, bookmarks in the converted kind', async () => {
    const rv = await rvOf(NEW_EV);
    const w = openWatch(s, `${NEW_EV}?watch=1&resourceVersion=${rv}&allowWatchBookmarks=true&fieldSelector=regarding.name%3Dweb`);
    expect(await w.status).toBe(200);
    expect((await request(s, 'POST', CORE_EV, coreEvent('e1', 'web'))).status).toBe(201);
    expect((await request(s, 'POST', CORE_EV, coreEvent('e2', 'db'))).status).toBe(201);
    const moved = await request(s, 'PATCH', `${CORE_EV}/e1`, { involvedObject: { name: 'db' } }, MERGE);
    expect(moved.status).toBe(200);
    expect((await request(s, 'PATCH', `${CORE_EV}/e2`, { involvedObject: { name: 'web' } }, MERGE)).status).toBe(200);
    expect((await request(s, 'DELETE', `${CORE_EV}/e2`)).status).toBe(200);
    await until(() => w.events.filter((e) => e.type !== 'BOOKMARK').length >= 4);
    const seen = w.events.filter((e) => e.type !== 'BOOKMARK');
    expect(seen.map((e) => `${e.type} ${e.object.metadata.name} ${e.object.regarding.name}`)).toEqual([
      'ADDED e1 web',
      'DELETED e1 web', // stopped matching: the state it left, at the update's version, as kube's cacheWatcher
      'ADDED e2 web',
      'DELETED e2 web',
    ]);
    expect(seen[1].object.metadata.resourceVersion).toBe(moved.json().metadata.resourceVersion);
    for (const e of seen) {
      expect(e.object.apiVersion).toBe('events.k8s.io/v1');
      expect(e.object.kind).toBe('Event');
      expect(e.object.note).toBe('started');
    }
    // a write the selector filters out moves the version on: the next bookmark carries it (or a
    // later one: the server's own periodic writes, its identity and controller Leases, move it too)
    const other = await request(s, 'POST', CORE_EV, coreEvent('e3', 'db'));
    const bm = await until(() => w.events.find((e) => e.type === 'BOOKMARK' && Number(e.object.metadata.resourceVersion) >= Number(other.json().metadata.resourceVersion)), 5_000);
    expect(bm.object).toEqual({ kind: 'Event', apiVersion: 'events.k8s.io/v1', metadata: { resourceVersion: bm.object.metadata.resourceVersion } });
    w.close();
  });

  it('sendInitialEvents through a converted version ends with a bookmark of that version', async () => {
    await request(s, 'POST', HPA2, { ...hpa('h0'), spec: { scaleTargetRef: hpa('h0').spec.scaleTargetRef, minReplicas: 1, maxReplicas: 3 } });
    const w = openWatch(s, `${HPA1}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`);
    const bm = await until(() => w.events.find((e) => e.type === 'BOOKMARK'));
    expect(w.events[0]).toMatchObject({ type: 'ADDED', object: { apiVersion: 'autoscaling/v1', kind: 'HorizontalPodAutoscaler', metadata: { name: 'h0' } } });
    expect(bm.object).toMatchObject({ kind: 'HorizontalPodAutoscaler', apiVersion: 'autoscaling/v1', metadata: { annotations: { 'k8s.io/initial-events-end': 'true' } } });
    w.close();
  });

  it('a continue token from one version goes on in another, at the same resourceVersion', async () => {
    for (let i = 1; i <= 4; i++) expect((await request(s, 'POST', HPA1, hpa(`h${i}`))).status).toBe(201);
    const first = (await get(`${HPA2}?limit=2`)).json();
    expect(names(first)).toEqual(['h0', 'h1']);
    const rest = (await get(`${HPA1}?limit=10&continue=${encodeURIComponent(first.metadata.continue)}`)).json();
    expect(rest.apiVersion).toBe('autoscaling/v1');
    expect(names(rest)).toEqual(['h2', 'h3', 'h4']);
    expect(rest.metadata.resourceVersion).toBe(first.metadata.resourceVersion);
    expect(rest.items[0].spec.targetCPUUtilizationPercentage).toBe(50);
  });

  it('a client-node informer (ListWatch) on autoscaling/v1 follows writes made through v2', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(s.kubeconfigPath);
    const path = HPA1;
    const lister = async () => {
      const r = (await get(path)).json();
      return r;
    };
    const inf = new ListWatch<KubernetesObject & { spec?: any }>(path, new Watch(kc), lister as any, false);
    const events: string[] = [];
    inf.on('add', (o) => events.push(`add ${o.metadata!.name}`));
    inf.on('update', (o) => events.push(`update ${o.metadata!.name} ${o.spec.maxReplicas}`));
    inf.on('delete', (o) => events.push(`delete ${o.metadata!.name}`));
    await inf.start();
    try {
      await until(() => inf.list().length === 5);
      expect((await request(s, 'PATCH', `${HPA2}/h1`, { spec: { maxReplicas: 7 } }, MERGE)).status).toBe(200);
      expect((await request(s, 'DELETE', `${HPA2}/h2`)).status).toBe(200);
      expect((await request(s, 'POST', HPA2, { metadata: { name: 'h9' }, spec: { scaleTargetRef: hpa('x').spec.scaleTargetRef, maxReplicas: 2 } })).status).toBe(201);
      await until(() => events.includes('add h9'));
      expect(events.slice(-3)).toEqual(['update h1 7', 'delete h2', 'add h9']);
      const cached = inf.list().map((o) => o.metadata!.name).sort();
      expect(cached).toEqual(names((await get(HPA1)).json()).sort());
      const h9 = inf.get('h9', NS)!;
      expect((h9 as any).apiVersion).toBe('autoscaling/v1');
    } finally {
      await inf.stop();
    }
  });
});

describe('a client-node informer on events.k8s.io/v1 with a regarding.name selector', () => {
  it('follows core writes in and out of its selector and ends with the server’s filtered state', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(s.kubeconfigPath);
    const sel = 'regarding.name=api';
    const lister = async () => (await get(`${NEW_EV}?fieldSelector=${encodeURIComponent(sel)}`)).json();
    const inf = new ListWatch<KubernetesObject & { regarding?: any }>(NEW_EV, new Watch(kc), lister as any, false, undefined, sel);
    const events: string[] = [];
    inf.on('add', (o) => events.push(`add ${o.metadata!.name}`));
    inf.on('delete', (o) => events.push(`delete ${o.metadata!.name} ${o.regarding.name}`));
    await inf.start();
    try {
      expect((await request(s, 'POST', CORE_EV, coreEvent('a1', 'api'))).status).toBe(201);
      expect((await request(s, 'POST', CORE_EV, coreEvent('a2', 'web'))).status).toBe(201);
      expect((await request(s, 'PATCH', `${CORE_EV}/a1`, { involvedObject: { name: 'web' } }, MERGE)).status).toBe(200);
      expect((await request(s, 'PATCH', `${CORE_EV}/a2`, { involvedObject: { name: 'api' } }, MERGE)).status).toBe(200);
      await until(() => events.length >= 3);
      expect(events).toEqual(['add a1', 'delete a1 api', 'add a2']);
      expect(inf.list().map((o) => o.metadata!.name)).toEqual(names(await lister()));
      expect(inf.list().map((o) => (o as any).apiVersion)).toEqual(['events.k8s.io/v1']);
    } finally {
      await inf.stop();
    }
  });
});

describe('kubectl', () => {
  it('get --watch-only prints only changes; get -w -o json prints each object as JSON', async () => {
    const only = kubectlStream(s, ['get', 'cm', '-n', NS, '--watch-only', '--request-timeout=0']);
    const json = kubectlStream(s, ['get', 'cm', '-n', NS, '-w', '-o', 'json']);
    try {
      // both have their watch open once the json one printed the current objects
      await until(() => (json.output().match(/"kind": "ConfigMap"/g) ?? []).length >= 4, 15_000);
      await new Promise((r) => setTimeout(r, 500));
      expect((await request(s, 'POST', CM, { metadata: { name: 'w1' } })).status).toBe(201);
      await until(() => only.output().includes('w1') && json.output().includes('"name": "w1"'), 15_000);
      expect(only.output()).not.toMatch(/\bc0\b/);
      expect(only.output()).toMatch(/^NAME\s+DATA\s+AGE\n/);
      const docs = json.output().split(/\n(?=\{)/).map((d) => JSON.parse(d));
      expect(docs.map((d) => d.metadata.name)).toEqual(['c0', 'c1', 'c2', 'c3', 'w1']);
      for (const d of docs) expect(d).toMatchObject({ kind: 'ConfigMap', apiVersion: 'v1' });
    } finally {
      only.stop();
      json.stop();
    }
    const r = await kubectl(s, ['get', 'cm', '-n', NS, '--field-selector', 'metadata.name=c1\\', '-o', 'name']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('invalid field selector: invalid escape sequence');
  }, 60_000);
});
