// Robustness sweep: one server, every served resource (walked from discovery, subresources and a
// CRD's custom resources included) gets a sample of bad input — malformed and wrongly typed
// bodies, bad YAML/protobuf/CBOR, bad patches of every type, bad query values, bad bearer tokens,
// oversized bodies. Every answer must be a v1 Status carrying a 4xx code (kube's documented 500s
// aside), nothing may hang, and afterwards the server still serves and every object created
// before the sweep is byte-for-byte what it was.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createPrivateKey, createSign } from 'node:crypto';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request, startServer, type Reply, type TestServer } from './helpers/server.js';

let s: TestServer;
const NS = 'robust';
const problems: string[] = [];
const note = (m: string) => {
  problems.push(m);
  if (process.env.ROBUST_LOG) appendFileSync(process.env.ROBUST_LOG, m + '\n');
};
let asked = 0;

const CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.robust.example.com' },
  spec: {
    group: 'robust.example.com',
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {}, scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' } },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', properties: { replicas: { type: 'integer' }, size: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } } },
              status: { type: 'object', properties: { replicas: { type: 'integer' } } },
            },
          },
        },
      },
    ],
  },
};

const POD = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'rp', labels: { app: 'r' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } };
const DEPLOY = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'rd' },
  spec: { replicas: 2, selector: { matchLabels: { app: 'rd' } }, template: { metadata: { labels: { app: 'rd' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } } },
};
/** Objects created before the sweep; each must read back unchanged afterwards. */
const SEEDS: [string, unknown][] = [
  [`/api/v1/namespaces/${NS}/configmaps`, { metadata: { name: 'rcm' }, data: { a: '1', b: 'two' } }],
  [`/api/v1/namespaces/${NS}/secrets`, { metadata: { name: 'rs' }, stringData: { k: 'v' } }],
  [`/api/v1/namespaces/${NS}/serviceaccounts`, { metadata: { name: 'rsa' } }],
  [`/api/v1/namespaces/${NS}/pods`, POD],
  [`/apis/apps/v1/namespaces/${NS}/deployments`, DEPLOY],
  [`/api/v1/namespaces/${NS}/services`, { metadata: { name: 'rsvc' }, spec: { ports: [{ port: 80 }] } }],
  [`/apis/robust.example.com/v1/namespaces/${NS}/widgets`, { apiVersion: 'robust.example.com/v1', kind: 'Widget', metadata: { name: 'rw' }, spec: { replicas: 1, size: 'L', tags: ['a'] } }],
  ['/apis/rbac.authorization.k8s.io/v1/clusterroles', { metadata: { name: 'robust-role' }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }] }],
];
/** Existing names a resource's subresources and patches are aimed at. */
const TARGET: Record<string, string> = {
  configmaps: 'rcm', secrets: 'rs', serviceaccounts: 'rsa', pods: 'rp', deployments: 'rd', services: 'rsvc', widgets: 'rw', clusterroles: 'robust-role', namespaces: NS,
};
const before = new Map<string, string>();

interface Res {
  gv: string; // '' group → 'v1'; else 'group/version'
  name: string; // 'pods' or 'pods/status'
  kind: string;
  namespaced: boolean;
  verbs: string[];
}
let resources: Res[] = [];

function base(r: Res): string {
  const root = r.gv === 'v1' ? '/api/v1' : `/apis/${r.gv}`;
  const plural = r.name.split('/')[0];
  return r.namespaced ? `${root}/namespaces/${NS}/${plural}` : `${root}/${plural}`;
}
function targetOf(r: Res): string {
  const [plural, sub] = r.name.split('/');
  const name = TARGET[plural] ?? 'nope';
  return `${base(r)}/${name}${sub ? `/${sub}` : ''}`;
}

/**
 * The 500s kube-apiserver itself answers bad input with (errors that are not Status errors:
 * storage's resourceVersion parse, the DELETE body decoder).
 */
const KUBE_500 = [/"message":"resourceVersion: Invalid value: /, /"message":"json: cannot unmarshal [a-z]+ into Go struct field (DeleteOptions|Preconditions)\./, /"message":"decoded object cannot be converted to DeleteOptions"/];

/** Sends one bad request and records anything that is not a 4xx Status (or hangs). */
async function bad(what: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}, allowOk = false): Promise<Reply | undefined> {
  asked++;
  if (process.env.ROBUST_LOG) appendFileSync(process.env.ROBUST_LOG, `#${asked} ${what}\n`);
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<'hang'>((res) => (timer = setTimeout(() => res('hang'), 15_000)));
  let r: Reply | 'hang';
  try {
    r = await Promise.race([request(s, method, path, body, headers), hang]);
  } catch (e) {
    note(`${what}: ${method} ${path}: transport error ${(e as Error).message}`);
    return;
  } finally {
    clearTimeout(timer);
  }
  if (r === 'hang') {
    note(`${what}: ${method} ${path}: no answer in 15s`);
    return;
  }
  if (allowOk && r.status < 300) return r;
  const tag = `${what}: ${method} ${path} -> ${r.status}`;
  if (r.status < 400 || (r.status >= 500 && !(r.status === 500 && KUBE_500.some((re) => re.test(r.body))))) note(`${tag}: not a 4xx: ${r.body.slice(0, 200)}`);
  let b: any;
  try {
    b = JSON.parse(r.body);
  } catch {
    note(`${tag}: not JSON: ${JSON.stringify(r.body.slice(0, 200))}`);
    return r;
  }
  if (b?.kind !== 'Status' || b?.apiVersion !== 'v1' || b?.status !== 'Failure' || b?.code !== r.status || typeof b?.message !== 'string')
    note(`${tag}: not a Status: ${r.body.slice(0, 200)}`);
  return r;
}

/** Runs tasks with a little concurrency (the box has two cores shared by everyone). */
async function pool(tasks: (() => Promise<unknown>)[], width = 6): Promise<void> {
  let i = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (i < tasks.length) await tasks[i++]();
  }));
}

beforeAll(async () => {
  // (the seeds must stay as written: no scheduler or workload controller writes to them)
  s = await startServer({ args: ['--controllers=*,-scheduler,-replicaset-controller,-deployment-controller'] });
  expect((await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: NS } })).status).toBe(201);
  expect((await request(s, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', CRD)).status).toBe(201);
  for (let i = 0; ; i++) {
    const r = await request(s, 'GET', '/apis/robust.example.com/v1');
    if (r.status === 200) break;
    if (i > 200) throw new Error('CRD never served');
    await new Promise((res) => setTimeout(res, 50));
  }
  for (const [path, body] of SEEDS) {
    const r = await request(s, 'POST', path, body);
    expect(r.status, `${path}: ${r.body}`).toBe(201);
  }
  // Discovery: every group version's resources, subresources included.
  const gvs = ['v1'];
  for (const g of (await request(s, 'GET', '/apis')).json().groups) for (const v of g.versions) gvs.push(v.groupVersion);
  for (const gv of gvs) {
    const list = (await request(s, 'GET', gv === 'v1' ? '/api/v1' : `/apis/${gv}`)).json();
    for (const r of list.resources) resources.push({ gv, name: r.name, kind: r.kind, namespaced: r.namespaced, verbs: r.verbs ?? [] });
  }
  // Seeds read back after the controllers settled (the service-account controller and such).
  await new Promise((res) => setTimeout(res, 300));
  for (const [path, body] of SEEDS) {
    const p = `${path}/${(body as any).metadata.name}`;
    before.set(p, (await request(s, 'GET', p)).body);
  }
}, 60_000);

afterAll(async () => {
  await s?.stop();
  s?.cleanup();
});

function typed(r: Res, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { apiVersion: r.gv, kind: r.kind, ...extra };
}

/** Bad bodies for a create or update of resource `r`. */
function badBodies(r: Res): [string, unknown, Record<string, string>?, boolean?][] {
  const name = 'robust-bad';
  return [
    ['malformed JSON', '{"metadata": {"name": '],
    ['array', '[1,2]'],
    ['string', '"str"'],
    ['number', '42'],
    ['null', 'null'],
    ['empty body', ''],
    ['metadata string', typed(r, { metadata: 'x' })],
    ['metadata.name number', typed(r, { metadata: { name: 5 } })],
    ['metadata.labels string', typed(r, { metadata: { name, labels: 'x' } })],
    ['metadata.annotations number values', typed(r, { metadata: { name, annotations: { a: 1 } } })],
    ['metadata.ownerReferences object', typed(r, { metadata: { name, ownerReferences: { a: 1 } } })],
    ['metadata.finalizers string', typed(r, { metadata: { name, finalizers: 'x' } })],
    ['metadata.creationTimestamp number', typed(r, { metadata: { name, creationTimestamp: 5 } })],
    ['metadata.generation string', typed(r, { metadata: { name, generation: 'x' } })],
    ['metadata.managedFields string', typed(r, { metadata: { name, managedFields: 'x' } })],
    // A kind without these fields drops them (unknown fields are a warning by default), so these may succeed.
    ['spec string', typed(r, { metadata: { name }, spec: 'x' }), {}, true],
    ['spec.replicas string', typed(r, { metadata: { name }, spec: { replicas: 'three' } }), {}, true],
    ['spec.containers object', typed(r, { metadata: { name }, spec: { containers: { a: 1 }, template: 5, selector: 'x', ports: 'x' } }), {}, true],
    ['wrong kind', { apiVersion: r.gv, kind: 'NoSuchKind', metadata: { name } }],
    ['wrong apiVersion', { apiVersion: 'bogus.example.com/v9', kind: r.kind, metadata: { name } }],
    ['apiVersion number', { apiVersion: 7, kind: r.kind, metadata: { name } }],
    ['deep objects', `{"metadata":{"name":"${name}"},"spec":${'{"a":'.repeat(20000)}1${'}'.repeat(20000)}}`],
    ['deep arrays', `{"metadata":{"name":"${name}"},"spec":{"a":${'['.repeat(20000)}${']'.repeat(20000)}}}`],
    // Go's decoder turns invalid UTF-8 into U+FFFD, so a body that is otherwise fine may succeed.
    ['invalid UTF-8', Buffer.concat([Buffer.from(`{"apiVersion":"${r.gv}","kind":"${r.kind}","metadata":{"name":"`), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}}')]), {}, true],
    ['bad YAML', 'metadata: {name: [x\n  : :\n\t- y', { 'content-type': 'application/yaml' }],
    ['YAML scalar', 'just a string', { 'content-type': 'application/yaml' }],
    ['YAML alias bomb', 'a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n', { 'content-type': 'application/yaml' }],
    ['protobuf truncated envelope', Buffer.from([0x6b, 0x38, 0x73, 0x00, 0x0a]), { 'content-type': 'application/vnd.kubernetes.protobuf' }],
    ['protobuf wrong prefix', Buffer.from('abcd\x0a\x02\x08\x01'), { 'content-type': 'application/vnd.kubernetes.protobuf' }],
    ['protobuf garbage raw', Buffer.concat([Buffer.from([0x6b, 0x38, 0x73, 0x00, 0x0a, 0x0a, 0x0a, 0x02, 0x76, 0x31, 0x12, 0x04, 0x50, 0x6f, 0x64, 0x73, 0x12, 0x06]), Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0x0f])]), { 'content-type': 'application/vnd.kubernetes.protobuf' }],
    ['protobuf huge length', Buffer.from([0x6b, 0x38, 0x73, 0x00, 0x12, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]), { 'content-type': 'application/vnd.kubernetes.protobuf' }],
    ['CBOR with the gate off', Buffer.from([0xd9, 0xd9, 0xf7, 0xa1, 0x61, 0x61, 0x01]), { 'content-type': 'application/cbor' }],
    ['unknown content type', '{}', { 'content-type': 'text/plain' }],
  ];
}

const JP = { 'content-type': 'application/json-patch+json' };
const MP = { 'content-type': 'application/merge-patch+json' };
const SMP = { 'content-type': 'application/strategic-merge-patch+json' };
const AP = { 'content-type': 'application/apply-patch+yaml' };
const BAD_PATCHES: [string, string, unknown, Record<string, string>][] = [
  ['json-patch not a list', '', { op: 'add' }, JP],
  ['json-patch unknown op', '', [{ op: 'bogus', path: '/metadata/labels' }], JP],
  ['json-patch op missing', '', [{ path: '/metadata/labels' }], JP],
  ['json-patch path missing', '', [{ op: 'add', value: 1 }], JP],
  ['json-patch path not a pointer', '', [{ op: 'add', path: 'metadata', value: 1 }], JP],
  ['json-patch path number', '', [{ op: 'replace', path: 5, value: 1 }], JP],
  ['json-patch remove missing', '', [{ op: 'remove', path: '/nope/deeper' }], JP],
  ['json-patch bad index', '', [{ op: 'add', path: '/metadata/finalizers/99', value: 'x' }], JP],
  ['json-patch move from missing', '', [{ op: 'move', from: '/nope', path: '/metadata/labels' }], JP],
  ['json-patch test fails', '', [{ op: 'test', path: '/metadata/name', value: 'other' }, { op: 'add', path: '/metadata/labels', value: { hit: 'yes' } }], JP],
  ['json-patch wrong type result', '', [{ op: 'add', path: '/metadata/labels', value: 'x' }], JP],
  ['json-patch replace root', '', [{ op: 'replace', path: '', value: [1] }], JP],
  ['json-patch element not object', '', [1, 'x'], JP],
  ['json-patch malformed', '', '[{"op":', JP],
  ['merge-patch array', '', [1], MP],
  ['merge-patch string', '', '"x"', MP],
  ['merge-patch malformed', '', '{"metadata":', MP],
  ['merge-patch wrong type result', '', { metadata: { labels: 'x' } }, MP],
  ['merge-patch name number', '', { metadata: { name: 7 } }, MP],
  ['merge-patch deep', '', `{"metadata":{"labels":${'{"a":'.repeat(20000)}1${'}'.repeat(20000)}}}`, MP],
  ['smp $patch on string', '', { metadata: { labels: { $patch: 'replace', a: 5 } } }, SMP],
  ['smp bad $patch value', '', { metadata: { $patch: 'bogus' } }, SMP],
  ['smp $setElementOrder string', '', { metadata: { '$setElementOrder/finalizers': 'x' } }, SMP],
  ['smp $deleteFromPrimitiveList object', '', { metadata: { '$deleteFromPrimitiveList/finalizers': { a: 1 } } }, SMP],
  ['smp $retainKeys number', '', { spec: { $retainKeys: 5 } }, SMP],
  ['smp wrong type', '', { metadata: { labels: ['x'] } }, SMP],
  ['smp array', '', [1], SMP],
  ['apply without fieldManager', '', 'apiVersion: v1\nkind: X\n', AP],
  ['apply bad YAML', '?fieldManager=m', 'a: [b\n : :', AP],
  ['apply scalar', '?fieldManager=m', 'hello', AP],
  ['apply list', '?fieldManager=m', '- a\n- b\n', AP],
  ['apply without kind', '?fieldManager=m', '{"metadata":{"name":"x"}}', AP],
  ['apply bad force', '?fieldManager=m&force=maybe', '{}', AP],
  ['force on a merge patch', '?force=true', {}, MP],
  ['patch fieldManager too long', `?fieldManager=${'m'.repeat(129)}`, {}, MP],
  ['patch bad dryRun', '?dryRun=Maybe', {}, MP],
  ['patch bad fieldValidation', '?fieldValidation=Loose', {}, MP],
  ['patch strict unknown field', '?fieldValidation=Strict', { metadata: { bogusField: 1 } }, MP],
];

const BAD_QUERIES: [string, string][] = [
  ['limit', 'limit=abc'],
  ['limit huge', 'limit=99999999999999999999999'],
  ['timeoutSeconds', 'timeoutSeconds=soon'],
  ['resourceVersion', 'resourceVersion=abc&resourceVersionMatch=Exact'],
  ['resourceVersionMatch', 'resourceVersionMatch=Bogus'],
  ['labelSelector', 'labelSelector=a%20in%20(b'],
  ['labelSelector bad key', 'labelSelector=%21%21%21'],
  ['fieldSelector', 'fieldSelector=no.such.field%3Dx'],
  ['fieldSelector syntax', 'fieldSelector=a%3D%3Db%3D%3Dc'],
  ['continue', 'continue=not-a-token'],
  ['sendInitialEvents without watch', 'sendInitialEvents=true'],
  ['watch timeoutSeconds', 'watch=true&timeoutSeconds=-x'],
];

describe('robustness sweep', () => {
  it('answers all bad input with a 4xx Status, and keeps the server and its data intact', async () => {
    expect(resources.length).toBeGreaterThan(50);
    expect(resources.some((r) => r.name === 'widgets/scale')).toBe(true);
    const tasks: (() => Promise<unknown>)[] = [];
    for (const r of resources) {
      const sub = r.name.includes('/');
      // The proxy subresources hand bodies to the backend undecoded: a service without
      // endpoints answers kube's 503 whatever the body (test/connect-subresources.test.ts).
      if (r.name.endsWith('/proxy')) continue;
      const bodies = badBodies(r);
      if (!sub && r.verbs.includes('create')) for (const [what, body, h, okToo] of bodies) tasks.push(() => bad(`${r.name} create ${what}`, 'POST', base(r), body, h ?? {}, okToo));
      // Subresources and updates: a sample of the bodies (every third, offset per resource).
      const sample = bodies.filter((_, i) => i % 3 === resources.indexOf(r) % 3 || i < 6);
      if (sub && r.verbs.includes('create')) for (const [what, body, h, okToo] of sample) tasks.push(() => bad(`${r.name} create ${what}`, 'POST', targetOf(r), body, h ?? {}, okToo));
      if (r.verbs.includes('update') && (TARGET[r.name.split('/')[0]] || !sub)) for (const [what, body, h, okToo] of sample) if (!okToo) tasks.push(() => bad(`${r.name} update ${what}`, 'PUT', targetOf(r), body, h ?? {}));
      if (r.verbs.includes('patch')) {
        const patches = TARGET[r.name.split('/')[0]] ? BAD_PATCHES : BAD_PATCHES.filter((_, i) => i % 5 === 0);
        for (const [what, q, body, h] of patches) tasks.push(() => bad(`${r.name} patch ${what}`, 'PATCH', `${targetOf(r)}${q}`, body, h));
      }
      if (!sub && r.verbs.includes('list')) for (const [what, q] of BAD_QUERIES) tasks.push(() => bad(`${r.name} list ${what}`, 'GET', `${base(r)}?${q}`));
      if (!sub && r.verbs.includes('create')) {
        tasks.push(() => bad(`${r.name} create bad dryRun`, 'POST', `${base(r)}?dryRun=Maybe`, typed(r, { metadata: { name: 'robust-bad' } })));
        tasks.push(() => bad(`${r.name} create bad fieldValidation`, 'POST', `${base(r)}?fieldValidation=Loose`, typed(r, { metadata: { name: 'robust-bad' } })));
        tasks.push(() => bad(`${r.name} create long fieldManager`, 'POST', `${base(r)}?fieldManager=${'m'.repeat(129)}`, typed(r, { metadata: { name: 'robust-bad' } })));
      }
      if (!sub && r.verbs.includes('delete') && TARGET[r.name]) {
        tasks.push(() => bad(`${r.name} delete bad body`, 'DELETE', targetOf(r), '{"gracePeriodSeconds": "x"}'));
        tasks.push(() => bad(`${r.name} delete bad propagation`, 'DELETE', `${targetOf(r)}?propagationPolicy=Sideways`));
        tasks.push(() => bad(`${r.name} delete bad grace`, 'DELETE', `${targetOf(r)}?gracePeriodSeconds=soon`));
        tasks.push(() => bad(`${r.name} delete wrong kind body`, 'DELETE', targetOf(r), { kind: 'Pod', apiVersion: 'v1' }));
        tasks.push(() => bad(`${r.name} delete bad precondition`, 'DELETE', targetOf(r), { preconditions: { uid: 'not-the-uid' } }));
      }
      if (!sub && r.verbs.includes('deletecollection'))
        tasks.push(() => bad(`${r.name} deletecollection bad selector`, 'DELETE', `${base(r)}?labelSelector=a%20in%20(b`));
      if (!sub && r.verbs.includes('get')) tasks.push(() => bad(`${r.name} get bad resourceVersion`, 'GET', `${targetOf(r)}?resourceVersion=abc`, undefined, {}, !TARGET[r.name]));
    }
    // Pod subresources with bad parameters.
    const pod = `/api/v1/namespaces/${NS}/pods/rp`;
    for (const q of ['tailLines=x', 'sinceSeconds=-1', 'sinceSeconds=x', 'limitBytes=0', 'container=nope', 'sinceTime=yesterday', 'sinceSeconds=1&sinceTime=2020-01-01T00:00:00Z'])
      tasks.push(() => bad(`pods/log ${q}`, 'GET', `${pod}/log?${q}`));
    tasks.push(() => bad('pods/exec without upgrade', 'POST', `${pod}/exec?command=ls&stdout=true`));
    tasks.push(() => bad('pods/exec without command', 'GET', `${pod}/exec`));
    tasks.push(() => bad('serviceaccounts/token short expiry', 'POST', `/api/v1/namespaces/${NS}/serviceaccounts/rsa/token`, { spec: { expirationSeconds: 1 } }));
    tasks.push(() => bad('serviceaccounts/token bad boundObjectRef', 'POST', `/api/v1/namespaces/${NS}/serviceaccounts/rsa/token`, { spec: { boundObjectRef: { kind: 'Thing', name: 'x' } } }));
    tasks.push(() => bad('serviceaccounts/token audiences string', 'POST', `/api/v1/namespaces/${NS}/serviceaccounts/rsa/token`, { spec: { audiences: 'x' } }));
    tasks.push(() => bad('pods/eviction bad body', 'POST', `${pod}/eviction`, { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'other' } }));
    tasks.push(() => bad('pods/binding bad target', 'POST', `${pod}/binding`, { apiVersion: 'v1', kind: 'Binding', metadata: { name: 'rp' }, target: { kind: 'Pod', name: '' } }));
    tasks.push(() => bad('pods/ephemeralcontainers wrong type', 'PATCH', `${pod}/ephemeralcontainers`, { spec: { ephemeralContainers: 'x' } }, SMP));
    tasks.push(() => bad('pods/resize wrong type', 'PATCH', `${pod}/resize`, { spec: { containers: [{ name: 'c', resources: { limits: { cpu: 'lots' } } }] } }, SMP));
    tasks.push(() => bad('widgets/scale wrong type', 'PUT', `/apis/robust.example.com/v1/namespaces/${NS}/widgets/rw/scale`, { apiVersion: 'autoscaling/v1', kind: 'Scale', metadata: { name: 'rw' }, spec: { replicas: 'x' } }));
    tasks.push(() => bad('widgets/scale negative', 'PATCH', `/apis/robust.example.com/v1/namespaces/${NS}/widgets/rw/scale`, { spec: { replicas: -1 } }, MP));
    tasks.push(() => bad('deployments/scale negative', 'PATCH', `/apis/apps/v1/namespaces/${NS}/deployments/rd/scale`, { spec: { replicas: -1 } }, MP));
    // Bad bearer tokens.
    const key = createPrivateKey(readFileSync(join(s.dataDir, 'sa.key')));
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const jwt = (claims: Record<string, unknown>, k = key) => {
      const head = b64({ alg: 'RS256', kid: 'whatever' }) + '.' + b64(claims);
      return `${head}.${createSign('RSA-SHA256').update(head).sign(k).toString('base64url')}`;
    };
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: 'https://kubernetes.default.svc.cluster.local', aud: ['https://kubernetes.default.svc.cluster.local'], sub: `system:serviceaccount:${NS}:rsa`, iat: now - 7200, nbf: now - 7200, exp: now - 3600, 'kubernetes.io': { namespace: NS, serviceaccount: { name: 'rsa', uid: 'x' } } };
    const tokens: [string, string][] = [
      ['empty bearer', 'Bearer '],
      ['garbage', 'Bearer !!!'],
      ['three empty parts', 'Bearer ..'],
      ['malformed JWT', 'Bearer eyJ.eyJ.sig'],
      ['JWT bad JSON header', `Bearer ${Buffer.from('{"alg":').toString('base64url')}.${b64({})}.x`],
      ['JWT alg none', `Bearer ${b64({ alg: 'none' })}.${b64({ ...claims, exp: now + 3600 })}.`],
      ['JWT wrong signature', `Bearer ${jwt({ ...claims, exp: now + 3600 }).slice(0, -4)}AAAA`],
      ['JWT expired', `Bearer ${jwt(claims)}`],
      ['JWT claims wrong types', `Bearer ${jwt({ ...claims, exp: 'later', sub: 5, aud: 7, 'kubernetes.io': 'x' })}`],
      ['JWT huge', `Bearer ${'a'.repeat(100_000)}.${'b'.repeat(10)}.c`],
      ['basic auth', `Basic ${Buffer.from('a:b').toString('base64')}`],
    ];
    for (const [what, auth] of tokens) tasks.push(() => bad(`token ${what}`, 'GET', `/api/v1/namespaces/${NS}/configmaps`, undefined, { authorization: auth }));
    // Oversized bodies: one JSON, one YAML, one patch.
    const big = 'x'.repeat(3 * 1024 * 1024 + 10);
    tasks.push(() => bad('oversized JSON create', 'POST', `/api/v1/namespaces/${NS}/configmaps`, JSON.stringify({ metadata: { name: 'big' }, data: { a: big } })));
    tasks.push(() => bad('oversized YAML create', 'POST', `/api/v1/namespaces/${NS}/secrets`, `metadata: {name: big}\nstringData: {a: ${big}}\n`, { 'content-type': 'application/yaml' }));
    tasks.push(() => bad('oversized patch', 'PATCH', `/api/v1/namespaces/${NS}/configmaps/rcm`, JSON.stringify({ data: { a: big } }), MP));
    tasks.push(() => bad('oversized CR', 'POST', `/apis/robust.example.com/v1/namespaces/${NS}/widgets`, JSON.stringify({ apiVersion: 'robust.example.com/v1', kind: 'Widget', metadata: { name: 'big' }, spec: { size: big } })));

    await pool(tasks);

    // The server still serves, and every seed is unchanged.
    expect((await request(s, 'GET', '/readyz')).status).toBe(200);
    for (const [p, body] of before) {
      const now = await request(s, 'GET', p);
      if (now.body !== body) note(`seed ${p} changed:\n  before ${body}\n  after  ${now.body}`);
    }
    const cm = await request(s, 'POST', `/api/v1/namespaces/${NS}/configmaps`, { metadata: { name: 'after' } });
    expect(cm.status).toBe(201);
    if (problems.length) console.log(`${problems.length} problems of ${asked} requests:\n${problems.join('\n')}`);
    expect(problems).toEqual([]);
    expect(s.proc.exitCode).toBe(null);
  }, 120_000);
});

describe('the answers the sweep found wrong, as kube-apiserver gives them', () => {
  const CMS = `/api/v1/namespaces/${NS}/configmaps`;
  const status = (r: Reply) => ({ code: r.status, reason: r.json().reason, message: r.json().message });

  it('a DELETE body that does not decode as DeleteOptions fails and deletes nothing', async () => {
    expect((await request(s, 'POST', CMS, { metadata: { name: 'del-keep' } })).status).toBe(201);
    expect(status(await request(s, 'DELETE', `${CMS}/del-keep`, '{"gracePeriodSeconds":"x"}'))).toEqual({
      code: 500, reason: undefined, message: 'json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64',
    });
    expect(status(await request(s, 'DELETE', `${CMS}/del-keep`, { apiVersion: 'v1', kind: 'Pod' }))).toEqual({ code: 500, reason: undefined, message: 'decoded object cannot be converted to DeleteOptions' });
    expect((await request(s, 'GET', `${CMS}/del-keep`)).status).toBe(200);
    expect((await request(s, 'DELETE', `${CMS}/del-keep`, { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 })).status).toBe(200);
  });

  it('a body nested deeper than 10000 is 400 exceeded max depth, on create and on patch', async () => {
    const deep = `{"metadata":{"name":"deep"},"data":${'{"a":'.repeat(10001)}1${'}'.repeat(10001)}}`;
    expect(status(await request(s, 'POST', CMS, deep))).toEqual({ code: 400, reason: 'BadRequest', message: "couldn't get version/kind; json parse error: exceeded max depth" });
    const r = await request(s, 'PATCH', `${CMS}/rcm`, `{"data":${'['.repeat(10001)}${']'.repeat(10001)}}`, MP);
    expect(status(r)).toEqual({ code: 400, reason: 'BadRequest', message: 'error decoding patch: exceeded max depth' });
    // 10000 levels still decode (the unknown field is dropped with a warning).
    const ok = `{"metadata":{"name":"deep-ok"},"spec":${'{"a":'.repeat(9990)}1${'}'.repeat(9990)}}`;
    expect((await request(s, 'POST', CMS, ok)).status).toBe(201);
  });

  it('YAML that is mostly alias expansion is refused; ordinary aliases decode', async () => {
    const bomb = ['a: &a [x,x,x,x,x,x,x,x,x]', ...'bcdefgh'.split('').map((k, i) => `${k}: &${k} [${Array(9).fill('*' + 'abcdefgh'[i]).join(',')}]`)].join('\n');
    const r = await request(s, 'POST', CMS, `metadata: {name: bomb}\n${bomb}\n`, { 'content-type': 'application/yaml' });
    expect(status(r)).toEqual({ code: 400, reason: 'BadRequest', message: "couldn't get version/kind; yaml parse error: yaml: document contains excessive aliasing" });
    const fine = await request(s, 'POST', CMS, 'metadata: {name: aliased, labels: &l {a: b}, annotations: *l}\ndata: {k: v}\n', { 'content-type': 'application/yaml' });
    expect(fine.status).toBe(201);
    expect(fine.json().metadata.annotations).toEqual({ a: 'b' });
  });

  it('namespaces/finalize takes only a Namespace', async () => {
    expect((await request(s, 'PUT', `/api/v1/namespaces/${NS}/finalize`, '[1,2]')).status).toBe(400);
    expect((await request(s, 'PUT', `/api/v1/namespaces/${NS}/finalize`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: NS } })).status).toBe(400);
  });

  it('pods/log checks its options before the pod: 400 for a value that does not convert, 422 on PodLogOptions', async () => {
    const log = `/api/v1/namespaces/${NS}/pods/rp/log`;
    expect(status(await request(s, 'GET', `${log}?tailLines=x`))).toEqual({ code: 400, reason: 'BadRequest', message: 'strconv.ParseInt: parsing "x": invalid syntax' });
    expect(status(await request(s, 'GET', `${log}?sinceSeconds=-1`))).toEqual({ code: 422, reason: 'Invalid', message: 'PodLogOptions "rp" is invalid: sinceSeconds: Invalid value: -1: must be greater than 0' });
    expect(status(await request(s, 'GET', `${log}?limitBytes=0`))).toEqual({ code: 422, reason: 'Invalid', message: 'PodLogOptions "rp" is invalid: limitBytes: Invalid value: 0: must be greater than 0' });
    expect((await request(s, 'GET', `${log}?sinceSeconds=5&sinceTime=2020-01-01T00:00:00Z`)).status).toBe(422);
    expect((await request(s, 'GET', `${log}?sinceTime=yesterday`)).status).toBe(400);
    expect((await request(s, 'GET', `${log}?sinceTime=2020-01-01T00:00:00Z&tailLines=3&limitBytes=10`)).status).toBe(200);
  });

  it('a strategic merge patch of a scale checks its directives', async () => {
    const r = await request(s, 'PATCH', `/apis/apps/v1/namespaces/${NS}/deployments/rd/scale`, { spec: { $patch: 'bogus' } }, SMP);
    expect(r.status).toBe(400);
    const ok = await request(s, 'PATCH', `/apis/apps/v1/namespaces/${NS}/deployments/rd/scale?dryRun=All`, { spec: { replicas: 4 } }, SMP);
    expect(ok.status).toBe(200);
    expect(ok.json().spec.replicas).toBe(4);
  });

  it('review kinds check CreateOptions', async () => {
    expect((await request(s, 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews?dryRun=Maybe', { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' })).status).toBe(400);
    expect((await request(s, 'POST', `/apis/authentication.k8s.io/v1/selfsubjectreviews?fieldManager=${'m'.repeat(129)}`, { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' })).status).toBe(422);
  });
});
