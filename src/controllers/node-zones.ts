// The zones of the node lifecycle controller (kube's nodelifecycle zone states): nodes are
// grouped by their region and zone labels, each zone has its queue of nodes waiting for a
// NoExecute taint (node-eviction-queue.ts) and a state from the share of its nodes not
// Ready, which sets the queue's rate: --node-eviction-rate when Normal,
// --secondary-node-eviction-rate (0 for a zone of --large-cluster-size-threshold nodes or
// fewer) in PartialDisruption, and nothing at all while every zone is in FullDisruption
// (the control plane's own outage is likelier than every node's).
//
// Mirrors kube's ComputeZoneState, handleDisruption, setLimiterInZone, ReducedQPSFunc and
// GetZoneKey.
//
// Thread ownership: the main thread (the node lifecycle controller that owns it).
import { RateLimitedTimedQueue } from './node-eviction-queue.js';

export type ZoneState = 'Initial' | 'Normal' | 'FullDisruption' | 'PartialDisruption';

/** kube's ComputeZoneState over the Ready statuses of a zone's nodes. */
export function computeZoneState(statuses: string[], unhealthyThreshold: number): { notReady: number; state: ZoneState } {
  let ready = 0;
  for (const s of statuses) if (s === 'True') ready++;
  const notReady = statuses.length - ready;
  if (ready === 0 && notReady > 0) return { notReady, state: 'FullDisruption' };
  if (notReady > 2 && notReady / statuses.length >= unhealthyThreshold) return { notReady, state: 'PartialDisruption' };
  return { notReady, state: 'Normal' };
}

/** kube's topology GetZoneKey: region and zone labels, '' when neither is set. */
export function zoneKey(labels: Record<string, string> | undefined): string {
  const region = labels?.['topology.kubernetes.io/region'] ?? labels?.['failure-domain.beta.kubernetes.io/region'] ?? '';
  const zone = labels?.['topology.kubernetes.io/zone'] ?? labels?.['failure-domain.beta.kubernetes.io/zone'] ?? '';
  return region === '' && zone === '' ? '' : `${region}:\u0000:${zone}`;
}

export interface ZoneRates {
  evictionRate: number;
  secondaryEvictionRate: number;
  largeClusterThreshold: number;
  unhealthyZoneThreshold: number;
}

export class ZoneEvictors {
  private zoneQueues = new Map<string, RateLimitedTimedQueue>();
  private zoneStates = new Map<string, ZoneState>();

  constructor(
    private readonly opts: ZoneRates,
    private readonly now: () => number,
    private readonly log: (m: string) => void,
  ) {}

  queues(): Iterable<RateLimitedTimedQueue> {
    return this.zoneQueues.values();
  }

  /** The zone's queue, made (state Initial) for a zone not seen before. */
  queue(zone: string): RateLimitedTimedQueue {
    let q = this.zoneQueues.get(zone);
    if (!q) {
      q = new RateLimitedTimedQueue(this.opts.evictionRate, this.now);
      this.zoneQueues.set(zone, q);
      this.zoneStates.set(zone, 'Initial');
    } else if (!this.zoneStates.has(zone)) {
      this.zoneStates.set(zone, 'Initial');
    }
    return q;
  }

  /**
   * kube's handleDisruption, over the Ready statuses of each zone's nodes (those not
   * excluded from disruption checks): each zone's rate from its new state; entering full
   * disruption everywhere stops every queue (and enterFull lifts the taints), leaving it
   * restores the rates (and leaveFull restarts the nodes' grace periods).
   */
  handleDisruption(zoneStatuses: Map<string, string[]>, hooks: { enterFull: () => void; leaveFull: () => void }): void {
    const next = new Map<string, ZoneState>();
    let allAreFully = true;
    for (const [zone, statuses] of zoneStatuses) {
      const { state } = computeZoneState(statuses, this.opts.unhealthyZoneThreshold);
      if (state !== 'FullDisruption') allAreFully = false;
      next.set(zone, state);
      if (!this.zoneStates.has(zone)) this.zoneStates.set(zone, 'Initial');
    }
    let allWereFully = true;
    for (const [zone, state] of [...this.zoneStates]) {
      if (!zoneStatuses.has(zone)) {
        this.zoneStates.delete(zone);
        continue;
      }
      if (state !== 'FullDisruption') {
        allWereFully = false;
        break;
      }
    }
    if (allAreFully && allWereFully) return;
    if (allAreFully) {
      this.log('every zone is fully disrupted (no node is Ready): evictions stopped and the NoExecute taints removed');
      hooks.enterFull();
      for (const zone of this.zoneStates.keys()) {
        this.queue(zone).swapLimiter(0);
        this.zoneStates.set(zone, 'FullDisruption');
      }
      return;
    }
    if (allWereFully) {
      hooks.leaveFull();
      for (const zone of [...this.zoneStates.keys()]) {
        const state = next.get(zone) ?? 'Normal';
        this.setLimiter(zone, zoneStatuses.get(zone)?.length ?? 0, state);
        this.zoneStates.set(zone, state);
      }
      return;
    }
    for (const [zone, was] of [...this.zoneStates]) {
      const state = next.get(zone);
      if (!state || state === was) continue;
      this.setLimiter(zone, zoneStatuses.get(zone)?.length ?? 0, state);
      this.zoneStates.set(zone, state);
    }
  }

  /** kube's setLimiterInZone with HealthyQPSFunc and ReducedQPSFunc. */
  private setLimiter(zone: string, size: number, state: ZoneState): void {
    const q = this.queue(zone);
    if (state === 'Normal' || state === 'FullDisruption') q.swapLimiter(this.opts.evictionRate);
    else if (state === 'PartialDisruption') q.swapLimiter(size > this.opts.largeClusterThreshold ? this.opts.secondaryEvictionRate : 0);
  }

  info(zone: string): { qps: number; state: ZoneState | undefined } {
    return { qps: this.zoneQueues.get(zone)?.qps ?? NaN, state: this.zoneStates.get(zone) };
  }
}
