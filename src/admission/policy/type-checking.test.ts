import { describe, it, expect } from 'vitest';
import { typeCheckPolicy } from './type-checking.js';

const none = { get: () => undefined, list: () => [] };
const policy = (validations: any[], rules: any[] = [{ apiGroups: ['apps'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['deployments'] }]) => ({
  metadata: { name: 'p', uid: 'u', generation: 1 },
  spec: { matchConstraints: { resourceRules: rules }, validations },
});

describe('ValidatingAdmissionPolicy type checking', () => {
  it('warns about a field the kind does not have, per kind, with kube\'s wording', () => {
    const w = typeCheckPolicy(policy([{ expression: 'object.spec.replicas > 1' }, { expression: 'object.spec.replicass > 1', messageExpression: "'x' + object.spec.template.spec.containers[0].image" }]), none);
    expect(w).toEqual([
      {
        fieldRef: 'spec.validations[1].expression',
        warning: "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicass'\n | object.spec.replicass > 1\n | ...........^\n",
      },
    ]);
  });

  it('checks types too, and nothing for wildcard rules', () => {
    const typed = typeCheckPolicy(policy([{ expression: "object.spec.replicas == 'three'" }]), none);
    expect(typed[0].warning).toMatch(/^apps\/v1, Kind=Deployment: ERROR: <input>:1:/);
    expect(typeCheckPolicy(policy([{ expression: 'object.nope' }], [{ apiGroups: ['*'], apiVersions: ['*'], operations: ['*'], resources: ['*'] }]), none)).toEqual([]);
    const core = typeCheckPolicy(policy([{ expression: 'object.spec.containerz.size() > 0' }], [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }]), none);
    expect(core[0].warning).toMatch(/^\/v1, Kind=Pod: ERROR: <input>:1:12: undefined field 'containerz'/);
  });
});
