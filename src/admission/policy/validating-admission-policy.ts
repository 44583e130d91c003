// kube's ValidatingAdmissionPolicy admission plugin (apiserver/pkg/admission/plugin/policy/
// validating: plugin.go, dispatcher.go, validator.go): for each binding whose policy matches
// the request, its params are collected (paramKind + paramRef), the policy's matchConditions
// decide, then its validations run once per param; a failed validation is denied, warned or
// audited as the binding's validationActions say, and the first denial refuses the request
// with kube's Status. Policies are compiled once per resourceVersion; with no binding, a
// request costs one look at the (empty) binding cache.
//
// Thread ownership: the front thread, like the rest of admission (the compiled-policy cache lives there).
import { AdmissionPlugin, type Attributes, type ObjectSource } from '../plugin.js';
import { errors } from '../../errors.js';
import { matches, isExemptAdmissionConfiguration } from './matching.js';
import { compilePolicy, lazyVariables, type CompiledPolicy } from './compiled-policy.js';
import { admissionActivation } from '../../cel/admission.js';
import { bindingsByPolicy, collectParams, CompiledPolicies, guessKind, RequestValues, type KindResolver } from './policy-dispatch.js';
import { matchConditions } from '../../cel/match-conditions.js';
import { evalBudgeted } from '../../cel/environment.js';
import { celView, fromCel } from '../../cel/values.js';
import { RUNTIME_CEL_COST_BUDGET, MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES, OUT_OF_BUDGET } from '../../cel/cost.js';
import type { AuthorizeFn } from '../../cel/library/authz.js';

const POLICIES = 'validatingadmissionpolicies.admissionregistration.k8s.io';
const BINDINGS = 'validatingadmissionpolicybindings.admissionregistration.k8s.io';
const FAILURE_ANNOTATION = 'validation.policy.admission.k8s.io/validation_failure';
const MAX_AUDIT_ANNOTATION_VALUE_LENGTH = 10 * 1024;

export type { KindResolver } from './policy-dispatch.js';

export interface ValidatingAdmissionPolicyConfig {
  resolveKind?: KindResolver;
  /** the authorizer the `authorizer` variable checks with (as the request's user) */
  authorize?: AuthorizeFn;
}

interface Decision {
  action: 'admit' | 'deny';
  message: string;
  reason?: string;
}

export class ValidatingAdmissionPolicy extends AdmissionPlugin {
  readonly name = 'ValidatingAdmissionPolicy';
  private readonly compiled: CompiledPolicies<CompiledPolicy>;
  private readonly resolveKind: KindResolver;

  constructor(
    objects: ObjectSource,
    private readonly config: ValidatingAdmissionPolicyConfig = {},
  ) {
    super(objects);
    this.resolveKind = config.resolveKind ?? ((v, k) => guessKind(objects, v, k));
    this.compiled = new CompiledPolicies(objects, POLICIES, compilePolicy);
  }

  handles(a: Attributes): boolean {
    return !isExemptAdmissionConfiguration(a) && this.objects.list(BINDINGS, '').length > 0;
  }

  override validate(a: Attributes): void {
    const denied: Array<{ policy: string; binding?: string; d: Decision }> = [];
    const values = new RequestValues(a, this.objects);
    for (const [policyName, policyBindings] of bindingsByPolicy(this.objects.list(BINDINGS, ''))) {
      const compiled = this.compiled.get(policyName);
      if (!compiled) continue;
      const spec = compiled.policy.spec ?? {};
      if (!matches(spec.matchConstraints, a, this.objects)) continue;
      const configError = (msg: string, binding?: string) => {
        if (compiled.failurePolicy === 'Ignore') return;
        denied.push({ policy: policyName, binding, d: { action: 'deny', message: msg } });
      };
      const collected: Record<string, string[]> = {};
      for (const binding of policyBindings) {
        const bname = binding.metadata?.name ?? '';
        if (!matches(binding.spec?.matchResources, a, this.objects, true)) continue;
        let params: any[];
        try {
          params = collectParams(this.objects, this.resolveKind, spec.paramKind, binding.spec?.paramRef, a.namespace);
        } catch (e: any) {
          configError(`failed to configure binding: ${e.message}`, bname);
          continue;
        }
        const { request, namespace, object, oldObject } = values;
        const actions: string[] = binding.spec?.validationActions ?? [];
        for (const param of params) {
          const result = this.evaluate(compiled, a, { request, namespace, object, oldObject, params: param == null ? null : celView(param) });
          result.decisions.forEach((d, i) => {
            if (d.action !== 'deny') return;
            for (const action of actions) {
              if (action === 'Deny') denied.push({ policy: policyName, binding: bname, d });
              else if (action === 'Warn') (a.warnings ??= []).push(`Validation failed for ValidatingAdmissionPolicy '${policyName}' with binding '${bname}': ${d.message}`);
              else if (action === 'Audit') {
                const value = JSON.stringify([{ message: d.message, policy: binding.spec?.policyName, binding: bname, expressionIndex: i, validationActions: actions }]);
                const anns = (a.auditAnnotations ??= {});
                if (!(FAILURE_ANNOTATION in anns)) anns[FAILURE_ANNOTATION] = value; // kube keeps the first (AddAnnotation refuses to overwrite)
              }
            }
          });
          for (const ann of result.annotations) {
            if ('error' in ann) denied.push({ policy: policyName, binding: bname, d: { action: 'deny', message: ann.error } });
            else {
              const l = (collected[ann.key] ??= []);
              if (!l.includes(ann.value)) l.push(ann.value);
            }
          }
        }
      }
      for (const [key, values] of Object.entries(collected)) (a.auditAnnotations ??= {})[`${policyName}/${key}`] = values.join(', ');
    }
    if (denied.length) {
      const first = denied[0];
      const why = first.binding
        ? `ValidatingAdmissionPolicy '${first.policy}' with binding '${first.binding}' denied request: ${first.d.message}`
        : `ValidatingAdmissionPolicy '${first.policy}' denied request: ${first.d.message}`;
      const name = a.name || a.obj?.metadata?.name || 'Unknown';
      throw errors.policyDenied(a.groupResource, name, why, first.d.reason ?? '');
    }
  }

  /** kube's validator.Validate for one param. */
  private evaluate(
    c: CompiledPolicy,
    a: Attributes,
    v: { request: any; namespace: any; object: any; oldObject: any; params: any },
  ): { decisions: Decision[]; annotations: Array<{ key: string; value: string } | { error: string }> } {
    const onError = c.failurePolicy === 'Ignore' ? 'admit' : 'deny';
    const activation = admissionActivation(a, {
      request: v.request,
      namespace: v.namespace,
      params: v.params,
      object: v.object,
      oldObject: v.oldObject,
      authorize: this.config.authorize,
    });
    if (c.matchConditions.length) {
      const m = matchConditions(c.matchConditions, activation);
      if (m.error) return { decisions: [{ action: onError, message: m.error }], annotations: [] };
      if (!m.matches) return { decisions: [], annotations: [] };
    }
    activation.variables = lazyVariables(c, activation);
    const decisions: Decision[] = [];
    let budget = RUNTIME_CEL_COST_BUDGET;
    const results: Array<{ value?: any; error?: string }> = [];
    for (const val of c.validations) {
      if (!val.program) {
        results.push({ error: `compilation error: ${val.error}` });
        continue;
      }
      const r = evalBudgeted(val.program, activation, budget);
      if (r.outOfBudget) return { decisions: [{ action: onError, message: OUT_OF_BUDGET }], annotations: [] };
      budget = r.remaining;
      results.push(r.error !== undefined ? { error: `expression '${val.expression}' resulted in error: ${r.error}` } : { value: r.value });
    }
    // messageExpressions run on what the validations left of the budget, without the authorizer
    const msgActivation = { ...activation, authorizer: null };
    c.validations.forEach((val, i) => {
      const res = results[i];
      if (res.error !== undefined) {
        decisions.push({ action: onError, message: res.error });
        return;
      }
      if (res.value === true) {
        decisions.push({ action: 'admit', message: '' });
        return;
      }
      let message = '';
      if (val.messageExpression?.program && budget > 0) {
        const r = evalBudgeted(val.messageExpression.program, msgActivation, budget);
        if (r.outOfBudget) {
          decisions.push({ action: onError, message: `failed messageExpression: ${OUT_OF_BUDGET}` });
          return;
        }
        budget = r.remaining;
        if (typeof r.value === 'string') {
          message = r.value.trim();
          if (message.length > MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES || message.includes('\n')) message = '';
        }
      }
      if (!message && val.message) message = val.message.trim();
      if (!message) message = `failed expression: ${val.expression.trim()}`;
      decisions.push({ action: 'deny', message, reason: val.reason || 'Invalid' });
    });
    const annotations: Array<{ key: string; value: string } | { error: string }> = [];
    let annBudget = RUNTIME_CEL_COST_BUDGET;
    for (const ann of c.auditAnnotations) {
      if (!ann.program) {
        if (onError === 'deny') annotations.push({ error: `compilation error: ${ann.error}` });
        continue;
      }
      const r = evalBudgeted(ann.program, msgActivation, annBudget);
      if (r.outOfBudget) {
        if (onError === 'deny') annotations.push({ error: OUT_OF_BUDGET });
        break;
      }
      annBudget = r.remaining;
      if (r.error !== undefined) {
        if (onError === 'deny') annotations.push({ error: `expression '${ann.expression}' resulted in error: ${r.error}` });
      } else if (typeof r.value === 'string') {
        const value = r.value.trim();
        if (value) annotations.push({ key: ann.key, value: value.slice(0, MAX_AUDIT_ANNOTATION_VALUE_LENGTH) });
      } else if (r.value !== null) {
        annotations.push({
          error: `valueExpression '${ann.expression}' resulted in unsupported return type: ${typeof r.value === 'bigint' ? 'int' : typeof fromCel(r.value)}. Return type must be either string or null.`,
        });
      }
    }
    return { decisions, annotations };
  }
}
