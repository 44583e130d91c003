import { describe, it, expect } from 'vitest';
import { MutatingAdmissionPolicy } from './mutating-admission-policy.js';
import { AdmissionChain, AdmissionPlugin, type Attributes, type ObjectSource } from '../plugin.js';
import { StatusError } from '../../errors.js';

function source(objs: Record<string, any[]>): ObjectSource {
  return {
    get: (gr, ns, name) => (objs[gr] ?? []).find((o) => o.metadata.name === name && (o.metadata.namespace ?? '') === ns),
    list: (gr, ns) => (objs[gr] ?? []).filter((o) => !ns || o.metadata.namespace === ns),
  };
}

const POLICIES = 'mutatingadmissionpolicies.admissionregistration.k8s.io';
const BINDINGS = 'mutatingadmissionpolicybindings.admissionregistration.k8s.io';
const info = { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true } as any;

function attrs(obj: any): Attributes {
  return { operation: 'CREATE', info, groupResource: { group: '', resource: 'pods' }, subresource: '', namespace: 'ns', name: obj.metadata.name, obj, old: null, dryRun: false };
}

const apply = (expression: string) => ({ patchType: 'ApplyConfiguration', applyConfiguration: { expression } });
const patch = (expression: string) => ({ patchType: 'JSONPatch', jsonPatch: { expression } });
const policy = (name: string, mutations: any[], extra: any = {}) => ({
  metadata: { name, resourceVersion: '1' },
  spec: { matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }] }, mutations, ...extra },
});
const binding = (name: string, policyName: string) => ({ metadata: { name, resourceVersion: '1' }, spec: { policyName } });
const pod = () => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'a', image: 'x' }, { name: 'b', image: 'y' }] } });
const noDefaults = () => {};

function plugin(policies: any[]): MutatingAdmissionPolicy {
  return new MutatingAdmissionPolicy(source({ [POLICIES]: policies, [BINDINGS]: policies.map((p) => binding(`${p.metadata.name}-b`, p.metadata.name)) }), { enabled: true, defaulter: noDefaults });
}

function refusal(fn: () => void): StatusError {
  try {
    fn();
  } catch (e) {
    return e as StatusError;
  }
  throw new Error('not refused');
}

describe('MutatingAdmissionPolicy', () => {
  it('does nothing with its gate off', () => {
    const p = new MutatingAdmissionPolicy(source({ [BINDINGS]: [binding('b', 'p')] }), { enabled: false });
    expect(p.handles(attrs(pod()))).toBe(false);
  });

  it('merges an apply configuration by the schema: containers by name, other items kept', () => {
    const a = attrs(pod());
    plugin([policy('p', [apply('Object{spec: Object.spec{containers: [Object.spec.containers{name: "b", image: "z"}]}}')])]).admit(a);
    expect(a.obj.spec.containers).toEqual([{ name: 'a', image: 'x' }, { name: 'b', image: 'z' }]);
    expect(a.reinvoke).toBe(true);
  });

  it('refuses to set an atomic list, with kube message', () => {
    const a = attrs(pod());
    const e = refusal(() => plugin([policy('p', [apply('Object{spec: Object.spec{containers: [Object.spec.containers{name: "a", args: ["x"]}]}}')])]).admit(a));
    expect(e.code).toBe(403);
    expect(e.message).toBe("policy 'p' with binding 'p-b' denied request: error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.containers[0].args");
  });

  it('checks constructed type names against their field path', () => {
    const e = refusal(() => plugin([policy('p', [apply('Object{spec: Object.spec{nodeSelector: Object.wrong{}}}')])]).admit(attrs(pod())));
    expect(e.message).toContain('type mismatch: unexpected type name "Object.wrong", expected "Object.spec.nodeSelector"');
  });

  it('applies JSON patches; a failed test leaves the object unchanged', () => {
    const a = attrs(pod());
    plugin([policy('p', [patch('[JSONPatch{op: "test", path: "/spec/containers/0/image", value: "nope"}, JSONPatch{op: "remove", path: "/spec/containers/1"}]'), patch('[JSONPatch{op: "add", path: "/metadata/labels", value: {"n": string(size(object.spec.containers))}}]')])]).admit(a);
    expect(a.obj.spec.containers).toHaveLength(2);
    expect(a.obj.metadata.labels).toEqual({ n: '2' });
    const e = refusal(() => plugin([policy('p', [patch('[JSONPatch{op: "remove", path: "/spec/nothing"}]')])]).admit(attrs(pod())));
    expect(e.message).toMatch(/^policy 'p' with binding 'p-b' denied request: JSONPath: /);
  });

  it('refuses a mutation that does not compile, or returns the wrong type, unless failurePolicy is Ignore', () => {
    expect(refusal(() => plugin([policy('p', [apply('{"a": 1}')])]).admit(attrs(pod()))).message).toBe("policy 'p' with binding 'p-b' denied request: must evaluate to Object but got map(string, int)");
    expect(refusal(() => plugin([policy('p', [apply('Object{')])]).admit(attrs(pod()))).message).toMatch(/denied request: compilation failed: ERROR: <input>:1:/);
    const a = attrs(pod());
    plugin([policy('p', [apply('Object{')], { failurePolicy: 'Ignore' })]).admit(a);
    expect(a.obj).toEqual(pod());
  });

  it('runs IfNeeded policies again when a later step changed the object (with the chain reinvocation)', () => {
    let calls = 0;
    // a later mutating step (a webhook, say) that changes the object once
    class Later extends AdmissionPlugin {
      readonly name = 'Later';
      handles = () => true;
      override admit(a: Attributes): void {
        if (!a.obj.metadata.annotations) a.obj.metadata.annotations = { later: 'yes' };
      }
    }
    const counting = policy('count', [apply('Object{metadata: Object.metadata{labels: {"seen": has(object.metadata.annotations) ? "annotated" : "plain"}}}')], { reinvocationPolicy: 'IfNeeded' });
    const map = plugin([counting]);
    const orig = (map as any).mutate.bind(map);
    (map as any).mutate = (...args: any[]) => {
      calls++;
      return orig(...args);
    };
    const chain = new AdmissionChain([map, new Later(source({}))]);
    const a = attrs(pod());
    chain.admit(a);
    expect(calls).toBe(2);
    expect(a.obj.metadata.labels).toEqual({ seen: 'annotated' });
    // Never: not run again
    calls = 0;
    const never = plugin([{ ...counting, spec: { ...counting.spec, reinvocationPolicy: 'Never' } }]);
    (never as any).mutate = (map as any).mutate;
    const b = attrs(pod());
    new AdmissionChain([never, new Later(source({}))]).admit(b);
    expect(b.obj.metadata.labels).toEqual({ seen: 'plain' });
  });
});
