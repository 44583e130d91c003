// Defaults of autoscaling/v1 and autoscaling/v2 HorizontalPodAutoscaler (1.33's
// SetDefaults_HorizontalPodAutoscaler of each version). v1 defaults minReplicas only; its
// implicit 80% CPU target is made explicit by the conversion to the stored v2 object
// (src/registry/conversion.ts). v2 defaults the metrics and fills a behavior's unset rules.
import { arr, child, isObj } from './common.js';

const DEFAULT_CPU_UTILIZATION = 80;

const unset = (o: any, k: string) => o[k] === undefined || o[k] === null;

/** kube's GenerateHPAScaleUpRules / GenerateHPAScaleDownRules: a rule's unset parts take the direction's defaults. */
function defaultRules(rules: any, up: boolean): void {
  if (!isObj(rules)) return;
  if (unset(rules, 'stabilizationWindowSeconds')) rules.stabilizationWindowSeconds = up ? 0 : 300;
  if (unset(rules, 'selectPolicy')) rules.selectPolicy = 'Max';
  if (unset(rules, 'policies')) {
    rules.policies = up
      ? [
          { type: 'Pods', value: 4, periodSeconds: 15 },
          { type: 'Percent', value: 100, periodSeconds: 15 },
        ]
      : [{ type: 'Percent', value: 100, periodSeconds: 15 }];
  }
}

export function defaultHorizontalPodAutoscaler(obj: any, version: string): void {
  const spec = child(obj, 'spec');
  if (!spec) return;
  if (unset(spec, 'minReplicas')) spec.minReplicas = 1;
  if (version !== 'v2') return;
  if (arr(spec.metrics).length === 0 && (spec.metrics === undefined || spec.metrics === null || Array.isArray(spec.metrics))) {
    spec.metrics = [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: DEFAULT_CPU_UTILIZATION } } }];
  }
  // Only a behavior that is there is filled in.
  if (isObj(spec.behavior)) {
    if (unset(spec.behavior, 'scaleUp')) spec.behavior.scaleUp = {};
    if (unset(spec.behavior, 'scaleDown')) spec.behavior.scaleDown = {};
    defaultRules(spec.behavior.scaleUp, true);
    defaultRules(spec.behavior.scaleDown, false);
  }
}
