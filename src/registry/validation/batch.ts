// batch/v1 validation: Job (ValidateJob, ValidateJobSpecUpdate) and CronJob
// (ValidateCronJobCreate/Update, with the schedule parsed as kube's cron library does).
import type { FieldError } from '../strategy.js';
import { GoValue, OMIT_VALUE } from '../../errors.js';
import {
  immutable,
  invalid,
  isObj,
  nonNegative,
  notSupported,
  required,
  sameValue,
} from './field.js';
import { labelsValue, selectorMatches, selectorValue, validateLabelSelector } from './selector.js';
import { validatePodTemplate } from './pod.js';
import { validateTemplateMeta } from '../validation.js';
import { cronError, knownTimeZone } from './cron.js';
import { dns1123LabelErrors } from './field.js';


/** validateJobSpec: what a Job and a CronJob's jobTemplate share. `p` is the spec's path. */
function validateJobSpecCommon(spec: any, p: string): FieldError[] {
  const errs: FieldError[] = [];
  for (const k of ['parallelism', 'completions', 'activeDeadlineSeconds', 'backoffLimit', 'ttlSecondsAfterFinished']) {
    errs.push(...nonNegative(spec[k], `${p}.${k}`));
  }
  const mode = spec.completionMode;
  if (mode != null) {
    if (mode !== 'NonIndexed' && mode !== 'Indexed') errs.push(notSupported(`${p}.completionMode`, mode, ['NonIndexed', 'Indexed']));
    if (mode === 'Indexed' && spec.completions == null) errs.push(required(`${p}.completions`, 'when completion mode is Indexed'));
  }
  const prp = spec.podReplacementPolicy;
  if (prp != null && prp !== 'TerminatingOrFailed' && prp !== 'Failed') {
    errs.push(notSupported(`${p}.podReplacementPolicy`, prp, ['Failed', 'TerminatingOrFailed']));
  }
  const tmpl = spec.template;
  errs.push(...validatePodTemplate(tmpl, `${p}.template`));
  const rp = tmpl?.spec?.restartPolicy;
  if (rp !== 'OnFailure' && rp !== 'Never') errs.push(notSupported(`${p}.template.spec.restartPolicy`, rp ?? '', ['OnFailure', 'Never']));
  else if (rp === 'OnFailure' && spec.podFailurePolicy != null) {
    errs.push(invalid(`${p}.template.spec.restartPolicy`, rp, 'only "Never" is supported when podFailurePolicy is specified'));
  }
  if (tmpl?.spec?.activeDeadlineSeconds != null) {
    errs.push(invalid(`${p}.template.spec.activeDeadlineSeconds`, tmpl.spec.activeDeadlineSeconds, 'activeDeadlineSeconds in Job is not Supported'));
  }
  return errs;
}

export function validateJob(obj: any): FieldError[] {
  const spec = obj.spec;
  if (!isObj(spec)) return [required('spec')];
  const errs = validateJobSpecCommon(spec, 'spec');
  if (spec.selector == null) errs.push(required('spec.selector'));
  else errs.push(...validateLabelSelector(spec.selector, 'spec.selector'));
  if (spec.selector != null && !selectorMatches(spec.selector, spec.template?.metadata?.labels)) {
    errs.push(invalid('spec.template.metadata.labels', labelsValue(spec.template?.metadata?.labels), '`selector` does not match template `labels`'));
  }
  if (spec.completionMode === 'Indexed' && typeof spec.completions === 'number' && spec.completions > 0) {
    const host = `${obj.metadata?.name}-${spec.completions - 1}`;
    if (dns1123LabelErrors(host).length) {
      errs.push(invalid('metadata.name', obj.metadata?.name, `will not able to create pod with invalid DNS label: ${host}`));
    }
  }
  return errs;
}

export function validateJobUpdate(obj: any, old: any): FieldError[] {
  const errs: FieldError[] = [];
  const s = obj.spec ?? {};
  const o = old.spec ?? {};
  if (!sameValue(selectorValue(s.selector), selectorValue(o.selector))) errs.push(invalid('spec.selector', selectorValue(s.selector), 'field is immutable'));
  errs.push(...immutable('spec.template', s.template, o.template));
  if (s.completionMode !== 'Indexed') errs.push(...immutable('spec.completions', s.completions ?? null, o.completions ?? null));
  errs.push(...immutable('spec.completionMode', s.completionMode ?? null, o.completionMode ?? null));
  errs.push(...immutable('spec.podFailurePolicy', s.podFailurePolicy ?? null, o.podFailurePolicy ?? null));
  return errs;
}

/** Job's PrepareForCreate: unless manualSelector, the selector and labels tie pods to this job's uid. */
export function generateJobSelector(obj: any): void {
  const spec = obj.spec;
  if (!isObj(spec) || spec.manualSelector === true) return;
  const tmpl = isObj(spec.template) ? spec.template : (spec.template = {});
  const meta = isObj(tmpl.metadata) ? tmpl.metadata : (tmpl.metadata = {});
  const labels = isObj(meta.labels) ? meta.labels : (meta.labels = {});
  const name = obj.metadata.name;
  const uid = obj.metadata.uid;
  for (const k of ['job-name', 'batch.kubernetes.io/job-name']) if (!(k in labels)) labels[k] = name;
  for (const k of ['controller-uid', 'batch.kubernetes.io/controller-uid']) if (!(k in labels)) labels[k] = uid;
  const sel = isObj(spec.selector) ? spec.selector : (spec.selector = {});
  const ml = isObj(sel.matchLabels) ? sel.matchLabels : (sel.matchLabels = {});
  if (!('batch.kubernetes.io/controller-uid' in ml)) ml['batch.kubernetes.io/controller-uid'] = uid;
}

function validateSchedule(schedule: string, allowTz: boolean, timeZone: unknown): FieldError[] {
  const errs: FieldError[] = [];
  const err = cronError(schedule);
  if (err) errs.push(invalid('spec.schedule', schedule, err));
  if (schedule.includes('TZ')) {
    if (!allowTz) errs.push(invalid('spec.schedule', schedule, 'cannot use TZ or CRON_TZ in schedule, use timeZone field instead'));
    else if (timeZone != null) errs.push(invalid('spec.schedule', schedule, 'cannot use both timeZone field and TZ or CRON_TZ in schedule'));
  }
  return errs;
}

function validateTimeZone(tz: unknown): FieldError[] {
  if (tz == null) return [];
  const p = 'spec.timeZone';
  if (typeof tz !== 'string' || tz.length === 0) return [invalid(p, tz, 'timeZone must be nil or non-empty string')];
  for (const part of tz.split('/')) {
    if (part === '.' || part === '..' || part.startsWith('-') || !/^[A-Za-z.\-_0-9+]{1,14}$/.test(part)) return [invalid(p, tz, `unknown time zone ${tz}`)];
  }
  const errs: FieldError[] = [];
  if (tz.toLowerCase() === 'local') errs.push(invalid(p, tz, 'timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones'));
  else if (!knownTimeZone(tz)) errs.push(invalid(p, tz, `unknown time zone ${tz}`));
  return errs;
}

export function validateCronJob(obj: any, old?: any): FieldError[] {
  const spec = obj.spec;
  const errs: FieldError[] = [];
  if (!isObj(spec)) return [required('spec')];
  if (!spec.schedule) errs.push(required('spec.schedule'));
  else errs.push(...validateSchedule(String(spec.schedule), !!old && String(old.spec?.schedule ?? '').includes('TZ'), spec.timeZone));
  errs.push(...nonNegative(spec.startingDeadlineSeconds, 'spec.startingDeadlineSeconds'));
  if (!old || !sameValue(old.spec?.timeZone ?? null, spec.timeZone ?? null)) errs.push(...validateTimeZone(spec.timeZone));
  const cp = spec.concurrencyPolicy;
  if (!cp) errs.push(required('spec.concurrencyPolicy'));
  else if (!['Allow', 'Forbid', 'Replace'].includes(cp)) errs.push(notSupported('spec.concurrencyPolicy', cp, ['Allow', 'Forbid', 'Replace']));
  const jt = spec.jobTemplate;
  if (!isObj(jt)) errs.push(required('spec.jobTemplate'));
  else {
    errs.push(...validateTemplateMeta(jt.metadata, 'spec.jobTemplate.metadata'));
    const js = isObj(jt.spec) ? jt.spec : {};
    errs.push(...validateJobSpecCommon(js, 'spec.jobTemplate.spec'));
    if (js.selector != null) errs.push(invalid('spec.jobTemplate.spec.selector', selectorValue(js.selector), '`selector` will be auto-generated'));
    if (js.manualSelector === true) errs.push(notSupported('spec.jobTemplate.spec.manualSelector', true, ['nil', 'false']));
  }
  errs.push(...nonNegative(spec.successfulJobsHistoryLimit, 'spec.successfulJobsHistoryLimit'));
  errs.push(...nonNegative(spec.failedJobsHistoryLimit, 'spec.failedJobsHistoryLimit'));
  if (!old && typeof obj.metadata?.name === 'string' && obj.metadata.name.length > 52) {
    errs.push(invalid('metadata.name', obj.metadata.name, 'must be no more than 52 characters'));
  }
  return errs;
}


// ---------------------------------------------------------------- jobs/status

const condTrue = (st: any, type: string) => Array.isArray(st?.conditions) && st.conditions.some((c: any) => c?.type === type && c?.status === 'True');
const isComplete = (st: any) => condTrue(st, 'Complete');
const isFailed = (st: any) => condTrue(st, 'Failed');
const isFinished = (st: any) => isComplete(st) || isFailed(st);
const timeOf = (v: unknown) => (typeof v === 'string' ? Date.parse(v) : NaN);
const sameTime = (a: unknown, b: unknown) => (a == null && b == null) || (a != null && b != null && timeOf(a) === timeOf(b));
const sameJson = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** A *metav1.Time in a field error prints as Go's time.Time String(). */
function goTime(v: unknown): GoValue {
  const t = new Date(timeOf(v));
  if (isNaN(t.getTime())) return new GoValue(String(v));
  const iso = t.toISOString();
  return new GoValue(`${iso.slice(0, 10)} ${iso.slice(11, 19)} +0000 UTC`);
}

const omit = (field: string, detail: string): FieldError => ({ field, type: 'FieldValueInvalid', value: OMIT_VALUE, detail });

/**
 * kube 1.33's ValidateJobUpdateStatus, with the options its job status strategy derives from
 * the change (JobManagedBy and JobPodReplacementPolicy on): counters non-negative, and the
 * terminal-state rules checked when the fields they concern change. Indexed-job index
 * formats are not checked here.
 */
export function validateJobStatusUpdate(obj: any, old: any): FieldError[] {
  const st = isObj(obj.status) ? obj.status : {};
  const os = isObj(old.status) ? old.status : {};
  const spec = isObj(obj.spec) ? obj.spec : {};
  const errs: FieldError[] = [];
  for (const k of ['active', 'succeeded', 'failed', 'ready', 'terminating']) errs.push(...nonNegative(st[k], `status.${k}`));
  const changed = (f: (s: any) => unknown) => !sameJson(f(st), f(os));
  const finishedChanged = isFinished(st) !== isFinished(os);
  const completeChanged = isComplete(st) !== isComplete(os);
  const failedChanged = isFailed(st) !== isFailed(os);
  const failureTargetChanged = condTrue(st, 'FailureTarget') !== condTrue(os, 'FailureTarget');
  const successMetChanged = condTrue(st, 'SuccessCriteriaMet') !== condTrue(os, 'SuccessCriteriaMet');
  const activeChanged = (st.active ?? 0) !== (os.active ?? 0);
  const startChanged = !sameTime(st.startTime, os.startTime);
  const completionChanged = !sameTime(st.completionTime, os.completionTime);
  const readyChanged = changed((s) => s.ready);
  const terminatingChanged = changed((s) => s.terminating);
  const uncountedChanged = changed((s) => s.uncountedTerminatedPods);
  const complete = isComplete(st);
  const finished = isFinished(st);

  if ((completeChanged || failedChanged) && complete && isFailed(st)) errs.push(omit('status.conditions', 'cannot set Complete=True and Failed=true conditions'));
  if ((completeChanged || failureTargetChanged) && complete && condTrue(st, 'FailureTarget')) {
    errs.push(omit('status.conditions', 'cannot set Complete=True and FailureTarget=true conditions'));
  }
  if ((completeChanged || completionChanged) && st.completionTime != null && !complete) {
    errs.push({ field: 'status.completionTime', type: 'FieldValueInvalid', value: goTime(st.completionTime), detail: 'cannot set completionTime when there is no Complete=True condition' });
  }
  if ((completeChanged || completionChanged) && st.completionTime == null && complete) {
    errs.push({ field: 'status.completionTime', type: 'FieldValueRequired', detail: 'completionTime is required for Complete jobs' });
  }
  if ((startChanged || completionChanged) && st.startTime != null && st.completionTime != null && timeOf(st.completionTime) < timeOf(st.startTime)) {
    errs.push({ field: 'status.completionTime', type: 'FieldValueInvalid', value: goTime(st.completionTime), detail: 'completionTime cannot be set before startTime' });
  }
  if ((failedChanged || changed((s) => s.failedIndexes)) && isFailed(st) && !condTrue(st, 'FailureTarget')) {
    errs.push(omit('status.conditions', 'cannot set Failed=True condition without the FailureTarget=true condition'));
  }
  if ((completeChanged || successMetChanged) && complete && !condTrue(st, 'SuccessCriteriaMet')) {
    errs.push(omit('status.conditions', 'cannot set Complete=True condition without the SuccessCriteriaMet=true condition'));
  }
  if ((finishedChanged || activeChanged) && (st.active ?? 0) > 0 && finished) {
    errs.push({ field: 'status.active', type: 'FieldValueInvalid', value: st.active, detail: 'active>0 is invalid for finished job' });
  }
  if ((finishedChanged || startChanged) && st.startTime == null && finished) {
    errs.push({ field: 'status.startTime', type: 'FieldValueRequired', detail: 'startTime is required for finished job' });
  }
  const u = st.uncountedTerminatedPods;
  if ((finishedChanged || uncountedChanged) && finished && isObj(u) && (arrLen(u.failed) + arrLen(u.succeeded)) > 0) {
    errs.push({ field: 'status.uncountedTerminatedPods', type: 'FieldValueInvalid', value: u, detail: 'uncountedTerminatedPods needs to be empty for finished job' });
  }
  const indexed = spec.completionMode === 'Indexed';
  if (changed((s) => s.completedIndexes) && typeof st.completedIndexes === 'string' && st.completedIndexes !== '' && !indexed) {
    errs.push({ field: 'status.completedIndexes', type: 'FieldValueInvalid', value: st.completedIndexes, detail: 'cannot set non-empty completedIndexes when non-indexed completion mode' });
  }
  if (changed((s) => s.failedIndexes) && spec.backoffLimitPerIndex == null && st.failedIndexes != null) {
    errs.push({ field: 'status.failedIndexes', type: 'FieldValueInvalid', value: st.failedIndexes, detail: 'cannot set non-null failedIndexes when backoffLimitPerIndex is null' });
  }
  if ((finishedChanged || terminatingChanged) && (st.terminating ?? 0) > 0 && finished) {
    errs.push({ field: 'status.terminating', type: 'FieldValueInvalid', value: st.terminating, detail: 'terminating>0 is invalid for finished job' });
  }
  if ((readyChanged || activeChanged) && st.ready != null && st.ready > (st.active ?? 0)) {
    errs.push({ field: 'status.ready', type: 'FieldValueInvalid', value: st.ready, detail: 'cannot set more ready pods than active' });
  }
  const met = condTrue(st, 'SuccessCriteriaMet');
  if (met && isFailed(st)) errs.push(omit('status.conditions', 'cannot set SuccessCriteriaMet=True and Failed=true conditions'));
  if (met && condTrue(st, 'FailureTarget')) errs.push(omit('status.conditions', 'cannot set SuccessCriteriaMet=True and FailureTarget=true conditions'));
  if (spec.successPolicy != null && !met && complete) {
    errs.push(omit('status.conditions', 'cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True'));
  }
  // ValidateJobStatusUpdate's transition rules.
  for (const type of ['Failed', 'Complete', 'FailureTarget']) {
    if (condTrue(os, type) && !condTrue(st, type)) errs.push(omit('status.conditions', `cannot disable the terminal ${type}=True condition`));
  }
  if ((st.failed ?? 0) < (os.failed ?? 0)) errs.push({ field: 'status.failed', type: 'FieldValueInvalid', value: st.failed ?? 0, detail: 'cannot decrease the failed counter' });
  const mayDecreaseSucceeded = indexed && sameJson(spec.completions, spec.parallelism);
  if (!mayDecreaseSucceeded && (st.succeeded ?? 0) < (os.succeeded ?? 0)) {
    errs.push({ field: 'status.succeeded', type: 'FieldValueInvalid', value: st.succeeded ?? 0, detail: 'cannot decrease the succeeded counter' });
  }
  if (st.completionTime != null && os.completionTime != null && !sameTime(st.completionTime, os.completionTime)) {
    errs.push({ field: 'status.completionTime', type: 'FieldValueInvalid', value: goTime(st.completionTime), detail: 'completionTime cannot be mutated' });
  }
  if (startChanged && os.startTime != null && spec.suspend !== true) {
    errs.push({ field: 'status.startTime', type: 'FieldValueRequired', detail: 'startTime cannot be removed for unsuspended job' });
  }
  if (condTrue(os, 'SuccessCriteriaMet') && !met) errs.push(omit('status.conditions', 'cannot disable the SuccessCriteriaMet=True condition'));
  if (isComplete(os) && !condTrue(os, 'SuccessCriteriaMet') && met) {
    errs.push(omit('status.conditions', 'cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions'));
  }
  return errs;
}

function arrLen(v: unknown): number {
  return Array.isArray(v) ? v.length : 0;
}
