// autoscaling HorizontalPodAutoscaler, as kube 1.33's pkg/apis/autoscaling/validation checks
// the internal object: an autoscaling/v1 body is judged as it converts (its
// targetCPUUtilizationPercentage is the internal spec.metrics[0] Resource cpu target, so
// errors name that path, as kube's do), an autoscaling/v2 body as written.
import type { FieldError } from '../strategy.js';
import { parseQuantity, quantitySign } from '../quantity.js';
import { features } from '../../features.js';
import {
  dns1123LabelErrors,
  each,
  forbidden,
  invalid,
  isInt,
  isObj,
  list,
  notSupported,
  present,
  required,
} from './field.js';


const MAX_PERIOD_SECONDS = 1800;
const MAX_STABILIZATION_WINDOW_SECONDS = 3600;
/** validMetricSourceTypes, sorted as sets.List prints them. */
const METRIC_SOURCE_TYPES = ['ContainerResource', 'External', 'Object', 'Pods', 'Resource'];
const SELECT_POLICIES = ['Disabled', 'Max', 'Min'];
const POLICY_TYPES = ['Percent', 'Pods'];

/** IsValidPathSegmentName */
export function pathSegmentErrors(name: string): string[] {
  if (name === '.' || name === '..') return [`may not be '${name}'`];
  const out: string[] = [];
  for (const bad of ['/', '%']) if (name.includes(bad)) out.push(`may not contain '${bad}'`);
  return out;
}

/** ValidateCrossVersionObjectReference */
function crossVersionRef(ref: any, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const r = isObj(ref) ? ref : {};
  for (const k of ['kind', 'name']) {
    const v = typeof r[k] === 'string' ? r[k] : '';
    if (!v) errs.push(required(`${path}.${k}`));
    else errs.push(...each(`${path}.${k}`, v, pathSegmentErrors(v)));
  }
  return errs;
}

/** Quantity.Sign() != 1 */
function notPositive(v: unknown): boolean {
  const q = parseQuantity(v);
  return !q || quantitySign(q) <= 0;
}

function metricTarget(t: any, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const mt = isObj(t) ? t : {};
  const type = typeof mt.type === 'string' ? mt.type : '';
  if (!type) errs.push(required(`${path}.type`, 'must specify a metric target type'));
  if (!['Utilization', 'Value', 'AverageValue'].includes(type)) errs.push(invalid(`${path}.type`, type, 'must be either Utilization, Value, or AverageValue'));
  if (present(mt.value) && notPositive(mt.value)) errs.push(invalid(`${path}.value`, mt.value, 'must be positive'));
  if (present(mt.averageValue) && notPositive(mt.averageValue)) errs.push(invalid(`${path}.averageValue`, mt.averageValue, 'must be positive'));
  if (present(mt.averageUtilization) && isInt(mt.averageUtilization) && mt.averageUtilization < 1) {
    errs.push(invalid(`${path}.averageUtilization`, mt.averageUtilization, 'must be greater than 0'));
  }
  return errs;
}

function metricIdentifier(id: any, path: string): FieldError[] {
  const name = isObj(id) && typeof id.name === 'string' ? id.name : '';
  if (!name) return [required(`${path}.name`, 'must specify a metric name')];
  return each(`${path}.name`, name, pathSegmentErrors(name));
}

const target = (src: any) => (isObj(src?.target) ? src.target : {});

function sourceErrors(kind: string, src: any, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const t = target(src);
  switch (kind) {
    case 'object':
      errs.push(...crossVersionRef(src.describedObject, `${path}.describedObject`), ...metricIdentifier(src.metric, `${path}.metric`));
      errs.push(...metricTarget(src.target, `${path}.target`));
      if (!present(t.value) && !present(t.averageValue)) errs.push(required(`${path}.target.averageValue`, 'must set either a target value or averageValue'));
      break;
    case 'external':
      errs.push(...metricIdentifier(src.metric, `${path}.metric`), ...metricTarget(src.target, `${path}.target`));
      if (!present(t.value) && !present(t.averageValue)) errs.push(required(`${path}.target.averageValue`, 'must set either a target value for metric or a per-pod target'));
      if (present(t.value) && present(t.averageValue)) errs.push(forbidden(`${path}.target.value`, 'may not set both a target value for metric and a per-pod target'));
      break;
    case 'pods':
      errs.push(...metricIdentifier(src.metric, `${path}.metric`), ...metricTarget(src.target, `${path}.target`));
      if (!present(t.averageValue)) errs.push(required(`${path}.target.averageValue`, 'must specify a positive target averageValue'));
      break;
    case 'resource':
    case 'containerResource': {
      const name = typeof src.name === 'string' ? src.name : '';
      if (!name) errs.push(required(`${path}.name`, 'must specify a resource name'));
      if (kind === 'containerResource') {
        const c = typeof src.container === 'string' ? src.container : '';
        if (!c) errs.push(required(`${path}.container`, 'must specify a container'));
        else errs.push(...each(`${path}.container`, c, dns1123LabelErrors(c)));
      }
      errs.push(...metricTarget(src.target, `${path}.target`));
      if (!present(t.averageUtilization) && !present(t.averageValue)) {
        errs.push(required(`${path}.target.averageUtilization`, 'must set either a target raw value or a target utilization'));
      }
      if (present(t.averageUtilization) && present(t.averageValue)) {
        errs.push(forbidden(`${path}.target.averageValue`, 'may not set both a target raw value and a target utilization'));
      }
      break;
    }
  }
  return errs;
}

/** validateMetricSpec: the source named by `type` is given, and only it. */
function metricSpec(m: any, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const type = typeof m.type === 'string' ? m.type : '';
  if (!type) errs.push(required(`${path}.type`, 'must specify a metric source type'));
  if (!METRIC_SOURCE_TYPES.includes(type)) errs.push(notSupported(`${path}.type`, type, METRIC_SOURCE_TYPES));
  const present_: string[] = [];
  for (const k of ['object', 'external', 'pods', 'resource', 'containerResource']) {
    if (!isObj(m[k])) continue;
    present_.push(k);
    if (present_.length === 1) errs.push(...sourceErrors(k, m[k], `${path}.${k}`));
  }
  const expected = METRIC_SOURCE_TYPES.includes(type) ? type[0].toLowerCase() + type.slice(1) : '';
  if (METRIC_SOURCE_TYPES.includes(type)) {
    if (!isObj(m[expected])) errs.push(required(`${path}.${expected}`, 'must populate information for the given metric source'));
  } else {
    errs.push(notSupported(`${path}.type`, type, METRIC_SOURCE_TYPES));
  }
  if (present_.length !== 1) {
    for (const k of present_) if (k !== expected) errs.push(forbidden(`${path}.${k}`, 'must populate the given metric source only'));
  }
  return errs;
}

function scalingRules(rules: any, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!isObj(rules)) return errs;
  const w = rules.stabilizationWindowSeconds;
  if (isInt(w) && w < 0) errs.push(invalid(`${path}.stabilizationWindowSeconds`, w, 'must be greater than or equal to zero'));
  if (isInt(w) && w > MAX_STABILIZATION_WINDOW_SECONDS) {
    errs.push(invalid(`${path}.stabilizationWindowSeconds`, w, `must be less than or equal to ${MAX_STABILIZATION_WINDOW_SECONDS}`));
  }
  if (present(rules.selectPolicy) && !SELECT_POLICIES.includes(String(rules.selectPolicy))) errs.push(notSupported(`${path}.selectPolicy`, rules.selectPolicy, SELECT_POLICIES));
  // kube's defaulter fills in absent policies; an explicit empty list stays and is refused.
  if (Array.isArray(rules.policies) && rules.policies.length === 0) errs.push(required(`${path}.policies`, 'must specify at least one Policy'));
  list(rules.policies).forEach((p, i) => {
    const ip = `${path}.policies[${i}]`;
    const pol = isObj(p) ? p : {};
    if (!POLICY_TYPES.includes(String(pol.type))) errs.push(notSupported(`${ip}.type`, pol.type ?? '', POLICY_TYPES));
    const value = isInt(pol.value) ? pol.value : 0;
    if (value <= 0) errs.push(invalid(`${ip}.value`, value, 'must be greater than zero'));
    const period = isInt(pol.periodSeconds) ? pol.periodSeconds : 0;
    if (period <= 0) errs.push(invalid(`${ip}.periodSeconds`, period, 'must be greater than zero'));
    if (period > MAX_PERIOD_SECONDS) errs.push(invalid(`${ip}.periodSeconds`, period, `must be less than or equal to ${MAX_PERIOD_SECONDS}`));
  });
  return errs;
}

/** The internal metrics of a v1 object: its CPU target, if any. */
function v1Metrics(spec: any): any[] {
  if (!present(spec.targetCPUUtilizationPercentage)) return [];
  return [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: spec.targetCPUUtilizationPercentage } } }];
}

/** ValidateHorizontalPodAutoscaler / ...Update (`old` given on update). */
export function validateHpa(obj: any, old?: any): FieldError[] {
  const errs: FieldError[] = [];
  const spec = isObj(obj.spec) ? obj.spec : {};
  const v1 = obj.apiVersion === 'autoscaling/v1';
  // HPAScaleToZero (alpha) lets minReplicas be 0; so does an object that already has 0.
  const lower = features.enabled('HPAScaleToZero') || (old && old.spec?.minReplicas === 0) ? 0 : 1;
  const min = spec.minReplicas;
  if (isInt(min) && min < lower) errs.push(invalid('spec.minReplicas', min, `must be greater than or equal to ${lower}`));
  const max = isInt(spec.maxReplicas) ? spec.maxReplicas : 0;
  if (max < 1) errs.push(invalid('spec.maxReplicas', max, 'must be greater than 0'));
  if (isInt(min) && max < min) errs.push(invalid('spec.maxReplicas', max, 'must be greater than or equal to `minReplicas`'));
  errs.push(...crossVersionRef(spec.scaleTargetRef, 'spec.scaleTargetRef'));
  const metrics = v1 ? v1Metrics(spec) : list(spec.metrics);
  let objectOrExternal = false;
  metrics.forEach((m, i) => {
    if (!isObj(m)) return;
    errs.push(...metricSpec(m, `spec.metrics[${i}]`));
    if (m.type === 'Object' || m.type === 'External') objectOrExternal = true;
  });
  if (min === 0 && !objectOrExternal) errs.push(forbidden('spec.metrics', 'must specify at least one Object or External metric to support scaling to zero replicas'));
  if (!v1 && isObj(spec.behavior)) {
    errs.push(...scalingRules(spec.behavior.scaleUp, 'spec.behavior.scaleUp'), ...scalingRules(spec.behavior.scaleDown, 'spec.behavior.scaleDown'));
  }
  return errs;
}
