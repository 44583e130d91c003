// The CEL half of ValidatingAdmissionPolicy validation (kube's
// pkg/apis/admissionregistration/validation: validateCELCondition and
// convertCELErrorToValidationError): every expression of the policy is compiled in the
// environment it will run in, and one that does not compile is an Invalid field error whose
// detail is the compiler's (the compile results are cached, so admission reuses them).
import type { FieldError } from '../strategy.js';
import { invalid, isObj, list, tooMany } from './field.js';
import { compile, typeCheck } from '../../cel/environment.js';
import { admissionVariables, declareAdmissionTypes } from '../../cel/admission.js';
import { qualifiedNameErrors } from '../validation.js';
import { compileMutation } from '../../admission/policy/compiled-policy.js';

function check(errs: FieldError[], field: string, expression: unknown, vars: Record<string, string>, returnTypes?: string[]): void {
  if (typeof expression !== 'string' || expression.trim() === '') return;
  const r = compile(expression, vars, returnTypes);
  if (r.error) errs.push(invalid(field, expression, r.error));
  else {
    const typed = typedFieldError(expression, vars);
    if (typed) errs.push(invalid(field, expression, `compilation failed: ${typed}`));
  }
}

/**
 * kube types `request` and `namespaceObject`: a field they do not have does not compile. (Only
 * that is reported from the typed check: other type errors are left to evaluation.)
 */
function typedFieldError(expression: string, vars: Record<string, string>): string | undefined {
  const key = `admission-typed|${Object.keys(vars).sort().join(',')}`;
  const issues = typeCheck(expression, key, (env) => {
    const t = declareAdmissionTypes(env);
    for (const [name, type] of Object.entries(vars)) env.registerVariable(name, name === 'request' ? t.request : name === 'namespaceObject' ? t.namespace : type);
  });
  return issues && /: undefined field '/.test(issues) ? issues : undefined;
}

/** A policy's validations, messageExpressions, auditAnnotations, variables and matchConditions. */
export function validatePolicyExpressions(spec: any): FieldError[] {
  const errs: FieldError[] = [];
  if (!isObj(spec)) return errs;
  const params = !!spec.paramKind;
  const withAuthz = admissionVariables({ params, authorizer: true, variables: true });
  const noAuthz = admissionVariables({ params, variables: true });
  errs.push(...validateMatchConditions(spec.matchConditions, 'spec.matchConditions', params));
  list(spec.variables).forEach((v, i) => check(errs, `spec.variables[${i}].expression`, v?.expression, withAuthz));
  list(spec.validations).forEach((v, i) => {
    check(errs, `spec.validations[${i}].expression`, v?.expression, withAuthz, ['bool']);
    check(errs, `spec.validations[${i}].messageExpression`, v?.messageExpression, noAuthz, ['string']);
  });
  list(spec.auditAnnotations).forEach((a, i) => check(errs, `spec.auditAnnotations[${i}].valueExpression`, a?.valueExpression, noAuthz));
  return errs;
}

/** A MutatingAdmissionPolicy's variables, matchConditions and mutations (each compiled as admission will run it). */
export function validateMutatingPolicyExpressions(spec: any): FieldError[] {
  const errs: FieldError[] = [];
  if (!isObj(spec)) return errs;
  const params = !!spec.paramKind;
  errs.push(...validateMatchConditions(spec.matchConditions, 'spec.matchConditions', params));
  list(spec.variables).forEach((v, i) => check(errs, `spec.variables[${i}].expression`, v?.expression, admissionVariables({ params, authorizer: true, variables: true })));
  list(spec.mutations).forEach((m, i) => {
    const field = m?.patchType === 'JSONPatch' ? 'jsonPatch' : 'applyConfiguration';
    const expression = m?.[field]?.expression;
    if (typeof expression !== 'string' || expression.trim() === '') return;
    const c = compileMutation(m, params);
    if (c.error) errs.push(invalid(`spec.mutations[${i}].${field}.expression`, expression, c.error));
  });
  return errs;
}

/**
 * kube's validateMatchConditions for webhooks and policies: at most 64, each named (a qualified
 * name, unique) with an expression that compiles to bool (with `params` when the policy has a paramKind).
 */
export function validateMatchConditions(conditions: unknown, path: string, withParams = false): FieldError[] {
  const errs: FieldError[] = [];
  const all = list(conditions);
  if (all.length > 64) errs.push(tooMany(path, all.length, 64));
  const names = new Set<string>();
  all.forEach((c, i) => {
    const at = `${path}[${i}]`;
    const expr = typeof c?.expression === 'string' ? c.expression.trim() : '';
    if (!expr) errs.push({ field: `${at}.expression`, type: 'FieldValueRequired', detail: '' });
    else check(errs, `${at}.expression`, expr, admissionVariables({ params: withParams, authorizer: true }), ['bool']);
    const name = typeof c?.name === 'string' ? c.name : '';
    if (!name) errs.push({ field: `${at}.name`, type: 'FieldValueRequired', detail: '' });
    else {
      // kube reports a bad name on the condition's path, not on .name
      for (const msg of qualifiedNameErrors(name)) errs.push(invalid(at, name, msg));
      if (names.has(name)) errs.push({ field: `${at}.name`, type: 'FieldValueDuplicate', value: name });
      names.add(name);
    }
  });
  return errs;
}
