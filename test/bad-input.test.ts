// Bad input gets kube-apiserver's Status code and reason, and never hurts the server or its data.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { request, startServer, type TestServer } from './helpers/server.js';

let s: TestServer;
const CM = '/api/v1/namespaces/default/configmaps';

function expectStatus(r: { status: number; json(): any }, code: number, reason: string) {
  expect(r.status).toBe(code);
  const b = r.json();
  expect(b).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason });
  expect(typeof b.message).toBe('string');
}

beforeAll(async () => {
  s = await startServer();
  const r = await request(s, 'POST', CM, { metadata: { name: 'keeper' }, data: { a: '1' } });
  expect(r.status).toBe(201);
});

afterAll(async () => {
  // After everything, the server still serves and the stored object is intact.
  const ready = await request(s, 'GET', '/readyz');
  expect(ready.status).toBe(200);
  const k = await request(s, 'GET', `${CM}/keeper`);
  expect(k.json().data).toEqual({ a: '1' });
  await s.stop();
  s.cleanup();
});

describe('bad input', () => {
  it('malformed JSON is 400 BadRequest', async () => {
    expectStatus(await request(s, 'POST', CM, '{"metadata": {"name": '), 400, 'BadRequest');
  });
  it('a wrong field type in metadata is 400 BadRequest', async () => {
    expectStatus(await request(s, 'POST', CM, { metadata: { name: 'x', labels: 'oops' } }), 400, 'BadRequest');
    expectStatus(await request(s, 'POST', CM, { metadata: { name: 5 } }), 400, 'BadRequest');
    expectStatus(await request(s, 'POST', CM, [1, 2]), 400, 'BadRequest');
  });
  it('a mismatched kind is 400 BadRequest', async () => {
    expectStatus(await request(s, 'POST', CM, { kind: 'Secret', apiVersion: 'v1', metadata: { name: 'x' } }), 400, 'BadRequest');
  });
  it('an invalid name is 422 Invalid with causes', async () => {
    const r = await request(s, 'POST', CM, { metadata: { name: 'Not_Valid' } });
    expectStatus(r, 422, 'Invalid');
    expect(r.json().details.causes[0]).toMatchObject({ field: 'metadata.name', reason: 'FieldValueInvalid' });
  });
  it('an unknown resource is 404 NotFound', async () => {
    expectStatus(await request(s, 'GET', '/api/v1/foos'), 404, 'NotFound');
    expectStatus(await request(s, 'GET', '/apis/nope.example.com/v1/things'), 404, 'NotFound');
  });
  it('a bad path is 404', async () => {
    const r = await request(s, 'GET', '/nonsense/x');
    expect(r.status).toBe(404);
  });
  it('an oversized body is 413', async () => {
    const big = JSON.stringify({ metadata: { name: 'big' }, data: { a: 'x'.repeat(3 * 1024 * 1024) } });
    const r = await request(s, 'POST', CM, big);
    expect(r.status).toBe(413);
    expect(r.json().reason).toBe('RequestEntityTooLarge');
  });
  it('a duplicate create is 409 AlreadyExists', async () => {
    expectStatus(await request(s, 'POST', CM, { metadata: { name: 'keeper' } }), 409, 'AlreadyExists');
  });
  it('a stale PUT is 409 Conflict', async () => {
    const cur = (await request(s, 'GET', `${CM}/keeper`)).json();
    const stale = { ...cur, metadata: { ...cur.metadata, resourceVersion: '1' } };
    expectStatus(await request(s, 'PUT', `${CM}/keeper`, stale), 409, 'Conflict');
  });
  it('a create in a missing namespace is 404 naming the namespace', async () => {
    const r = await request(s, 'POST', '/api/v1/namespaces/missing/configmaps', { metadata: { name: 'x' } });
    expectStatus(r, 404, 'NotFound');
    expect(r.json().details).toEqual({ name: 'missing', kind: 'namespaces' });
  });
  it('a JSON patch whose test fails is 422', async () => {
    const r = await request(s, 'PATCH', `${CM}/keeper`, [{ op: 'test', path: '/data/a', value: 'nope' }], { 'content-type': 'application/json-patch+json' });
    expect(r.status).toBe(422);
  });
  it('an unsupported patch type is 415', async () => {
    const r = await request(s, 'PATCH', `${CM}/keeper`, {}, { 'content-type': 'text/plain' });
    expectStatus(r, 415, 'UnsupportedMediaType');
  });
  it('a bad query is 400', async () => {
    expectStatus(await request(s, 'GET', `${CM}?labelSelector=a%20in%20(b`), 400, 'BadRequest');
    expectStatus(await request(s, 'GET', `${CM}?limit=abc`), 400, 'BadRequest');
    expectStatus(await request(s, 'POST', `${CM}?dryRun=Some`, { metadata: { name: 'dry' } }), 400, 'BadRequest');
  });
  it('a bad token is 401', async () => {
    const r = await request(s, 'GET', CM, undefined, { authorization: 'Bearer wrong' });
    expectStatus(r, 401, 'Unauthorized');
  });
  it('a verb the resource does not have is 405', async () => {
    expectStatus(await request(s, 'DELETE', '/api/v1/namespaces'), 405, 'MethodNotAllowed');
  });
});

describe('create with a resourceVersion', () => {
  it('is a 500 without a reason, after validation and not on a dry run, as kube storage answers; "0" and unparseable versions are ignored', async () => {
    const r = await request(s, 'POST', CM, { metadata: { name: 'with-rv', resourceVersion: '12' }, data: { a: '1' } });
    expect(r.status).toBe(500);
    expect(r.json()).toEqual({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'resourceVersion should not be set on objects to be created', code: 500 });
    expect((await request(s, 'GET', `${CM}/with-rv`)).status).toBe(404);
    const invalid = await request(s, 'POST', CM, { metadata: { name: 'Bad_Name', resourceVersion: '12' } });
    expect(invalid.status).toBe(422);
    expect((await request(s, 'POST', `${CM}?dryRun=All`, { metadata: { name: 'with-rv', resourceVersion: '12' } })).status).toBe(201);
    expect((await request(s, 'POST', CM, { metadata: { name: 'rv-zero', resourceVersion: '0' } })).status).toBe(201);
    expect((await request(s, 'POST', CM, { metadata: { name: 'rv-odd', resourceVersion: '-1' } })).status).toBe(201);
    const apply = await request(s, 'PATCH', `${CM}/with-rv?fieldManager=m`, 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: with-rv, resourceVersion: "12"}\n', { 'content-type': 'application/apply-patch+yaml' });
    expect(apply.status).toBe(500);
    expect(apply.json().message).toBe('resourceVersion should not be set on objects to be created');
  });
});
