// CustomResourceDefinitions served as kube-apiserver's apiextensions-apiserver serves them,
// driven by real kubectl and helm: a CRD applied, its custom resources created, read (by
// plural, short name, -o yaml, printer columns), patched (merge, JSON; strategic refused
// with 415), applied server-side by two managers (a conflict), written through status and
// scale, watched, listed by api-resources and explain, kept across a restart, and removed
// with their CRD. And a helm chart that ships a CRD in crds/ installs.
import { describe, it, expect } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request, until, type TestServer, useServer } from './helpers/server.js';
import { helm, kubectl, kubectlOk, kubectlStream } from './helpers/kubectl.js';

let s: TestServer;

const CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.labelSelector
    additionalPrinterColumns:
    - name: Spec
      type: string
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              cronSpec:
                type: string
                pattern: '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'
              image:
                type: string
              replicas:
                type: integer
                minimum: 0
                maximum: 10
                default: 1
              tags:
                type: array
                items: {type: string}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
              color:
                type: string
                enum: [red, blue]
          status:
            type: object
            properties:
              replicas: {type: integer}
              labelSelector: {type: string}
`;

const CT = `apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: my-cron
spec:
  cronSpec: "* * * * */5"
  image: my-image
`;

const k = (args: string[], input?: string) => kubectlOk(s, args, input);


useServer((started) => (s = started));

/** crd.test's checks wait on controllers: longer than until()'s default. */
const eventually = <T>(fn: () => Promise<T | undefined | false>): Promise<T> => until(fn, 15_000);

describe('CustomResourceDefinitions', () => {
  it('a CRD is accepted, established and served; its custom resources take the usual verbs', async () => {
    expect(await k(['apply', '-f', '-'], CRD)).toContain('customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created');
    await k(['wait', '--for', 'condition=established', '--timeout=20s', 'crd/crontabs.stable.example.com']);
    const crd = JSON.parse(await k(['get', 'crd', 'crontabs.stable.example.com', '-o', 'json']));
    expect(crd.status.acceptedNames).toMatchObject({ kind: 'CronTab', plural: 'crontabs', singular: 'crontab', listKind: 'CronTabList', shortNames: ['ct'] });
    expect(crd.status.conditions.map((c: any) => `${c.type}=${c.status}`)).toEqual(['NamesAccepted=True', 'Established=True']);
    expect(crd.status.storedVersions).toEqual(['v1']);

    // Unknown fields: kubectl asks for Strict, and kube refuses them as a decoding error.
    const strict = await kubectl(s, ['apply', '-f', '-'], { input: CT.replace('image: my-image', 'image: my-image\n  bogus: 1') });
    expect(strict.code).not.toBe(0);
    expect(strict.stderr).toContain('CronTab in version "v1" cannot be handled as a CronTab: strict decoding error: unknown field "spec.bogus"');

    expect(await k(['apply', '-f', '-'], CT)).toContain('crontab.stable.example.com/my-cron created');
    const got = await k(['get', 'ct']);
    expect(got).toMatch(/NAME\s+SPEC\s+REPLICAS/);
    expect(got).toMatch(/my-cron\s+\* \* \* \* \*\/5\s+1/);
    const yaml = await k(['get', 'crontabs', 'my-cron', '-o', 'yaml']);
    expect(yaml).toContain('apiVersion: stable.example.com/v1');
    expect(yaml).toContain('replicas: 1'); // the schema's default
    expect(yaml).toContain('generation: 1');
    expect(await k(['get', 'crontab.stable.example.com/my-cron', '-o', 'name'])).toBe('crontab.stable.example.com/my-cron\n');
    // a custom resource's list is unstructured: its items keep their kind and apiVersion
    const list = (await request(s, 'GET', '/apis/stable.example.com/v1/namespaces/default/crontabs')).json();
    expect(list.items[0]).toMatchObject({ kind: 'CronTab', apiVersion: 'stable.example.com/v1' });
  });

  it('merge and JSON patches apply; a strategic merge patch is refused with 415; schema violations are 422', async () => {
    await k(['patch', 'ct', 'my-cron', '--type=merge', '-p', '{"spec":{"replicas":3}}']);
    await k(['patch', 'ct', 'my-cron', '--type=json', '-p', '[{"op":"add","path":"/spec/tags","value":["a"]}]']);
    const obj = JSON.parse(await k(['get', 'ct', 'my-cron', '-o', 'json']));
    expect(obj.spec).toMatchObject({ replicas: 3, tags: ['a'] });
    expect(obj.metadata.generation).toBe(3);

    const smp = await request(s, 'PATCH', '/apis/stable.example.com/v1/namespaces/default/crontabs/my-cron', { spec: { replicas: 4 } }, { 'content-type': 'application/strategic-merge-patch+json' });
    expect(smp.status).toBe(415);
    expect(smp.json().message).toBe('the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml');
    const viaKubectl = await kubectl(s, ['patch', 'ct', 'my-cron', '-p', '{"spec":{"replicas":4}}']);
    expect(viaKubectl.code).not.toBe(0);

    const bad = await request(s, 'PATCH', '/apis/stable.example.com/v1/namespaces/default/crontabs/my-cron', { spec: { replicas: 40, color: 'pink', image: 7 } }, { 'content-type': 'application/merge-patch+json' });
    expect(bad.status).toBe(422);
    const msg = bad.json().message as string;
    expect(msg).toContain('CronTab.stable.example.com "my-cron" is invalid');
    expect(msg).toContain('spec.replicas: Invalid value: 40: spec.replicas in body should be less than or equal to 10');
    expect(msg).toContain('spec.color: Unsupported value: "pink": supported values: "red", "blue"');
    expect(msg).toContain('spec.image: Invalid value: 7: spec.image in body must be of type string: "number"');

    // Warn (the API default) prunes an unknown field and says so.
    const warned = await request(s, 'PATCH', '/apis/stable.example.com/v1/namespaces/default/crontabs/my-cron', { spec: { extra: true } }, { 'content-type': 'application/merge-patch+json' });
    expect(warned.status).toBe(200);
    expect(String(warned.headers['warning'])).toContain('299 - "unknown field \\"spec.extra\\""');
    expect(warned.json().spec.extra).toBeUndefined();

    // Custom objects have no protobuf form.
    const pb = await request(s, 'GET', '/apis/stable.example.com/v1/namespaces/default/crontabs/my-cron', undefined, { accept: 'application/vnd.kubernetes.protobuf' });
    expect(pb.status).toBe(406);
    const fallback = await request(s, 'GET', '/apis/stable.example.com/v1/namespaces/default/crontabs/my-cron', undefined, { accept: 'application/vnd.kubernetes.protobuf, application/json' });
    expect(fallback.status).toBe(200);
    expect(fallback.json().kind).toBe('CronTab');
  });

  it('server-side apply: list-map keys from the schema, a conflict between two managers', async () => {
    const cfg = (replicas: number) => `apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: ssa-cron
spec:
  cronSpec: "* * * * *"
  replicas: ${replicas}
  ports:
  - name: http
    port: 80
`;
    await k(['apply', '--server-side', '--field-manager=alice', '-f', '-'], cfg(2));
    const conflict = await kubectl(s, ['apply', '--server-side', '--field-manager=bob', '-f', '-'], { input: cfg(3) });
    expect(conflict.code).not.toBe(0);
    expect(conflict.stderr).toContain('Apply failed with 1 conflict: conflict with "alice": .spec.replicas');
    await k(['apply', '--server-side', '--field-manager=bob', '--force-conflicts', '-f', '-'], cfg(3));
    const obj = JSON.parse(await k(['get', 'ct', 'ssa-cron', '-o', 'json', '--show-managed-fields']));
    expect(obj.spec.replicas).toBe(3);
    const bob = obj.metadata.managedFields.find((m: any) => m.manager === 'bob');
    expect(bob.fieldsV1['f:spec']['f:ports']['k:{"name":"http"}']).toBeDefined();
    const alice = obj.metadata.managedFields.find((m: any) => m.manager === 'alice');
    expect(alice.fieldsV1['f:spec']['f:replicas']).toBeUndefined();
  });

  it('status and scale subresources', async () => {
    await k(['patch', 'ct', 'my-cron', '--subresource=status', '--type=merge', '-p', '{"status":{"replicas":2,"labelSelector":"app=cron"}}']);
    // The main resource ignores status.
    await k(['patch', 'ct', 'my-cron', '--type=merge', '-p', '{"status":{"replicas":9}}']);
    const obj = JSON.parse(await k(['get', 'ct', 'my-cron', '-o', 'json']));
    expect(obj.status).toEqual({ replicas: 2, labelSelector: 'app=cron' });

    expect(await k(['scale', 'ct', 'my-cron', '--replicas=5'])).toContain('scaled');
    const scale = await request(s, 'GET', '/apis/stable.example.com/v1/namespaces/default/crontabs/my-cron/scale');
    expect(scale.json()).toMatchObject({ kind: 'Scale', apiVersion: 'autoscaling/v1', spec: { replicas: 5 }, status: { replicas: 2, selector: 'app=cron' } });
    // kube's ScaleHandler: the scaler owns the replicas field at specReplicasPath, through the scale subresource
    const mf = JSON.parse(await k(['get', 'ct', 'my-cron', '-o', 'json', '--show-managed-fields'])).metadata.managedFields as any[];
    const scaler = mf.find((e) => e.subresource === 'scale');
    expect(scaler).toMatchObject({ manager: 'kubectl', operation: 'Update', apiVersion: 'stable.example.com/v1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } });
    // and the scale subresource takes server-side apply
    const applied = await request(s, 'PATCH', '/apis/stable.example.com/v1/namespaces/default/crontabs/my-cron/scale?fieldManager=hpa&force=true', { apiVersion: 'autoscaling/v1', kind: 'Scale', spec: { replicas: 5 } }, { 'content-type': 'application/apply-patch+yaml' });
    expect(applied.status).toBe(200);
    expect(applied.json().spec.replicas).toBe(5);
  });

  it('watch with kubectl get -w', async () => {
    const w = kubectlStream(s, ['get', 'ct', '-w', '--output-watch-events']);
    try {
      await until(() => w.output().includes('my-cron'), 15_000);
      await k(['patch', 'ct', 'my-cron', '--type=merge', '-p', '{"spec":{"image":"other"}}']);
      await until(() => /MODIFIED\s+my-cron/.test(w.output()), 15_000);
    } finally {
      w.stop();
    }
  });

  it('discovery: api-resources, short names, categories, explain (OpenAPI v3)', async () => {
    const ar = await k(['api-resources', '--api-group=stable.example.com']);
    expect(ar).toMatch(/crontabs\s+ct\s+stable\.example\.com\/v1\s+true\s+CronTab/);
    const group = await request(s, 'GET', '/apis/stable.example.com/v1');
    const names = group.json().resources.map((r: any) => r.name);
    expect(names).toEqual(['crontabs', 'crontabs/status', 'crontabs/scale']);
    const apis = await request(s, 'GET', '/apis');
    expect(apis.json().groups.map((g: any) => g.name)).toContain('stable.example.com');
    const explain = await k(['explain', 'crontab.spec']);
    expect(explain).toContain('KIND:       CronTab');
    expect(explain).toContain('cronSpec');
    const v3 = await request(s, 'GET', '/openapi/v3');
    expect(Object.keys(v3.json().paths)).toContain('apis/stable.example.com/v1');
  });

  it('the garbage collector follows owner references to custom resources', async () => {
    await k(['apply', '-f', '-'], CT.replace('my-cron', 'owner'));
    const uid = (await k(['get', 'ct', 'owner', '-o', 'jsonpath={.metadata.uid}'])).trim();
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'owned', ownerReferences: [{ apiVersion: 'stable.example.com/v1', kind: 'CronTab', name: 'owner', uid }] } };
    expect((await request(s, 'POST', '/api/v1/namespaces/default/configmaps', cm)).status).toBe(201);
    await k(['delete', 'ct', 'owner']);
    await eventually(async () => (await request(s, 'GET', '/api/v1/namespaces/default/configmaps/owned')).status === 404);
  });

  it('keeps serving the CRD across a restart', async () => {
    await s.stop();
    await s.restart();
    expect(await k(['get', 'ct', 'my-cron', '-o', 'jsonpath={.spec.replicas}'])).toBe('5');
  });

  it('deleting the CRD deletes its instances, then the CRD', async () => {
    expect(await k(['delete', 'crd', 'crontabs.stable.example.com'])).toContain('deleted');
    const gone = await request(s, 'GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.stable.example.com');
    expect(gone.status).toBe(404);
    expect((await request(s, 'GET', '/apis/stable.example.com/v1/crontabs')).status).toBe(404);
    // Created again, it starts empty.
    await k(['apply', '-f', '-'], CRD);
    await k(['wait', '--for', 'condition=established', '--timeout=20s', 'crd/crontabs.stable.example.com']);
    const list = await eventually(async () => {
      const r = await request(s, 'GET', '/apis/stable.example.com/v1/crontabs');
      return r.status === 200 ? r : false;
    });
    expect(list.json().items).toEqual([]);
  });

  it('a CRD served in two versions: one storage, each read in its own apiVersion (conversion None)', async () => {
    const schema = { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } } } };
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'gadgets.multi.example.com' },
      spec: {
        group: 'multi.example.com',
        scope: 'Namespaced',
        names: { plural: 'gadgets', kind: 'Gadget' },
        versions: [
          { name: 'v1beta1', served: true, storage: false, schema },
          { name: 'v1', served: true, storage: true, schema },
        ],
      },
    };
    expect((await request(s, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)).status).toBe(201);
    await k(['wait', '--for', 'condition=established', '--timeout=20s', 'crd/gadgets.multi.example.com']);
    const base = (v: string) => `/apis/multi.example.com/${v}/namespaces/default/gadgets`;
    const created = await eventually(async () => {
      const r = await request(s, 'POST', base('v1beta1'), { apiVersion: 'multi.example.com/v1beta1', kind: 'Gadget', metadata: { name: 'g1' }, spec: { size: 3 } });
      return r.status === 201 ? r : false;
    });
    expect(created.json().apiVersion).toBe('multi.example.com/v1beta1');
    const v1 = (await request(s, 'GET', `${base('v1')}/g1`)).json();
    expect(v1.apiVersion).toBe('multi.example.com/v1');
    expect(v1.spec.size).toBe(3);
    const beta = (await request(s, 'GET', base('v1beta1'))).json();
    expect(beta.items.map((i: any) => i.apiVersion)).toEqual(['multi.example.com/v1beta1']);
    expect(await k(['get', 'gadgets.v1beta1.multi.example.com', 'g1', '-o', 'jsonpath={.apiVersion}'])).toBe('multi.example.com/v1beta1');
  });

  it('refuses invalid CRDs with kube\'s messages', async () => {
    const bad = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example',
        scope: 'Namespaced',
        names: { plural: 'widgets', kind: 'Widget' },
        versions: [
          { name: 'v1', served: false, storage: false, schema: { openAPIV3Schema: { type: 'object' } } },
        ],
      },
    };
    const r = await request(s, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', bad);
    expect(r.status).toBe(422);
    const msg = r.json().message as string;
    expect(msg).toContain('metadata.name: Invalid value: "widgets.example.com": must be spec.names.plural+"."+spec.group');
    expect(msg).toContain('spec.group: Invalid value: "example": should be a domain with at least one dot');
    expect(msg).toContain('must have exactly one version marked as storage version');
  });

  it('a helm chart with a CRD in crds/ installs it before its templates', async () => {
    const chart = join(s.dataDir, 'crdchart');
    mkdirSync(join(chart, 'crds'), { recursive: true });
    mkdirSync(join(chart, 'templates'), { recursive: true });
    writeFileSync(join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: crdchart\nversion: 0.1.0\n');
    writeFileSync(join(chart, 'crds', 'gadgets.yaml'), CRD.replaceAll('crontabs', 'gadgets').replaceAll('crontab', 'gadget').replaceAll('CronTab', 'Gadget').replace('[ct]', '[gd]'));
    writeFileSync(join(chart, 'templates', 'gadget.yaml'), CT.replace('CronTab', 'Gadget').replace('my-cron', 'g1'));
    const r = await helm(s, ['install', 'crdrel', chart, '-n', 'default']);
    if (r.code !== 0) throw new Error(`helm install failed: ${r.stderr}\n${r.stdout}`);
    expect(r.stdout).toContain('STATUS: deployed');
    expect(await k(['get', 'gd', 'g1', '-o', 'name'])).toBe('gadget.stable.example.com/g1\n');
  });
});
