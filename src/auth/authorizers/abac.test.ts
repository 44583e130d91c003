import { describe, it, expect } from 'vitest';
import { AbacAuthorizer, parsePolicies } from './abac.js';
import type { AuthorizationAttributes } from '../attributes.js';

const FILE = `
# comments and blank lines are skipped
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user": "alice", "namespace": "*", "resource": "*", "apiGroup": "*"}}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user": "bob", "namespace": "projectCaribou", "resource": "pods", "apiGroup": "", "readonly": true}}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"group": "system:authenticated", "readonly": true, "nonResourcePath": "/version*"}}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user": "*", "group": "ops", "namespace": "*", "resource": "deployments", "apiGroup": "apps"}}
{"user": "legacy"}
`;

function res(user: string, groups: string[], verb: string, resource: string, namespace = '', apiGroup = ''): AuthorizationAttributes {
  return { user: { name: user, uid: '', groups }, verb, resourceRequest: true, apiGroup, resource, subresource: '', namespace, name: '', path: '' };
}
function path(user: string, groups: string[], verb: string, p: string): AuthorizationAttributes {
  return { user: { name: user, uid: '', groups }, verb, resourceRequest: false, apiGroup: '', resource: '', subresource: '', namespace: '', name: '', path: p };
}

describe('ABAC', () => {
  const abac = new AbacAuthorizer(parsePolicies(FILE));
  const allowed = (a: AuthorizationAttributes) => abac.authorize(a).decision === 'Allow';
  it('a user with "*" everywhere may do anything on resources', () => {
    expect(allowed(res('alice', [], 'delete', 'secrets', 'kube-system'))).toBe(true);
    expect(allowed(res('alice', [], 'create', 'deployments', 'x', 'apps'))).toBe(true);
  });
  it('readonly allows only get, list and watch; namespace, resource and apiGroup must match', () => {
    expect(allowed(res('bob', [], 'get', 'pods', 'projectCaribou'))).toBe(true);
    expect(allowed(res('bob', [], 'watch', 'pods', 'projectCaribou'))).toBe(true);
    expect(allowed(res('bob', [], 'create', 'pods', 'projectCaribou'))).toBe(false);
    expect(allowed(res('bob', [], 'get', 'pods', 'other'))).toBe(false);
    expect(allowed(res('bob', [], 'get', 'services', 'projectCaribou'))).toBe(false);
  });
  it('nonResourcePath: a trailing * is a prefix; resource policies without it do not match paths', () => {
    expect(allowed(path('carol', ['system:authenticated'], 'get', '/version'))).toBe(true);
    expect(allowed(path('carol', ['system:authenticated'], 'get', '/version/x'))).toBe(true);
    expect(allowed(path('carol', ['system:authenticated'], 'post', '/version'))).toBe(false);
    expect(allowed(path('carol', ['system:authenticated'], 'get', '/healthz'))).toBe(false);
    expect(allowed(path('bob', [], 'get', '/version'))).toBe(false);
  });
  it('user "*" with a group needs both', () => {
    expect(allowed(res('dave', ['ops'], 'update', 'deployments', 'a', 'apps'))).toBe(true);
    expect(allowed(res('dave', ['dev'], 'update', 'deployments', 'a', 'apps'))).toBe(false);
  });
  it('an unversioned policy widens its empty fields to everything', () => {
    expect(allowed(res('legacy', [], 'delete', 'nodes'))).toBe(true);
    expect(allowed(path('legacy', [], 'get', '/metrics'))).toBe(true);
  });
  it('no match is NoOpinion with kube\'s reason', () => {
    expect(abac.authorize(res('eve', [], 'get', 'pods', 'a'))).toEqual({ decision: 'NoOpinion', reason: 'No policy matched.' });
  });
  it('a bad line names the file and line', () => {
    expect(() => parsePolicies('{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{}}\nnot json', 'p.jsonl')).toThrow(/error reading policy file p.jsonl, line 2/);
  });
});
