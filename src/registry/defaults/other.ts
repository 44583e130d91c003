// Defaults of kinds outside the workload and network groups, 1.33: core/v1 LimitRange
// (SetDefaults_LimitRangeItem), storage.k8s.io/v1 CSIDriver (SetDefaults_CSIDriver) and
// flowcontrol.apiserver.k8s.io/v1 (SetDefaults_FlowSchemaSpec, _LimitedPriorityLevelConfiguration,
// _ExemptPriorityLevelConfiguration, _QueuingConfiguration).
import { features } from '../../features.js';
import { arr, isObj } from './common.js';
import { setOwn } from '../own-keys.js';

const unset = (v: unknown) => v === undefined || v === null;
const zero = (v: unknown) => unset(v) || v === 0;

/** A Container item: default limits from max, default requests from the default limits, then from min. */
export function defaultLimitRange(obj: any): void {
  for (const item of arr(obj?.spec?.limits)) {
    if (!isObj(item) || item.type !== 'Container') continue;
    const dflt: Record<string, unknown> = isObj(item.default) ? item.default : {};
    const req: Record<string, unknown> = isObj(item.defaultRequest) ? item.defaultRequest : {};
    // (resource names are the client's: `toString` is a name like any other, not a member)
    for (const [k, v] of Object.entries(isObj(item.max) ? item.max : {})) if (!Object.hasOwn(dflt, k)) setOwn(dflt, k, v);
    for (const [k, v] of Object.entries(dflt)) if (!Object.hasOwn(req, k)) setOwn(req, k, v);
    for (const [k, v] of Object.entries(isObj(item.min) ? item.min : {})) if (!Object.hasOwn(req, k)) setOwn(req, k, v);
    // Empty maps are omitted when kube encodes them (omitempty).
    if (Object.keys(dflt).length) item.default = dflt;
    if (Object.keys(req).length) item.defaultRequest = req;
  }
}

export function defaultCsiDriver(obj: any): void {
  const spec = obj?.spec;
  if (!isObj(spec)) return;
  if (unset(spec.attachRequired)) spec.attachRequired = true;
  if (unset(spec.podInfoOnMount)) spec.podInfoOnMount = false;
  if (unset(spec.storageCapacity)) spec.storageCapacity = false;
  if (unset(spec.fsGroupPolicy)) spec.fsGroupPolicy = 'ReadWriteOnceWithFSType';
  if (!Array.isArray(spec.volumeLifecycleModes) || spec.volumeLifecycleModes.length === 0) spec.volumeLifecycleModes = ['Persistent'];
  if (unset(spec.requiresRepublish)) spec.requiresRepublish = false;
  if (unset(spec.seLinuxMount) && features.enabled('SELinuxMountReadWriteOncePod')) spec.seLinuxMount = false;
}

export function defaultFlowSchema(obj: any): void {
  const spec = obj?.spec;
  if (isObj(spec) && zero(spec.matchingPrecedence)) spec.matchingPrecedence = 1000;
}

export function defaultPriorityLevelConfiguration(obj: any): void {
  const spec = obj?.spec;
  if (!isObj(spec)) return;
  const limited = spec.limited;
  if (isObj(limited)) {
    if (unset(limited.nominalConcurrencyShares)) limited.nominalConcurrencyShares = 30;
    if (unset(limited.lendablePercent)) limited.lendablePercent = 0;
    const q = isObj(limited.limitResponse) ? limited.limitResponse.queuing : undefined;
    if (isObj(q)) {
      if (zero(q.handSize)) q.handSize = 8;
      if (zero(q.queues)) q.queues = 64;
      if (zero(q.queueLengthLimit)) q.queueLengthLimit = 50;
    }
  }
  const exempt = spec.exempt;
  if (isObj(exempt)) {
    if (unset(exempt.nominalConcurrencyShares)) exempt.nominalConcurrencyShares = 0;
    if (unset(exempt.lendablePercent)) exempt.lendablePercent = 0;
  }
}
