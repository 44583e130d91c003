// Issue 17 hardening: bad input to the patch engines (JSON patch, merge patch, strategic
// merge patch, server-side apply) is answered with a v1 Status and kube's 4xx code, never
// a 500; it leaves the stored object as it was and the server serving. In particular no
// key a client names (`__proto__`, `constructor`, `toString`) reaches Object.prototype: a
// patch through `__proto__` once polluted every object of the server process.
import { describe, it, expect } from 'vitest';
import { request, until, useServer, type TestServer } from './helpers/server.js';

let s: TestServer;
// (objects compared across requests: no workload controller writes to them)
useServer((x) => (s = x), { args: ['--controllers=*,-scheduler,-replicaset-controller,-deployment-controller'] });

const CM = '/api/v1/namespaces/default/configmaps';
const DEPLOY = '/apis/apps/v1/namespaces/default/deployments';
const JP = { 'content-type': 'application/json-patch+json' };
const MP = { 'content-type': 'application/merge-patch+json' };
const SMP = { 'content-type': 'application/strategic-merge-patch+json' };
const APPLY = { 'content-type': 'application/apply-patch+yaml' };
/**
 * kube's answer to a JSON patch that does not apply: json-patch's error wrapped in
 * NewGenericServerResponse(422), which drops its text (the texts are checked in
 * src/registry/patch.test.ts).
 */
const NOT_APPLICABLE = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'the server rejected our request due to an error in our request', reason: 'Invalid', details: {}, code: 422 };

async function stored(path: string): Promise<any> {
  const r = await request(s, 'GET', path);
  expect(r.status).toBe(200);
  return r.json();
}

/**
 * The server's objects have no inherited `polluted` member: a strict create of a plain
 * ConfigMap is accepted without an unknown field (field validation walks every key an
 * object enumerates, inherited ones included), and /readyz answers.
 */
async function expectUnpolluted(): Promise<void> {
  const name = `probe-${Math.random().toString(36).slice(2, 8)}`;
  const r = await request(s, 'POST', `${CM}?fieldValidation=Strict`, { metadata: { name }, data: { a: '1' } });
  expect(r.status, r.body).toBe(201);
  expect(r.body).not.toContain('polluted');
  expect(r.headers.warning).toBeUndefined();
  expect((await request(s, 'GET', '/readyz')).status).toBe(200);
}

function expectStatus(r: { status: number; body: string; json(): any }, code: number): any {
  expect(r.status, r.body).toBe(code);
  const st = r.json();
  expect(st).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code });
  return st;
}

async function makeCm(name: string): Promise<any> {
  const c = await request(s, 'POST', CM, { metadata: { name }, data: { a: '1' } });
  expect(c.status, c.body).toBe(201);
  return stored(`${CM}/${name}`);
}

describe('__proto__ is an ordinary field name', () => {
  it('JSON patch add through /__proto__/ is a missing path (422): nothing polluted, nothing stored', async () => {
    const before = await makeCm('proto-jp');
    for (const path of ['/__proto__/polluted', '/data/__proto__/polluted', '/constructor/prototype/polluted', '/toString/x']) {
      const r = await request(s, 'PATCH', `${CM}/proto-jp`, `[{"op":"add","path":${JSON.stringify(path)},"value":"yes"}]`, JP);
      expect(r.json()).toEqual(NOT_APPLICABLE);
    }
    expect(await stored(`${CM}/proto-jp`)).toEqual(before);
    await expectUnpolluted();
  });

  it('strategic merge and merge patches with a __proto__ key set an unknown field, which pruning drops', async () => {
    const before = await makeCm('proto-smp');
    for (const [body, headers] of [
      ['{"__proto__":{"polluted":"yes"}}', SMP],
      ['{"data":{"__proto__":{"polluted":"yes"}}}', SMP],
      ['{"metadata":{"labels":{"__proto__":{"polluted":"yes"}}}}', SMP],
      ['{"__proto__":{"polluted":"yes"}}', MP],
      ['{"metadata":{"__proto__":{"polluted":"yes"}}}', MP],
    ] as const) {
      const r = await request(s, 'PATCH', `${CM}/proto-smp`, body, headers);
      // (an unknown top-level or metadata field is dropped; a map value that is no string is invalid)
      expect(r.status, `${body}: ${r.body}`).toBeLessThan(500);
      expect(r.body).not.toContain('"polluted"');
    }
    const after = await stored(`${CM}/proto-smp`);
    expect(after.data).toEqual(before.data);
    await expectUnpolluted();
  });

  it('a strict patch naming __proto__ is refused as an unknown field', async () => {
    await makeCm('proto-strict');
    const r = await request(s, 'PATCH', `${CM}/proto-strict?fieldValidation=Strict`, '{"__proto__":{"polluted":"yes"}}', MP);
    expect(expectStatus(r, 400).message).toContain('unknown field "__proto__"');
    await expectUnpolluted();
  });

  it('server-side apply of a configuration with __proto__ keys pollutes nothing', async () => {
    const body = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"proto-apply","__proto__":{"polluted":"yes"}},"data":{"a":"1"},"__proto__":{"polluted":"yes"}}';
    const r = await request(s, 'PATCH', `${CM}/proto-apply?fieldManager=m`, body, APPLY);
    expect(r.status, r.body).toBeLessThan(500);
    await expectUnpolluted();
    const again = await request(s, 'PATCH', `${CM}/proto-apply?fieldManager=m&fieldValidation=Strict`, body, APPLY);
    expect(again.status, again.body).toBe(400);
    await expectUnpolluted();
  });

  it('a create or update with __proto__ keys pollutes nothing', async () => {
    const r = await request(s, 'POST', CM, '{"metadata":{"name":"proto-create","__proto__":{"polluted":"yes"}},"data":{"a":"1"},"__proto__":{"polluted":"yes"}}');
    expect(r.status, r.body).toBeLessThan(500);
    await expectUnpolluted();
  });
});

describe('malformed JSON patch operations', () => {
  // [body, kube's 400 under fieldValidation Warn (the default) or Strict, when its strict
  // decoding of the operations fails first]: with Ignore, every one is json-patch's 422
  const cases: Array<[string, string | undefined]> = [
    ['[{"op":"move","path":"/"}]', undefined],
    ['[{"op":"copy","path":"/x"}]', undefined],
    ['[{"op":"copy","from":"/toString","path":"/x"}]', undefined],
    ['[{"op":"move","from":"/constructor","path":"/x"}]', undefined],
    ['[{"path":"/x"}]', undefined],
    ['[null]', undefined],
    ['[{"op":"test","value":1}]', undefined],
    ['[{"op":"remove","path":"/hasOwnProperty"}]', undefined],
    ['[{"op":"replace","path":"/valueOf","value":1}]', undefined],
    ['[{"op":"move","from":7,"path":"/x"}]', 'json: cannot unmarshal number into Go struct field jsonPatchOp.from of type string'],
    ['[{"op":"copy","from":{"toString":1},"path":"/x"}]', 'json: cannot unmarshal object into Go struct field jsonPatchOp.from of type string'],
    ['[{"op":{"toString":1},"path":"/x"}]', 'json: cannot unmarshal object into Go struct field jsonPatchOp.op of type string'],
    ['[{"op":["add"],"path":"/x"}]', 'json: cannot unmarshal array into Go struct field jsonPatchOp.op of type string'],
    ['[{"op":"add","path":{"toString":1},"value":1}]', 'json: cannot unmarshal object into Go struct field jsonPatchOp.path of type string'],
    ['[{"op":"replace","path":["/data"],"value":1}]', 'json: cannot unmarshal array into Go struct field jsonPatchOp.path of type string'],
  ];
  it("each is kube's 400 (strict decoding) or its generic 422 (json-patch); the object is unchanged", async () => {
    const before = await makeCm('bad-ops');
    for (const [body, decodeError] of cases) {
      for (const fv of ['', 'Warn', 'Strict']) {
        const r = await request(s, 'PATCH', `${CM}/bad-ops${fv ? `?fieldValidation=${fv}` : ''}`, body, JP);
        if (decodeError) expect(r.json(), body).toEqual({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: `error decoding patch: ${decodeError}`, reason: 'BadRequest', code: 400 });
        else expect(r.json(), body).toEqual(NOT_APPLICABLE);
      }
      const ignored = await request(s, 'PATCH', `${CM}/bad-ops?fieldValidation=Ignore`, body, JP);
      expect(ignored.json(), body).toEqual(NOT_APPLICABLE);
    }
    expect(await stored(`${CM}/bad-ops`)).toEqual(before);
    await expectUnpolluted();
  });
});

describe('malformed strategic merge directives', () => {
  it('a $patch, $retainKeys, $setElementOrder or $deleteFromPrimitiveList of the wrong type is a 400', async () => {
    const d = await request(s, 'POST', DEPLOY, {
      metadata: { name: 'bad-directives' },
      spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i' }] } } },
    });
    expect(d.status, d.body).toBe(201);
    const before = await stored(`${DEPLOY}/bad-directives`);
    for (const body of [
      '{"spec":{"$patch":{"toString":1}}}',
      '{"spec":{"$patch":["replace"]}}',
      '{"spec":{"$patch":7}}',
      '{"metadata":{"$retainKeys":[[{"toString":1}]]}}',
      '{"metadata":{"$retainKeys":[{"toString":1}]}}',
      '{"metadata":{"$retainKeys":{"toString":1}}}',
      '{"spec":{"template":{"spec":{"$setElementOrder/containers":{"toString":1}}}}}',
      '{"metadata":{"$deleteFromPrimitiveList/finalizers":{"toString":1}}}',
      '{"spec":{"template":{"spec":{"containers":[{"name":"c","$patch":{"toString":1}}]}}}}',
    ]) {
      const r = await request(s, 'PATCH', `${DEPLOY}/bad-directives`, body, SMP);
      expect(r.status, `${body}: ${r.body}`).toBeGreaterThanOrEqual(400);
      expect(r.status, `${body}: ${r.body}`).toBeLessThan(500);
      expect(r.json().kind).toBe('Status');
    }
    expect(await stored(`${DEPLOY}/bad-directives`)).toEqual(before);
    await expectUnpolluted();
  });
});

describe('apply configurations with values of the wrong type', () => {
  it('a metadata.name, namespace, kind or apiVersion that is a map is a 400', async () => {
    for (const cfg of [
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: { toString: 1 } } },
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x', namespace: { toString: 1 } } },
      { apiVersion: 'apps/v1', kind: { toString: 1 }, metadata: { name: 'x' } },
      { apiVersion: { toString: 1 }, kind: 'Deployment', metadata: { name: 'x' } },
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: ['x'] } },
    ]) {
      const r = await request(s, 'PATCH', `${DEPLOY}/x?fieldManager=m`, JSON.stringify(cfg), APPLY);
      expectStatus(r, 400);
    }
    expect((await request(s, 'GET', `${DEPLOY}/x`)).status).toBe(404);
    await expectUnpolluted();
  });
});

describe('deep nesting', () => {
  const nest = (depth: number, leaf: string) => '{"a":'.repeat(depth) + leaf + '}'.repeat(depth);
  const nestList = (depth: number) => '['.repeat(depth) + '1' + ']'.repeat(depth);
  it('patches nested 2,000 to 9,000 levels are 4xx for every engine, never a stack overflow', async () => {
    const before = await makeCm('deep');
    for (const depth of [2000, 5000, 9000]) {
      for (const [body, headers] of [
        [`{"data":${nest(depth, '1')}}`, MP],
        [`{"data":${nest(depth, '1')}}`, SMP],
        [`{"metadata":{"annotations":${nest(depth, '"x"')}}}`, SMP],
        [`[{"op":"add","path":"/x","value":${nest(depth, '1')}}]`, JP],
        [`[{"op":"add","path":"/x","value":${nestList(depth)}}]`, JP],
        [`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"data":${nest(depth, '1')}}`, APPLY],
      ] as const) {
        const r = await request(s, 'PATCH', `${CM}/deep${headers === APPLY ? '?fieldManager=m' : ''}`, body, headers);
        expect(r.status, `${headers['content-type']} ${depth}: ${r.body.slice(0, 200)}`).toBeGreaterThanOrEqual(400);
        expect(r.status, `${headers['content-type']} ${depth}: ${r.body.slice(0, 200)}`).toBeLessThan(500);
        expect(r.json().kind).toBe('Status');
      }
    }
    expect(await stored(`${CM}/deep`)).toEqual(before);
    await expectUnpolluted();
  });

  it('create and update bodies nested 2,000 to 9,000 levels are 4xx', async () => {
    const before = await stored(`${CM}/deep`);
    for (const depth of [2000, 5000, 9000]) {
      const c = await request(s, 'POST', CM, `{"metadata":{"name":"deep-create"},"data":${nest(depth, '1')}}`);
      expect(c.status, c.body.slice(0, 200)).toBeGreaterThanOrEqual(400);
      expect(c.status, c.body.slice(0, 200)).toBeLessThan(500);
      const u = await request(s, 'PUT', `${CM}/deep`, `{"metadata":{"name":"deep","resourceVersion":"${before.metadata.resourceVersion}"},"data":{"a":${nestList(depth)}}}`);
      expect(u.status, u.body.slice(0, 200)).toBeGreaterThanOrEqual(400);
      expect(u.status, u.body.slice(0, 200)).toBeLessThan(500);
      const d = await request(s, 'POST', DEPLOY, `{"metadata":{"name":"deep-deploy"},"spec":{"template":{"metadata":{"annotations":${nest(depth, '"x"')}}}}}`);
      expect(d.status, d.body.slice(0, 200)).toBeGreaterThanOrEqual(400);
      expect(d.status, d.body.slice(0, 200)).toBeLessThan(500);
    }
    // YAML bodies too (the YAML parser recurses per level: a flow document 5,000 deep took
    // the process down), in flow and in block style
    let block = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep-create\ndata:\n';
    for (let i = 1; i <= 1200; i++) block += ' '.repeat(i) + 'a:\n';
    block += ' '.repeat(1201) + 'b: 1\n';
    for (const body of [`{"metadata":{"name":"deep-create"},"data":${nest(5000, '1')}}`, block]) {
      const y = await request(s, 'POST', CM, body, { 'content-type': 'application/yaml' });
      expect(expectStatus(y, 400).message).toContain('exceeded max depth');
      const a = await request(s, 'PATCH', `${CM}/deep-create?fieldManager=m`, body.replace('{"metadata"', '{"apiVersion":"v1","kind":"ConfigMap","metadata"'), APPLY);
      expect(expectStatus(a, 400).message).toContain('exceeded max depth');
    }
    expect((await request(s, 'GET', `${CM}/deep-create`)).status).toBe(404);
    expect(await stored(`${CM}/deep`)).toEqual(before);
    await expectUnpolluted();
  });
});

describe('deep results and custom resources', () => {
  const WIDGETS = '/apis/example.com/v1/namespaces/default/widgets';
  const nest = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
  const deep = (d: number): any => {
    let x: any = 1;
    for (let i = 0; i < d; i++) x = { a: x };
    return x;
  };

  it('custom resources (free-form) nested past 1,000 levels are a 400, created, updated or patched', async () => {
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: { group: 'example.com', scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget' }, versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }] },
    };
    expect((await request(s, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)).status).toBe(201);
    await until(async () => (await request(s, 'GET', WIDGETS)).status === 200);
    expect((await request(s, 'POST', WIDGETS, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' }, spec: { a: 1 } })).status).toBe(201);
    const before = await stored(`${WIDGETS}/w`);
    for (const d of [1001, 2000, 5000, 9000]) {
      const body = (name: string) => `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"${name}"},"spec":${nest(d)}}`;
      const c = await request(s, 'POST', WIDGETS, body(`deep${d}`));
      expect(expectStatus(c, 400).message).toBe('Widget in version "v1" cannot be handled as a Widget: json: exceeded max depth');
      expectStatus(await request(s, 'PUT', `${WIDGETS}/w`, body('w')), 400);
    }
    // JSON patch can nest deeper than the patch itself: a value added at the end of a deep
    // path, or a subtree moved into a new map per three operations
    const ops: any[] = [{ op: 'add', path: '/spec/x', value: deep(900) }];
    let p = '/spec/x';
    for (let k = 0; k < 8; k++) {
      p += '/a'.repeat(899);
      ops.push({ op: 'add', path: p, value: deep(900) });
    }
    const moves: any[] = [{ op: 'add', path: '/spec/r', value: {} }];
    for (let i = 0; i < 3000; i++) moves.push({ op: 'add', path: '/spec/w', value: {} }, { op: 'move', from: '/spec/r', path: '/spec/w/r' }, { op: 'move', from: '/spec/w', path: '/spec/r' });
    for (const patch of [ops, moves]) expect((await request(s, 'PATCH', `${WIDGETS}/w`, JSON.stringify(patch), JP)).json()).toEqual(NOT_APPLICABLE);
    expect(await stored(`${WIDGETS}/w`)).toEqual(before);
    await expectUnpolluted();
  });
});
