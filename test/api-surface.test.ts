// The API surface against a really started server: field validation (raw HTTPS and real
// kubectl), OpenAPI v2/v3 with kube-apiserver's caching, kubectl explain, aggregated and
// legacy discovery, kubectl api-resources, and --runtime-config in all of them.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request, startServer, type TestServer } from './helpers/server.js';
import { kubectl } from './helpers/kubectl.js';
import protobuf from 'protobufjs';
import { parse as parseYaml } from 'yaml';
import { protoSchema } from '../src/codec/proto-schema.js';

/**
 * The 1.33 discovery facts (k8s-api-1.33/discovery), found beside the repository or an
 * ancestor of it, or at $KUBESHARD_API_DATA. Absent on a machine that has only the repo.
 */
function factsDir(): string | undefined {
  const candidates = process.env.KUBESHARD_API_DATA ? [process.env.KUBESHARD_API_DATA] : [];
  for (let d = resolve(dirname(fileURLToPath(import.meta.url)), '..'); ; d = dirname(d)) {
    candidates.push(join(d, 'shared', 'k8s-api-1.33'));
    if (dirname(d) === d) break;
  }
  return candidates.find((c) => existsSync(join(c, 'discovery', 'derived-discovery-1.33.json')));
}
function discoveryFacts(): { groupVersions: Array<{ groupVersion: string; resources: any[] }> } | undefined {
  const dir = factsDir();
  return dir ? JSON.parse(readFileSync(join(dir, 'discovery', 'derived-discovery-1.33.json'), 'utf8')) : undefined;
}

/** A document without its description prose (which we never carry). */
function withoutDescriptions(v: any): any {
  if (Array.isArray(v)) return v.map(withoutDescriptions);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).filter(([k, x]) => !(k === 'description' && typeof x === 'string')).map(([k, x]) => [k, withoutDescriptions(x)]));
  return v;
}

/** Rows of a kubectl table, cut at the header's column starts (cells may hold spaces). */
function tableRows(out: string): Array<Record<string, string>> {
  const [head, ...rest] = out.trimEnd().split('\n');
  const starts = [...head.matchAll(/\S+(?: \S+)*/g)].map((m) => ({ name: m[0], at: m.index! }));
  return rest.map((line) => Object.fromEntries(starts.map((c, i) => [c.name, line.slice(c.at, starts[i + 1]?.at ?? line.length).trim()])));
}

let s: TestServer;
const DEPLOYS = '/apis/apps/v1/namespaces/default/deployments';
const CM = '/api/v1/namespaces/default/configmaps';

function deployment(name: string, spec: Record<string, unknown> = {}) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } },
      ...spec,
    },
  };
}

function warnings(r: { headers: Record<string, string | string[] | undefined> }): string[] {
  const w = r.headers['warning'];
  if (!w) return [];
  // node joins repeated headers with ", "; each value is `299 - "<text>"`
  return (Array.isArray(w) ? w : w.split(/, (?=299 )/)).map((x) => JSON.parse(x.replace(/^299 - /, '')));
}

beforeAll(async () => {
  s = await startServer();
});

afterAll(async () => {
  await s.stop();
  s.cleanup();
});

describe('field validation', () => {
  it('Warn (the default) drops unknown fields with one warning each', async () => {
    const body = deployment('warn1', { replica: 2, foo: { bar: 1 } });
    const r = await request(s, 'POST', DEPLOYS, body);
    expect(r.status).toBe(201);
    expect(warnings(r)).toEqual(['unknown field "spec.replica"', 'unknown field "spec.foo"']);
    expect(r.json().spec.replica).toBeUndefined();
    const g = await request(s, 'GET', `${DEPLOYS}/warn1`);
    expect(g.json().spec.foo).toBeUndefined();
  });

  it('Ignore drops them silently', async () => {
    const r = await request(s, 'POST', `${DEPLOYS}?fieldValidation=Ignore`, deployment('ign1', { replica: 2 }));
    expect(r.status).toBe(201);
    expect(r.headers['warning']).toBeUndefined();
    expect(r.json().spec.replica).toBeUndefined();
  });

  it('Strict fails with 400 naming every unknown and duplicated field, and stores nothing', async () => {
    const text = JSON.stringify(deployment('strict1', { foo: 1 })).replace('"selector":', '"replicas":1,"replicas":2,"selector":');
    const r = await request(s, 'POST', `${DEPLOYS}?fieldValidation=Strict`, text);
    expect(r.status).toBe(400);
    expect(r.json()).toMatchObject({ kind: 'Status', reason: 'BadRequest', code: 400 });
    expect(r.json().message).toBe('Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: duplicate field "spec.replicas", unknown field "spec.foo"');
    expect((await request(s, 'GET', `${DEPLOYS}/strict1`)).status).toBe(404);
  });

  it('duplicated fields warn in Warn mode; the last value wins', async () => {
    const text = '{"metadata":{"name":"dup1","labels":{"a":"1","a":"2"}},"data":{"k":"v"},"data":{"k":"w"}}';
    const r = await request(s, 'POST', CM, text);
    expect(r.status).toBe(201);
    expect(warnings(r)).toEqual(['duplicate field "metadata.labels.a"', 'duplicate field "data"']);
    expect(r.json().data).toEqual({ k: 'w' });
    expect(r.json().metadata.labels).toEqual({ a: '2' });
  });

  it('a wrong type is 400 in every mode', async () => {
    for (const mode of ['Ignore', 'Warn', 'Strict']) {
      const r = await request(s, 'POST', `${DEPLOYS}?fieldValidation=${mode}`, deployment('type1', { replicas: 'two' }));
      expect(r.status).toBe(400);
      expect(r.json().reason).toBe('BadRequest');
      expect(r.json().message).toBe('Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32');
    }
    const cm = await request(s, 'POST', CM, { metadata: { name: 'type2' }, data: { k: 5 } });
    expect(cm.status).toBe(400);
    expect(cm.json().message).toContain('cannot unmarshal number into Go struct field ConfigMap.data of type string');
    const secret = await request(s, 'POST', '/api/v1/namespaces/default/secrets', { metadata: { name: 'type3' }, data: { k: '%%%' } });
    expect(secret.status).toBe(400);
    expect(secret.json().message).toContain('illegal base64 data at input byte 0');
    const q = await request(s, 'POST', '/api/v1/namespaces/default/pods', {
      metadata: { name: 'type4' },
      spec: { containers: [{ name: 'c', image: 'i', resources: { limits: { cpu: 'a lot' } } }] },
    });
    expect(q.status).toBe(400);
    expect(q.json().message).toContain('quantities must match the regular expression');
  });

  it('quantities may be numbers, int-or-string either', async () => {
    const r = await request(s, 'POST', '/api/v1/namespaces/default/pods?fieldValidation=Strict', {
      metadata: { name: 'qty1' },
      spec: { containers: [{ name: 'c', image: 'i', resources: { limits: { cpu: 1, memory: '64Mi' } }, readinessProbe: { httpGet: { port: 8080 } }, livenessProbe: { tcpSocket: { port: 'http' } } }] },
    });
    expect(r.status).toBe(201);
  });

  it('a missing required field is 422 Invalid', async () => {
    const d = deployment('req1');
    delete (d.spec.template.spec.containers[0] as any).name;
    const r = await request(s, 'POST', DEPLOYS, d);
    expect(r.status).toBe(422);
    expect(r.json().reason).toBe('Invalid');
    expect(r.json().details.causes).toContainEqual({ reason: 'FieldValueRequired', message: 'Required value', field: 'spec.template.spec.containers[0].name' });
  });

  it('a body nested too deep is 400 and the server carries on', async () => {
    const n = 100000;
    const text = '{"metadata":{"name":"deep"},"spec":{"group":"x.io","names":{"plural":"ds","kind":"D"},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":' + '{"not":'.repeat(n) + '{}' + '}'.repeat(n) + '}}]}}';
    const r = await request(s, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', text);
    expect(r.status).toBe(400);
    expect(r.json().message).toContain('exceeded max depth');
    expect((await request(s, 'GET', '/readyz')).status).toBe(200);
  });

  it('an unknown fieldValidation value is rejected', async () => {
    const r = await request(s, 'POST', `${CM}?fieldValidation=Loud`, { metadata: { name: 'fv1' } });
    expect(r.status).toBe(422);
    expect(r.json().message).toBe('CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loud": supported values: "", "Ignore", "Strict", "Warn"');
  });

  it('applies to updates and merge patches too', async () => {
    const c = await request(s, 'POST', CM, { metadata: { name: 'upd1' }, data: { a: '1' } });
    expect(c.status).toBe(201);
    const obj = c.json();
    obj.extra = true;
    const u = await request(s, 'PUT', `${CM}/upd1?fieldValidation=Strict`, obj);
    expect(u.status).toBe(400);
    expect(u.json().message).toContain('strict decoding error: unknown field "extra"');
    const u2 = await request(s, 'PUT', `${CM}/upd1`, obj);
    expect(u2.status).toBe(200);
    expect(warnings(u2)).toEqual(['unknown field "extra"']);
    const p = await request(s, 'PATCH', `${CM}/upd1?fieldValidation=Strict`, { data: { b: '2' }, bogus: 1 }, { 'content-type': 'application/merge-patch+json' });
    expect(p.status).toBe(400);
    expect(p.json().message).toContain('unknown field "bogus"');
    const p2 = await request(s, 'PATCH', `${CM}/upd1`, { data: { b: '2' }, bogus: 1 }, { 'content-type': 'application/merge-patch+json' });
    expect(p2.status).toBe(200);
    expect(warnings(p2)).toEqual(['unknown field "bogus"']);
    expect(p2.json().data).toEqual({ a: '1', b: '2' });
    const p3 = await request(s, 'PATCH', `${CM}/upd1`, [{ op: 'add', path: '/data/c', value: 3 }], { 'content-type': 'application/json-patch+json' });
    expect(p3.status).toBe(400);
  });

  it('subresource bodies are checked against their own kind (Scale)', async () => {
    expect((await request(s, 'POST', DEPLOYS, deployment('sc1'))).status).toBe(201);
    const strict = await request(s, 'PATCH', `${DEPLOYS}/sc1/scale?fieldValidation=Strict`, { spec: { replicas: 3, replica: 1 } }, { 'content-type': 'application/merge-patch+json' });
    expect(strict.status).toBe(400);
    expect(strict.json().message).toBe('Scale in version "v1" cannot be handled as a Scale: strict decoding error: unknown field "spec.replica"');
    const warn = await request(s, 'PATCH', `${DEPLOYS}/sc1/scale`, { spec: { replicas: 3, replica: 1 } }, { 'content-type': 'application/merge-patch+json' });
    expect(warn.status).toBe(200);
    expect(warnings(warn)).toEqual(['unknown field "spec.replica"']);
    expect(warn.json().spec.replicas).toBe(3);
    const typed = await request(s, 'PUT', `${DEPLOYS}/sc1/scale`, { apiVersion: 'autoscaling/v1', kind: 'Scale', metadata: { name: 'sc1', namespace: 'default' }, spec: { replicas: 'x' } });
    expect(typed.status).toBe(400);
    expect(typed.json().message).toContain('cannot unmarshal string into Go struct field ScaleSpec.spec.replicas of type int32');
  });

  it('kubectl --validate=strict fails naming the field; --validate=warn applies with a warning', async () => {
    const file = join(s.dataDir, 'misspelled.yaml');
    writeFileSync(
      file,
      ['apiVersion: apps/v1', 'kind: Deployment', 'metadata:', '  name: web', 'spec:', '  replicas: 1', '  selector:', '    matchLabels: {app: web}', '  template:', '    metadata:', '      labels: {app: web}', '    spec:', '      containers:', '      - name: c', '        image: nginx', '        imagePullPolice: Always', ''].join('\n'),
    );
    const strict = await kubectl(s, ['create', '--validate=strict', '-f', file]);
    expect(strict.code).not.toBe(0);
    expect(strict.stderr).toContain('unknown field "spec.template.spec.containers[0].imagePullPolice"');
    const warn = await kubectl(s, ['apply', '--validate=warn', '-f', file]);
    expect(warn.code).toBe(0);
    expect(warn.stderr).toContain('Warning: unknown field "spec.template.spec.containers[0].imagePullPolice"');
    expect(warn.stdout).toContain('deployment.apps/web created');
  });
});

describe('OpenAPI', () => {
  it('v3 root lists the served group-versions with hash URLs; a hashed fetch is immutable', async () => {
    const root = (await request(s, 'GET', '/openapi/v3')).json();
    expect(Object.keys(root.paths)).toContain('api/v1');
    expect(Object.keys(root.paths)).toContain('apis/apps/v1');
    expect(Object.keys(root.paths).filter((k) => /alpha|beta/.test(k))).toEqual([]);
    const url: string = root.paths['apis/apps/v1'].serverRelativeURL;
    const hash = url.split('hash=')[1];
    const r = await request(s, 'GET', url);
    expect(r.status).toBe(200);
    expect(r.headers['cache-control']).toBe('public, immutable');
    expect(r.headers['etag']).toBe(`"${hash}"`);
    expect(r.headers['expires']).toBeDefined();
    const doc = r.json();
    const dep = doc.components.schemas['io.k8s.api.apps.v1.Deployment'];
    expect(dep['x-kubernetes-group-version-kind']).toEqual([{ group: 'apps', kind: 'Deployment', version: 'v1' }]);
    expect(doc.components.schemas['io.k8s.api.apps.v1.DeploymentSpec'].properties.strategy).toEqual({
      allOf: [{ $ref: '#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy' }],
      default: {},
      'x-kubernetes-patch-strategy': 'retainKeys',
    });
    expect(doc.components.schemas['io.k8s.api.core.v1.Container'].properties.ports['x-kubernetes-list-map-keys']).toEqual(['containerPort', 'protocol']);
    expect(JSON.stringify(doc)).not.toContain('"description":"Deployment enables');
    // kubectl's server-side validation probe: the PATCH operation takes fieldValidation
    const patch = doc.paths['/apis/apps/v1/namespaces/{namespace}/deployments/{name}'].patch;
    expect(patch.parameters.map((p: any) => p.name)).toContain('fieldValidation');
    const again = await request(s, 'GET', '/openapi/v3/apis/apps/v1', undefined, { 'if-none-match': `"${hash}"` });
    expect(again.status).toBe(304);
    const unhashed = await request(s, 'GET', '/openapi/v3/apis/apps/v1');
    expect(unhashed.status).toBe(200);
    expect(unhashed.headers['cache-control']).toBe('no-cache, private');
    expect(unhashed.headers['etag']).toBe(`"${hash}"`);
    const v3pb = await request(s, 'GET', url, undefined, { accept: 'application/com.github.proto-openapi.spec.v3@v1.0+protobuf' });
    expect(v3pb.status).toBe(406);
    const stale = await request(s, 'GET', '/openapi/v3/apis/apps/v1?hash=0123');
    expect(stale.status).toBe(301);
    expect(stale.headers['location']).toBe(url);
    const core = await request(s, 'GET', root.paths['api/v1'].serverRelativeURL);
    expect(core.status).toBe(200);
    expect(core.headers['cache-control']).toBe('public, immutable');
    expect(core.headers['etag']).toBe(`"${root.paths['api/v1'].serverRelativeURL.split('hash=')[1]}"`);
    const coreDoc = core.json();
    expect(coreDoc.components.schemas['io.k8s.api.core.v1.Pod']['x-kubernetes-group-version-kind']).toEqual([{ group: '', kind: 'Pod', version: 'v1' }]);
    expect(Object.keys(coreDoc.paths)).toContain('/api/v1/namespaces/{namespace}/pods/{name}');
    expect(Object.keys(coreDoc.paths).some((p) => p.startsWith('/apis/'))).toBe(false);
  });

  it('v2 is JSON with definitions, or protobuf for the proto-openapi Accept', async () => {
    const r = await request(s, 'GET', '/openapi/v2', undefined, { accept: 'application/json' });
    expect(r.status).toBe(200);
    const doc = r.json();
    expect(doc.swagger).toBe('2.0');
    expect(doc.definitions['io.k8s.api.core.v1.PodSpec'].properties.containers.items).toEqual({ $ref: '#/definitions/io.k8s.api.core.v1.Container' });
    expect(doc.paths['/api/v1/namespaces/{namespace}/pods/{name}'].get['x-kubernetes-group-version-kind']).toEqual({ group: '', kind: 'Pod', version: 'v1' });
    const etag = r.headers['etag'] as string;
    expect((await request(s, 'GET', '/openapi/v2', undefined, { 'if-none-match': etag })).status).toBe(304);
    const pb = await request(s, 'GET', '/openapi/v2', undefined, { accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' });
    expect(pb.status).toBe(200);
    expect(pb.headers['content-type']).toBe('application/com.github.proto-openapi.spec.v2.v1.0+protobuf');
    expect(pb.headers['etag']).not.toBe(etag);
    expect((await request(s, 'GET', '/openapi/v2', undefined, { accept: 'text/html' })).status).toBe(406);
    // kubectl's v2 reader (client-go OpenAPISchema, protobuf only) understands the document
    const ex = await kubectl(s, ['explain', 'pod.spec.containers.ports', '--output=plaintext-openapiv2']);
    expect(ex.code).toBe(0);
    expect(ex.stdout).toMatch(/KIND:\s+Pod/);
    expect(ex.stdout).toMatch(/containerPort\s+<integer> -required-/);
  });

  const facts = factsDir();
  it.runIf(facts)('every served v3 document is kube-apiserver 1.33\'s, minus the description prose', async () => {
    const root = (await request(s, 'GET', '/openapi/v3')).json();
    const served = Object.keys(root.paths).sort();
    expect(served.length).toBe(21);
    for (const gv of served) {
      const ours = withoutDescriptions((await request(s, 'GET', root.paths[gv].serverRelativeURL)).json());
      const upstream = withoutDescriptions(JSON.parse(readFileSync(join(facts!, 'openapi-v3', `${gv}.json`), 'utf8')));
      expect(Object.keys(ours.paths).sort(), gv).toEqual(Object.keys(upstream.paths).sort());
      for (const p of Object.keys(upstream.paths)) expect(ours.paths[p], `${gv} ${p}`).toEqual(upstream.paths[p]);
      expect(ours.components.schemas, gv).toEqual(upstream.components.schemas);
      expect(ours, gv).toEqual(upstream);
    }
    // v2: the same definitions as kube's (which lists every group-version, served or not)
    const v2 = withoutDescriptions((await request(s, 'GET', '/openapi/v2')).json());
    const upV2 = withoutDescriptions(JSON.parse(readFileSync(join(facts!, 'openapi-v2', 'swagger.json'), 'utf8')));
    for (const [name, d] of Object.entries(v2.definitions)) expect(d, name).toEqual(upV2.definitions[name]);
    expect(v2.info).toEqual(upV2.info);
  });

  it('kubectl explain shows fields and types', async () => {
    const a = await kubectl(s, ['explain', 'deployment.spec.strategy']);
    expect(a.code).toBe(0);
    expect(a.stdout).toMatch(/KIND:\s+Deployment/);
    expect(a.stdout).toMatch(/rollingUpdate\s+<RollingUpdateDeployment>/);
    expect(a.stdout).toMatch(/type\s+<string>/);
    const b = await kubectl(s, ['explain', 'pod.spec.containers', '--recursive']);
    expect(b.code).toBe(0);
    expect(b.stdout).toMatch(/FIELD: containers <\[\]Container>/);
    expect(b.stdout).toMatch(/name\s+<string> -required-/);
    expect(b.stdout).toMatch(/containerPort\s+<integer> -required-/);
    expect(b.stdout).toMatch(/divisor\s+<Quantity>/);
  });
});

describe('discovery', () => {
  it('serves aggregated discovery v2 and v2beta1 to the Accept that asks', async () => {
    for (const v of ['v2', 'v2beta1']) {
      const accept = `application/json;g=apidiscovery.k8s.io;v=${v};as=APIGroupDiscoveryList,application/json`;
      const api = await request(s, 'GET', '/api', undefined, { accept });
      expect(api.headers['content-type']).toBe(`application/json;g=apidiscovery.k8s.io;v=${v};as=APIGroupDiscoveryList`);
      const core = api.json();
      const etag = api.headers['etag'] as string;
      expect(etag).toMatch(/^"[0-9a-f]+"$/);
      expect((await request(s, 'GET', '/api', undefined, { accept, 'if-none-match': etag })).status).toBe(304);
      expect(core).toMatchObject({ kind: 'APIGroupDiscoveryList', apiVersion: `apidiscovery.k8s.io/${v}` });
      const pods = core.items[0].versions[0].resources.find((r: any) => r.resource === 'pods');
      expect(pods).toMatchObject({ responseKind: { group: '', version: '', kind: 'Pod' }, scope: 'Namespaced', singularResource: 'pod', shortNames: ['po'], categories: ['all'] });
      expect(pods.subresources).toContainEqual({ subresource: 'eviction', responseKind: { group: 'policy', version: 'v1', kind: 'Eviction' }, verbs: ['create'] });
      const apis = (await request(s, 'GET', '/apis', undefined, { accept })).json();
      const apps = apis.items.find((g: any) => g.metadata.name === 'apps');
      expect(apps.versions[0]).toMatchObject({ version: 'v1', freshness: 'Current' });
      const dep = apps.versions[0].resources.find((r: any) => r.resource === 'deployments');
      expect(dep.subresources).toContainEqual({ subresource: 'scale', responseKind: { group: 'autoscaling', version: 'v1', kind: 'Scale' }, verbs: ['get', 'patch', 'update'] });
    }
    const legacy = await request(s, 'GET', '/apis', undefined, { accept: 'application/json' });
    expect(legacy.json().kind).toBe('APIGroupList');
    // clause by clause: a plain clause first means the legacy document
    const plainFirst = await request(s, 'GET', '/apis', undefined, { accept: 'application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' });
    expect(plainFirst.json().kind).toBe('APIGroupList');
    // the aggregated document in YAML and in protobuf (APIGroupDiscoveryList of apidiscovery v2)
    const json = (await request(s, 'GET', '/apis', undefined, { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' })).json();
    const y = await request(s, 'GET', '/apis', undefined, { accept: 'application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' });
    expect(y.headers['content-type']).toBe('application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
    expect(parseYaml(y.body)).toEqual(json);
    const pb = await request(s, 'GET', '/apis', undefined, { accept: 'application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json' });
    expect(pb.headers['content-type']).toBe('application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
    const root = protobuf.Root.fromJSON(protoSchema);
    const U: any = root.lookupType('k8s.io.apimachinery.pkg.runtime.Unknown').decode(pb.raw.subarray(4));
    expect(U.typeMeta).toMatchObject({ apiVersion: 'apidiscovery.k8s.io/v2', kind: 'APIGroupDiscoveryList' });
    const L = root.lookupType('k8s.io.api.apidiscovery.v2.APIGroupDiscoveryList');
    const list: any = L.toObject(L.decode(U.raw));
    expect(list.items.map((g: any) => g.metadata.name)).toEqual(json.items.map((g: any) => g.metadata.name));
    const apps = list.items.find((g: any) => g.metadata.name === 'apps');
    const jsonApps = json.items.find((g: any) => g.metadata.name === 'apps');
    expect(apps.versions[0].resources.find((r: any) => r.resource === 'deployments')).toMatchObject({ scope: 'Namespaced', responseKind: jsonApps.versions[0].resources.find((r: any) => r.resource === 'deployments').responseKind });
  });

  it('legacy discovery documents are negotiated: JSON, YAML, protobuf; 406 for anything else', async () => {
    const json = (await request(s, 'GET', '/apis/apps/v1')).json();
    const yaml = await request(s, 'GET', '/apis/apps/v1', undefined, { accept: 'application/yaml' });
    expect(yaml.headers['content-type']).toBe('application/yaml');
    expect(parseYaml(yaml.body)).toEqual(json);
    const pb = await request(s, 'GET', '/apis/apps/v1', undefined, { accept: 'application/vnd.kubernetes.protobuf, application/json' });
    expect(pb.headers['content-type']).toBe('application/vnd.kubernetes.protobuf');
    const root = protobuf.Root.fromJSON(protoSchema);
    const U: any = root.lookupType('k8s.io.apimachinery.pkg.runtime.Unknown').decode(pb.raw.subarray(4));
    expect(U.typeMeta).toMatchObject({ apiVersion: 'v1', kind: 'APIResourceList' });
    const L = root.lookupType('k8s.io.apimachinery.pkg.apis.meta.v1.APIResourceList');
    const list: any = L.toObject(L.decode(U.raw));
    expect(list.groupVersion).toBe('apps/v1');
    const dep = list.resources.find((r: any) => r.name === 'deployments');
    expect(dep).toMatchObject({ kind: 'Deployment', namespaced: true, singularName: 'deployment', shortNames: ['deploy'], categories: ['all'] });
    expect(dep.verbs.items).toEqual(json.resources.find((r: any) => r.name === 'deployments').verbs);
    for (const path of ['/api', '/apis', '/apis/apps', '/api/v1']) {
      const r = await request(s, 'GET', path, undefined, { accept: 'text/html' });
      expect(r.status, path).toBe(406);
      expect(r.json().reason).toBe('NotAcceptable');
    }
    expect((await request(s, 'GET', '/version', undefined, { accept: 'text/html' })).status).toBe(200);
  });

  it('kubectl api-resources lists the default 1.33 set', async () => {
    const r = await kubectl(s, ['api-resources', '--no-headers']);
    expect(r.code).toBe(0);
    const rows = r.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/));
    const byName = new Map(rows.map((x) => [x[0], x]));
    expect(byName.get('deployments')).toEqual(['deployments', 'deploy', 'apps/v1', 'true', 'Deployment']);
    expect(byName.get('customresourcedefinitions')).toEqual(['customresourcedefinitions', 'crd,crds', 'apiextensions.k8s.io/v1', 'false', 'CustomResourceDefinition']);
    expect(byName.get('bindings')).toEqual(['bindings', 'v1', 'true', 'Binding']);
    expect(byName.get('horizontalpodautoscalers')).toEqual(['horizontalpodautoscalers', 'hpa', 'autoscaling/v2', 'true', 'HorizontalPodAutoscaler']);
    expect(rows.filter((x) => x.some((c) => /\/v\d+(alpha|beta)\d+$/.test(c)))).toEqual([]);
    // kube-apiserver 1.33 serves 60 resource types by default (17 in v1, 43 in the GA groups)
    expect(rows.length).toBe(60);
  });

  const facts = discoveryFacts();
  it.runIf(facts)('kubectl api-resources -o wide matches the 1.33 discovery facts row by row', async () => {
    // A default cluster serves the GA group-versions. kubectl lists each group's preferred
    // version (the first served: v2 before v1) and, from the others, only resources the
    // preferred one lacks.
    const expected = new Map<string, Record<string, string>>();
    const rank = (v: string) => Number(v.slice(1));
    const gvs = facts!.groupVersions.filter((gv) => /^v\d+$/.test(gv.groupVersion.split('/').pop()!));
    gvs.sort((a, b) => rank(b.groupVersion.split('/').pop()!) - rank(a.groupVersion.split('/').pop()!));
    for (const gv of gvs) {
      const group = gv.groupVersion.includes('/') ? gv.groupVersion.split('/')[0] : '';
      for (const r of gv.resources) {
        if (r.name.includes('/') || expected.has(`${group}/${r.name}`)) continue;
        expected.set(`${group}/${r.name}`, {
          NAME: r.name,
          SHORTNAMES: (r.shortNames ?? []).join(','),
          APIVERSION: gv.groupVersion,
          NAMESPACED: String(r.namespaced),
          KIND: r.kind,
          VERBS: r.verbs.join(','),
          CATEGORIES: (r.categories ?? []).join(','),
        });
      }
    }
    const r = await kubectl(s, ['api-resources', '-o', 'wide']);
    expect(r.code, r.stderr).toBe(0);
    const got = tableRows(r.stdout);
    const key = (x: Record<string, string>) => `${x.APIVERSION.includes('/') ? x.APIVERSION.split('/')[0] : ''}/${x.NAME}`;
    expect(new Map(got.map((x) => [key(x), x]))).toEqual(expected);
    expect(got).toHaveLength(expected.size);
    const versions = await kubectl(s, ['api-versions']);
    expect(versions.stdout.trim().split('\n').sort()).toEqual(gvs.map((gv) => gv.groupVersion).sort());
  });

  it.runIf(facts)('legacy discovery (/api/v1, /apis/G/V) lists every resource and subresource exactly as the facts do', async () => {
    const ga = facts!.groupVersions.filter((gv) => /^v\d+$/.test(gv.groupVersion.split('/').pop()!));
    for (const gv of ga) {
      const r = await request(s, 'GET', gv.groupVersion.includes('/') ? `/apis/${gv.groupVersion}` : `/api/${gv.groupVersion}`);
      expect(r.status).toBe(200);
      const doc = r.json();
      // kube-apiserver's core list carries no apiVersion; the named groups' do
      expect(doc).toMatchObject({ kind: 'APIResourceList', groupVersion: gv.groupVersion });
      expect(doc.apiVersion).toBe(gv.groupVersion.includes('/') ? 'v1' : undefined);
      const got = doc.resources.map((x: any) => {
        const { storageVersionHash, ...rest } = x;
        // only stored top-level resources carry a storage version hash (not the create-only bindings and reviews)
        expect(typeof storageVersionHash === 'string', `${gv.groupVersion} ${x.name}`).toBe(!x.name.includes('/') && (x.verbs.includes('get') || x.verbs.includes('list')));
        return rest;
      });
      const norm = (list: any[]) => list.map((x) => ({ ...x, verbs: [...x.verbs].sort() })).sort((a, b) => (a.name < b.name ? -1 : 1));
      expect(norm(got), gv.groupVersion).toEqual(norm(gv.resources));
    }
  });

  it.runIf(facts)('aggregated discovery carries the facts\' subresources, kinds and verbs for every served group-version', async () => {
    const accept = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
    const served = new Map<string, any>();
    for (const path of ['/api', '/apis']) {
      for (const g of (await request(s, 'GET', path, undefined, { accept })).json().items) {
        for (const v of g.versions) served.set(g.metadata.name ? `${g.metadata.name}/${v.version}` : v.version, v.resources);
      }
    }
    const ga = facts!.groupVersions.filter((gv) => /^v\d+$/.test(gv.groupVersion.split('/').pop()!));
    expect([...served.keys()].sort()).toEqual(ga.map((gv) => gv.groupVersion).sort());
    const norm = (gv: string, r: any) => ({ name: r.name, kind: r.kind, verbs: [...r.verbs].sort(), gv: r.group !== undefined ? `${r.group ? r.group + '/' : ''}${r.version}` : gv });
    for (const gv of ga) {
      const group = gv.groupVersion.includes('/') ? gv.groupVersion.split('/')[0] : '';
      const version = gv.groupVersion.split('/').pop()!;
      const want = gv.resources.map((r) => norm(gv.groupVersion, r));
      const got: any[] = [];
      for (const r of served.get(gv.groupVersion)) {
        got.push({ name: r.resource, kind: r.responseKind.kind, verbs: [...r.verbs].sort(), gv: gv.groupVersion });
        for (const sub of r.subresources ?? []) {
          const k = sub.responseKind;
          // an empty group and version mean the resource's own (as in APIResourceList)
          const own = !k.version || ((k.group ?? '') === group && k.version === version);
          got.push({ name: `${r.resource}/${sub.subresource}`, kind: k.kind, verbs: [...sub.verbs].sort(), gv: own ? gv.groupVersion : `${k.group ? k.group + '/' : ''}${k.version}` });
        }
      }
      const byName = (a: any, b: any) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
      expect(got.sort(byName), gv.groupVersion).toEqual(want.sort(byName));
    }
  });
});

describe('DELETE answers as kube does per kind', () => {
  it('the object for the kinds whose documents say so (services, service accounts), a Status for the others', async () => {
    const NS = '/api/v1/namespaces/default';
    expect((await request(s, 'POST', `${NS}/services`, { metadata: { name: 'del-svc' }, spec: { ports: [{ port: 80 }] } })).status).toBe(201);
    const svc = await request(s, 'DELETE', `${NS}/services/del-svc`);
    expect(svc.status).toBe(200);
    expect(svc.json()).toMatchObject({ kind: 'Service', apiVersion: 'v1', metadata: { name: 'del-svc' } });
    expect((await request(s, 'POST', `${NS}/serviceaccounts`, { metadata: { name: 'del-sa' } })).status).toBe(201);
    expect((await request(s, 'DELETE', `${NS}/serviceaccounts/del-sa`)).json().kind).toBe('ServiceAccount');
    expect((await request(s, 'POST', CM, { metadata: { name: 'del-cm' } })).status).toBe(201);
    const cm = await request(s, 'DELETE', `${CM}/del-cm`);
    expect(cm.json()).toMatchObject({ kind: 'Status', status: 'Success', details: { name: 'del-cm', kind: 'configmaps' } });
  });
});

describe('--runtime-config', () => {
  it('adds and removes group-versions in discovery, OpenAPI and serving alike', async () => {
    const t = await startServer({ args: ['--runtime-config', 'batch/v1=false,coordination.k8s.io/v1beta1,apps/v1/daemonsets=false'] });
    try {
      const groups = (await request(t, 'GET', '/apis')).json().groups.map((g: any) => g.name);
      expect(groups).not.toContain('batch');
      const coord = (await request(t, 'GET', '/apis/coordination.k8s.io')).json();
      expect(coord.versions.map((v: any) => v.version)).toEqual(['v1', 'v1beta1']);
      expect(coord.preferredVersion.version).toBe('v1');
      const apps = (await request(t, 'GET', '/apis/apps/v1')).json().resources.map((r: any) => r.name);
      expect(apps).not.toContain('daemonsets');
      expect(apps).toContain('deployments');
      const root = Object.keys((await request(t, 'GET', '/openapi/v3')).json().paths);
      expect(root).toContain('apis/coordination.k8s.io/v1beta1');
      expect(root).not.toContain('apis/batch/v1');
      expect((await request(t, 'GET', '/openapi/v3/apis/batch/v1')).status).toBe(404);
      const v2 = Object.keys((await request(t, 'GET', '/openapi/v2')).json().paths);
      expect(v2).toContain('/apis/coordination.k8s.io/v1beta1/namespaces/{namespace}/leasecandidates');
      expect(v2.filter((p) => p.startsWith('/apis/batch/') || p.includes('/daemonsets'))).toEqual([]);
      expect(v2).toContain('/apis/apps/v1/namespaces/{namespace}/deployments');
      const explain = await kubectl(t, ['explain', 'leasecandidates.spec', '--api-version=coordination.k8s.io/v1beta1']);
      expect(explain.code, explain.stderr).toBe(0);
      expect(explain.stdout).toMatch(/leaseName\s+<string> -required-/);
      const gone = await kubectl(t, ['explain', 'cronjobs']);
      expect(gone.code).not.toBe(0);
      expect(gone.stderr).toContain(`the server doesn't have a resource type "cronjobs"`);
      expect((await request(t, 'GET', '/apis/batch/v1/namespaces/default/jobs')).status).toBe(404);
      expect((await request(t, 'GET', '/apis/apps/v1/namespaces/default/daemonsets')).status).toBe(404);
      expect((await request(t, 'GET', '/apis/coordination.k8s.io/v1beta1/namespaces/default/leasecandidates')).status).toBe(200);
      const r = await kubectl(t, ['api-resources', '--api-group=coordination.k8s.io', '--no-headers']);
      expect(r.stdout).toContain('leasecandidates');
    } finally {
      await t.stop();
      t.cleanup();
    }
  });

  it('a bad key stops start-up with a clear message', async () => {
    await expect(startServer({ args: ['--runtime-config', 'nosuch.k8s.io/v1=true'] })).rejects.toThrow(/--runtime-config: unknown api groupVersion "nosuch.k8s.io\/v1"/);
  });
});
