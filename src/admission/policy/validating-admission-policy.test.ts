import { describe, it, expect } from 'vitest';
import { ValidatingAdmissionPolicy } from './validating-admission-policy.js';
import { ruleMatches } from './matching.js';
import type { Attributes, ObjectSource } from '../plugin.js';
import { StatusError } from '../../errors.js';
import { compileMatchConditions } from '../../cel/match-conditions.js';

function source(objs: Record<string, any[]>): ObjectSource {
  return {
    get: (gr, ns, name) => (objs[gr] ?? []).find((o) => o.metadata.name === name && (o.metadata.namespace ?? '') === ns),
    list: (gr, ns) => (objs[gr] ?? []).filter((o) => !ns || o.metadata.namespace === ns),
  };
}

const POLICIES = 'validatingadmissionpolicies.admissionregistration.k8s.io';
const BINDINGS = 'validatingadmissionpolicybindings.admissionregistration.k8s.io';
const info = { group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true } as any;

function attrs(obj: any, op: 'CREATE' | 'UPDATE' | 'DELETE' = 'CREATE'): Attributes {
  return {
    operation: op,
    info,
    groupResource: { group: '', resource: 'configmaps' },
    subresource: '',
    namespace: 'ns',
    name: obj?.metadata?.name ?? 'x',
    obj,
    old: null,
    dryRun: false,
    user: { name: 'alice', uid: 'u1', groups: ['dev'] },
  };
}

const policy = (name: string, spec: any) => ({ metadata: { name, resourceVersion: '1' }, spec: {
  matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }] },
  ...spec,
} });
const binding = (name: string, policyName: string, spec: any = {}) => ({ metadata: { name, resourceVersion: '1' }, spec: { policyName, validationActions: ['Deny'], ...spec } });

describe('ValidatingAdmissionPolicy', () => {
  it('costs nothing without a binding', () => {
    const p = new ValidatingAdmissionPolicy(source({ [POLICIES]: [policy('p', { validations: [{ expression: 'false' }] })] }));
    expect(p.handles(attrs({ metadata: { name: 'a' } }))).toBe(false);
  });

  it('Audit and Warn record, Deny refuses with the first denial', () => {
    const objs = {
      [POLICIES]: [policy('p', { validations: [{ expression: "object.metadata.name != 'bad'", messageExpression: "'name ' + object.metadata.name + ' by ' + request.userInfo.username" }] })],
      [BINDINGS]: [binding('audit', 'p', { validationActions: ['Audit', 'Warn'] })],
    };
    const plugin = new ValidatingAdmissionPolicy(source(objs));
    const a = attrs({ metadata: { name: 'bad' } });
    plugin.validate(a);
    expect(a.warnings).toEqual(["Validation failed for ValidatingAdmissionPolicy 'p' with binding 'audit': name bad by alice"]);
    expect(JSON.parse(a.auditAnnotations!['validation.policy.admission.k8s.io/validation_failure'])).toEqual([
      { message: 'name bad by alice', policy: 'p', binding: 'audit', expressionIndex: 0, validationActions: ['Audit', 'Warn'] },
    ]);
    objs[BINDINGS].push(binding('deny', 'p'));
    const err = (() => {
      try {
        plugin.validate(attrs({ metadata: { name: 'bad' } }));
      } catch (e) {
        return e as StatusError;
      }
    })()!;
    expect(err.code).toBe(422);
    expect(err.message).toBe(`configmaps "bad" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'deny' denied request: name bad by alice`);
  });

  it('params by selector: one evaluation per param; auditAnnotations keyed by policy', () => {
    const objs = {
      [POLICIES]: [policy('p', {
        paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
        validations: [{ expression: 'true' }],
        auditAnnotations: [{ key: 'limit', valueExpression: "'limit ' + params.data.limit" }],
      })],
      [BINDINGS]: [binding('b', 'p', { paramRef: { selector: { matchLabels: { role: 'limit' } }, parameterNotFoundAction: 'Allow' } })],
      configmaps: [
        { metadata: { name: 'l1', namespace: 'ns', labels: { role: 'limit' } }, data: { limit: '1' } },
        { metadata: { name: 'l2', namespace: 'ns', labels: { role: 'limit' } }, data: { limit: '2' } },
        { metadata: { name: 'other', namespace: 'ns' }, data: { limit: '9' } },
      ],
    };
    const a = attrs({ metadata: { name: 'x' } });
    new ValidatingAdmissionPolicy(source(objs)).validate(a);
    expect(a.auditAnnotations).toEqual({ 'p/limit': 'limit 1, limit 2' });
  });

  it('variables are lazy; one that fails fails the validation that reads it, with kube\'s wording', () => {
    const objs = {
      [POLICIES]: [policy('p', {
        variables: [{ name: 'bad', expression: 'object.nope' }, { name: 'n', expression: 'size(object.metadata.name)' }],
        validations: [{ expression: 'variables.n < 3' }, { expression: 'variables.bad == 1' }],
      })],
      [BINDINGS]: [binding('b', 'p', { validationActions: ['Warn'] })],
    };
    const a = attrs({ metadata: { name: 'abcd' } });
    new ValidatingAdmissionPolicy(source(objs)).validate(a);
    expect(a.warnings).toEqual([
      "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': failed expression: variables.n < 3",
      `Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': expression 'variables.bad == 1' resulted in error: composited variable "bad" fails to evaluate: no such key: nope`,
    ]);
  });

  it('recompiles when the policy changes (by resourceVersion)', () => {
    const objs = { [POLICIES]: [policy('p', { validations: [{ expression: 'true' }] })], [BINDINGS]: [binding('b', 'p')] };
    const plugin = new ValidatingAdmissionPolicy(source(objs));
    plugin.validate(attrs({ metadata: { name: 'x' } }));
    objs[POLICIES][0] = { ...policy('p', { validations: [{ expression: 'false', message: 'now no' }] }), metadata: { name: 'p', resourceVersion: '2' } };
    expect(() => plugin.validate(attrs({ metadata: { name: 'x' } }))).toThrow(/denied request: now no$/);
  });
});

describe('policy rule matching', () => {
  const a = attrs({ metadata: { name: 'x' } });
  it('resources with wildcards and subresources, scope, resourceNames', () => {
    expect(ruleMatches({ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }, a, true)).toBe(true);
    expect(ruleMatches({ operations: ['UPDATE'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }, a, true)).toBe(false);
    expect(ruleMatches({ operations: ['*'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'], scope: 'Cluster' }, a, true)).toBe(false);
    expect(ruleMatches({ operations: ['*'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'], resourceNames: ['y'] }, a, true)).toBe(false);
    const status = { ...a, subresource: 'status' };
    expect(ruleMatches({ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }, status, true)).toBe(false);
    expect(ruleMatches({ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/status'] }, status, true)).toBe(true);
    expect(ruleMatches({ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'] }, status, true)).toBe(true);
  });
});

describe('matchConditions (the webhook contract)', () => {
  it('false skips with the condition name; an error is returned for the failure policy', () => {
    const m = compileMatchConditions([
      { name: 'is-alice', expression: "request.userInfo.username == 'alice'" },
      { name: 'labelled', expression: "object.metadata.labels.app == 'web'" },
    ]);
    const a = attrs({ metadata: { name: 'x', labels: { app: 'db' } } });
    const vars = (obj: any, user = 'alice') => ({ object: obj, oldObject: null, request: { userInfo: { username: user } } });
    expect(m(a, vars({ metadata: { labels: { app: 'web' } } }))).toEqual({ matches: true });
    expect(m(a, vars({ metadata: { labels: { app: 'db' } } }))).toEqual({ matches: false, failedConditionName: 'labelled' });
    expect(m(a, vars({ metadata: { labels: { app: 'web' } } }, 'bob'))).toEqual({ matches: false, failedConditionName: 'is-alice' });
    expect(m(a, vars({ metadata: {} }))).toEqual({ matches: false, error: "expression 'object.metadata.labels.app == 'web'' resulted in error: no such key: labels" });
    expect(() => compileMatchConditions([{ name: 'bad', expression: 'nope' }])).toThrow(/undeclared reference to 'nope'/);
  });
});
