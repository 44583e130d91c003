import { describe, it, expect } from 'vitest';
import { compileRule, ruleMatches, isExemptAdmissionConfiguration, type RuleSubject } from './predicates/rules.js';
import { matchObjectSelector } from './predicates/object.js';
import { matchNamespaceSelector } from './predicates/namespace.js';
import { EquivalentResourceMapper, convertObject } from './equivalents.js';
import { shouldCallHook, VersionedObjects } from './generic.js';
import { catalogData } from '../../api/catalog-data.js';
import type { Attributes, ObjectSource } from '../plugin.js';
import type { Hook } from './source.js';
import { StatusError } from '../../errors.js';

const pods = { group: '', version: 'v1', resource: 'pods' };
const subject = (over: Partial<RuleSubject> = {}): RuleSubject => ({ operation: 'CREATE', resource: pods, subresource: '', namespace: 'default', ...over });
const rule = (r: any) => compileRule({ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], scope: '*', ...r });

const info = (group: string, version: string, resource: string) => {
  for (const gv of catalogData) if (gv.group === group && gv.version === version) for (const r of gv.resources) if (r.resource === resource) return r;
  throw new Error(`no ${group}/${version}/${resource}`);
};

function objects(items: Record<string, any[]> = {}): ObjectSource {
  return {
    get: (gr, ns, name) => (items[gr] ?? []).find((o) => (o.metadata.namespace ?? '') === ns && o.metadata.name === name),
    list: (gr, ns) => (items[gr] ?? []).filter((o) => ns === '' || o.metadata.namespace === ns),
  };
}

function attrs(over: Partial<Attributes> = {}): Attributes {
  const i = info('', 'v1', 'pods');
  return { operation: 'CREATE', info: i, groupResource: { group: '', resource: 'pods' }, subresource: '', namespace: 'default', name: 'p', obj: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', labels: { app: 'a' } } }, old: null, dryRun: false, ...over };
}

describe('rules', () => {
  it('matches operations, groups, versions and resources, with "*"', () => {
    expect(ruleMatches(rule({}), subject())).toBe(true);
    expect(ruleMatches(rule({}), subject({ operation: 'UPDATE' }))).toBe(false);
    expect(ruleMatches(rule({ operations: ['*'] }), subject({ operation: 'DELETE' }))).toBe(true);
    expect(ruleMatches(rule({ operations: ['CONNECT'] }), subject({ operation: 'CONNECT', subresource: 'exec' }))).toBe(false);
    expect(ruleMatches(rule({ operations: ['CONNECT'], resources: ['pods/exec'] }), subject({ operation: 'CONNECT', subresource: 'exec' }))).toBe(true);
    expect(ruleMatches(rule({ apiGroups: ['apps'] }), subject())).toBe(false);
    expect(ruleMatches(rule({ apiVersions: ['v2'] }), subject())).toBe(false);
    expect(ruleMatches(rule({ apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }), subject())).toBe(true);
  });

  it('a bare resource never matches its subresources; "pods/status", "pods/*" and "*/*" do', () => {
    expect(ruleMatches(rule({ operations: ['UPDATE'] }), subject({ operation: 'UPDATE', subresource: 'status' }))).toBe(false);
    expect(ruleMatches(rule({ operations: ['UPDATE'], resources: ['pods/status'] }), subject({ operation: 'UPDATE', subresource: 'status' }))).toBe(true);
    expect(ruleMatches(rule({ operations: ['UPDATE'], resources: ['pods/status'] }), subject({ operation: 'UPDATE' }))).toBe(false);
    expect(ruleMatches(rule({ operations: ['UPDATE'], resources: ['pods/*'] }), subject({ operation: 'UPDATE', subresource: 'binding' }))).toBe(true);
    expect(ruleMatches(rule({ operations: ['UPDATE'], resources: ['*/*'] }), subject({ operation: 'UPDATE', subresource: 'status' }))).toBe(true);
    // ("*/*" is every resource and every subresource: the main resource too)
    expect(ruleMatches(rule({ operations: ['UPDATE'], resources: ['*/*'] }), subject({ operation: 'UPDATE' }))).toBe(true);
    expect(ruleMatches(rule({ operations: ['UPDATE'], resources: ['*/status'] }), subject({ operation: 'UPDATE', subresource: 'status' }))).toBe(true);
  });

  it('scope: Namespaced, Cluster, and a Namespace counted as cluster-scoped', () => {
    const ns = { group: '', version: 'v1', resource: 'namespaces' };
    expect(ruleMatches(rule({ scope: 'Namespaced' }), subject())).toBe(true);
    expect(ruleMatches(rule({ scope: 'Cluster' }), subject())).toBe(false);
    expect(ruleMatches(rule({ scope: 'Cluster', resources: ['namespaces'] }), subject({ resource: ns, namespace: 'x' }))).toBe(true);
    expect(ruleMatches(rule({ scope: 'Namespaced', resources: ['namespaces'] }), subject({ resource: ns, namespace: 'x' }))).toBe(false);
    expect(ruleMatches(rule({ scope: 'Cluster', apiGroups: ['*'], resources: ['*'] }), subject({ resource: { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles' }, namespace: '' }))).toBe(true);
  });

  it('webhook and policy configurations are exempt', () => {
    expect(isExemptAdmissionConfiguration({ group: 'admissionregistration.k8s.io', version: 'v1', kind: 'ValidatingWebhookConfiguration' })).toBe(true);
    expect(isExemptAdmissionConfiguration({ group: 'admissionregistration.k8s.io', version: 'v1', kind: 'ValidatingAdmissionPolicyBinding' })).toBe(true);
    expect(isExemptAdmissionConfiguration({ group: '', version: 'v1', kind: 'Pod' })).toBe(false);
  });
});

describe('selectors', () => {
  it('objectSelector on the new or the old object; empty selects all', () => {
    const sel = { matchLabels: { app: 'a' } };
    expect(matchObjectSelector({}, { metadata: {} }, null)).toBe(true);
    expect(matchObjectSelector(sel, { metadata: { labels: { app: 'a' } } }, null)).toBe(true);
    expect(matchObjectSelector(sel, { metadata: { labels: { app: 'b' } } }, { metadata: { labels: { app: 'a' } } })).toBe(true);
    expect(matchObjectSelector(sel, { metadata: { labels: { app: 'b' } } }, null)).toBe(false);
    expect(matchObjectSelector({ matchExpressions: [{ key: 'app', operator: 'DoesNotExist' }] }, { metadata: {} }, null)).toBe(true);
  });

  it('namespaceSelector on the namespace labels; a Namespace on its own; cluster-scoped always; missing namespace 404', () => {
    const objs = objects({ namespaces: [{ metadata: { name: 'default', labels: { env: 'prod' } } }] });
    const sel = { matchLabels: { env: 'prod' } };
    expect(matchNamespaceSelector(objs, sel, attrs(), 'pods')).toBe(true);
    expect(matchNamespaceSelector(objs, { matchLabels: { env: 'dev' } }, attrs(), 'pods')).toBe(false);
    const missing = matchNamespaceSelector(objs, sel, attrs({ namespace: 'nope' }), 'pods');
    expect(missing).toBeInstanceOf(StatusError);
    expect((missing as StatusError).message).toBe('namespaces "nope" not found');
    const nsInfo = info('', 'v1', 'namespaces');
    const nsCreate = attrs({ info: nsInfo, namespace: '', name: 'new', obj: { metadata: { name: 'new', labels: { env: 'prod' } } } });
    expect(matchNamespaceSelector(objs, sel, nsCreate, 'namespaces')).toBe(true);
    const crInfo = info('rbac.authorization.k8s.io', 'v1', 'clusterroles');
    expect(matchNamespaceSelector(objs, { matchLabels: { env: 'dev' } }, attrs({ info: crInfo, namespace: '' }), 'clusterroles')).toBe(true);
  });
});

describe('matchPolicy: Equivalent', () => {
  it('maps the versions of one storage: HPA v1 and v2, core and events.k8s.io events', () => {
    const m = new EquivalentResourceMapper(objects());
    const hpa = m.equivalentResourcesFor({ group: 'autoscaling', version: 'v2', resource: 'horizontalpodautoscalers' }, '');
    expect(hpa.map((r) => r.version).sort()).toEqual(['v1', 'v2']);
    const ev = m.equivalentResourcesFor({ group: '', version: 'v1', resource: 'events' }, '');
    expect(ev.map((r) => `${r.group}/${r.version}`).sort()).toEqual(['/v1', 'events.k8s.io/v1']);
    expect(m.equivalentResourcesFor({ group: 'apps', version: 'v1', resource: 'deployments' }, '')).toEqual([{ group: 'apps', version: 'v1', resource: 'deployments' }]);
    expect(m.kindFor({ group: 'apps', version: 'v1', resource: 'deployments' }, 'scale')).toEqual({ group: 'autoscaling', version: 'v1', kind: 'Scale' });
  });

  it('a hook on autoscaling/v1 is called for a v2 request, with the object converted to v1', () => {
    const m = new EquivalentResourceMapper(objects());
    const v2 = info('autoscaling', 'v2', 'horizontalpodautoscalers');
    const obj = { apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', metadata: { name: 'h', namespace: 'default' }, spec: { scaleTargetRef: { kind: 'Deployment', name: 'd', apiVersion: 'apps/v1' }, minReplicas: 1, maxReplicas: 3, metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } } }] } };
    const a = attrs({ info: v2, groupResource: { group: 'autoscaling', resource: 'horizontalpodautoscalers' }, obj });
    const hook = { name: 'h', uid: 'c/h/0', type: 'admit', rules: [compileRule({ operations: ['CREATE'], apiGroups: ['autoscaling'], apiVersions: ['v1'], resources: ['horizontalpodautoscalers'] })], matchPolicy: 'Equivalent', namespaceSelector: {}, objectSelector: {}, failurePolicy: 'Fail' } as unknown as Hook;
    const v = new VersionedObjects(a, m);
    const inv = shouldCallHook(hook, a, objects(), m, (k, r) => v.get(k, r));
    expect(inv).toEqual({ kind: { group: 'autoscaling', version: 'v1', kind: 'HorizontalPodAutoscaler' }, resource: { group: 'autoscaling', version: 'v1', resource: 'horizontalpodautoscalers' }, subresource: '' });
    const conv = v.get(inv!.kind, inv!.resource).object;
    expect(conv.apiVersion).toBe('autoscaling/v1');
    expect(conv.spec.targetCPUUtilizationPercentage).toBe(50);
    expect(shouldCallHook({ ...hook, matchPolicy: 'Exact' }, a, objects(), m, (k, r) => v.get(k, r))).toBeUndefined();
    // and back
    const back = convertObject(conv, info('autoscaling', 'v1', 'horizontalpodautoscalers'), v2);
    expect(back.apiVersion).toBe('autoscaling/v2');
    expect(back.spec.metrics[0].resource.target.averageUtilization).toBe(50);
  });

  it('matchConditions without a CEL evaluator: Fail refuses, Ignore skips', () => {
    const m = new EquivalentResourceMapper(objects());
    const a = attrs();
    const base = { name: 'mc', uid: 'c/mc/0', type: 'admit', rules: [rule({})], matchPolicy: 'Equivalent', namespaceSelector: {}, objectSelector: {}, matchConditionsError: 'matchConditions cannot be evaluated: no CEL evaluator is configured' } as unknown as Hook;
    const v = new VersionedObjects(a, m);
    expect(() => shouldCallHook({ ...base, failurePolicy: 'Fail' }, a, objects(), m, (k, r) => v.get(k, r))).toThrow('pods "p" is forbidden: matchConditions cannot be evaluated: no CEL evaluator is configured');
    expect(shouldCallHook({ ...base, failurePolicy: 'Ignore' }, a, objects(), m, (k, r) => v.get(k, r))).toBeUndefined();
    // an evaluator that says no
    const no = { ...base, matchConditionsError: undefined, failurePolicy: 'Fail', matchConditions: () => ({ matches: false, failedConditionName: 'x' }) } as unknown as Hook;
    expect(shouldCallHook(no, a, objects(), m, (k, r) => v.get(k, r))).toBeUndefined();
    const yes = { ...no, matchConditions: () => ({ matches: true }) } as unknown as Hook;
    expect(shouldCallHook(yes, a, objects(), m, (k, r) => v.get(k, r))).toBeDefined();
  });
});
