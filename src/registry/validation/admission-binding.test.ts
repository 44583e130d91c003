import { describe, it, expect } from 'vitest';
import { validateMutatingAdmissionPolicy, validateMutatingAdmissionPolicyBinding, validateValidatingAdmissionPolicyBinding } from './admission.js';
import { defaultValidatingAdmissionPolicyBinding } from '../defaults/admission.js';

/** errors as kube prints them (field: type), to compare with kube's field errors */
const fields = (obj: any) => {
  defaultValidatingAdmissionPolicyBinding(obj);
  return validateMutatingAdmissionPolicyBinding(obj).map((e) => `${e.field}: ${e.type}${e.detail ? ` ${e.detail}` : ''}`);
};
const binding = (spec: any) => ({ metadata: { name: 'b' }, spec });

describe('MutatingAdmissionPolicyBinding validation (kube validateMutatingAdmissionPolicyBindingSpec)', () => {
  it('accepts a binding with a policy name, a paramRef and matchResources', () => {
    expect(fields(binding({ policyName: 'p', paramRef: { name: 'cfg', parameterNotFoundAction: 'Deny' }, matchResources: { namespaceSelector: { matchLabels: { a: 'b' } } } }))).toEqual([]);
    expect(fields(binding({ policyName: 'p', paramRef: { selector: {}, parameterNotFoundAction: 'Allow' } }))).toEqual([]);
  });

  it('requires policyName, a DNS subdomain', () => {
    expect(fields(binding({}))).toEqual(['spec.policyName: FieldValueRequired']);
    const errs = validateMutatingAdmissionPolicyBinding(binding({ policyName: 'Bad_Name' }));
    expect(errs).toHaveLength(1);
    expect(errs[0]).toMatchObject({ field: 'spec.policyName', type: 'FieldValueInvalid', value: 'Bad_Name' });
  });

  it('paramRef: name and selector exclusive, one of them required, parameterNotFoundAction required and Allow or Deny', () => {
    expect(fields(binding({ policyName: 'p', paramRef: { name: 'a', selector: {}, parameterNotFoundAction: 'Deny' } }))).toEqual([
      'spec.paramRef.name: FieldValueForbidden name and selector are mutually exclusive',
      'spec.paramRef.selector: FieldValueForbidden name and selector are mutually exclusive',
    ]);
    expect(fields(binding({ policyName: 'p', paramRef: { parameterNotFoundAction: 'Deny' } }))).toEqual(['spec.paramRef: FieldValueRequired one of name or selector must be specified']);
    expect(fields(binding({ policyName: 'p', paramRef: { name: 'a' } }))).toEqual(['spec.paramRef.parameterNotFoundAction: FieldValueRequired']);
    const bad = validateMutatingAdmissionPolicyBinding(binding({ policyName: 'p', paramRef: { name: 'a/b', parameterNotFoundAction: 'Maybe' } }));
    expect(bad).toEqual([
      { field: 'spec.paramRef.name', type: 'FieldValueInvalid', value: 'a/b', detail: "may not contain '/'" },
      expect.objectContaining({ field: 'spec.paramRef.parameterNotFoundAction', type: 'FieldValueNotSupported', value: 'Maybe' }),
    ]);
    expect(fields(binding({ policyName: 'p', paramRef: { selector: { matchExpressions: [{ key: 'k', operator: 'Bogus' }] }, parameterNotFoundAction: 'Deny' } }))[0]).toMatch(/^spec\.paramRef\.selector\.matchExpressions\[0\]\.operator: FieldValueInvalid not a valid selector operator$/);
  });

  it('matchResources as for a validating binding, and no DELETE (a mutation cannot apply to one)', () => {
    const rule = (operations: string[]) => ({ apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'], operations });
    expect(fields(binding({ policyName: 'p', matchResources: { resourceRules: [rule(['CREATE', 'UPDATE'])] } }))).toEqual([]);
    const del = validateMutatingAdmissionPolicyBinding(binding({ policyName: 'p', matchResources: { matchPolicy: 'Exact', namespaceSelector: {}, objectSelector: {}, resourceRules: [rule(['DELETE'])] } }));
    expect(del).toEqual([{ field: 'spec.matchResources.resourceRules.operations', type: 'FieldValueNotSupported', value: 'DELETE', detail: 'supported values: "*", "CONNECT", "CREATE", "UPDATE"' }]);
    expect(fields(binding({ policyName: 'p', matchResources: { matchPolicy: 'Sometimes', resourceRules: [{ ...rule(['CREATE']), resourceNames: ['x', 'x'] }] } }))).toEqual([
      expect.stringMatching(/^spec\.matchResources\.matchPolicy: FieldValueNotSupported/),
      'spec.matchResources.resourceRules[0].resourceNames[1]: FieldValueDuplicate',
    ]);
  });

  it('a policy matching DELETE is refused too, and one without reinvocationPolicy', () => {
    const policy = {
      metadata: { name: 'p' },
      spec: {
        failurePolicy: 'Fail',
        reinvocationPolicy: 'Never',
        matchConstraints: { matchPolicy: 'Equivalent', namespaceSelector: {}, objectSelector: {}, resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'], operations: ['CREATE', 'DELETE'] }] },
        mutations: [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression: 'Object{}' } }],
      },
    };
    expect(validateMutatingAdmissionPolicy(policy).map((e) => e.field)).toEqual(['spec.matchConstraints.resourceRules.operations']);
    // reinvocationPolicy has no default in v1alpha1: it is required
    const { reinvocationPolicy: _, ...spec } = policy.spec;
    spec.matchConstraints.resourceRules[0].operations = ['CREATE'];
    expect(validateMutatingAdmissionPolicy({ ...policy, spec })).toEqual([{ field: 'spec.reinvocationPolicy', type: 'FieldValueRequired' }]);
  });
});

describe('ValidatingAdmissionPolicyBinding validation (kube validateValidatingAdmissionPolicyBindingSpec)', () => {
  const check = (spec: any) => validateValidatingAdmissionPolicyBinding({ metadata: { name: 'b' }, spec }).map((e) => `${e.field}: ${e.type}${e.detail ? ` ${e.detail}` : ''}`);
  it('shares policyName and paramRef with the mutating binding, and needs validationActions', () => {
    expect(check({ policyName: 'p', validationActions: ['Deny', 'Audit'] })).toEqual([]);
    expect(check({ paramRef: { name: 'x' }, validationActions: ['Warn'] })).toEqual(['spec.policyName: FieldValueRequired', 'spec.paramRef.parameterNotFoundAction: FieldValueRequired']);
    expect(check({ policyName: 'p' })).toEqual(['spec.validationActions: FieldValueRequired at least one validation action is required']);
    expect(check({ policyName: 'p', validationActions: ['Deny', 'Deny', 'Warn', 'Shout'] })).toEqual([
      'spec.validationActions[1]: FieldValueDuplicate',
      'spec.validationActions[3]: FieldValueNotSupported supported values: "Audit", "Deny", "Warn"',
      'spec.validationActions: FieldValueInvalid must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)',
    ]);
  });
});
