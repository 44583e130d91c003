// kube's MutatingAdmissionPolicy admission plugin (apiserver/pkg/admission/plugin/policy/
// mutating: plugin.go, dispatcher.go, patch/smd.go and patch/json_patch.go), alpha in 1.33:
// it runs only with the MutatingAdmissionPolicy feature gate on (the v1alpha1 kinds are
// served only then: src/api/catalog.ts). For each binding whose policy matches the request
// (the matching, params and per-request values ValidatingAdmissionPolicy uses:
// policy-dispatch.ts), the policy's matchConditions decide, then its mutations run in order,
// each with a fresh RuntimeCELCostBudget:
// - ApplyConfiguration: the expression builds an `Object{...}`, merged into the object as
//   server-side apply merges (the kind's list types and map keys; src/registry/apply.ts),
//   refused when it sets an atomic list, map or struct (kube's validatePatch);
// - JSONPatch: the expression builds a list of `JSONPatch{op, path, value}`, applied by the
//   JSON patch engine with its bounds (src/registry/patch.ts); a failed `test` leaves the
//   object as it was.
// The patched object gets its kind's defaults again, and the store validates it after
// mutating admission, as kube validates what admission left. A failed mutation is an error of
// its policy: Ignore drops it, Fail refuses the request with kube's generic policy Status.
// Reinvocation (reinvocationPolicy IfNeeded, kube's policyReinvokeContext): a change by a
// policy asks the chain for its second mutating pass, in which policies that asked for it
// and were invoked before a later change run again, as webhooks do (and with them).
//
// Thread ownership: the front thread, like the rest of admission (the compiled-policy cache
// lives there); per-request reinvocation state in a WeakMap keyed by the request's Attributes.
import { AdmissionPlugin, type Attributes, type ObjectSource } from '../plugin.js';
import { errors, StatusError } from '../../errors.js';
import { features } from '../../features.js';
import { matches, isExemptAdmissionConfiguration } from './matching.js';
import { compileMutatingPolicy, lazyVariables, type CompiledMutatingPolicy, type CompiledMutation } from './compiled-policy.js';
import { bindingsByPolicy, collectParams, CompiledPolicies, guessKind, RequestValues, type KindResolver } from './policy-dispatch.js';
import { admissionActivation } from '../../cel/admission.js';
import { matchConditions } from '../../cel/match-conditions.js';
import { evalBudgeted } from '../../cel/environment.js';
import { celTypeName, celView, fromCel } from '../../cel/values.js';
import { constructedType, typeNameMismatches } from '../../cel/library/mutation.js';
import { RUNTIME_CEL_COST_BUDGET, OUT_OF_BUDGET } from '../../cel/cost.js';
import { mergeApply } from '../../registry/apply.js';
import { jsonPatch } from '../../registry/patch.js';
import { deepEqual, listMode } from '../../registry/managed-fields.js';
import { ANY, childNode, hasField, itemNode, rootNode, type TypeNode } from '../../registry/schema-walk.js';
import { customSchemaOf } from '../../api/custom-resources.js';
import { replaceObject } from '../webhook/generic.js';
import { defaultPatchedObject } from '../webhook/defaulter.js';
import type { ResourceInfo } from '../../api/catalog-types.js';
import { newReinvokeState, requireReinvoking, type ReinvokeState } from '../reinvocation.js';
import type { AuthorizeFn } from '../../cel/library/authz.js';

const POLICIES = 'mutatingadmissionpolicies.admissionregistration.k8s.io';
const BINDINGS = 'mutatingadmissionpolicybindings.admissionregistration.k8s.io';
export const MUTATING_ADMISSION_POLICY_GATE = 'MutatingAdmissionPolicy';

export interface MutatingAdmissionPolicyConfig {
  resolveKind?: KindResolver;
  /** the authorizer the `authorizer` variable checks with (as the request's user) */
  authorize?: AuthorizeFn;
  /** sets an object's defaults after a mutation (kube defaults the patched object) */
  defaulter?: (obj: any, info: ResourceInfo) => void;
  /** whether the feature gate is on (the process's --feature-gates when absent) */
  enabled?: boolean;
}

const states = new WeakMap<Attributes, ReinvokeState>();

/** A policy error (kube's generic PolicyError): what failed, for its policy's failurePolicy to judge. */
interface PolicyError {
  policy: CompiledMutatingPolicy;
  binding: string;
  message: string;
}

export class MutatingAdmissionPolicy extends AdmissionPlugin {
  readonly name = 'MutatingAdmissionPolicy';
  private readonly compiled: CompiledPolicies<CompiledMutatingPolicy>;
  private readonly resolveKind: KindResolver;
  private readonly defaulter: (obj: any, info: ResourceInfo) => void;
  private readonly enabled: boolean;

  constructor(
    objects: ObjectSource,
    private readonly config: MutatingAdmissionPolicyConfig = {},
  ) {
    super(objects);
    this.resolveKind = config.resolveKind ?? ((v, k) => guessKind(objects, v, k));
    this.compiled = new CompiledPolicies(objects, POLICIES, compileMutatingPolicy);
    this.defaulter = config.defaulter ?? defaultPatchedObject;
    // kube's InspectFeatureGates: with the gate off the plugin is there but does nothing
    this.enabled = config.enabled ?? features.enabled(MUTATING_ADMISSION_POLICY_GATE);
  }

  handles(a: Attributes): boolean {
    // there is no body to mutate on DELETE (kube's handler: CREATE, UPDATE, CONNECT)
    return this.enabled && a.operation !== 'DELETE' && !isExemptAdmissionConfiguration(a) && this.objects.list(BINDINGS, '').length > 0;
  }

  override admit(a: Attributes): void {
    let st = states.get(a);
    if (a.reinvocationRound) {
      // nothing ran in the first pass: nothing to run again
      if (!st) return;
      // a later step changed the object: every IfNeeded invocation runs again
      if (st.lastOutput !== undefined && !deepEqual(st.lastOutput, a.obj)) requireReinvoking(st);
      if (st.reinvoke.size === 0) return;
    }
    const failures: PolicyError[] = [];
    const values = new RequestValues(a, this.objects);
    for (const [policyName, policyBindings] of bindingsByPolicy(this.objects.list(BINDINGS, ''))) {
      const compiled = this.compiled.get(policyName);
      if (!compiled) continue;
      const spec = compiled.policy.spec ?? {};
      if (!matches(spec.matchConstraints, a, this.objects)) continue;
      for (const binding of policyBindings) {
        const bname = binding.metadata?.name ?? '';
        if (!matches(binding.spec?.matchResources, a, this.objects, true)) continue;
        let params: any[];
        try {
          params = collectParams(this.objects, this.resolveKind, spec.paramKind, binding.spec?.paramRef, a.namespace);
        } catch (e: any) {
          failures.push({ policy: compiled, binding: bname, message: `failed to configure binding: ${e.message}` });
          continue;
        }
        for (const param of params) {
          const activation = () => {
            const act = admissionActivation(a, {
              request: values.request,
              namespace: values.namespace,
              params: param == null ? null : celView(param),
              object: values.object,
              oldObject: values.oldObject,
              authorize: this.config.authorize,
            });
            act.variables = lazyVariables(compiled, act);
            return act;
          };
          if (compiled.matchConditions.length) {
            const m = matchConditions(compiled.matchConditions, activation());
            if (m.error) {
              failures.push({ policy: compiled, binding: bname, message: m.error });
              continue;
            }
            if (!m.matches) continue;
          }
          const key = JSON.stringify([policyName, bname, param?.metadata?.namespace ?? '', param?.metadata?.name ?? '']);
          if (a.reinvocationRound && !st?.reinvoke.has(key)) continue;
          let changed = false;
          for (const mutation of compiled.mutations) {
            // nothing to patch (a CONNECT without a body)
            if (a.obj == null) continue;
            let patched: any;
            try {
              patched = this.mutate(mutation, a, activation());
            } catch (e) {
              if (e instanceof StatusError) throw e;
              failures.push({ policy: compiled, binding: bname, message: (e as Error).message });
              continue;
            }
            if (deepEqual(a.obj, patched)) continue;
            this.defaulter(patched, a.info);
            replaceObject(a.obj, patched);
            values.refreshObject();
            changed = true;
          }
          if (!st) states.set(a, (st = newReinvokeState()));
          if (changed) {
            // the object changed: what ran before may want to see it (kube's SetShouldReinvoke)
            requireReinvoking(st);
            a.reinvoke = true;
          }
          if (compiled.reinvocationPolicy === 'IfNeeded') st.previouslyInvoked.add(key);
        }
      }
    }
    // what the next pass compares against: needed only while an invocation may run again
    if (st) st.lastOutput = st.previouslyInvoked.size > 0 && a.obj != null ? structuredClone(a.obj) : undefined;
    const refused = failures.filter((f) => f.policy.failurePolicy !== 'Ignore');
    if (refused.length) {
      const name = a.name || a.obj?.metadata?.name || a.obj?.metadata?.generateName || 'Unknown';
      throw errors.policyErrors(
        a.groupResource,
        name,
        refused.map((f) => ({ message: `policy '${f.policy.name}' with binding '${f.binding}' denied request: ${f.message}`, reason: 'Invalid' })),
      );
    }
  }

  /** One mutation's result (kube's Patcher.Patch): the patched object, or the error its policy is judged by. */
  private mutate(m: CompiledMutation, a: Attributes, activation: Record<string, any>): any {
    if (!m.program) throw new Error(m.error);
    const r = evalBudgeted(m.program, activation, RUNTIME_CEL_COST_BUDGET);
    if (r.outOfBudget) throw new Error(OUT_OF_BUDGET);
    if (r.error !== undefined) throw new Error(`expression '${m.expression}' resulted in error: ${r.error}`);
    return m.patchType === 'JSONPatch' ? applyJsonPatch(a.obj, r.value) : applyConfiguration(a.obj, r.value, a.info);
  }
}

/** kube's applyConfigPatcher: the `Object{...}` merged into the object with server-side apply's merge. */
function applyConfiguration(obj: any, value: any, info: ResourceInfo): any {
  if (constructedType(value) !== 'Object') throw new Error(`unsupported return type from ApplyConfiguration expression: ${constructedType(value) ?? celTypeName(value)}`);
  const mismatches = typeNameMismatches(value);
  if (mismatches.length) throw new Error(`type mismatch: ${mismatches.join('\n')}`);
  const patch = fromCel(value);
  const root = rootNode(info.group, info.version, info.kind) ?? customSchemaOf(info.group, info.version, info.kind)?.root ?? ANY;
  const atomics = findAtomics(patch, root, '');
  if (atomics.length) throw new Error(`error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: ${atomics.join(', ')}`);
  return mergeApply(obj, patch, root);
}

/**
 * kube's findAtomics (patch/smd.go validatePatch): the paths where an apply configuration sets
 * an atomic list, map or struct, which would replace the whole value, not merge into it.
 */
function findAtomics(v: any, n: TypeNode, path: string): string[] {
  const out: string[] = [];
  if (Array.isArray(v)) {
    if (n.kind !== 'list') return out;
    if (listMode(n) === 'atomic') out.push(path);
    const item = itemNode(n);
    v.forEach((x, i) => out.push(...findAtomics(x, item, `${path}[${i}]`)));
  } else if (v !== null && typeof v === 'object') {
    if (n.kind !== 'struct' && n.kind !== 'map') return out;
    if (n.atomic) out.push(path);
    for (const [k, x] of Object.entries(v)) {
      if (n.kind === 'struct' && !hasField(n, k)) continue;
      out.push(...findAtomics(x, childNode(n, k), `${path}.${k}`));
    }
  }
  return out;
}

/** kube's jsonPatcher: the `JSONPatch{...}` list applied to the object. */
function applyJsonPatch(obj: any, value: any): any {
  if (!Array.isArray(value)) throw new Error('type mismatch: JSONPatchType.expression should evaluate to array');
  const ops: any[] = [];
  for (const v of value) {
    if (constructedType(v) !== 'JSONPatch') throw new Error(`type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, got element of ${celTypeName(v)}`);
    const op: Record<string, any> = { op: typeof v.op === 'string' ? v.op : '', path: typeof v.path === 'string' ? v.path : '' };
    if (typeof v.from === 'string' && v.from) op.from = v.from;
    if ('value' in v) {
      if (constructedType(v.value) !== undefined) {
        const mismatches = typeNameMismatches(v.value);
        if (mismatches.length) throw new Error(`type mismatch: ${mismatches.join('\n')}`);
      }
      op.value = fromCel(v.value);
    }
    ops.push(op);
  }
  try {
    // the result replaces the request's object: sharing its untouched subtrees is safe
    return jsonPatch(obj, ops, undefined, undefined, true);
  } catch (e) {
    const why = (e as { cause?: unknown }).cause;
    const msg = typeof why === 'string' ? why : (e as Error).message;
    // a failed test leaves the object as it was (kube: jsonpatch.ErrTestFailed)
    if (/: test failed$/.test(msg)) return obj;
    throw new Error(`JSONPath: ${msg}`);
  }
}
