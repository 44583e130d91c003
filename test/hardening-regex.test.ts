// Issue 17, item 3: no pattern that user data reaches may run in more than linear time on
// the front thread. Each case sends the attack and meanwhile probes /healthz, which the
// single front thread must keep answering: a quantity of 240,000 digits (the quantity check
// was a backtracking regular expression, quadratic: 54 s), a CRD pattern '^(a+)+$' with a
// 31-byte value (exponential in V8's RegExp: 6.5 s; kube uses Go's RE2 regexp), and CRD
// patterns RE2 refuses, refused at the CRD's validation with kube's message.
import { describe, expect, it } from 'vitest';
import { request, until, useServer, type TestServer } from './helpers/server.js';

let s: TestServer;
useServer((x) => (s = x));

/** Runs attack() while probing /healthz; the slowest probe's latency and the attack's reply. */
async function underProbe<T>(attack: () => Promise<T>): Promise<{ result: T; worstMs: number; attackMs: number }> {
  let done = false;
  let worstMs = 0;
  const probe = (async () => {
    while (!done) {
      const t = performance.now();
      const r = await request(s, 'GET', '/healthz');
      expect(r.status).toBe(200);
      worstMs = Math.max(worstMs, performance.now() - t);
      await new Promise((res) => setTimeout(res, 2));
    }
  })();
  await new Promise((res) => setTimeout(res, 20));
  const t = performance.now();
  const result = await attack();
  const attackMs = performance.now() - t;
  done = true;
  await probe;
  if (process.env.HARDENING_FIGURES) console.log(`attack ${attackMs.toFixed(1)} ms, slowest /healthz ${worstMs.toFixed(1)} ms`);
  return { result, worstMs, attackMs };
}

function pod(name: string, cpu: string): unknown {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image: 'busybox', resources: { requests: { cpu } } }] } };
}

const CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.regex.example.com' },
  spec: {
    group: 'regex.example.com',
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                properties: {
                  evil: { type: 'string', pattern: '^(a+)+$' },
                  label: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' },
                  caseless: { type: 'string', pattern: '(?i)^abc$' },
                  digits: { type: 'string', pattern: '^\\d+$' },
                  letters: { type: 'string', pattern: '^\\pL+$' },
                },
              },
            },
          },
        },
      },
    ],
  },
};

function widget(name: string, spec: Record<string, string>): unknown {
  return { apiVersion: 'regex.example.com/v1', kind: 'Widget', metadata: { name }, spec };
}

describe('quantities of any length in linear time', () => {
  it('refuses a 240,000-digit quantity with a bad last character without stalling /healthz', async () => {
    const { result, worstMs, attackMs } = await underProbe(() => request(s, 'POST', '/api/v1/namespaces/default/pods', pod('q-bad', '1'.repeat(240_000) + 'x')));
    expect(result.status).toBe(400);
    expect(result.json().message).toContain("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
    expect(attackMs).toBeLessThan(2000);
    expect(worstMs).toBeLessThan(500);
  });

  it('stores a 240,000-digit quantity in canonical form quickly', async () => {
    const { result, attackMs } = await underProbe(() => request(s, 'POST', '/api/v1/namespaces/default/pods', pod('q-long', '1' + '0'.repeat(240_000))));
    expect(result.status).toBe(201);
    expect(result.json().spec.containers[0].resources.requests.cpu).toBe('1' + '0'.repeat(240_000 - 18) + 'E');
    expect(attackMs).toBeLessThan(2000);
  });

  it('takes quantities with huge exponents without computing their powers', async () => {
    const r = await request(s, 'POST', '/api/v1/namespaces/default/pods', pod('q-exp', '1e-999999999'));
    expect(r.status).toBe(201);
    expect(r.json().spec.containers[0].resources.requests.cpu).toBe('1e-9');
  });
});

describe('quantity arithmetic in admission', () => {
  it('answers a pod of a huge-exponent quantity under a LimitRange and a ResourceQuota at once', async () => {
    const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'huge-q' } };
    expect((await request(s, 'POST', '/api/v1/namespaces', ns)).status).toBe(201);
    const lr = { apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'lr' }, spec: { limits: [{ type: 'Container', min: { cpu: '1m' }, default: { cpu: '1' } }] } };
    expect((await request(s, 'POST', '/api/v1/namespaces/huge-q/limitranges', lr)).status).toBe(201);
    const rq = { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'rq' }, spec: { hard: { 'requests.cpu': '100', 'limits.cpu': '1e999999999' } } };
    expect((await request(s, 'POST', '/api/v1/namespaces/huge-q/resourcequotas', rq)).status).toBe(201);
    // Before, 10n ** 999999999n (kube's MilliValue and Quantity.Add done exactly) never returned.
    const { result, attackMs } = await underProbe(() =>
      request(s, 'POST', '/api/v1/namespaces/huge-q/pods', {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'p' },
        spec: { containers: [{ name: 'c', image: 'busybox', resources: { requests: { cpu: '1m' }, limits: { cpu: '1e999999999' } } }, { name: 'd', image: 'busybox', resources: { requests: { cpu: '1m' }, limits: { cpu: '1m' } } }] },
      }),
    );
    expect([201, 403]).toContain(result.status);
    expect(attackMs).toBeLessThan(2000);
  });
});

describe('YAML aliases in linear time', () => {
  const YAML = { 'content-type': 'application/yaml' };
  it('decodes 40,000 aliases without rescanning the document for each', async () => {
    const body = 'metadata: {name: many-aliases}\ndata: {a: &a x}\nbinaryData: {}\nimmutable: false\n' + 'x-list:\n' + '- *a\n'.repeat(40_000);
    const { result, attackMs, worstMs } = await underProbe(() => request(s, 'POST', '/api/v1/namespaces/default/configmaps', body, YAML));
    expect(result.status, result.body.slice(0, 200)).toBe(201);
    expect(attackMs).toBeLessThan(3000);
    expect(worstMs).toBeLessThan(3000);
  });

  it('refuses merge keys that expand a big map many times, as go-yaml does, at once', async () => {
    const body = 'metadata: {name: merges}\nbig: &b\n' + Array.from({ length: 5000 }, (_, i) => `  k${i}: v\n`).join('') + 'list:\n' + '- <<: *b\n'.repeat(5000);
    const { result, attackMs } = await underProbe(() => request(s, 'POST', '/api/v1/namespaces/default/configmaps', body, YAML));
    expect(result.status).toBe(400);
    expect(result.json().message).toBe("couldn't get version/kind; yaml parse error: yaml: document contains excessive aliasing");
    expect(attackMs).toBeLessThan(3000);
  });

  it('still merges and aliases as before', async () => {
    const body = 'metadata: {name: merged, labels: &l {a: b}}\ndata:\n  <<: *l\n  c: d\n';
    const r = await request(s, 'POST', '/api/v1/namespaces/default/configmaps', body, YAML);
    expect(r.status).toBe(201);
    expect(r.json().data).toEqual({ a: 'b', c: 'd' });
  });
});

describe('CRD patterns run as Go regexp (RE2)', () => {
  it('refuses patterns RE2 refuses, with kube message', async () => {
    const bad = structuredClone(CRD) as any;
    bad.metadata.name = 'gadgets.regex.example.com';
    bad.spec.names = { plural: 'gadgets', kind: 'Gadget' };
    const props = bad.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties;
    props.look = { type: 'string', pattern: '^(?=a)' };
    props.back = { type: 'array', items: { type: 'string', pattern: '(a)\\1' } };
    const r = await request(s, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', bad);
    expect(r.status).toBe(422);
    const msg = r.json().message;
    expect(msg).toContain('spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[look].pattern: Invalid value: "^(?=a)": must be a valid regular expression, but isn\'t: error parsing regexp: invalid or unsupported Perl syntax: `(?=`');
    expect(msg).toContain('spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[back].items.pattern: Invalid value: "(a)\\\\1": must be a valid regular expression, but isn\'t: error parsing regexp: invalid escape sequence: `\\1`');
  });

  it('matches values in linear time, with Go syntax and semantics', async () => {
    expect((await request(s, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', CRD)).status).toBe(201);
    const path = '/apis/regex.example.com/v1/namespaces/default/widgets';
    await until(async () => (await request(s, 'GET', path)).status === 200);

    const { result, worstMs, attackMs } = await underProbe(() => request(s, 'POST', path, widget('evil', { evil: 'a'.repeat(31) + '!' })));
    expect(result.status).toBe(422);
    expect(result.json().message).toContain("spec.evil in body should match '^(a+)+$'");
    expect(attackMs).toBeLessThan(1000);
    expect(worstMs).toBeLessThan(500);

    // A long value against the same pattern: still linear.
    const long = await underProbe(() => request(s, 'POST', path, widget('evil-long', { evil: 'a'.repeat(500_000) + '!' })));
    expect(long.result.status).toBe(422);
    expect(long.attackMs).toBeLessThan(2000);

    const ok = await request(s, 'POST', path, widget('fine', { evil: 'aaaa', label: 'my-name', caseless: 'aBc', digits: '0123', letters: 'héllo' }));
    expect(ok.status, ok.body).toBe(201);
    // Go's \d is ASCII only, unlike a Unicode-aware engine's.
    const arabic = await request(s, 'POST', path, widget('arabic', { digits: '١٢٣' }));
    expect(arabic.status).toBe(422);
    expect(arabic.json().message).toContain("spec.digits in body should match '^\\d+$'");
  });
});
