// The CEL half of ValidatingAdmissionPolicy validation (kube's
// pkg/apis/admissionregistration/validation: validateCELCondition and
// convertCELErrorToValidationError): every expression of the policy is compiled in the
// environment it will run in, and one that does not compile is an Invalid field error whose
// detail is the compiler's (the compile results are cached, so admission reuses them).
import type { FieldError } from '../strategy.js';
import { invalid, isObj, list } from './field.js';
import { compile } from '../../cel/environment.js';
import { admissionVariables } from '../../cel/admission.js';

function check(errs: FieldError[], field: string, expression: unknown, vars: Record<string, string>, returnTypes?: string[]): void {
  if (typeof expression !== 'string' || expression.trim() === '') return;
  const r = compile(expression, vars, returnTypes);
  if (r.error) errs.push(invalid(field, expression, r.error));
}

/** A policy's validations, messageExpressions, auditAnnotations, variables and matchConditions. */
export function validatePolicyExpressions(spec: any): FieldError[] {
  const errs: FieldError[] = [];
  if (!isObj(spec)) return errs;
  const params = !!spec.paramKind;
  const withAuthz = admissionVariables({ params, authorizer: true, variables: true });
  const noAuthz = admissionVariables({ params, variables: true });
  list(spec.matchConditions).forEach((c, i) => check(errs, `spec.matchConditions[${i}].expression`, c?.expression, admissionVariables({ params, authorizer: true }), ['bool']));
  list(spec.variables).forEach((v, i) => check(errs, `spec.variables[${i}].expression`, v?.expression, withAuthz));
  list(spec.validations).forEach((v, i) => {
    check(errs, `spec.validations[${i}].expression`, v?.expression, withAuthz, ['bool']);
    check(errs, `spec.validations[${i}].messageExpression`, v?.messageExpression, noAuthz, ['string']);
  });
  list(spec.auditAnnotations).forEach((a, i) => check(errs, `spec.auditAnnotations[${i}].valueExpression`, a?.valueExpression, noAuthz));
  return errs;
}

/** A webhook's matchConditions (kube's validateMatchConditionsExpression: no params, with the authorizer). */
export function validateMatchConditionExpressions(conditions: unknown, path: string): FieldError[] {
  const errs: FieldError[] = [];
  list(conditions).forEach((c, i) => check(errs, `${path}[${i}].expression`, c?.expression, admissionVariables({ authorizer: true }), ['bool']));
  return errs;
}
