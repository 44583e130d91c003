// policy/v1 PodDisruptionBudget and scheduling.k8s.io/v1 PriorityClass, as kube 1.33's
// pkg/apis/policy/validation and pkg/apis/scheduling/validation check them.
import type { FieldError } from '../strategy.js';
import {
  forbidden,
  immutable,
  invalid,
  isObj,
  notSupported,
  present,
} from './field.js';
import { intOrPercent, notOver100 } from './apps.js';
import { selectorValue, validateLabelSelector } from './selector.js';

const UNHEALTHY_POLICIES = ['AlwaysAllow', 'IfHealthyBudget'];

/** The internal policy.PodDisruptionBudgetSpec a field error prints (Go field names, no JSON tags). */
function internalPdbSpec(spec: any): unknown {
  return {
    MinAvailable: spec.minAvailable ?? null,
    Selector: isObj(spec.selector) ? selectorValue(spec.selector) : null,
    MaxUnavailable: spec.maxUnavailable ?? null,
    UnhealthyPodEvictionPolicy: spec.unhealthyPodEvictionPolicy ?? null,
  };
}

/** ValidatePodDisruptionBudgetSpec */
export function validatePdb(obj: any): FieldError[] {
  const errs: FieldError[] = [];
  const spec = isObj(obj.spec) ? obj.spec : {};
  if (present(spec.minAvailable) && present(spec.maxUnavailable)) {
    errs.push(invalid('spec', internalPdbSpec(spec), 'minAvailable and maxUnavailable cannot be both set'));
  }
  for (const k of ['minAvailable', 'maxUnavailable']) {
    if (!present(spec[k])) continue;
    errs.push(...intOrPercent(spec[k], `spec.${k}`), ...notOver100(spec[k], `spec.${k}`));
  }
  if (isObj(spec.selector)) errs.push(...validateLabelSelector(spec.selector, 'spec.selector'));
  if (present(spec.unhealthyPodEvictionPolicy) && !UNHEALTHY_POLICIES.includes(spec.unhealthyPodEvictionPolicy)) {
    errs.push(notSupported('spec.unhealthyPodEvictionPolicy', spec.unhealthyPodEvictionPolicy, UNHEALTHY_POLICIES));
  }
  return errs;
}

/** The system classes kube-apiserver itself keeps, by name and value. */
const SYSTEM_CLASSES: Record<string, number> = { 'system-node-critical': 2000001000, 'system-cluster-critical': 2000000000 };
const HIGHEST_USER_PRIORITY = 1000000000;
const PREEMPTION_POLICIES = ['PreemptLowerPriority', 'Never'];

/** ValidatePriorityClass (the name itself is checked as metadata). */
export function validatePriorityClass(obj: any): FieldError[] {
  const errs: FieldError[] = [];
  const name = String(obj.metadata?.name ?? '');
  const value = typeof obj.value === 'number' ? obj.value : 0;
  if (name.startsWith('system-')) {
    let why = '';
    if (!(name in SYSTEM_CLASSES)) why = `${name} is not a known system priority class`;
    else if (SYSTEM_CLASSES[name] !== value) why = `value of ${name} PriorityClass must be ${SYSTEM_CLASSES[name]}`;
    else if (obj.globalDefault === true) why = `globalDefault of ${name} PriorityClass must be false`;
    if (why) errs.push(forbidden('metadata.name', `priority class names with 'system-' prefix are reserved for system use only. error: ${why}`));
  } else if (value > HIGHEST_USER_PRIORITY) {
    errs.push(forbidden('value', `maximum allowed value of a user defined priority is ${HIGHEST_USER_PRIORITY}`));
  }
  if (present(obj.preemptionPolicy) && !PREEMPTION_POLICIES.includes(obj.preemptionPolicy)) {
    errs.push(notSupported('preemptionPolicy', obj.preemptionPolicy, PREEMPTION_POLICIES));
  }
  return errs;
}

export function validatePriorityClassUpdate(obj: any, old: any): FieldError[] {
  const errs: FieldError[] = [];
  if ((obj.value ?? 0) !== (old.value ?? 0)) errs.push(forbidden('value', 'may not be changed in an update.'));
  errs.push(...immutable('preemptionPolicy', obj.preemptionPolicy ?? null, old.preemptionPolicy ?? null));
  return errs;
}

/** SetDefaults_PriorityClass; a missing value is Go's zero, which kube serializes. */
export function defaultPriorityClass(obj: any): void {
  if (!isObj(obj)) return;
  if (!present(obj.preemptionPolicy)) obj.preemptionPolicy = 'PreemptLowerPriority';
  if (!present(obj.value)) obj.value = 0;
}
