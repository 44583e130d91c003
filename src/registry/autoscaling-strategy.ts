// HorizontalPodAutoscaler (autoscaling/v1 and v2 alike: the strategy runs on the object in
// the request's version, before it is converted to the stored v2): a spec kind whose
// defaults depend on the version (src/registry/defaults/autoscaling.ts).
import { SpecStrategy, type StrategyContext } from './strategy.js';
import { defaultHorizontalPodAutoscaler } from './defaults/autoscaling.js';

export class HorizontalPodAutoscalerStrategy extends SpecStrategy {
  override prepareForCreate(obj: any, ctx: StrategyContext): void {
    defaultHorizontalPodAutoscaler(obj, ctx.info.version);
  }
  override prepareForUpdate(obj: any, _old: any, ctx: StrategyContext): void {
    defaultHorizontalPodAutoscaler(obj, ctx.info.version);
  }
}
