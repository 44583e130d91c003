// CRD conversion webhooks (spec.conversion.strategy: Webhook) against a started server, with a
// REAL HTTPS conversion webhook started here (a CA and a serving certificate made by openssl):
// a Widget CRD stores v1 (spec.color) and serves v2 (spec.colour). Created through v2, it is
// stored and read in v1 by kubectl; gets, lists and watches of v2 convert through the
// webhook; the webhook may change labels and annotations, not other metadata; a dead
// webhook fails reads with kube's error. And selectableFields: field selectors on a custom
// resource's declared fields, through kubectl --field-selector.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import https from 'node:https';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { freePort, request, type TestServer, until, useServer } from './helpers/server.js';
import { kubectl, kubectlOk, kubectlStream } from './helpers/kubectl.js';

let s: TestServer;
useServer((started) => (s = started));

let certDir: string;
let caBundle: string;
let webhook: https.Server;
let hookPort: number;
/** every ConversionReview received */
const reviews: any[] = [];

function makeCerts(): { key: string; cert: string } {
  certDir = mkdtempSync(join(tmpdir(), 'kubeshard-conversion-certs-'));
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: certDir, stdio: 'ignore' });
  run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ca.key']);
  run(['req', '-x509', '-new', '-key', 'ca.key', '-days', '2', '-subj', '/CN=conversion-test-ca', '-out', 'ca.crt']);
  run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'tls.key']);
  run(['req', '-new', '-key', 'tls.key', '-subj', '/CN=localhost', '-out', 'tls.csr']);
  writeFileSync(join(certDir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:conv.conv-system.svc\n');
  run(['x509', '-req', '-in', 'tls.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'ext.cnf', '-out', 'tls.crt']);
  caBundle = Buffer.from(readFileSync(join(certDir, 'ca.crt'), 'utf8')).toString('base64');
  return { key: readFileSync(join(certDir, 'tls.key'), 'utf8'), cert: readFileSync(join(certDir, 'tls.crt'), 'utf8') };
}

/** v1 spec.color <-> v2 spec.colour; v2 objects get an annotation, and /rename tries to rename the object. */
function convert(obj: any, to: string, path: string): any {
  const out = structuredClone(obj);
  out.apiVersion = to;
  const spec = out.spec ?? {};
  if (to.endsWith('/v2')) {
    if ('color' in spec) {
      spec.colour = spec.color;
      delete spec.color;
    }
    out.metadata.annotations = { ...(out.metadata.annotations ?? {}), 'converted-by': 'webhook' };
  } else {
    if ('colour' in spec) {
      spec.color = spec.colour;
      delete spec.colour;
    }
    if (out.metadata.annotations) delete out.metadata.annotations['converted-by'];
    if (out.metadata.annotations && Object.keys(out.metadata.annotations).length === 0) delete out.metadata.annotations;
  }
  // metadata other than labels and annotations is the server's: these changes are undone
  out.metadata.generation = 99;
  if (path === '/rename') out.metadata.name = 'renamed';
  if (path === '/shout' && typeof spec.colour === 'string') spec.colour = spec.colour.toUpperCase();
  return out;
}

beforeAll(async () => {
  const { key, cert } = makeCerts();
  webhook = https.createServer({ key, cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const path = (req.url ?? '').split('?')[0];
      reviews.push({ review, url: req.url });
      const r = review.request;
      const response = {
        uid: r.uid,
        result: { status: 'Success' },
        convertedObjects: r.objects.map((o: any) => convert(o, r.desiredAPIVersion, path)),
      };
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ apiVersion: review.apiVersion, kind: 'ConversionReview', response }));
    });
  });
  await new Promise<void>((r) => webhook.listen(0, '127.0.0.1', r));
  hookPort = (webhook.address() as AddressInfo).port;
});

afterAll(async () => {
  webhook?.closeAllConnections();
  await new Promise((r) => webhook?.close(r));
  if (certDir) rmSync(certDir, { recursive: true, force: true });
});

const versionSchema = (field: string) => ({
  openAPIV3Schema: {
    type: 'object',
    properties: { spec: { type: 'object', properties: { [field]: { type: 'string' }, size: { type: 'integer' } } } },
  },
});

function crd(plural: string, kind: string, clientConfig: any): any {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.example.com` },
    spec: {
      group: 'example.com',
      scope: 'Namespaced',
      names: { plural, singular: kind.toLowerCase(), kind },
      versions: [
        { name: 'v1', served: true, storage: true, schema: versionSchema('color') },
        { name: 'v2', served: true, storage: false, schema: versionSchema('colour') },
      ],
      conversion: { strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1'], clientConfig } },
    },
  };
}

async function applyCrd(obj: any): Promise<void> {
  await kubectlOk(s, ['apply', '-f', '-'], JSON.stringify(obj));
  await kubectlOk(s, ['wait', '--for', 'condition=established', '--timeout=20s', `crd/${obj.metadata.name}`]);
}

describe('CRD conversion webhook', () => {
  it('creates through v2, stores v1, and reads each version through the webhook', async () => {
    await applyCrd(crd('widgets', 'Widget', { url: `https://127.0.0.1:${hookPort}/convert`, caBundle }));
    const before = reviews.length;
    await kubectlOk(s, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'example.com/v2', kind: 'Widget', metadata: { name: 'x', namespace: 'default', labels: { app: 'w' } }, spec: { colour: 'red', size: 3 } }));
    // the write went to the storage version through the webhook
    const toV1 = reviews.slice(before).find((r) => r.review.request.desiredAPIVersion === 'example.com/v1');
    expect(toV1).toBeDefined();
    expect(toV1.url).toBe('/convert?timeout=30s');
    expect(toV1.review.apiVersion).toBe('apiextensions.k8s.io/v1');
    expect(toV1.review.request.objects[0].spec).toEqual({ colour: 'red', size: 3 });

    const v1 = JSON.parse(await kubectlOk(s, ['get', 'widgets.v1.example.com', 'x', '-o', 'json']));
    expect(v1.apiVersion).toBe('example.com/v1');
    expect(v1.spec).toEqual({ color: 'red', size: 3 });
    // metadata other than labels and annotations stays the server's (kube's restoreObjectMeta)
    expect(v1.metadata.generation).toBe(1);
    expect(v1.metadata.labels).toEqual({ app: 'w' });
    const yaml = await kubectlOk(s, ['get', 'widgets.v1.example.com', 'x', '-o', 'yaml']);
    expect(yaml).toContain('apiVersion: example.com/v1\n');
    expect(yaml).toMatch(/^spec:\n  color: red\n  size: 3\n/m);

    const v2 = JSON.parse(await kubectlOk(s, ['get', 'widgets.v2.example.com', 'x', '-o', 'json']));
    expect(v2.apiVersion).toBe('example.com/v2');
    expect(v2.spec).toEqual({ colour: 'red', size: 3 });
    expect(v2.metadata.annotations?.['converted-by']).toBe('webhook');
    expect(v2.metadata.generation).toBe(1);
    expect(v2.metadata.uid).toBe(v1.metadata.uid);
  });

  it('lists in v2 through one webhook call, and updates through v2', async () => {
    for (const n of ['y', 'z']) {
      await kubectlOk(s, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: n, namespace: 'default' }, spec: { color: 'blue' } }));
    }
    const before = reviews.length;
    const r = await request(s, 'GET', '/apis/example.com/v2/namespaces/default/widgets');
    expect(r.status).toBe(200);
    const list = r.json();
    expect(list.apiVersion).toBe('example.com/v2');
    expect(list.items.map((i: any) => [i.metadata.name, i.apiVersion, i.spec.colour])).toEqual([
      ['x', 'example.com/v2', 'red'],
      ['y', 'example.com/v2', 'blue'],
      ['z', 'example.com/v2', 'blue'],
    ]);
    // the items not converted yet went in one review
    const calls = reviews.slice(before);
    expect(calls.length).toBe(1);
    expect(calls[0].review.request.objects.map((o: any) => o.metadata.name)).toEqual(expect.arrayContaining(['y', 'z']));

    const out = await kubectlOk(s, ['get', 'widgets.v2.example.com']);
    expect(out).toMatch(/^x\s/m);
    expect(out).toMatch(/^z\s/m);

    await kubectlOk(s, ['patch', 'widgets.v2.example.com', 'y', '--type=merge', '-p', '{"spec":{"colour":"green"}}']);
    const y1 = JSON.parse(await kubectlOk(s, ['get', 'widgets.v1.example.com', 'y', '-o', 'json']));
    expect(y1.spec).toEqual({ color: 'green' });
  });

  it('watches in v2: each event converted by the webhook', async () => {
    // (kubectl prints each event as compact JSON)
    const w = kubectlStream(s, ['get', 'widgets.v2.example.com', '--watch', '--output-watch-events', '-o', 'json']);
    try {
      await until(() => w.output().includes('"name":"z"'), 15_000);
      await kubectlOk(s, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w2', namespace: 'default' }, spec: { color: 'purple' } }));
      await until(() => w.output().includes('"name":"w2"'), 15_000);
      await kubectlOk(s, ['patch', 'widgets.v1.example.com', 'w2', '--type=merge', '-p', '{"spec":{"color":"orange"}}']);
      await until(() => w.output().includes('"colour":"orange"'), 15_000);
      const out = w.output();
      expect(out).toContain('"colour":"purple"');
      expect(out).not.toContain('"color"');
      expect(out).toContain('"type":"MODIFIED"');
    } finally {
      w.stop();
    }
    // a raw watch of v2 from a version: the replayed events are v2 too
    const rv = JSON.parse(await kubectlOk(s, ['get', 'widgets.v1.example.com', 'x', '-o', 'json'])).metadata.resourceVersion;
    await kubectlOk(s, ['patch', 'widgets.v1.example.com', 'x', '--type=merge', '-p', '{"spec":{"size":4}}']);
    const r = await request(s, 'GET', `/apis/example.com/v2/namespaces/default/widgets?watch=1&resourceVersion=${rv}&timeoutSeconds=1`);
    const events = r.body.trim().split('\n').map((l) => JSON.parse(l));
    const x = events.find((e: any) => e.object.metadata.name === 'x');
    expect(x.type).toBe('MODIFIED');
    expect(x.object.apiVersion).toBe('example.com/v2');
    expect(x.object.spec).toEqual({ colour: 'red', size: 4 });
  });

  it('a changed conversion webhook converts the objects afresh', async () => {
    await applyCrd(crd('widgets', 'Widget', { url: `https://127.0.0.1:${hookPort}/shout`, caBundle }));
    const got = await until(async () => {
      const r = await request(s, 'GET', '/apis/example.com/v2/namespaces/default/widgets/x');
      return r.json().spec?.colour === 'RED' && r.json();
    });
    expect(got.apiVersion).toBe('example.com/v2');
    const list = await request(s, 'GET', '/apis/example.com/v2/namespaces/default/widgets');
    expect(list.json().items.map((i: any) => i.spec.colour)).toContain('BLUE');
    await applyCrd(crd('widgets', 'Widget', { url: `https://127.0.0.1:${hookPort}/convert`, caBundle }));
  });

  it('field selectors read each version own selectableFields, on converted objects', async () => {
    const c = crd('widgets', 'Widget', { url: `https://127.0.0.1:${hookPort}/convert`, caBundle });
    c.spec.versions[0].selectableFields = [{ jsonPath: '.spec.color' }];
    c.spec.versions[1].selectableFields = [{ jsonPath: '.spec.colour' }];
    await applyCrd(c);
    const names = async (resource: string, sel: string) => (await kubectlOk(s, ['get', resource, '--field-selector', sel, '-o', 'name'])).trim().split('\n').filter(Boolean);
    expect(await until(async () => (await names('widgets.v2.example.com', 'spec.colour=blue')).join() || false)).toBe('widget.example.com/z');
    expect(await names('widgets.v1.example.com', 'spec.color=red')).toEqual(['widget.example.com/x']);
    const bad = await kubectl(s, ['get', 'widgets.v2.example.com', '--field-selector', 'spec.color=red']);
    expect(bad.stderr).toContain('field label not supported: spec.color');
    // a watch of v2 by its own field: the initial state, an object joining, one leaving
    const watching = request(s, 'GET', '/apis/example.com/v2/namespaces/default/widgets?watch=1&fieldSelector=spec.colour%3Dblue&timeoutSeconds=4');
    await new Promise((r) => setTimeout(r, 1000));
    await kubectlOk(s, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w3', namespace: 'default' }, spec: { color: 'blue' } }));
    await kubectlOk(s, ['patch', 'widgets.v2.example.com', 'z', '--type=merge', '-p', '{"spec":{"colour":"grey"}}']);
    const events = (await watching).body.trim().split('\n').map((l) => JSON.parse(l));
    expect(events.map((e: any) => `${e.type} ${e.object.metadata.name} ${e.object.spec.colour}`)).toEqual(['ADDED z blue', 'ADDED w3 blue', 'DELETED z blue']);
    expect(events.every((e: any) => e.object.apiVersion === 'example.com/v2')).toBe(true);
  });

  it('refuses a converted object whose name changed, in kube words', async () => {
    await applyCrd(crd('renamers', 'Renamer', { url: `https://127.0.0.1:${hookPort}/rename`, caBundle }));
    await kubectlOk(s, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Renamer', metadata: { name: 'r', namespace: 'default' }, spec: { color: 'red' } }));
    const r = await request(s, 'GET', '/apis/example.com/v2/namespaces/default/renamers/r');
    expect(r.status).toBe(500);
    expect(r.json().message).toBe('conversion for example.com/v1, Kind=Renamer returned invalid converted object at index 1: must have the same name: r != renamed');
  });

  it('reaches a webhook through its Service EndpointSlice, speaking ConversionReview v1beta1', async () => {
    await kubectlOk(s, ['create', 'namespace', 'conv-system']);
    await kubectlOk(s, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'conv', namespace: 'conv-system' }, spec: { ports: [{ name: 'https', port: 443 }] } }));
    await kubectlOk(s, ['apply', '-f', '-'], JSON.stringify({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'conv-1', namespace: 'conv-system', labels: { 'kubernetes.io/service-name': 'conv' } },
      addressType: 'IPv4',
      ports: [{ name: 'https', port: hookPort }],
      endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
    }));
    const c = crd('sprockets', 'Sprocket', { service: { namespace: 'conv-system', name: 'conv', path: '/convert' }, caBundle });
    c.spec.conversion.webhook.conversionReviewVersions = ['v1beta1', 'v1'];
    await applyCrd(c);
    const before = reviews.length;
    await kubectlOk(s, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'example.com/v2', kind: 'Sprocket', metadata: { name: 'sp', namespace: 'default' }, spec: { colour: 'teal' } }));
    const v1 = JSON.parse(await kubectlOk(s, ['get', 'sprockets.v1.example.com', 'sp', '-o', 'json']));
    expect(v1.spec).toEqual({ color: 'teal' });
    const sent = reviews.slice(before);
    expect(sent.length).toBeGreaterThan(0);
    expect(sent[0].review.apiVersion).toBe('apiextensions.k8s.io/v1beta1');
    expect(sent[0].url).toBe('/convert?timeout=30s');
  });

  it('validates spec.conversion as kube does (with its internal field paths)', async () => {
    const bad = (conversion: any) => {
      const c = crd('bads', 'Bad', {});
      c.spec.conversion = conversion;
      return kubectl(s, ['create', '-f', '-'], { input: JSON.stringify(c) });
    };
    let r = await bad({ strategy: 'Webhook' });
    expect(r.stderr).toContain('spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook');
    expect(r.stderr).toContain('spec.conversion.conversionReviewVersions: Required value');
    r = await bad({ strategy: 'Webhook', webhook: { conversionReviewVersions: ['v3'], clientConfig: { url: 'http://127.0.0.1/convert' } } });
    expect(r.stderr).toContain(`spec.conversion.webhookClientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`);
    expect(r.stderr).toContain('spec.conversion.conversionReviewVersions: Invalid value: ["v3"]: must include at least one of v1, v1beta1');
    r = await bad({ strategy: 'Sideways' });
    expect(r.stderr).toContain('spec.conversion.strategy: Unsupported value: "Sideways": supported values: "None", "Webhook"');
    r = await bad({ strategy: 'None', webhook: { conversionReviewVersions: ['v1'], clientConfig: { url: 'https://127.0.0.1/convert' } } });
    expect(r.stderr).toContain('spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook');
  });

  it('a dead webhook fails conversions with kube error', async () => {
    const dead = await freePort();
    await applyCrd(crd('gadgets', 'Gadget', { url: `https://127.0.0.1:${dead}/convert`, caBundle }));
    // the storage version needs no conversion
    await kubectlOk(s, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'g', namespace: 'default' }, spec: { color: 'red' } }));
    const want = `conversion for example.com/v1, Kind=Gadget failed: conversion webhook for /, Kind= failed: Post "https://127.0.0.1:${dead}/convert?timeout=30s": dial tcp 127.0.0.1:${dead}: connect: connection refused`;
    const r = await request(s, 'GET', '/apis/example.com/v2/namespaces/default/gadgets/g');
    expect(r.status).toBe(500);
    expect(r.json()).toMatchObject({ kind: 'Status', status: 'Failure', code: 500, message: want });
    const k = await kubectl(s, ['get', 'gadgets.v2.example.com', 'g']);
    expect(k.code).not.toBe(0);
    expect(k.stderr).toContain(want);
    // a write through v2 fails as well, and stores nothing
    const c = await kubectl(s, ['create', '-f', '-'], { input: JSON.stringify({ apiVersion: 'example.com/v2', kind: 'Gadget', metadata: { name: 'h', namespace: 'default' }, spec: { colour: 'red' } }) });
    expect(c.code).not.toBe(0);
    expect(c.stderr).toContain(`conversion for example.com/v2, Kind=Gadget failed: conversion webhook for /, Kind= failed: Post "https://127.0.0.1:${dead}/convert?timeout=30s"`);
    expect((await kubectl(s, ['get', 'gadgets.v1.example.com', 'h'])).stderr).toContain('NotFound');
    // a watch of v2 whose first event cannot be converted ends without sending it
    const w = await request(s, 'GET', '/apis/example.com/v2/namespaces/default/gadgets?watch=1&timeoutSeconds=10');
    expect(w.status).toBe(200);
    expect(w.body).not.toContain('"name":"g"');
    // the list of v2 too
    const l = await request(s, 'GET', '/apis/example.com/v2/namespaces/default/gadgets');
    expect(l.status).toBe(500);
    expect(l.json().message).toContain('conversion webhook for example.com/v1, Kind=GadgetList failed: Post');
    // kube's conversion metrics count the calls and the conversions
    const m = (await request(s, 'GET', '/metrics')).body;
    expect(m).toMatch(/^apiserver_conversion_webhook_request_total\{result="failure",failure_type="conversion_webhook_call_failure"\} [1-9]/m);
    expect(m).toMatch(/^apiserver_conversion_webhook_request_total\{result="success",failure_type=""\} [1-9]/m);
    expect(m).toMatch(/^apiserver_crd_conversion_webhook_duration_seconds_count\{crd_name="gadgets.example.com",from_version="v1",to_version="v2",succeeded="false"\} [1-9]/m);
    expect(m).toMatch(/^apiserver_crd_conversion_webhook_duration_seconds_count\{crd_name="widgets.example.com",from_version="v2",to_version="v1",succeeded="true"\} [1-9]/m);
    // the CRD and its instances go even though the webhook is dead (deleted through the storage version)
    await kubectlOk(s, ['delete', 'crd', 'gadgets.example.com', '--timeout=20s']);
  });
});

describe('CRD selectableFields', () => {
  const shirts = (versions: any[]) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'shirts.stable.example.com' },
    spec: { group: 'stable.example.com', scope: 'Namespaced', names: { plural: 'shirts', singular: 'shirt', kind: 'Shirt' }, versions },
  });
  const schema = {
    openAPIV3Schema: {
      type: 'object',
      properties: {
        spec: {
          type: 'object',
          properties: { color: { type: 'string' }, size: { type: 'string', enum: ['S', 'M', 'L'] }, count: { type: 'integer' }, ok: { type: 'boolean' }, tags: { type: 'array', items: { type: 'string' } } },
        },
      },
    },
  };

  it('a field selector on a declared field filters list and watch, through kubectl', async () => {
    await applyCrd(shirts([{ name: 'v1', served: true, storage: true, schema, selectableFields: [{ jsonPath: '.spec.color' }, { jsonPath: '.spec.size' }, { jsonPath: '.spec.count' }] }]));
    const mk = (name: string, spec: any) => kubectlOk(s, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'stable.example.com/v1', kind: 'Shirt', metadata: { name, namespace: 'default' }, spec }));
    await mk('red-s', { color: 'red', size: 'S', count: 1 });
    await mk('red-m', { color: 'red', size: 'M', count: 2 });
    await mk('blue-m', { color: 'blue', size: 'M' });
    const names = async (sel: string) => (await kubectlOk(s, ['get', 'shirts', '--field-selector', sel, '-o', 'name'])).trim().split('\n').filter(Boolean);
    expect(await names('spec.color=red')).toEqual(['shirt.stable.example.com/red-m', 'shirt.stable.example.com/red-s']);
    expect(await names('spec.color=red,spec.size=M')).toEqual(['shirt.stable.example.com/red-m']);
    expect(await names('spec.size!=M')).toEqual(['shirt.stable.example.com/red-s']);
    expect(await names('spec.count=2')).toEqual(['shirt.stable.example.com/red-m']);
    expect(await names('metadata.name=blue-m')).toEqual(['shirt.stable.example.com/blue-m']);
    // an undeclared field is refused as kube refuses it
    await mk('ok-shirt', { color: 'white', ok: true });
    expect(await names('spec.color=white')).toEqual(['shirt.stable.example.com/ok-shirt']);
    const bad = await kubectl(s, ['get', 'shirts', '--field-selector', 'spec.ok=true']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('field label not supported: spec.ok');
    // a field made selectable later selects the objects already there
    await applyCrd(shirts([{ name: 'v1', served: true, storage: true, schema, selectableFields: [{ jsonPath: '.spec.color' }, { jsonPath: '.spec.size' }, { jsonPath: '.spec.count' }, { jsonPath: '.spec.ok' }] }]));
    expect(await until(async () => (await kubectl(s, ['get', 'shirts', '--field-selector', 'spec.ok=true', '-o', 'name'])).stdout.trim() || false)).toBe('shirt.stable.example.com/ok-shirt');
    await kubectlOk(s, ['delete', 'shirt', 'ok-shirt']);

    const w = kubectlStream(s, ['get', 'shirts', '--watch', '--field-selector', 'spec.color=blue', '--output-watch-events', '-o', 'json']);
    try {
      await until(() => w.output().includes('"name":"blue-m"'), 15_000);
      await mk('blue-l', { color: 'blue', size: 'L' });
      await mk('green-l', { color: 'green', size: 'L' });
      await until(() => w.output().includes('"name":"blue-l"'), 15_000);
      // a change of the field out of the selector is a DELETED
      await kubectlOk(s, ['patch', 'shirt', 'blue-m', '--type=merge', '-p', '{"spec":{"color":"green"}}']);
      await until(() => /"type":"DELETED".*"name":"blue-m"/.test(w.output()), 15_000);
      expect(w.output()).not.toContain('red-');
      expect(w.output()).not.toContain('green-l');
    } finally {
      w.stop();
    }
  });

  it('validates selectableFields as kube does', async () => {
    const bad = (selectableFields: any[], extra: any = {}) => {
      const c = shirts([{ name: 'v1', served: true, storage: true, schema, selectableFields, ...extra }]);
      c.metadata.name = 'shirts.bad.example.com';
      c.spec.group = 'bad.example.com';
      return kubectl(s, ['create', '-f', '-'], { input: JSON.stringify(c) });
    };
    let r = await bad([{ jsonPath: '.spec.tags' }, { jsonPath: '.spec.nope' }, { jsonPath: '.metadata.name' }, { jsonPath: '.spec.color' }, { jsonPath: '.spec.color' }]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('spec.versions[0].selectableFields[0].jsonPath: Invalid value: ".spec.tags": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.');
    expect(r.stderr).toContain('spec.versions[0].selectableFields[1].jsonPath: Invalid value: ".spec.nope": is an invalid path: does not refer to a valid field');
    expect(r.stderr).toContain('spec.versions[0].selectableFields[2].jsonPath: Invalid value: ".metadata.name": is an invalid path: does not refer to a valid field');
    expect(r.stderr).toContain('spec.versions[0].selectableFields[4].jsonPath: Duplicate value: ".spec.color"');
    r = await bad([{ jsonPath: '.spec.color' }, {}]);
    expect(r.stderr).toContain('spec.versions[0].selectableFields[1].jsonPath: Required value');
    const many = Array.from({ length: 9 }, (_, i) => ({ jsonPath: `.spec.f${i}` }));
    const wide = { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: Object.fromEntries(many.map((_, i) => [`f${i}`, { type: 'string' }])) } } } };
    r = await bad(many, { schema: wide });
    expect(r.stderr).toContain('spec.versions[0].selectableFields: Too many: 9: must have at most 8 items');
  });
});
