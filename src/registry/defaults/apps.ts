// Defaults of apps/v1 (SetDefaults_Deployment, _ReplicaSet, _StatefulSet, _DaemonSet, 1.33).
import type { ResourceInfo } from '../../api/catalog-types.js';
import { arr, child, def, isObj } from './common.js';
import { defaultPodTemplate } from './pod.js';
import { defaultPvc } from './core.js';

type Info = Pick<ResourceInfo, 'kind' | 'version'>;

export function defaultDeployment(obj: any, info: Info): void {
  const spec = child(obj, 'spec');
  if (!spec) return;
  def(spec, 'replicas', 1);
  const strategy = child(spec, 'strategy');
  if (strategy) {
    def(strategy, 'type', 'RollingUpdate');
    if (strategy.type === 'RollingUpdate') {
      const ru = child(strategy, 'rollingUpdate');
      def(ru, 'maxUnavailable', '25%');
      def(ru, 'maxSurge', '25%');
    }
  }
  def(spec, 'revisionHistoryLimit', 10);
  def(spec, 'progressDeadlineSeconds', 600);
  defaultPodTemplate(child(spec, 'template'), info);
}

export function defaultReplicaSet(obj: any, info: Info): void {
  const spec = child(obj, 'spec');
  if (!spec) return;
  def(spec, 'replicas', 1);
  defaultPodTemplate(child(spec, 'template'), info);
}

export function defaultStatefulSet(obj: any, info: Info): void {
  const spec = child(obj, 'spec');
  if (!spec) return;
  def(spec, 'podManagementPolicy', 'OrderedReady');
  const us = child(spec, 'updateStrategy');
  if (us) {
    def(us, 'type', 'RollingUpdate');
    if (us.type === 'RollingUpdate') {
      const ru = child(us, 'rollingUpdate');
      def(ru, 'partition', 0);
    }
  }
  const pvcPolicy = child(spec, 'persistentVolumeClaimRetentionPolicy');
  def(pvcPolicy, 'whenDeleted', 'Retain');
  def(pvcPolicy, 'whenScaled', 'Retain');
  def(spec, 'replicas', 1);
  def(spec, 'revisionHistoryLimit', 10);
  defaultPodTemplate(child(spec, 'template'), info);
  const claims = arr(spec.volumeClaimTemplates);
  for (let i = 0; i < claims.length; i++) {
    if (!isObj(claims[i])) continue;
    // The v1 conversion writes each claim template as a whole object: kind and apiVersion
    // always, first, as Go prints an embedded TypeMeta (a well-known source of GitOps
    // drift), and its metadata as a struct.
    const { kind: _k, apiVersion: _a, ...rest } = claims[i];
    const t = (claims[i] = { kind: 'PersistentVolumeClaim', apiVersion: 'v1', ...rest });
    const meta = child(t, 'metadata');
    if (meta && !('creationTimestamp' in meta)) meta.creationTimestamp = null;
    defaultPvc(t);
    // A claim template is an embedded object: its status is a struct, defaulted like a new claim's.
    const st = child(t, 'status');
    def(st, 'phase', 'Pending');
  }
}

export function defaultDaemonSet(obj: any, info: Info): void {
  const spec = child(obj, 'spec');
  if (!spec) return;
  const us = child(spec, 'updateStrategy');
  if (us) {
    def(us, 'type', 'RollingUpdate');
    if (us.type === 'RollingUpdate') {
      const ru = child(us, 'rollingUpdate');
      def(ru, 'maxUnavailable', 1);
      if (ru && (ru.maxSurge === undefined || ru.maxSurge === null)) ru.maxSurge = 0;
    }
  }
  def(spec, 'revisionHistoryLimit', 10);
  defaultPodTemplate(child(spec, 'template'), info);
}
