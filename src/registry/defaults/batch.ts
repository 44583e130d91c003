// Defaults of batch/v1 (SetDefaults_Job, SetDefaults_CronJob, 1.33).
import type { ResourceInfo } from '../../api/catalog-types.js';
import { arr, child, def, isObj } from './common.js';
import { defaultPodTemplate } from './pod.js';

type Info = Pick<ResourceInfo, 'kind' | 'version'>;

export function defaultJobSpec(spec: any, info: Info): void {
  if (!isObj(spec)) return;
  defaultPodTemplate(child(spec, 'template'), info);
}

/** SetDefaults_Job. Returns true when the job's labels are to be taken from its template. */
export function defaultJob(obj: any, info: Info): boolean {
  const spec = child(obj, 'spec');
  if (!spec) return false;
  const unset = (k: string) => spec[k] === undefined || spec[k] === null;
  if (unset('completions') && unset('parallelism')) {
    spec.completions = 1;
    spec.parallelism = 1;
  }
  if (unset('parallelism')) spec.parallelism = 1;
  if (unset('backoffLimit')) spec.backoffLimit = unset('backoffLimitPerIndex') ? 6 : 2147483647;
  if (unset('completionMode')) spec.completionMode = 'NonIndexed';
  if (unset('suspend')) spec.suspend = false;
  if (isObj(spec.podFailurePolicy)) {
    for (const rule of arr(spec.podFailurePolicy.rules)) {
      for (const pattern of arr(rule?.onPodConditions)) def(pattern, 'status', 'True');
    }
  }
  if (unset('podReplacementPolicy')) spec.podReplacementPolicy = isObj(spec.podFailurePolicy) ? 'Failed' : 'TerminatingOrFailed';
  defaultJobSpec(spec, info);
  const tl = spec.template?.metadata?.labels;
  const ml = obj.metadata?.labels;
  return isObj(tl) && Object.keys(tl).length > 0 && (!isObj(ml) || Object.keys(ml).length === 0);
}

export function defaultCronJob(obj: any, info: Info): void {
  const spec = child(obj, 'spec');
  if (!spec) return;
  def(spec, 'concurrencyPolicy', 'Allow');
  if (spec.suspend === undefined || spec.suspend === null) spec.suspend = false;
  def(spec, 'successfulJobsHistoryLimit', 3);
  def(spec, 'failedJobsHistoryLimit', 1);
  const jt = child(spec, 'jobTemplate');
  if (jt) {
    const meta = child(jt, 'metadata');
    if (meta && !('creationTimestamp' in meta)) meta.creationTimestamp = null;
    defaultJobSpec(child(jt, 'spec'), info);
  }
}
