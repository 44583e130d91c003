import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import http from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { WebhookAuthorizer } from './webhook.js';
import type { AuthorizationAttributes } from '../attributes.js';

let server: http.Server;
let dir: string;
let answer: (review: any) => { code: number; body?: any };
const seen: any[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const review = JSON.parse(body);
      seen.push(review);
      const a = answer(review);
      res.writeHead(a.code, { 'content-type': 'application/json' });
      res.end(a.body ? JSON.stringify(a.body) : '');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  dir = mkdtempSync(join(tmpdir(), 'authz-hook-'));
  writeFileSync(join(dir, 'kc'), `clusters:\n- name: c\n  cluster: {server: "http://127.0.0.1:${(server.address() as AddressInfo).port}/authorize"}\n`);
});
afterAll(() => {
  server.close();
  rmSync(dir, { recursive: true, force: true });
});

const attrs = (verb: string): AuthorizationAttributes => ({ user: { name: 'u', uid: 'id', groups: ['g'] }, verb, resourceRequest: true, apiGroup: 'apps', resource: 'deployments', subresource: 'scale', namespace: 'ns', name: 'd', path: '' });

function hook(version: 'v1' | 'v1beta1' = 'v1'): WebhookAuthorizer {
  return new WebhookAuthorizer({ configFile: join(dir, 'kc'), version, authorizedTtlMs: 60_000, unauthorizedTtlMs: 60_000, retries: 1 });
}

describe('webhook authorizer', () => {
  it('sends the attributes as a SubjectAccessReview spec, v1beta1 with "group"', async () => {
    answer = () => ({ code: 200, body: { status: { allowed: true, reason: 'ok' } } });
    expect(await hook('v1beta1').authorize(attrs('get'))).toEqual({ decision: 'Allow', reason: 'ok' });
    expect(seen.at(-1)).toEqual({
      apiVersion: 'authorization.k8s.io/v1beta1',
      kind: 'SubjectAccessReview',
      spec: { user: 'u', uid: 'id', group: ['g'], resourceAttributes: { namespace: 'ns', verb: 'get', group: 'apps', resource: 'deployments', subresource: 'scale', name: 'd' } },
    });
  });
  it('denied is Deny; neither is NoOpinion with the reason; both is Deny with an error', async () => {
    const h = hook();
    answer = (r) => ({ code: 200, body: { status: r.spec.resourceAttributes.verb === 'delete' ? { denied: true, reason: 'no' } : r.spec.resourceAttributes.verb === 'list' ? { reason: 'dunno' } : { allowed: true, denied: true } } });
    expect(await h.authorize(attrs('delete'))).toEqual({ decision: 'Deny', reason: 'no' });
    expect(await h.authorize(attrs('list'))).toEqual({ decision: 'NoOpinion', reason: 'dunno' });
    expect(await h.authorize(attrs('patch'))).toEqual({ decision: 'Deny', reason: '', error: 'webhook subject access review returned both allow and deny response' });
  });
  it('a cached answer is synchronous; a failure is NoOpinion with the error and is not cached', async () => {
    const h = hook();
    answer = () => ({ code: 200, body: { status: { allowed: true } } });
    await h.authorize(attrs('get'));
    expect(h.authorize(attrs('get'))).toEqual({ decision: 'Allow', reason: '' });
    expect(h.calls).toBe(1);
    answer = () => ({ code: 500 });
    expect(await h.authorize(attrs('update'))).toEqual({ decision: 'NoOpinion', reason: '', error: 'the server responded with the status code 500 but did not return more information' });
    answer = () => ({ code: 200, body: { status: { allowed: true } } });
    expect(await h.authorize(attrs('update'))).toEqual({ decision: 'Allow', reason: '' });
  });
});
