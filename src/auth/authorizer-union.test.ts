import { describe, it, expect } from 'vitest';
import { AuthorizerUnion } from './authorizer-union.js';
import type { AuthorizerMode, AuthorizerResult } from './authorizer.js';
import type { AuthorizationAttributes } from './attributes.js';
import { alwaysAllow, alwaysDeny } from './authorizers/always.js';

const attrs: AuthorizationAttributes = { user: { name: 'u', uid: '', groups: [] }, verb: 'get', resourceRequest: true, apiGroup: '', resource: 'pods', subresource: '', namespace: 'ns', name: '', path: '/api/v1/namespaces/ns/pods' };

function mode(name: string, r: AuthorizerResult, async = false): AuthorizerMode & { calls: number } {
  const m = { name, calls: 0, authorize: () => (m.calls++, async ? Promise.resolve(r) : r) };
  return m;
}

describe('authorizer union', () => {
  it('a Deny ends the chain: later modes are not asked', () => {
    const later = mode('later', { decision: 'Allow', reason: 'yes' });
    const u = new AuthorizerUnion([mode('a', { decision: 'NoOpinion', reason: 'first' }), mode('b', { decision: 'Deny', reason: 'no way' }), later]);
    expect(u.decide(attrs)).toEqual({ allowed: false, denied: true, reason: 'no way' });
    expect(later.calls).toBe(0);
  });
  it('NoOpinion passes on; the reasons of all are joined when none decides', () => {
    const u = new AuthorizerUnion([mode('a', { decision: 'NoOpinion', reason: 'one' }), mode('b', { decision: 'NoOpinion', reason: '' }), mode('c', { decision: 'NoOpinion', reason: 'two' })]);
    expect(u.decide(attrs)).toEqual({ allowed: false, reason: 'one\ntwo' });
  });
  it('an Allow after NoOpinions decides with its own reason', () => {
    const u = new AuthorizerUnion([alwaysDeny, mode('rbac', { decision: 'Allow', reason: 'RBAC: allowed' })]);
    expect(u.decide(attrs)).toEqual({ allowed: true, reason: 'RBAC: allowed' });
  });
  it('stays synchronous while every mode is; a promise only from an async mode on', async () => {
    const sync = new AuthorizerUnion([mode('a', { decision: 'NoOpinion', reason: 'x' }), alwaysAllow]);
    expect(sync.decide(attrs)).not.toBeInstanceOf(Promise);
    const hook = mode('hook', { decision: 'Deny', reason: 'hook says no' }, true);
    const rbacAfter = mode('rbac', { decision: 'Allow', reason: '' });
    const u = new AuthorizerUnion([mode('a', { decision: 'NoOpinion', reason: 'x' }), hook, rbacAfter]);
    const r = u.decide(attrs);
    expect(r).toBeInstanceOf(Promise);
    expect(await r).toEqual({ allowed: false, denied: true, reason: 'hook says no' });
    expect(rbacAfter.calls).toBe(0);
  });
  it('errors are gathered; a rejected async mode is NoOpinion with its error', async () => {
    const failing: AuthorizerMode = { name: 'w', authorize: () => Promise.reject(new Error('boom')) };
    const u = new AuthorizerUnion([mode('a', { decision: 'NoOpinion', reason: 'r1', error: 'e1' }), failing]);
    expect(await u.decide(attrs)).toEqual({ allowed: false, reason: 'r1', error: '[e1, boom]' });
  });
  it('decideSync counts a mode that must call out as NoOpinion', () => {
    const u = new AuthorizerUnion([mode('hook', { decision: 'Allow', reason: '' }, true), mode('b', { decision: 'NoOpinion', reason: 'b' })]);
    expect(u.decideSync(attrs)).toEqual({ allowed: false, reason: 'hook: no answer yet\nb' });
  });
  it('fixed chains are decided once', () => {
    expect(new AuthorizerUnion([alwaysDeny, alwaysAllow]).fixed).toEqual({ allowed: true, reason: '' });
    expect(new AuthorizerUnion([alwaysDeny]).fixed).toEqual({ allowed: false, reason: 'Everything is forbidden.' });
    expect(new AuthorizerUnion([alwaysDeny, mode('x', { decision: 'Allow', reason: '' })]).fixed).toBeNull();
  });
});
