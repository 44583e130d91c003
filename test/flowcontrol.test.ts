// API Priority and Fairness as kube-apiserver 1.33 has it on by default: the bootstrap
// configuration (mandatory and suggested FlowSchemas and PriorityLevelConfigurations), the
// Dangling condition, classification (the X-Kubernetes-PF-* headers), seats, queues and 429s.
import { describe, it, expect } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import https from 'node:https';
import { openWatch, request, startServer, until, useServer, type TestServer } from './helpers/server.js';
import { scrape } from './helpers/metrics.js';
import { kubectl } from './helpers/kubectl.js';

// Static users: a plain one, a node, and a kube-system service-account name.
const tokenFile = join(mkdtempSync(join(tmpdir(), 'kubeshard-apf-')), 'tokens.csv');
writeFileSync(
  tokenFile,
  ['alice-token,alice,u1', 'node-token,system:node:n1,u2,"system:nodes"', 'slow-token,slowpoke,u3', 'queue-token,queuer,u5', 'full-token,fuller,u6', 'sa-token,system:serviceaccount:kube-system:replicaset-controller,u4,"system:serviceaccounts,system:serviceaccounts:kube-system"'].join('\n'),
);
const as = (token: string) => ({ authorization: `Bearer ${token}` });

let s: TestServer;
useServer((started) => (s = started), { args: ['--token-auth-file', tokenFile] }, 60_000);


const FS = '/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas';
const PL = '/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations';

// kube-apiserver 1.33's names (flowcontrol bootstrap: mandatory and suggested).
const KUBE_FLOWSCHEMAS = [
  'catch-all', 'endpoint-controller', 'exempt', 'global-default', 'kube-controller-manager', 'kube-scheduler',
  'kube-system-service-accounts', 'probes', 'service-accounts', 'system-leader-election', 'system-node-high',
  'system-nodes', 'workload-leader-election',
];
const KUBE_LEVELS = ['catch-all', 'exempt', 'global-default', 'leader-election', 'node-high', 'system', 'workload-high', 'workload-low'];

describe('bootstrap configuration', () => {
  it('kubectl lists kube 1.33 FlowSchemas and priority levels, auto-updated, none dangling', async () => {
    const fs = await kubectl(s, ['get', 'flowschemas', '-o', 'name']);
    expect(fs.code).toBe(0);
    expect(fs.stdout.trim().split('\n').map((l) => l.replace('flowschema.flowcontrol.apiserver.k8s.io/', '')).sort()).toEqual(KUBE_FLOWSCHEMAS);
    const pl = await kubectl(s, ['get', 'prioritylevelconfigurations', '-o', 'name']);
    expect(pl.stdout.trim().split('\n').map((l) => l.replace(/^.*\//, '')).sort()).toEqual(KUBE_LEVELS);
    const table = await kubectl(s, ['get', 'flowschemas']);
    expect(table.stdout).toMatch(/^NAME\s+PRIORITYLEVEL\s+MATCHINGPRECEDENCE\s+DISTINGUISHERMETHOD\s+AGE\s+MISSINGPL/);
    expect(table.stdout).toMatch(/\nexempt\s+exempt\s+1\s+<none>\s+\S+\s+False\n/);
    const list = (await request(s, 'GET', FS)).json();
    const ordered = list.items.map((o: any) => o.metadata.name);
    expect(ordered.length).toBe(KUBE_FLOWSCHEMAS.length);
    for (const o of list.items) {
      expect(o.metadata.annotations['apf.kubernetes.io/autoupdate-spec']).toBe('true');
    }
    await until(async () => {
      const l = (await request(s, 'GET', FS)).json();
      return l.items.every((o: any) => o.status?.conditions?.some((c: any) => c.type === 'Dangling' && c.status === 'False' && c.reason === 'Found'));
    });
    const levels = (await request(s, 'GET', PL)).json().items;
    const byName = Object.fromEntries(levels.map((o: any) => [o.metadata.name, o.spec]));
    expect(byName['exempt'].type).toBe('Exempt');
    expect(byName['catch-all'].limited).toMatchObject({ nominalConcurrencyShares: 5, lendablePercent: 0, limitResponse: { type: 'Reject' } });
    expect(byName['workload-low'].limited).toMatchObject({ nominalConcurrencyShares: 100, lendablePercent: 90, limitResponse: { type: 'Queue', queuing: { queues: 128, handSize: 6, queueLengthLimit: 50 } } });
  });

  it('a FlowSchema naming a missing level is Dangling, and stops being so when the level appears', async () => {
    const fs = {
      apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
      kind: 'FlowSchema',
      metadata: { name: 'orphan' },
      spec: { priorityLevelConfiguration: { name: 'nowhere' }, matchingPrecedence: 5000, rules: [{ subjects: [{ kind: 'User', user: { name: 'nobody' } }], nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/nope'] }] }] },
    };
    expect((await request(s, 'POST', FS, fs)).status).toBe(201);
    const dangling = await until(async () => {
      const o = (await request(s, 'GET', `${FS}/orphan`)).json();
      return o.status?.conditions?.find((c: any) => c.type === 'Dangling' && c.status === 'True');
    });
    expect(dangling).toMatchObject({ reason: 'NotFound', message: 'This FlowSchema references the PriorityLevelConfiguration object named "nowhere" but there is no such object' });
    const table = await kubectl(s, ['get', 'flowschema', 'orphan']);
    expect(table.stdout).toMatch(/\norphan\s+nowhere\s+5000\s+<none>\s+\S+\s+True\n/);
    const pl = { apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind: 'PriorityLevelConfiguration', metadata: { name: 'nowhere' }, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 1, limitResponse: { type: 'Reject' } } } };
    expect((await request(s, 'POST', PL, pl)).status).toBe(201);
    await until(async () => {
      const o = (await request(s, 'GET', `${FS}/orphan`)).json();
      return o.status?.conditions?.find((c: any) => c.type === 'Dangling' && c.status === 'False' && c.reason === 'Found');
    });
    await request(s, 'DELETE', `${FS}/orphan`);
    await request(s, 'DELETE', `${PL}/nowhere`);
  });

  it('a deleted mandatory object comes back; a suggested one set to autoupdate-spec "false" keeps its spec', async () => {
    expect((await request(s, 'DELETE', `${PL}/catch-all`)).status).toBe(200);
    await until(async () => (await request(s, 'GET', `${PL}/catch-all`)).status === 200);
    const patch = { metadata: { annotations: { 'apf.kubernetes.io/autoupdate-spec': 'false' } }, spec: { matchingPrecedence: 9950 } };
    const r = await request(s, 'PATCH', `${FS}/global-default`, patch, { 'content-type': 'application/merge-patch+json' });
    expect(r.status).toBe(200);
    expect(r.json().spec.matchingPrecedence).toBe(9950);
    // A restart ensures the configuration again: the user's spec stays, a changed auto-updated one is put back.
    await request(s, 'PATCH', `${FS}/probes`, { spec: { matchingPrecedence: 3 } }, { 'content-type': 'application/merge-patch+json' });
    await s.stop();
    await s.restart();
    expect((await request(s, 'GET', `${FS}/global-default`)).json().spec.matchingPrecedence).toBe(9950);
    expect((await request(s, 'GET', `${FS}/probes`)).json().spec.matchingPrecedence).toBe(2);
  });
});

/** The uids of every FlowSchema and priority level, by name. */
async function uids(): Promise<{ fs: Record<string, string>; pl: Record<string, string> }> {
  const fs = (await request(s, 'GET', FS)).json().items;
  const pl = (await request(s, 'GET', PL)).json().items;
  return { fs: Object.fromEntries(fs.map((o: any) => [o.metadata.name, o.metadata.uid])), pl: Object.fromEntries(pl.map((o: any) => [o.metadata.name, o.metadata.uid])) };
}

const matched = (r: { headers: Record<string, unknown> }) => [r.headers['x-kubernetes-pf-flowschema-uid'], r.headers['x-kubernetes-pf-prioritylevel-uid']];

type Uids = Awaited<ReturnType<typeof uids>>;

/** GETs path with these headers and checks the FlowSchema and priority level its response names. */
async function expectClassified(u: Uids, path: string, headers: Record<string, string> | undefined, fs: string, pl: string) {
  const r = await request(s, 'GET', path, undefined, headers);
  expect(matched(r)).toEqual([u.fs[fs], u.pl[pl]]);
  return r;
}

describe('classification', () => {
  it('every classified response names its FlowSchema and priority level by uid, errors included', async () => {
    const u = await uids();
    // system:masters: the exempt schema
    await expectClassified(u, '/api/v1/namespaces/default', undefined, 'exempt', 'exempt');
    expect((await expectClassified(u, '/api/v1/namespaces/default/configmaps/none', undefined, 'exempt', 'exempt')).status).toBe(404);
    // an ordinary authenticated user: global-default
    expect((await expectClassified(u, '/api/v1/namespaces/default/configmaps', as('alice-token'), 'global-default', 'global-default')).status).toBe(200);
    const bad = await request(s, 'POST', '/api/v1/namespaces/default/configmaps', '{nope', as('alice-token'));
    expect(bad.status).toBe(400);
    expect(matched(bad)).toEqual([u.fs['global-default'], u.pl['global-default']]);
    // nodes: their leases and node objects are node-high, the rest system
    await expectClassified(u, '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1', as('node-token'), 'system-node-high', 'node-high');
    await expectClassified(u, '/api/v1/nodes/n1/status', as('node-token'), 'system-node-high', 'node-high');
    await expectClassified(u, '/api/v1/pods', as('node-token'), 'system-nodes', 'system');
    // a kube-system service account: leader election on leases, the rest workload-high
    await expectClassified(u, '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x', as('sa-token'), 'system-leader-election', 'leader-election');
    await expectClassified(u, '/apis/apps/v1/replicasets', as('sa-token'), 'kube-system-service-accounts', 'workload-high');
    // probes are exempt for everyone (anonymous is off under AlwaysAllow, as in kube: an ordinary user here)
    expect((await expectClassified(u, '/readyz', as('alice-token'), 'probes', 'exempt')).status).toBe(200);
    await expectClassified(u, '/version', as('alice-token'), 'global-default', 'global-default');
    // a request refused by authentication is never classified
    const unauth = await request(s, 'GET', '/api/v1/pods', undefined, as('wrong'));
    expect(unauth.status).toBe(401);
    expect(matched(unauth)).toEqual([undefined, undefined]);
  });

  it('a watch carries the headers too', async () => {
    const u = await uids();
    const head = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const r = https.request({ host: '127.0.0.1', port: s.port, path: '/api/v1/namespaces/default/configmaps?watch=1', ca: s.ca, headers: as('alice-token') }, (res) => {
        resolve(res.headers);
        res.destroy();
      });
      r.on('error', reject);
      r.end();
    });
    expect(matched({ headers: head })).toEqual([u.fs['global-default'], u.pl['global-default']]);
  });

  it('follows FlowSchema changes: a new schema of lower precedence takes the user, and deleting it gives them back', async () => {
    const pl = { apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind: 'PriorityLevelConfiguration', metadata: { name: 'alice-level' }, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 5, limitResponse: { type: 'Reject' } } } };
    expect((await request(s, 'POST', PL, pl)).status).toBe(201);
    const fs = {
      apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
      kind: 'FlowSchema',
      metadata: { name: 'alice-configmaps' },
      spec: {
        priorityLevelConfiguration: { name: 'alice-level' },
        matchingPrecedence: 1000,
        distinguisherMethod: { type: 'ByUser' },
        rules: [{ subjects: [{ kind: 'User', user: { name: 'alice' } }], resourceRules: [{ verbs: ['list', 'get'], apiGroups: [''], resources: ['configmaps'], namespaces: ['default'] }] }],
      },
    };
    expect((await request(s, 'POST', FS, fs)).status).toBe(201);
    const u = await uids();
    await expectClassified(u, '/api/v1/namespaces/default/configmaps', as('alice-token'), 'alice-configmaps', 'alice-level');
    // another namespace, verb or resource is not this rule's
    await expectClassified(u, '/api/v1/namespaces/kube-system/configmaps', as('alice-token'), 'global-default', 'global-default');
    await expectClassified(u, '/api/v1/namespaces/default/secrets', as('alice-token'), 'global-default', 'global-default');
    await expectClassified(u, '/api/v1/configmaps', as('alice-token'), 'global-default', 'global-default');
    await request(s, 'DELETE', `${FS}/alice-configmaps`);
    await expectClassified(u, '/api/v1/namespaces/default/configmaps', as('alice-token'), 'global-default', 'global-default');
    await request(s, 'DELETE', `${PL}/alice-level`);
  });
});

/** A Limited level of one share (3 seats of the default 600 beside the bootstrap levels' 245 shares) and a schema sending one user to it. */
async function tinyLevel(server: TestServer, name: string, user: string, limitResponse: any): Promise<void> {
  const pl = { apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind: 'PriorityLevelConfiguration', metadata: { name }, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 1, borrowingLimitPercent: 0, limitResponse } } };
  expect((await request(server, 'POST', PL, pl)).status).toBe(201);
  const fs = {
    apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
    kind: 'FlowSchema',
    metadata: { name },
    spec: { priorityLevelConfiguration: { name }, matchingPrecedence: 500, distinguisherMethod: { type: 'ByUser' }, rules: [{ subjects: [{ kind: 'User', user: { name: user } }], resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'], clusterScope: true }], nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }] }] },
  };
  expect((await request(server, 'POST', FS, fs)).status).toBe(201);
}

/**
 * A request that holds its seat for 3 s: a list at a resourceVersion far ahead of the
 * store's, which waits for the cache to reach it and then answers 504 (too large resource version).
 */
async function slowList(server: TestServer, token: string): Promise<{ status: number; ms: number }> {
  const rv = Number((await request(server, 'GET', '/api/v1/namespaces/default/configmaps')).json().metadata.resourceVersion) + 100_000;
  const t0 = Date.now();
  const r = await request(server, 'GET', `/api/v1/namespaces/default/configmaps?resourceVersion=${rv}&resourceVersionMatch=NotOlderThan`, undefined, as(token));
  return { status: r.status, ms: Date.now() - t0 };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('seats and queues', () => {
  it('a full Reject level answers 429 at once, with Retry-After and the PF headers; exempt requests still pass', async () => {
    await tinyLevel(s, 'tiny-reject', 'slowpoke', { type: 'Reject' });
    const u = await uids();
    const slow = [slowList(s, 'slow-token'), slowList(s, 'slow-token'), slowList(s, 'slow-token')];
    await sleep(500);
    const t0 = Date.now();
    const refused = await request(s, 'GET', '/api/v1/namespaces/default/configmaps', undefined, as('slow-token'));
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(refused.status).toBe(429);
    expect(refused.body).toBe('Too many requests, please try again later.\n');
    expect(refused.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(refused.headers['retry-after']).toBe('1');
    expect(matched(refused)).toEqual([u.fs['tiny-reject'], u.pl['tiny-reject']]);
    // other levels are not touched
    expect((await request(s, 'GET', '/api/v1/namespaces/default/configmaps')).status).toBe(200);
    expect((await request(s, 'GET', '/api/v1/namespaces/default/configmaps', undefined, as('alice-token'))).status).toBe(200);
    const done = await Promise.all(slow);
    expect(done.map((d) => d.status)).toEqual([504, 504, 504]);
    // the seats are free again
    expect((await request(s, 'GET', '/api/v1/namespaces/default/configmaps', undefined, as('slow-token'))).status).toBe(200);
  });

  it('a full Queue level queues requests, which run once seats free and all succeed', async () => {
    await tinyLevel(s, 'tiny-queue', 'queuer', { type: 'Queue', queuing: { queues: 4, handSize: 2, queueLengthLimit: 10 } });
    const slow = [slowList(s, 'queue-token'), slowList(s, 'queue-token'), slowList(s, 'queue-token')];
    await sleep(500);
    const t0 = Date.now();
    const queued = await Promise.all(Array.from({ length: 5 }, () => request(s, 'GET', '/api/v1/namespaces/default/configmaps', undefined, as('queue-token'))));
    expect(queued.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    // they waited for the slow ones to end
    expect(Date.now() - t0).toBeGreaterThan(1500);
    expect((await Promise.all(slow)).map((d) => d.status)).toEqual([504, 504, 504]);
  });

  it('a request finding its queue full gets 429 at once', async () => {
    await tinyLevel(s, 'tiny-full', 'fuller', { type: 'Queue', queuing: { queues: 1, handSize: 1, queueLengthLimit: 1 } });
    const slow = [slowList(s, 'full-token'), slowList(s, 'full-token'), slowList(s, 'full-token')];
    await sleep(500);
    const waiting = request(s, 'GET', '/api/v1/namespaces/default/configmaps', undefined, as('full-token'));
    await sleep(200);
    const t0 = Date.now();
    const refused = await request(s, 'GET', '/api/v1/namespaces/default/configmaps', undefined, as('full-token'));
    expect(refused.status).toBe(429);
    expect(Date.now() - t0).toBeLessThan(1000);
    expect((await waiting).status).toBe(200);
    await Promise.all(slow);
  });
});

describe('queue wait limit and the switch', () => {
  it('a queued request waits a quarter of --request-timeout, then gets 429', async () => {
    const other = await startServer({ args: ['--token-auth-file', tokenFile, '--request-timeout', '2s'] });
    try {
      await tinyLevel(other, 'tiny-wait', 'queuer', { type: 'Queue', queuing: { queues: 2, handSize: 1, queueLengthLimit: 10 } });
      const slow = [slowList(other, 'queue-token'), slowList(other, 'queue-token'), slowList(other, 'queue-token')];
      await sleep(500);
      const t0 = Date.now();
      const r = await request(other, 'GET', '/api/v1/namespaces/default/configmaps', undefined, as('queue-token'));
      const waited = Date.now() - t0;
      expect(r.status).toBe(429);
      expect(waited).toBeGreaterThanOrEqual(450);
      expect(waited).toBeLessThan(2000);
      await Promise.all(slow);
    } finally {
      await other.stop();
      other.cleanup();
    }
  });

  it('--enable-priority-and-fairness=false keeps the plain inflight limits: no classification headers', async () => {
    const other = await startServer({ args: ['--token-auth-file', tokenFile, '--enable-priority-and-fairness=false'] });
    try {
      const r = await request(other, 'GET', '/api/v1/namespaces/default/configmaps', undefined, as('alice-token'));
      expect(r.status).toBe(200);
      expect(matched(r)).toEqual([undefined, undefined]);
      // the configuration objects are there all the same (kube keeps the API)
      expect((await request(other, 'GET', `${FS}/exempt`)).status).toBe(200);
    } finally {
      await other.stop();
      other.cleanup();
    }
  });
});


const value = (samples: Array<{ labels: Record<string, string>; value: number }>, want: Record<string, string>) =>
  samples.find((x) => Object.entries(want).every(([k, v]) => x.labels[k] === v) && Object.keys(x.labels).length === Object.keys(want).length)?.value;

describe('metrics', () => {
  it('apiserver_flowcontrol_* as kube names and labels them', async () => {
    // nominal seats: ceil(600 × shares / the sum of every level's shares)
    const levels = (await request(s, 'GET', PL)).json().items;
    const shares = (o: any) => (o.spec.type === 'Exempt' ? o.spec.exempt?.nominalConcurrencyShares ?? 0 : o.spec.limited.nominalConcurrencyShares);
    const sum = levels.reduce((a: number, o: any) => a + shares(o), 0);
    const nominal = await scrape(s, 'apiserver_flowcontrol_nominal_limit_seats');
    expect(nominal.length).toBe(levels.length);
    for (const o of levels) expect(value(nominal, { priority_level: o.metadata.name })).toBe(Math.ceil((600 * shares(o)) / sum));
    expect(value(nominal, { priority_level: 'exempt' })).toBe(0);
    expect(value(nominal, { priority_level: 'tiny-reject' })).toBe(3);

    const dispatched = await scrape(s, 'apiserver_flowcontrol_dispatched_requests_total');
    expect(value(dispatched, { priority_level: 'exempt', flow_schema: 'exempt' })).toBeGreaterThan(10);
    expect(value(dispatched, { priority_level: 'tiny-queue', flow_schema: 'tiny-queue' })).toBe(8);
    expect(value(dispatched, { priority_level: 'global-default', flow_schema: 'global-default' })).toBeGreaterThan(0);

    const rejected = await scrape(s, 'apiserver_flowcontrol_rejected_requests_total');
    expect(value(rejected, { priority_level: 'tiny-reject', flow_schema: 'tiny-reject', reason: 'concurrency-limit' })).toBe(1);
    expect(value(rejected, { priority_level: 'tiny-full', flow_schema: 'tiny-full', reason: 'queue-full' })).toBe(1);

    expect(value(await scrape(s, 'apiserver_flowcontrol_current_inqueue_requests'), { priority_level: 'tiny-queue', flow_schema: 'tiny-queue' })).toBe(0);
    expect(value(await scrape(s, 'apiserver_flowcontrol_current_executing_requests'), { priority_level: 'tiny-queue', flow_schema: 'tiny-queue' })).toBe(0);

    // the five queued requests waited over a second each; the three that found a seat, none
    const waits = await scrape(s, 'apiserver_flowcontrol_request_wait_duration_seconds_count');
    expect(value(waits, { priority_level: 'tiny-queue', flow_schema: 'tiny-queue', execute: 'true' })).toBe(8);
    const sums = await scrape(s, 'apiserver_flowcontrol_request_wait_duration_seconds_sum');
    expect(value(sums, { priority_level: 'tiny-queue', flow_schema: 'tiny-queue', execute: 'true' })).toBeGreaterThan(5);
    const buckets = await scrape(s, 'apiserver_flowcontrol_request_wait_duration_seconds_bucket');
    expect(value(buckets, { priority_level: 'tiny-queue', flow_schema: 'tiny-queue', execute: 'true', le: '0' })).toBe(3);
    expect(value(buckets, { priority_level: 'tiny-queue', flow_schema: 'tiny-queue', execute: 'true', le: '+Inf' })).toBe(8);
  });

  it('a request in the queue shows in current_inqueue_requests, one holding a seat in current_executing_requests', async () => {
    const slow = [slowList(s, 'queue-token'), slowList(s, 'queue-token'), slowList(s, 'queue-token')];
    await new Promise((r) => setTimeout(r, 500));
    const queued = request(s, 'GET', '/api/v1/namespaces/default/configmaps', undefined, as('queue-token'));
    await new Promise((r) => setTimeout(r, 200));
    const want = { priority_level: 'tiny-queue', flow_schema: 'tiny-queue' };
    expect(value(await scrape(s, 'apiserver_flowcontrol_current_executing_requests'), want)).toBe(3);
    expect(value(await scrape(s, 'apiserver_flowcontrol_current_inqueue_requests'), want)).toBe(1);
    // (the gauge shows the last second's most, as kube's watermark: the period that saw the three begin)
    await until(async () => (await scrape(s, 'apiserver_current_inflight_requests')).find((x) => x.labels.request_kind === 'readOnly')!.value >= 3, 2000);
    expect((await queued).status).toBe(200);
    await Promise.all(slow);
  });

  it('seats, limits, work estimates, execution times and the borrowing figures, with kube names and labels', async () => {
    const slow = [slowList(s, 'queue-token'), slowList(s, 'queue-token'), slowList(s, 'queue-token')];
    await sleep(500);
    const queued = request(s, 'GET', '/api/v1/namespaces/default/configmaps', undefined, as('queue-token'));
    await sleep(200);
    const want = { priority_level: 'tiny-queue', flow_schema: 'tiny-queue' };
    expect(value(await scrape(s, 'apiserver_flowcontrol_current_executing_seats'), want)).toBe(3);
    expect(value(await scrape(s, 'apiserver_flowcontrol_current_inqueue_seats'), want)).toBe(1);
    await queued;
    await Promise.all(slow);
    // a level of one share and no borrowing: 3 seats, its bounds too
    for (const m of ['nominal', 'lower', 'upper', 'current']) expect(value(await scrape(s, `apiserver_flowcontrol_${m}_limit_seats`), { priority_level: 'tiny-queue' })).toBe(3);
    // workload-low lends 90% of its nominal seats and may borrow the whole server's 600
    const wl = value(await scrape(s, 'apiserver_flowcontrol_nominal_limit_seats'), { priority_level: 'workload-low' })!;
    expect(value(await scrape(s, 'apiserver_flowcontrol_lower_limit_seats'), { priority_level: 'workload-low' })).toBe(wl - Math.round(wl * 0.9));
    expect(value(await scrape(s, 'apiserver_flowcontrol_upper_limit_seats'), { priority_level: 'workload-low' })).toBe(wl + 600);
    const est = await scrape(s, 'apiserver_flowcontrol_work_estimated_seats_bucket');
    expect(value(est, { ...want, le: '1' })).toBeGreaterThan(0);
    const exec = await scrape(s, 'apiserver_flowcontrol_request_execution_seconds_count');
    expect(value(exec, { ...want, type: 'regular' })).toBeGreaterThan(0);
    // a watch holds its seat until it is set up, then shows as type="watch"
    const w = await request(s, 'GET', '/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1', undefined, as('queue-token'));
    expect(w.status).toBe(200);
    expect(value(await scrape(s, 'apiserver_flowcontrol_request_execution_seconds_count'), { ...want, type: 'watch' })).toBe(1);
    expect(value(await scrape(s, 'apiserver_flowcontrol_current_executing_requests'), want)).toBe(0);
    // the borrowing loop's figures, per level, and the fair fraction
    for (const m of ['demand_seats_high_watermark', 'demand_seats_average', 'demand_seats_stdev', 'demand_seats_smoothed', 'target_seats']) {
      expect((await scrape(s, `apiserver_flowcontrol_${m}`)).map((x) => x.labels.priority_level)).toContain('workload-low');
    }
    expect((await scrape(s, 'apiserver_flowcontrol_seat_fair_frac')).length).toBe(1);
    const util = await scrape(s, 'apiserver_flowcontrol_priority_level_seat_utilization_count');
    expect(util.find((x) => x.labels.priority_level === 'tiny-queue')?.labels.phase).toBe('executing');
    const rw = await scrape(s, 'apiserver_flowcontrol_read_vs_write_current_requests_count');
    expect(rw.map((x) => `${x.labels.phase}/${x.labels.request_kind}`).sort()).toEqual(['executing/mutating', 'executing/readOnly', 'waiting/mutating', 'waiting/readOnly']);
    const text = (await request(s, 'GET', '/metrics')).body;
    expect(text).toContain('# TYPE apiserver_flowcontrol_current_executing_seats gauge');
    expect(text).toMatch(/# HELP apiserver_flowcontrol_current_executing_seats \[BETA\]/);
    expect(text).toMatch(/# HELP apiserver_flowcontrol_current_limit_seats \[ALPHA\]/);
  });

  // (with several front threads the watches may sit on other threads: the count is the server's)
  it('a write that 25 watchers will hear of is estimated at ceil(25 / 10) seats, and its watcher count sampled', async () => {
    const watches = Array.from({ length: 25 }, () => openWatch(s, '/api/v1/namespaces/default/secrets?watch=true'));
    await Promise.all(watches.map((w) => w.status));
    const want = { priority_level: 'global-default', flow_schema: 'global-default' };
    const before = await scrape(s, 'apiserver_flowcontrol_work_estimated_seats_bucket');
    const r = await request(s, 'POST', '/api/v1/namespaces/default/secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'heard' } }, as('alice-token'));
    expect(r.status).toBe(201);
    const after = await scrape(s, 'apiserver_flowcontrol_work_estimated_seats_bucket');
    // one more request between 2 and 4 seats (the level's most per request is 8)
    const in4 = (x: typeof after) => (value(x, { ...want, le: '4' }) ?? 0) - (value(x, { ...want, le: '2' }) ?? 0);
    expect(in4(after) - in4(before)).toBe(1);
    const counts = await scrape(s, 'apiserver_flowcontrol_watch_count_samples_bucket');
    expect((value(counts, { ...want, le: '100' }) ?? 0) - (value(counts, { ...want, le: '10' }) ?? 0)).toBeGreaterThanOrEqual(1);
    for (const w of watches) w.close();
  });
});
