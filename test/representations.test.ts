// Representations over HTTPS against the real server: JSON, YAML, protobuf (get, list,
// watch, Status errors, request bodies), PartialObjectMetadata(List), Table hook, 406,
// 415, gzip. Protobuf is checked with protobufjs against the catalog's field numbers,
// independently of the server's own encoder.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import https from 'node:https';
import { gunzipSync } from 'node:zlib';
import protobuf from 'protobufjs';
import { parse as parseYaml } from 'yaml';
import { protoSchema } from '../src/codec/proto-schema.js';
import { openWatch, request, startServer, until, type TestServer, useServer } from './helpers/server.js';
import { kubectl } from './helpers/kubectl.js';

const PB = 'application/vnd.kubernetes.protobuf';
const NS = '/api/v1/namespaces/default';
const root = protobuf.Root.fromJSON(protoSchema);
const T = (n: string) => root.lookupType(n);
const Unknown = T('k8s.io.apimachinery.pkg.runtime.Unknown');
const WatchEvent = T('k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent');

function unwrap(buf: Buffer): { apiVersion: string; kind: string; raw: Buffer } {
  expect([...buf.subarray(0, 4)]).toEqual([0x6b, 0x38, 0x73, 0x00]);
  const u: any = Unknown.decode(buf.subarray(4));
  return { apiVersion: u.typeMeta.apiVersion, kind: u.typeMeta.kind, raw: Buffer.from(u.raw) };
}

function wrap(apiVersion: string, kind: string, raw: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from([0x6b, 0x38, 0x73, 0x00]), Buffer.from(Unknown.encode({ typeMeta: { apiVersion, kind }, raw }).finish())]);
}

/** A watch that collects raw bytes. */
function openRawWatch(s: TestServer, path: string, accept: string) {
  const chunks: Buffer[] = [];
  let req!: ReturnType<typeof https.request>;
  let headers: Record<string, any> = {};
  const status = new Promise<number>((res, rej) => {
    req = https.request({ host: '127.0.0.1', port: s.port, method: 'GET', path, ca: s.ca, headers: { authorization: `Bearer ${s.token}`, accept } }, (r) => {
      headers = r.headers;
      res(r.statusCode!);
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('error', () => {});
    });
    req.on('error', rej);
    req.end();
  });
  return { bytes: () => Buffer.concat(chunks), headers: () => headers, close: () => req.destroy(), status };
}

/** Splits a protobuf watch stream into its WatchEvents (4-byte big-endian length frames). */
function protoFrames(b: Buffer): Array<{ type: string; object: Buffer }> {
  const out: Array<{ type: string; object: Buffer }> = [];
  let i = 0;
  while (i + 4 <= b.length) {
    const n = b.readUInt32BE(i);
    if (i + 4 + n > b.length) break;
    const ev: any = WatchEvent.decode(b.subarray(i + 4, i + 4 + n));
    out.push({ type: ev.type, object: Buffer.from(ev.object.raw) });
    i += 4 + n;
  }
  return out;
}

let s: TestServer;
// (no in-process scheduler: the pods compared representation by representation must not
// change between reads, and with no nodes it would write their PodScheduled condition)
useServer((started) => (s = started), { args: ['--controllers=*,-scheduler'] }, 60_000);

const pod = (name: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, labels: { app: 'web' }, annotations: { note: 'x' } },
  spec: {
    containers: [{ name: 'c', image: 'nginx:1.27', ports: [{ containerPort: 80, protocol: 'TCP' }], resources: { limits: { cpu: '500m', memory: '128Mi' } } }],
    terminationGracePeriodSeconds: 0,
  },
});

describe('protobuf', () => {
  it('a Pod written in protobuf reads back identically in JSON, YAML and protobuf', async () => {
    const Pod = T('k8s.io.api.core.v1.Pod');
    const msg = Pod.fromObject({
      metadata: { name: 'pb-pod', labels: { app: 'web' }, annotations: { note: 'x' } },
      spec: {
        containers: [{ name: 'c', image: 'nginx:1.27', ports: [{ containerPort: 80, protocol: 'TCP' }], resources: { limits: { cpu: { string: '500m' }, memory: { string: '128Mi' } } } }],
        terminationGracePeriodSeconds: 0,
      },
    });
    const body = wrap('v1', 'Pod', Pod.encode(msg).finish());
    const created = await request(s, 'POST', `${NS}/pods`, body, { 'content-type': PB, accept: PB });
    expect(created.status).toBe(201);
    expect(created.headers['content-type']).toBe(PB);
    const env = unwrap(created.raw);
    expect(env).toMatchObject({ apiVersion: 'v1', kind: 'Pod' });

    const json = (await request(s, 'GET', `${NS}/pods/pb-pod`)).json();
    const yamlReply = await request(s, 'GET', `${NS}/pods/pb-pod`, undefined, { accept: 'application/yaml' });
    expect(yamlReply.headers['content-type']).toBe('application/yaml');
    expect(parseYaml(yamlReply.body)).toEqual(json);
    expect(json.spec.containers[0].resources.limits).toEqual({ cpu: '500m', memory: '128Mi' });
    expect(json.spec.terminationGracePeriodSeconds).toBe(0);

    const pbReply = await request(s, 'GET', `${NS}/pods/pb-pod`, undefined, { accept: PB });
    const got = unwrap(pbReply.raw);
    const decoded: any = Pod.toObject(Pod.decode(got.raw), { longs: Number });
    expect(decoded.metadata.name).toBe('pb-pod');
    expect(decoded.metadata.uid).toBe(json.metadata.uid);
    expect(decoded.metadata.resourceVersion).toBe(json.metadata.resourceVersion);
    expect(decoded.metadata.creationTimestamp.seconds).toBe(Math.floor(Date.parse(json.metadata.creationTimestamp) / 1000));
    expect(decoded.metadata.labels).toEqual({ app: 'web' });
    expect(decoded.spec.containers[0].resources.limits.cpu.string).toBe('500m');
    expect(decoded.spec.terminationGracePeriodSeconds).toBe(0);
    // The same bytes for a second reader: encoded once per version.
    expect((await request(s, 'GET', `${NS}/pods/pb-pod`, undefined, { accept: PB })).raw.equals(pbReply.raw)).toBe(true);
  });

  it('a list decodes as the PodList message', async () => {
    await request(s, 'POST', `${NS}/pods`, pod('pb-pod-2'));
    const r = await request(s, 'GET', `${NS}/pods`, undefined, { accept: `${PB}, application/json` });
    expect(r.status).toBe(200);
    const env = unwrap(r.raw);
    expect(env).toMatchObject({ apiVersion: 'v1', kind: 'PodList' });
    const PodList = T('k8s.io.api.core.v1.PodList');
    const list: any = PodList.toObject(PodList.decode(env.raw), { longs: Number });
    expect(list.metadata.resourceVersion).toMatch(/^\d+$/);
    expect(list.items.map((p: any) => p.metadata.name)).toEqual(['pb-pod', 'pb-pod-2']);
  });

  it('a watch streams length-prefixed WatchEvents holding enveloped objects', async () => {
    // Binary watches send their headers with the first event: do not wait for them first.
    const w = openRawWatch(s, `${NS}/configmaps?watch=1&resourceVersion=0&fieldSelector=metadata.name%3Dpb-cm`, PB);
    await request(s, 'POST', `${NS}/configmaps`, { metadata: { name: 'pb-cm' }, data: { a: '1' } });
    expect(await w.status).toBe(200);
    expect(w.headers()['content-type']).toBe(`${PB};stream=watch`);
    await request(s, 'PATCH', `${NS}/configmaps/pb-cm`, { data: { a: '2' } }, { 'content-type': 'application/merge-patch+json' });
    const frames = await until(() => {
      const f = protoFrames(w.bytes());
      return f.length >= 2 && f;
    });
    w.close();
    expect(frames.map((f) => f.type)).toEqual(['ADDED', 'MODIFIED']);
    const CM = T('k8s.io.api.core.v1.ConfigMap');
    const env = unwrap(frames[1].object);
    expect(env.kind).toBe('ConfigMap');
    const cm: any = CM.toObject(CM.decode(env.raw));
    expect(cm.metadata.name).toBe('pb-cm');
    expect(cm.data).toEqual({ a: '2' });
  });

  it('errors come back as a protobuf Status', async () => {
    const r = await request(s, 'GET', `${NS}/pods/nope`, undefined, { accept: `${PB}, application/json` });
    expect(r.status).toBe(404);
    expect(r.headers['content-type']).toBe(PB);
    const env = unwrap(r.raw);
    expect(env).toMatchObject({ apiVersion: 'v1', kind: 'Status' });
    const St = T('k8s.io.apimachinery.pkg.apis.meta.v1.Status');
    const st: any = St.toObject(St.decode(env.raw));
    expect(st).toMatchObject({ status: 'Failure', reason: 'NotFound', code: 404, message: 'pods "nope" not found' });
  });
});

describe('protobuf and JSON writes agree', () => {
  // The same Pod, written once as JSON and once as protobuf (with Go's explicit zero for a
  // non-pointer field), must be stored and served identically but for its identity.
  const spec = {
    containers: [
      {
        name: 'c',
        image: 'nginx:1.27',
        command: ['sh', '-c'],
        args: ['echo hi'],
        env: [{ name: 'A', value: '1' }, { name: 'B', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }, { name: 'C', valueFrom: { configMapKeyRef: { name: 'x', key: 'k' } } }],
        ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
        readinessProbe: { httpGet: { path: '/', port: 'http' }, periodSeconds: 5 },
        livenessProbe: { tcpSocket: { port: 8080 } },
        securityContext: { runAsUser: 0, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true },
        volumeMounts: [{ name: 'cfg', mountPath: '/cfg', readOnly: true }],
        resources: { requests: { cpu: '100m', memory: '1Gi' } },
      },
    ],
    volumes: [{ name: 'cfg', configMap: { name: 'x', defaultMode: 420, optional: false } }, { name: 'tmp', emptyDir: {} }],
    nodeSelector: { disk: 'ssd' },
    tolerations: [{ key: 'k', operator: 'Equal', value: 'v', effect: 'NoExecute', tolerationSeconds: 30 }],
    terminationGracePeriodSeconds: 0,
    automountServiceAccountToken: false,
  };
  // The wire form: quantities and int-or-strings as messages, and Go's inline structs
  // (Probe.handler, Volume.volumeSource, the selectors' localObjectReference) nested.
  const pbSpec = structuredClone(spec) as any;
  const c = pbSpec.containers[0];
  c.env[2].valueFrom.configMapKeyRef = { localObjectReference: { name: 'x' }, key: 'k' };
  c.readinessProbe = { handler: { httpGet: { path: '/', port: { type: 1, strVal: 'http' } } }, periodSeconds: 5 };
  c.livenessProbe = { handler: { tcpSocket: { port: { type: 0, intVal: 8080 } } } };
  c.resources.requests = { cpu: { string: '100m' }, memory: { string: '1Gi' } };
  pbSpec.volumes = [
    { name: 'cfg', volumeSource: { configMap: { localObjectReference: { name: 'x' }, defaultMode: 420, optional: false } } },
    { name: 'tmp', volumeSource: { emptyDir: {} } },
  ];
  pbSpec.hostNetwork = false; // Go writes non-pointer zeros; JSON omits them

  const identityless = (o: any) => {
    const x = structuredClone(o);
    for (const k of ['name', 'uid', 'resourceVersion', 'creationTimestamp']) delete x.metadata[k];
    for (const m of x.metadata.managedFields ?? []) delete m.time;
    return x;
  };

  it('a Pod written in protobuf reads back in JSON, YAML and protobuf as its JSON-written twin', async () => {
    const Pod = T('k8s.io.api.core.v1.Pod');
    const meta = { labels: { app: 'twin' }, annotations: { a: 'b' } };
    const pb = wrap('v1', 'Pod', Pod.encode(Pod.fromObject({ metadata: { name: 'twin-pb', ...meta }, spec: pbSpec })).finish());
    const a = await request(s, 'POST', `${NS}/pods`, pb, { 'content-type': PB });
    expect(a.status, a.body).toBe(201);
    const b = await request(s, 'POST', `${NS}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'twin-json', ...meta }, spec });
    expect(b.status, b.body).toBe(201);
    const [pj, jj] = await Promise.all(['twin-pb', 'twin-json'].map(async (n) => (await request(s, 'GET', `${NS}/pods/${n}`)).json()));
    expect(pj.spec.containers[0]).toMatchObject(spec.containers[0]);
    expect(pj.spec.volumes).toEqual(spec.volumes);
    expect(pj.spec.hostNetwork).toBeUndefined();
    expect(identityless(pj)).toEqual(identityless(jj));
    const [py, jy] = await Promise.all(['twin-pb', 'twin-json'].map(async (n) => parseYaml((await request(s, 'GET', `${NS}/pods/${n}`, undefined, { accept: 'application/yaml' })).body)));
    expect(py).toEqual(pj);
    expect(identityless(py)).toEqual(identityless(jy));
    const [pp, jp] = await Promise.all(
      ['twin-pb', 'twin-json'].map(async (n) => Pod.toObject(Pod.decode(unwrap((await request(s, 'GET', `${NS}/pods/${n}`, undefined, { accept: PB })).raw).raw), { longs: Number }) as any),
    );
    expect(pp.metadata.uid).toBe(pj.metadata.uid);
    expect(pp.spec).toEqual(jp.spec);
    expect(pp.spec.containers[0].readinessProbe.handler.httpGet.port).toMatchObject({ type: 1, strVal: 'http' });
    expect(pp.spec.volumes[0].volumeSource.configMap.localObjectReference.name).toBe('x');
    expect(pp.spec.containers[0].securityContext.runAsUser).toBe(0);
  });
});

describe('kubectl over protobuf', () => {
  // kubectl's create generators use the typed clients: protobuf bodies, protobuf answers.
  it('creates objects with protobuf bodies and reads protobuf answers', async () => {
    const dep = await kubectl(s, ['create', 'deployment', 'kc-web', '--image=nginx:1.27', '--replicas=0', '-o', 'json']);
    expect(dep.code, dep.stderr).toBe(0);
    const d = JSON.parse(dep.stdout);
    expect(d.spec.replicas).toBe(0);
    expect(d.spec.template.spec.containers[0].image).toBe('nginx:1.27');
    const stored = (await request(s, 'GET', '/apis/apps/v1/namespaces/default/deployments/kc-web')).json();
    expect(stored.spec.replicas).toBe(0);
    expect(stored.metadata.uid).toBe(d.metadata.uid);
    const sec = await kubectl(s, ['create', 'secret', 'generic', 'kc-sec', '--from-literal=p=q', '-o', 'json']);
    expect(sec.code, sec.stderr).toBe(0);
    expect((await request(s, 'GET', `${NS}/secrets/kc-sec`)).json().data).toEqual(JSON.parse(sec.stdout).data);
    const svc = await kubectl(s, ['create', 'service', 'clusterip', 'kc-svc', '--tcp=80:8080', '-o', 'json']);
    expect(svc.code, svc.stderr).toBe(0);
    expect(JSON.parse(svc.stdout).spec.ports[0]).toMatchObject({ port: 80, targetPort: 8080, protocol: 'TCP' });
    const cj = await kubectl(s, ['create', 'cronjob', 'kc-cj', '--image=busybox', '--schedule=*/5 * * * *']);
    expect(cj.code, cj.stderr).toBe(0);
    // an Ingress rule's http is a Go inline struct (IngressRuleValue): nested on the wire
    const ing = await kubectl(s, ['create', 'ingress', 'kc-ing', '--class=nginx', '--rule=foo.example.com/api*=api-svc:8080']);
    expect(ing.code, ing.stderr).toBe(0);
    const rule = (await request(s, 'GET', '/apis/networking.k8s.io/v1/namespaces/default/ingresses/kc-ing')).json().spec.rules[0];
    expect(rule).toEqual({ host: 'foo.example.com', http: { paths: [{ path: '/api', pathType: 'Prefix', backend: { service: { name: 'api-svc', port: { number: 8080 } } } }] } });
  });
});

describe('list items', () => {
  it("a built-in type's list items carry no kind and apiVersion, in every way a list is read; single objects and watch events keep them", async () => {
    await request(s, 'POST', `${NS}/configmaps`, { metadata: { name: 'item-typemeta' }, data: { k: 'v' } });
    const paths = [`${NS}/configmaps`, `${NS}/configmaps?resourceVersion=0`, `${NS}/configmaps?limit=1`, `${NS}/configmaps?labelSelector=x!=y`, '/api/v1/configmaps'];
    for (const path of paths) {
      const list = (await request(s, 'GET', path)).json();
      expect(list).toMatchObject({ kind: 'ConfigMapList', apiVersion: 'v1' });
      expect(list.items.length).toBeGreaterThan(0);
      for (const item of list.items) {
        expect(item.kind).toBeUndefined();
        expect(item.apiVersion).toBeUndefined();
        expect(item.metadata.name).toBeTruthy();
      }
    }
    const yaml = parseYaml((await request(s, 'GET', `${NS}/configmaps`, undefined, { accept: 'application/yaml' })).body);
    expect(yaml.items.find((x: any) => x.metadata.name === 'item-typemeta')).toEqual(expect.not.objectContaining({ kind: expect.anything() }));
    const one = (await request(s, 'GET', `${NS}/configmaps/item-typemeta`)).json();
    expect(one).toMatchObject({ kind: 'ConfigMap', apiVersion: 'v1' });
    const w = openWatch(s, `${NS}/configmaps?watch=1&resourceVersion=0`);
    const ev = await until(() => w.events.find((e) => e.object?.metadata?.name === 'item-typemeta'));
    w.close();
    expect(ev.object).toMatchObject({ kind: 'ConfigMap', apiVersion: 'v1' });
  });
});

describe('YAML', () => {
  it('serves lists and takes YAML bodies', async () => {
    // (quoted keys: YAML 1.1, which kube reads bodies as, takes a bare n or on for a boolean)
    const body = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yaml-cm\ndata:\n  "on": "yes"\n  "n": "1"\n';
    const c = await request(s, 'POST', `${NS}/configmaps`, body, { 'content-type': 'application/yaml', accept: 'application/yaml' });
    expect(c.status).toBe(201);
    expect(parseYaml(c.body).data).toEqual({ on: 'yes', n: '1' });
    const l = await request(s, 'GET', `${NS}/configmaps`, undefined, { accept: 'application/yaml' });
    const list = parseYaml(l.body);
    expect(list.kind).toBe('ConfigMapList');
    expect(list.items.some((x: any) => x.metadata.name === 'yaml-cm')).toBe(true);
  });
  it('a YAML watch is 406 listing the stream types (the Status itself in YAML, as asked)', async () => {
    const r = await request(s, 'GET', `${NS}/configmaps?watch=1`, undefined, { accept: 'application/yaml' });
    expect(r.status).toBe(406);
    expect(r.headers['content-type']).toBe('application/yaml');
    expect(parseYaml(r.body).message).toBe('only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch');
  });
});

describe('PartialObjectMetadata', () => {
  const POM = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';
  const POML = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
  it('get, list and watch carry metadata only', async () => {
    const g = (await request(s, 'GET', `${NS}/pods/pb-pod`, undefined, { accept: POM })).json();
    expect(Object.keys(g)).toEqual(['kind', 'apiVersion', 'metadata']);
    expect(g).toMatchObject({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { name: 'pb-pod', labels: { app: 'web' } } });
    const l = (await request(s, 'GET', `${NS}/pods`, undefined, { accept: POML })).json();
    expect(l.kind).toBe('PartialObjectMetadataList');
    expect(l.apiVersion).toBe('meta.k8s.io/v1');
    expect(l.metadata.resourceVersion).toMatch(/^\d+$/);
    expect(l.items[0]).toMatchObject({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1' });
    expect(l.items[0].spec).toBeUndefined();
    const b1 = (await request(s, 'GET', `${NS}/pods`, undefined, { accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1' })).json();
    expect(b1.apiVersion).toBe('meta.k8s.io/v1beta1');

    const w = openRawWatch(s, `${NS}/pods?watch=1&resourceVersion=0`, POM);
    expect(await w.status).toBe(200);
    const ev = await until(() => {
      const t = w.bytes().toString();
      return t.includes('\n') && JSON.parse(t.slice(0, t.indexOf('\n')));
    });
    w.close();
    expect(ev.type).toBe('ADDED');
    expect(ev.object.kind).toBe('PartialObjectMetadata');
    expect(ev.object.spec).toBeUndefined();
  });
  it('protobuf PartialObjectMetadataList decodes', async () => {
    const r = await request(s, 'GET', `${NS}/pods`, undefined, { accept: `${PB};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,${POML},application/json` });
    const env = unwrap(r.raw);
    expect(env).toMatchObject({ apiVersion: 'meta.k8s.io/v1', kind: 'PartialObjectMetadataList' });
    const L = T('k8s.io.apimachinery.pkg.apis.meta.v1.PartialObjectMetadataList');
    const list: any = L.toObject(L.decode(env.raw));
    expect(list.items.map((p: any) => p.metadata.name)).toContain('pb-pod');
  });
  it('a protobuf metadata watch (the metadata informers\' form) streams PartialObjectMetadata frames', async () => {
    // Binary watches send their headers with the first event: make one.
    expect((await request(s, 'POST', `${NS}/configmaps`, { metadata: { name: 'pom-w' }, data: { a: 'b' } })).status).toBe(201);
    const w = openRawWatch(s, `${NS}/configmaps?watch=1&resourceVersion=0&fieldSelector=metadata.name%3Dpom-w`, `${PB};as=PartialObjectMetadata;g=meta.k8s.io;v=v1,${POM},application/json`);
    expect(await w.status).toBe(200);
    // kube names the stream by its serializer only, whatever the transformation
    expect(w.headers()['content-type']).toBe(`${PB};stream=watch`);
    const frames = await until(() => {
      const f = protoFrames(w.bytes());
      return f.length >= 1 && f;
    });
    w.close();
    expect(frames[0].type).toBe('ADDED');
    const env = unwrap(frames[0].object);
    expect(env).toMatchObject({ apiVersion: 'meta.k8s.io/v1', kind: 'PartialObjectMetadata' });
    const P = T('k8s.io.apimachinery.pkg.apis.meta.v1.PartialObjectMetadata');
    const m: any = P.toObject(P.decode(env.raw));
    expect(m.metadata).toMatchObject({ name: 'pom-w', namespace: 'default' });
    expect(m.metadata.resourceVersion).toMatch(/^\d+$/);
  });
  it('the wrong shape for the endpoint is 406', async () => {
    const a = await request(s, 'GET', `${NS}/pods`, undefined, { accept: POM });
    expect(a.status).toBe(406);
    expect(a.json()).toMatchObject({ reason: 'NotAcceptable', message: 'you requested PartialObjectMetadata, but the requested object is a list (*v1.PodList)' });
    const b = await request(s, 'GET', `${NS}/pods/pb-pod`, undefined, { accept: POML });
    expect(b.status).toBe(406);
  });
});

describe('Table, 406, 415, gzip', () => {
  it('serves a Table for kubectl', async () => {
    const r = await request(s, 'GET', `${NS}/pods`, undefined, { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json' });
    const t = r.json();
    expect(t.kind).toBe('Table');
    expect(t.apiVersion).toBe('meta.k8s.io/v1');
    expect(t.columnDefinitions[0].name).toBe('Name');
    expect(t.rows.length).toBeGreaterThanOrEqual(2);
    expect(t.rows[0].object.kind).toBe('PartialObjectMetadata');
  });
  it('406 when nothing requested is served, with the served types', async () => {
    const r = await request(s, 'GET', `${NS}/pods`, undefined, { accept: 'text/html' });
    expect(r.status).toBe(406);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.json()).toMatchObject({ kind: 'Status', code: 406, reason: 'NotAcceptable', message: 'only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf' });
  });
  it('415 for a body type that is not supported (CBOR with its gate off)', async () => {
    for (const ct of ['text/plain', 'application/cbor']) {
      const r = await request(s, 'POST', `${NS}/configmaps`, '{}', { 'content-type': ct });
      expect(r.status).toBe(415);
      expect(r.json()).toMatchObject({ reason: 'UnsupportedMediaType', message: 'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf' });
    }
    const g = await request(s, 'GET', `${NS}/configmaps`, undefined, { accept: 'application/cbor' });
    expect(g.status).toBe(406);
  });
  it('gzips a large list for Accept-Encoding: gzip, not a small one', async () => {
    const big = 'x'.repeat(100 * 1024);
    for (const n of ['gz-1', 'gz-2']) expect((await request(s, 'POST', `${NS}/configmaps`, { metadata: { name: n }, data: { big } })).status).toBe(201);
    const r = await request(s, 'GET', `${NS}/configmaps`, undefined, { 'accept-encoding': 'gzip' });
    expect(r.headers['content-encoding']).toBe('gzip');
    expect(r.headers['vary']).toBe('Accept-Encoding');
    const list = JSON.parse(gunzipSync(r.raw).toString());
    expect(list.items.filter((x: any) => x.metadata.name.startsWith('gz-'))).toHaveLength(2);
    const small = await request(s, 'GET', `${NS}/configmaps/pb-cm`, undefined, { 'accept-encoding': 'gzip' });
    expect(small.headers['content-encoding']).toBeUndefined();
    const plain = await request(s, 'GET', `${NS}/configmaps`);
    expect(plain.headers['content-encoding']).toBeUndefined();
  });
});

describe('CBOR behind its gate (and compression with its gate off)', () => {
  let c: TestServer;
  beforeAll(async () => {
    c = await startServer({ args: ['--feature-gates', 'CBORServingAndStorage=true,APIResponseCompression=false'] });
  }, 60_000);
  afterAll(async () => {
    await c?.stop();
    c?.cleanup();
  });
  it('reads and writes application/cbor, watches as application/cbor-seq', async () => {
    const { encode, decode, decodeMultiple } = await import('cbor-x');
    const body = Buffer.concat([Buffer.from([0xd9, 0xd9, 0xf7]), Buffer.from(encode({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cb' }, data: { k: 'v' } }))]);
    const w = openRawWatch(c, `${NS}/configmaps?watch=1&resourceVersion=0&fieldSelector=metadata.name%3Dcb`, 'application/cbor');
    const r = await request(c, 'POST', `${NS}/configmaps`, body, { 'content-type': 'application/cbor', accept: 'application/cbor' });
    expect(await w.status).toBe(200);
    expect(w.headers()['content-type']).toBe('application/cbor-seq');
    expect(r.status).toBe(201);
    expect(r.headers['content-type']).toBe('application/cbor');
    expect([...r.raw.subarray(0, 3)]).toEqual([0xd9, 0xd9, 0xf7]);
    expect(decode(r.raw)).toMatchObject({ kind: 'ConfigMap', metadata: { name: 'cb' }, data: { k: 'v' } });
    const json = (await request(c, 'GET', `${NS}/configmaps/cb`)).json();
    expect(json.data).toEqual({ k: 'v' });
    const events = await until(() => {
      const all: any[] = [];
      try {
        decodeMultiple(w.bytes(), (v: any) => {
          all.push(v);
        });
      } catch {
        return false;
      }
      return all.length >= 1 && all;
    });
    w.close();
    expect(events[0]).toMatchObject({ type: 'ADDED', object: { kind: 'ConfigMap', metadata: { name: 'cb' } } });
  });
  it('takes a server-side apply body in CBOR', async () => {
    const { encode } = await import('cbor-x');
    const cfg = Buffer.concat([Buffer.from([0xd9, 0xd9, 0xf7]), Buffer.from(encode({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cb-apply' }, data: { x: 'y' } }))]);
    const r = await request(c, 'PATCH', `${NS}/configmaps/cb-apply?fieldManager=t`, cfg, { 'content-type': 'application/apply-patch+cbor' });
    expect(r.status).toBe(201);
    expect(r.json().data).toEqual({ x: 'y' });
    const off = await request(s, 'PATCH', `${NS}/configmaps/cb-apply?fieldManager=t`, cfg, { 'content-type': 'application/apply-patch+cbor' });
    expect(off.status).toBe(415);
  });
  it('APIResponseCompression=false: a large list is not gzipped', async () => {
    const big = 'x'.repeat(200 * 1024);
    expect((await request(c, 'POST', `${NS}/configmaps`, { metadata: { name: 'nogz' }, data: { big } })).status).toBe(201);
    const r = await request(c, 'GET', `${NS}/configmaps`, undefined, { 'accept-encoding': 'gzip' });
    expect(r.status).toBe(200);
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(r.json().items.some((x: any) => x.metadata.name === 'nogz')).toBe(true);
  });
});
