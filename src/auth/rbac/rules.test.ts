import { describe, it, expect } from 'vitest';
import { compactRules, compactString, ruleAllows, uncovered, type PolicyRule } from './rules.js';
import type { AuthorizationAttributes } from '../../http/filters/authorization.js';

const user = { name: 'u', uid: '', groups: [] };
const res = (verb: string, apiGroup: string, resource: string, subresource = '', name = ''): AuthorizationAttributes => ({ user, verb, resourceRequest: true, apiGroup, resource, subresource, namespace: 'ns', name, path: '' });
const url = (verb: string, path: string): AuthorizationAttributes => ({ user, verb, resourceRequest: false, apiGroup: '', resource: '', subresource: '', namespace: '', name: '', path });

describe('RBAC rules', () => {
  it('match verbs, groups, resources, subresources and names as kube', () => {
    const pods: PolicyRule = { verbs: ['get'], apiGroups: [''], resources: ['pods'] };
    expect(ruleAllows(res('get', '', 'pods'), pods)).toBe(true);
    expect(ruleAllows(res('list', '', 'pods'), pods)).toBe(false);
    expect(ruleAllows(res('get', 'apps', 'pods'), pods)).toBe(false);
    expect(ruleAllows(res('get', '', 'pods', 'log'), pods)).toBe(false); // a subresource is its own resource
    expect(ruleAllows(res('get', '', 'pods', 'log'), { verbs: ['get'], apiGroups: [''], resources: ['pods/log'] })).toBe(true);
    expect(ruleAllows(res('get', 'apps', 'deployments', 'scale'), { verbs: ['*'], apiGroups: ['*'], resources: ['*/scale'] })).toBe(true);
    expect(ruleAllows(res('get', 'apps', 'deployments'), { verbs: ['*'], apiGroups: ['*'], resources: ['*/scale'] })).toBe(false);
    const named: PolicyRule = { verbs: ['get'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['a'] };
    expect(ruleAllows(res('get', '', 'configmaps', '', 'a'), named)).toBe(true);
    expect(ruleAllows(res('get', '', 'configmaps', '', 'b'), named)).toBe(false);
    expect(ruleAllows(res('get', '', 'configmaps'), named)).toBe(false);
  });

  it('match non-resource URLs exactly or by a trailing * prefix', () => {
    const r: PolicyRule = { verbs: ['get'], nonResourceURLs: ['/healthz', '/apis/*'] };
    expect(ruleAllows(url('get', '/healthz'), r)).toBe(true);
    expect(ruleAllows(url('get', '/healthz/etcd'), r)).toBe(false);
    expect(ruleAllows(url('get', '/apis/apps/v1'), r)).toBe(true);
    expect(ruleAllows(url('post', '/healthz'), r)).toBe(false);
    expect(ruleAllows(res('get', '', 'pods'), r)).toBe(false);
  });

  it('cover rules part by part and compact what is missing', () => {
    const owner: PolicyRule[] = [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] }, { verbs: ['get'], apiGroups: ['apps'], resources: ['*/scale'] }];
    expect(uncovered(owner, [{ verbs: ['get'], apiGroups: [''], resources: ['pods'], resourceNames: ['x'] }])).toEqual([]);
    expect(uncovered(owner, [{ verbs: ['get'], apiGroups: ['apps'], resources: ['deployments/scale'] }])).toEqual([]);
    const missing = uncovered(owner, [{ verbs: ['get', 'delete', 'watch'], apiGroups: [''], resources: ['pods'] }]);
    expect(compactRules(missing).map(compactString)).toEqual(['{APIGroups:[""], Resources:["pods"], Verbs:["delete" "watch"]}']);
    expect(uncovered([{ verbs: ['*'], nonResourceURLs: ['/api/*'] }], [{ verbs: ['get'], nonResourceURLs: ['/api/v1'] }])).toEqual([]);
    expect(compactString({ verbs: ['get'], nonResourceURLs: ['/x'] })).toBe('{NonResourceURLs:["/x"], Verbs:["get"]}');
  });
});
