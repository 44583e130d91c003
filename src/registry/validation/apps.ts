// apps/v1 validation: Deployment, ReplicaSet, StatefulSet and DaemonSet (kube's
// ValidateDeploymentSpec, ValidateReplicaSetSpec, ValidateStatefulSetSpec, ValidateDaemonSetSpec
// and the apps/v1 strategies' update rules), with kube's paths, order and wording.
import type { FieldError } from '../strategy.js';
import {
  forbidden,
  immutable,
  invalid,
  isInt,
  isObj,
  nonNegative,
  notSupported,
  required,
  sameValue,
  sortedKeys,
} from './field.js';
import { labelsValue, selectorEmpty, selectorMatches, selectorValue, validateLabelSelector } from './selector.js';
import { validatePodTemplate } from './pod.js';


const PERCENT_MSG =
  "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/** ValidatePositiveIntOrPercent */
export function intOrPercent(v: unknown, path: string): FieldError[] {
  if (typeof v === 'string') return /^[0-9]+%$/.test(v) ? [] : [invalid(path, v, PERCENT_MSG)];
  return nonNegative(v, path);
}

function intOrPercentValue(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && /^[0-9]+%$/.test(v)) return Number(v.slice(0, -1));
  return 0;
}

export function notOver100(v: unknown, path: string): FieldError[] {
  return typeof v === 'string' && /^[0-9]+%$/.test(v) && Number(v.slice(0, -1)) > 100 ? [invalid(path, v, 'must not be greater than 100%')] : [];
}

/** The selector checks every workload shares; `what` names the kind in "empty selector is invalid for ...". */
function validateSelector(spec: any, what: string): FieldError[] {
  const errs: FieldError[] = [];
  if (spec.selector === undefined || spec.selector === null) errs.push(required('spec.selector'));
  else {
    errs.push(...validateLabelSelector(spec.selector, 'spec.selector'));
    if (selectorEmpty(spec.selector)) errs.push(invalid('spec.selector', selectorValue(spec.selector), `empty selector is invalid for ${what}`));
  }
  return errs;
}

/** ValidatePodTemplateSpecForReplicaSet and its kin: labels must be selected; restartPolicy Always. */
function validateWorkloadTemplate(spec: any, kindWord: string, checkMatch: boolean): FieldError[] {
  const errs: FieldError[] = [];
  const tmpl = spec.template;
  if (!isObj(tmpl)) return [required('spec.template')];
  const labels = tmpl.metadata?.labels;
  // A selector that selects everything is not checked against the labels (kube's Empty()).
  if (checkMatch && !(isObj(spec.selector) && selectorEmpty(spec.selector)) && !selectorMatches(spec.selector, labels)) {
    errs.push(invalid('spec.template.metadata.labels', labelsValue(labels), '`selector` does not match template `labels`'));
  }
  errs.push(...validatePodTemplate(tmpl, 'spec.template'));
  const rp = tmpl.spec?.restartPolicy;
  if (rp !== 'Always') errs.push(notSupported('spec.template.spec.restartPolicy', rp ?? '', ['Always']));
  if (tmpl.spec?.activeDeadlineSeconds != null) {
    errs.push(forbidden('spec.template.spec.activeDeadlineSeconds', `activeDeadlineSeconds in ${kindWord} is not Supported`));
  }
  return errs;
}

export function validateDeployment(obj: any): FieldError[] {
  const spec = obj.spec;
  if (!isObj(spec)) return [required('spec')];
  const errs: FieldError[] = [];
  errs.push(...nonNegative(spec.replicas, 'spec.replicas'));
  errs.push(...validateSelector(spec, 'deployment'));
  errs.push(...validateWorkloadTemplate(spec, 'ReplicaSet', true));
  const st = spec.strategy;
  if (isObj(st)) {
    switch (st.type) {
      case 'Recreate':
        if (st.rollingUpdate != null) errs.push(forbidden('spec.strategy.rollingUpdate', "may not be specified when strategy `type` is 'Recreate'"));
        break;
      case 'RollingUpdate': {
        const ru = st.rollingUpdate;
        if (!isObj(ru)) errs.push(required('spec.strategy.rollingUpdate', 'this should be defaulted and never be nil'));
        else {
          errs.push(...intOrPercent(ru.maxUnavailable, 'spec.strategy.rollingUpdate.maxUnavailable'));
          errs.push(...intOrPercent(ru.maxSurge, 'spec.strategy.rollingUpdate.maxSurge'));
          if (intOrPercentValue(ru.maxUnavailable) === 0 && intOrPercentValue(ru.maxSurge) === 0) {
            errs.push(invalid('spec.strategy.rollingUpdate.maxUnavailable', ru.maxUnavailable, 'may not be 0 when `maxSurge` is 0'));
          }
          errs.push(...notOver100(ru.maxUnavailable, 'spec.strategy.rollingUpdate.maxUnavailable'));
        }
        break;
      }
      default:
        errs.push(notSupported('spec.strategy', sortedKeys(st), ['Recreate', 'RollingUpdate']));
    }
  }
  errs.push(...nonNegative(spec.minReadySeconds, 'spec.minReadySeconds'));
  errs.push(...nonNegative(spec.revisionHistoryLimit, 'spec.revisionHistoryLimit'));
  if (isInt(spec.progressDeadlineSeconds)) {
    errs.push(...nonNegative(spec.progressDeadlineSeconds, 'spec.progressDeadlineSeconds'));
    if (spec.progressDeadlineSeconds <= (isInt(spec.minReadySeconds) ? spec.minReadySeconds : 0)) {
      errs.push(invalid('spec.progressDeadlineSeconds', spec.progressDeadlineSeconds, 'must be greater than minReadySeconds'));
    }
  }
  return errs;
}

/** apps/v1 selectors cannot change after create. */
export function validateSelectorUpdate(obj: any, old: any): FieldError[] {
  const now = obj.spec?.selector;
  const before = old.spec?.selector;
  if (now == null) return [];
  return sameValue(selectorValue(now), selectorValue(before)) ? [] : immutable('spec.selector', selectorValue(now), selectorValue(before));
}

export function validateReplicaSet(obj: any): FieldError[] {
  const spec = obj.spec;
  if (!isObj(spec)) return [required('spec')];
  const errs: FieldError[] = [];
  errs.push(...nonNegative(spec.replicas, 'spec.replicas'));
  errs.push(...nonNegative(spec.minReadySeconds, 'spec.minReadySeconds'));
  // kube's ReplicaSet check reuses the Deployment wording.
  errs.push(...validateSelector(spec, 'deployment'));
  errs.push(...validateWorkloadTemplate(spec, 'ReplicaSet', true));
  return errs;
}

export function validateStatefulSet(obj: any): FieldError[] {
  const spec = obj.spec;
  if (!isObj(spec)) return [required('spec')];
  const errs: FieldError[] = [];
  const pmp = spec.podManagementPolicy;
  if (!pmp) errs.push(required('spec.podManagementPolicy'));
  else if (pmp !== 'OrderedReady' && pmp !== 'Parallel') errs.push(invalid('spec.podManagementPolicy', pmp, "must be 'OrderedReady' or 'Parallel'"));
  const us = isObj(spec.updateStrategy) ? spec.updateStrategy : {};
  switch (us.type) {
    case undefined:
    case '':
      errs.push(required('spec.updateStrategy'));
      break;
    case 'OnDelete':
      if (us.rollingUpdate != null) errs.push(invalid('spec.updateStrategy.rollingUpdate', sortedKeys(us.rollingUpdate), "only allowed for updateStrategy 'RollingUpdate'"));
      break;
    case 'RollingUpdate':
      if (isObj(us.rollingUpdate)) {
        errs.push(...nonNegative(us.rollingUpdate.partition, 'spec.updateStrategy.rollingUpdate.partition'));
        if (us.rollingUpdate.maxUnavailable != null) {
          errs.push(...intOrPercent(us.rollingUpdate.maxUnavailable, 'spec.updateStrategy.rollingUpdate.maxUnavailable'));
          if (intOrPercentValue(us.rollingUpdate.maxUnavailable) === 0) {
            errs.push(invalid('spec.updateStrategy.rollingUpdate.maxUnavailable', us.rollingUpdate.maxUnavailable, 'cannot be 0'));
          }
        }
      }
      break;
    default:
      errs.push(invalid('spec.updateStrategy', sortedKeys(us), "must be 'RollingUpdate' or 'OnDelete'"));
  }
  errs.push(...nonNegative(spec.replicas, 'spec.replicas'));
  errs.push(...nonNegative(spec.minReadySeconds, 'spec.minReadySeconds'));
  errs.push(...validateSelector(spec, 'statefulset'));
  const tmpl = spec.template;
  if (!isObj(tmpl)) errs.push(required('spec.template'));
  else {
    const labels = tmpl.metadata?.labels;
    if (!(isObj(spec.selector) && selectorEmpty(spec.selector)) && !selectorMatches(spec.selector, labels)) {
      errs.push(invalid('spec.template.metadata.labels', labelsValue(labels), '`selector` does not match template `labels`'));
    }
    errs.push(...validatePodTemplate(tmpl, 'spec.template'));
    const rp = tmpl.spec?.restartPolicy;
    if (rp !== 'Always') errs.push(notSupported('spec.template.spec.restartPolicy', rp ?? '', ['Always']));
    if (tmpl.spec?.activeDeadlineSeconds != null) {
      errs.push(forbidden('spec.template.spec.activeDeadlineSeconds', 'activeDeadlineSeconds in StatefulSet is not Supported'));
    }
  }
  const policy = spec.persistentVolumeClaimRetentionPolicy;
  if (isObj(policy)) {
    for (const k of ['whenDeleted', 'whenScaled']) {
      if (policy[k] != null && policy[k] !== 'Retain' && policy[k] !== 'Delete') {
        errs.push(notSupported(`spec.persistentVolumeClaimRetentionPolicy.${k}`, policy[k], ['Retain', 'Delete']));
      }
    }
  }
  return errs;
}

const STS_MUTABLE = ['replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy', 'minReadySeconds'];

export function validateStatefulSetUpdate(obj: any, old: any): FieldError[] {
  const strip = (spec: any) => {
    const c: any = { ...(isObj(spec) ? spec : {}) };
    for (const k of STS_MUTABLE) delete c[k];
    return c;
  };
  if (sameValue(strip(obj.spec), strip(old.spec))) return [];
  return [
    forbidden(
      'spec',
      "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
    ),
  ];
}

export function validateDaemonSet(obj: any): FieldError[] {
  const spec = obj.spec;
  if (!isObj(spec)) return [required('spec')];
  const errs: FieldError[] = [];
  if (spec.selector == null) errs.push(required('spec.selector'));
  else errs.push(...validateLabelSelector(spec.selector, 'spec.selector'));
  const tmpl = isObj(spec.template) ? spec.template : {};
  if (!selectorMatches(spec.selector, tmpl.metadata?.labels) && !(isObj(spec.selector) && selectorEmpty(spec.selector))) {
    errs.push(invalid('spec.template.metadata.labels', labelsValue(tmpl.metadata?.labels), '`selector` does not match template `labels`'));
  }
  if (spec.selector != null && selectorEmpty(spec.selector)) {
    errs.push(invalid('spec.selector', selectorValue(spec.selector), 'empty selector is invalid for daemonset'));
  }
  errs.push(...validatePodTemplate(tmpl, 'spec.template'));
  const rp = tmpl.spec?.restartPolicy;
  if (rp !== 'Always') errs.push(notSupported('spec.template.spec.restartPolicy', rp ?? '', ['Always']));
  if (tmpl.spec?.activeDeadlineSeconds != null) {
    errs.push(forbidden('spec.template.spec.activeDeadlineSeconds', 'activeDeadlineSeconds in DaemonSet is not Supported'));
  }
  errs.push(...nonNegative(spec.minReadySeconds, 'spec.minReadySeconds'));
  const us = isObj(spec.updateStrategy) ? spec.updateStrategy : {};
  switch (us.type) {
    case 'OnDelete':
      break;
    case 'RollingUpdate': {
      const ru = us.rollingUpdate;
      if (!isObj(ru)) {
        errs.push(required('spec.updateStrategy.rollingUpdate'));
        break;
      }
      const p = 'spec.updateStrategy.rollingUpdate';
      errs.push(...intOrPercent(ru.maxUnavailable, `${p}.maxUnavailable`), ...intOrPercent(ru.maxSurge, `${p}.maxSurge`));
      errs.push(...notOver100(ru.maxUnavailable, `${p}.maxUnavailable`), ...notOver100(ru.maxSurge, `${p}.maxSurge`));
      const hasUnavailable = intOrPercentValue(ru.maxUnavailable) !== 0;
      const hasSurge = intOrPercentValue(ru.maxSurge) !== 0;
      if (hasUnavailable && hasSurge) errs.push(invalid(`${p}.maxSurge`, ru.maxSurge, 'may not be set when maxUnavailable is non-zero'));
      else if (!hasUnavailable && !hasSurge) errs.push(invalid(`${p}.maxUnavailable`, ru.maxUnavailable ?? 0, 'cannot be 0 when maxSurge is 0'));
      break;
    }
    default:
      errs.push(notSupported('spec.updateStrategy', sortedKeys(us), ['RollingUpdate', 'OnDelete']));
  }
  errs.push(...nonNegative(spec.revisionHistoryLimit, 'spec.revisionHistoryLimit'));
  return errs;
}

/**
 * core/v1 ReplicationController (ValidateReplicationControllerSpec): a map selector that must
 * be non-empty and select the template, which a v1 RC defaults from the template's labels.
 */
export function validateReplicationController(obj: any): FieldError[] {
  const spec = obj.spec;
  if (!isObj(spec)) return [required('spec')];
  const errs: FieldError[] = [];
  const sel = isObj(spec.selector) ? spec.selector : {};
  errs.push(...nonNegative(spec.minReadySeconds, 'spec.minReadySeconds'));
  if (Object.keys(sel).length === 0) errs.push(required('spec.selector'));
  errs.push(...nonNegative(spec.replicas, 'spec.replicas'));
  const tmpl = spec.template;
  if (!isObj(tmpl)) {
    errs.push(required('spec.template'));
    return errs;
  }
  const labels = isObj(tmpl.metadata?.labels) ? tmpl.metadata.labels : {};
  if (Object.keys(sel).length > 0 && !Object.entries(sel).every(([k, v]) => labels[k] === v)) {
    errs.push(invalid('spec.template.metadata.labels', labelsValue(tmpl.metadata?.labels), '`selector` does not match template `labels`'));
  }
  errs.push(...validatePodTemplate(tmpl, 'spec.template'));
  const rp = tmpl.spec?.restartPolicy;
  if (rp !== 'Always') errs.push(notSupported('spec.template.spec.restartPolicy', rp ?? '', ['Always']));
  if (tmpl.spec?.activeDeadlineSeconds != null) {
    errs.push(forbidden('spec.template.spec.activeDeadlineSeconds', 'activeDeadlineSeconds in ReplicationController is not Supported'));
  }
  return errs;
}

/** An RC's selector may change (unlike apps/v1's); only the spec's own rules apply. */
export function validateReplicationControllerUpdate(_obj: any, _old: any): FieldError[] {
  return [];
}
