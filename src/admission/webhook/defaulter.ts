// The defaults of a kind applied again to an object a mutating webhook patched (kube decodes
// the patched object and runs its scheme's defaulting: a sidecar a webhook injects gets its
// container defaults, as kube's validation expects them). Only the kinds webhooks commonly
// change are covered here: pods and the kinds with a pod template, Services. The integrator
// may pass a fuller defaulter (WebhookPluginConfig.defaulter).
//
// Thread ownership: none (pure functions).
import type { ResourceInfo } from '../../api/catalog-types.js';
import { defaultPod, defaultPodTemplate } from '../../registry/defaults/pod.js';
import { defaultDaemonSet, defaultDeployment, defaultReplicaSet, defaultStatefulSet } from '../../registry/defaults/apps.js';
import { defaultCronJob, defaultJob } from '../../registry/defaults/batch.js';
import { defaultService } from '../../registry/defaults/core.js';

export function defaultPatchedObject(obj: any, info: ResourceInfo): void {
  if (obj === null || typeof obj !== 'object') return;
  const key = `${info.group}/${info.kind}`;
  switch (key) {
    case '/Pod':
      return defaultPod(obj, info);
    case '/PodTemplate':
      return defaultPodTemplate(obj.template, info);
    case '/ReplicationController':
      return defaultPodTemplate(obj.spec?.template, info);
    case '/Service':
      return defaultService(obj);
    case 'apps/Deployment':
      return defaultDeployment(obj, info);
    case 'apps/ReplicaSet':
      return defaultReplicaSet(obj, info);
    case 'apps/StatefulSet':
      return defaultStatefulSet(obj, info);
    case 'apps/DaemonSet':
      return defaultDaemonSet(obj, info);
    case 'batch/Job':
      defaultJob(obj, info);
      return;
    case 'batch/CronJob':
      return defaultCronJob(obj, info);
  }
}
