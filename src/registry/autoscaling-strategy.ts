// HorizontalPodAutoscaler (autoscaling/v1 and v2 alike: the strategy runs on the object in
// the request's version, before it is converted to the stored v2): a spec kind whose
// defaults depend on the version (src/registry/defaults/autoscaling.ts).
import { SpecStrategy, type FieldError, type StrategyContext } from './strategy.js';
import { validateHpa } from './validation/autoscaling.js';
import { defaultHorizontalPodAutoscaler } from './defaults/autoscaling.js';
import { HPA_BEHAVIOR, HPA_CONDITIONS, HPA_CURRENT_METRICS, HPA_METRICS } from './conversion.js';

/**
 * kube's v2 decoding drops the annotations through which v1 carries v2-only fields
 * (DropRoundTripHorizontalPodAutoscalerAnnotations): a v2 body never stores them.
 */
function dropRoundTripAnnotations(obj: any, ctx: StrategyContext): void {
  const a = obj?.metadata?.annotations;
  if (ctx.info.version !== 'v2' || a === null || typeof a !== 'object') return;
  for (const k of [HPA_METRICS, HPA_BEHAVIOR, HPA_CURRENT_METRICS, HPA_CONDITIONS]) delete a[k];
  if (Object.keys(a).length === 0) delete obj.metadata.annotations;
}

export class HorizontalPodAutoscalerStrategy extends SpecStrategy {
  override handlesRequired = true;
  /** the stored object of an update: validation differs on update (a stored minReplicas of 0 stays allowed) */
  private olds = new WeakMap<object, any>();
  override prepareForCreate(obj: any, ctx: StrategyContext): void {
    dropRoundTripAnnotations(obj, ctx);
    defaultHorizontalPodAutoscaler(obj, ctx.info.version);
  }
  override prepareForUpdate(obj: any, old: any, ctx: StrategyContext): void {
    dropRoundTripAnnotations(obj, ctx);
    defaultHorizontalPodAutoscaler(obj, ctx.info.version);
    this.olds.set(obj, old);
  }
  override validate(obj: any): FieldError[] {
    return validateHpa(obj, this.olds.get(obj));
  }
}
