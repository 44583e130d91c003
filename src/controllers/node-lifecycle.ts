// The node lifecycle controller (kube-controller-manager's node-lifecycle-controller,
// spec 3.4): a node whose status and Lease have not been renewed within
// --node-monitor-grace-period (--node-startup-grace-period while it never posted a Ready
// condition) gets Ready, MemoryPressure, DiskPressure and PIDPressure = Unknown ("Kubelet
// stopped posting node status."); a node whose Ready is False or Unknown gets the
// not-ready or unreachable NoExecute taint, added through a rate-limited queue per zone,
// and the matching NoSchedule taint at once from its conditions (TaintNodesByCondition);
// Ready = True again removes them. The taint eviction controller (taint-eviction.ts) then
// deletes the pods that do not tolerate the NoExecute taints.
//
// Cost: a heartbeat (a Lease renewal, a status with a new lastHeartbeatTime) only moves a
// timestamp in memory; the monitor pass every --node-monitor-period walks the in-memory
// records of every node, and writes only what changes a node's state.
//
// Mirrors kube's monitorNodeHealth, tryUpdateNodeHealth, processTaintBaseEviction,
// doNoScheduleTaintingPass, doNoExecuteTaintingPass, markNodeForTainting,
// markNodeAsReachable, MarkPodsNotReady and reconcileNodeLabels; the zones and their rates
// are node-zones.ts.
//
// Thread ownership: the main thread (leader controllers), driven by the nodes, leases and
// pods caches (Cacher.observe) and by its two timers.
import type { Cacher } from '../storage/cacher.js';
import type { Targets } from '../api/targets.js';
import type { CacheEntry, WatchEvent } from '../../workers/watch/watch-cache.js';
import type { ResourceTarget, Store } from '../registry/store.js';
import { type TryResult } from './node-eviction-queue.js';
import { ZoneEvictors, zoneKey, type ZoneState } from './node-zones.js';
import { EventRecorder } from './event-recorder.js';
import { PodsByNode, inSlices, peekObject } from './pods-by-node.js';
import { updateIfChanged } from './update-if-changed.js';
import {
  sameTaint,
  taintsOf,
  TAINT_DISK_PRESSURE,
  TAINT_MEMORY_PRESSURE,
  TAINT_NETWORK_UNAVAILABLE,
  TAINT_NOT_READY,
  TAINT_PID_PRESSURE,
  TAINT_UNREACHABLE,
  TAINT_UNSCHEDULABLE,
  type Taint,
} from '../scheduler/taints.js';

export interface NodeLifecycleOptions {
  /** --node-monitor-period */
  monitorPeriodMs: number;
  /** --node-monitor-grace-period */
  monitorGraceMs: number;
  /** --node-startup-grace-period */
  startupGraceMs: number;
  /** --node-eviction-rate (nodes per second) */
  evictionRate: number;
  /** --secondary-node-eviction-rate */
  secondaryEvictionRate: number;
  /** --large-cluster-size-threshold */
  largeClusterThreshold: number;
  /** --unhealthy-zone-threshold */
  unhealthyZoneThreshold: number;
}

export const NODE_LIFECYCLE_DEFAULTS: NodeLifecycleOptions = {
  monitorPeriodMs: 5_000,
  monitorGraceMs: 50_000,
  startupGraceMs: 60_000,
  evictionRate: 0.1,
  secondaryEvictionRate: 0.01,
  largeClusterThreshold: 50,
  unhealthyZoneThreshold: 0.55,
};

export const NODE_LEASE_NAMESPACE = 'kube-node-lease';
/** kube's NodeEvictionPeriod: how often the NoExecute tainting pass runs */
const TAINTING_PASS_MS = 100;
const LABEL_EXCLUDE_DISRUPTION = 'node.kubernetes.io/exclude-disruption';

const UNREACHABLE_NO_EXECUTE: Taint = { key: TAINT_UNREACHABLE, effect: 'NoExecute' };
const NOT_READY_NO_EXECUTE: Taint = { key: TAINT_NOT_READY, effect: 'NoExecute' };

/** condition type -> status -> the NoSchedule taint it calls for (kube's nodeConditionToTaintKeyStatusMap) */
const CONDITION_TAINTS: Record<string, Record<string, string>> = {
  Ready: { False: TAINT_NOT_READY, Unknown: TAINT_UNREACHABLE },
  MemoryPressure: { True: TAINT_MEMORY_PRESSURE },
  DiskPressure: { True: TAINT_DISK_PRESSURE },
  NetworkUnavailable: { True: TAINT_NETWORK_UNAVAILABLE },
  PIDPressure: { True: TAINT_PID_PRESSURE },
};
const CONDITION_TAINT_KEYS = new Set([TAINT_NOT_READY, TAINT_UNREACHABLE, TAINT_MEMORY_PRESSURE, TAINT_DISK_PRESSURE, TAINT_NETWORK_UNAVAILABLE, TAINT_PID_PRESSURE]);

/** kube's labelReconcileInfo: (stable label, beta label it sets) */
const RECONCILED_LABELS: Array<[string, string]> = [
  ['kubernetes.io/os', 'beta.kubernetes.io/os'],
  ['kubernetes.io/arch', 'beta.kubernetes.io/arch'],
];

/** The beta labels to set so that they match the stable ones (undefined: none). */
export function labelsToReconcile(labels: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!labels) return undefined;
  let out: Record<string, string> | undefined;
  for (const [stable, beta] of RECONCILED_LABELS) {
    const v = labels[stable];
    if (v !== undefined && labels[beta] !== v) (out ??= {})[beta] = v;
  }
  return out;
}

interface Health {
  name: string;
  uid: string;
  creationTimestamp: string;
  /** local time (ms) of the last heartbeat seen: a Ready condition with a new lastHeartbeatTime, or a renewed Lease */
  probeMs: number;
  /** the Ready condition's lastHeartbeatTime as last seen (undefined: no Ready condition seen) */
  savedHeartbeat: string | undefined;
  savedHasReady: boolean;
  /** the Lease's renewTime as last seen */
  leaseRenew: string | undefined;
  /** the node's Ready status now ('' without a Ready condition) */
  ready: string;
  zone: string;
  excluded: boolean;
  unreachableNoExecute: boolean;
  notReadyNoExecute: boolean;
  /** RegisteredNode recorded (kube's knownNodeSet) */
  known: boolean;
  /** the pods' Ready must still be set False (kube's nodesToRetry) */
  retry: boolean;
  /** a status write is under way */
  writing: boolean;
}

function condition(node: any, type: string): any {
  const cs = node?.status?.conditions;
  return Array.isArray(cs) ? cs.find((c: any) => c?.type === type) : undefined;
}

function timeMs(s: string | undefined): number {
  const t = s ? Date.parse(s) : NaN;
  return Number.isFinite(t) ? t : 0;
}

function nowTime(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

export class NodeLifecycleController {
  private readonly opts: NodeLifecycleOptions;
  private readonly nodesT: ResourceTarget;
  private readonly leasesT: ResourceTarget;
  private readonly podsT: ResourceTarget;
  private health = new Map<string, Health>();
  /** node name -> its Lease's renewTime (a Lease may come before its Node) */
  private leaseRenews = new Map<string, string>();
  private zones: ZoneEvictors;
  private pods = new PodsByNode();
  private recorder: EventRecorder;
  private timers: NodeJS.Timeout[] = [];
  private stopped = false;
  private readonly now: () => number;

  constructor(
    private readonly store: Store,
    private readonly cacher: Cacher,
    targets: Targets,
    opts: Partial<NodeLifecycleOptions> = {},
    private readonly log: (m: string) => void = (m) => console.warn(`W node-lifecycle-controller: ${m}`),
    now: () => number = Date.now,
  ) {
    this.opts = { ...NODE_LIFECYCLE_DEFAULTS, ...opts };
    this.nodesT = targets.resolve('', 'v1', 'nodes')!;
    this.leasesT = targets.resolve('coordination.k8s.io', 'v1', 'leases')!;
    this.podsT = targets.resolve('', 'v1', 'pods')!;
    this.recorder = new EventRecorder(store, targets.resolve('', 'v1', 'events')!, { component: 'node-controller' });
    this.now = now;
    this.zones = new ZoneEvictors(this.opts, now, this.log);
  }

  start(): void {
    for (const e of this.store.cacheOf(this.leasesT).list(NODE_LEASE_NAMESPACE)) this.onLease(e, false);
    for (const e of this.store.cacheOf(this.nodesT).items.values()) this.onNode(e, false);
    this.cacher.observe((cache, evs) => {
      if (this.stopped) return;
      if (cache.gr === this.nodesT.gr) for (const ev of evs) this.onNode(ev.entry, ev.type === 'DELETED');
      else if (cache.gr === this.leasesT.gr) for (const ev of evs) this.onLease(ev.entry, ev.type === 'DELETED');
      else if (cache.gr === this.podsT.gr) for (const ev of evs) this.onPod(ev);
    });
    const monitor = setInterval(() => this.monitor(), this.opts.monitorPeriodMs);
    const tainting = setInterval(() => this.taintingPass(), TAINTING_PASS_MS);
    monitor.unref?.();
    tainting.unref?.();
    this.timers.push(monitor, tainting);
    this.monitor();
    // the pods (for MarkPodsNotReady) indexed in slices; the events meanwhile are seen at once
    inSlices(this.store.cacheOf(this.podsT).items.values(), (e) => this.pods.add(e), () => this.stopped, () => undefined);
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    this.recorder.stop();
  }

  /** A node came, changed or went: its record updated in O(1); the NoSchedule taints checked. */
  private onNode(e: CacheEntry, gone: boolean): void {
    const name = e.name;
    if (gone) {
      const h = this.health.get(name);
      if (h?.known) this.recorder.event({ kind: 'Node', name, uid: h.uid }, 'Normal', 'RemovingNode', `Removing Node ${name} from Controller`);
      if (h) this.zones.queue(h.zone).remove(name);
      this.health.delete(name);
      return;
    }
    const node = peekObject(e);
    const ready = condition(node, 'Ready');
    let h = this.health.get(name);
    const t = this.now();
    if (!h || h.uid !== node.metadata?.uid) {
      // first sight (kube: a node without Ready counts from its creation, one with Ready from now)
      h = {
        name,
        uid: node.metadata?.uid ?? '',
        creationTimestamp: node.metadata?.creationTimestamp ?? '',
        probeMs: ready ? t : timeMs(node.metadata?.creationTimestamp) || t,
        savedHeartbeat: ready?.lastHeartbeatTime,
        savedHasReady: !!ready,
        leaseRenew: undefined,
        ready: '',
        zone: '',
        excluded: false,
        unreachableNoExecute: false,
        notReadyNoExecute: false,
        known: false,
        retry: false,
        writing: false,
      };
      this.health.set(name, h);
      const renew = this.leaseRenews.get(name);
      if (renew) {
        h.leaseRenew = renew;
        h.probeMs = t;
      }
    } else if (ready && (!h.savedHasReady || ready.lastHeartbeatTime !== h.savedHeartbeat)) {
      // a new heartbeat in the status (or a Ready condition seen for the first time)
      h.probeMs = t;
      h.savedHeartbeat = ready.lastHeartbeatTime;
      h.savedHasReady = true;
    } else if (!ready && h.savedHasReady) {
      // (kube: the Ready condition was removed; counted as a heartbeat)
      h.probeMs = t;
      h.savedHasReady = false;
      h.savedHeartbeat = undefined;
    }
    h.ready = ready?.status ?? '';
    h.zone = zoneKey(node.metadata?.labels);
    h.excluded = node.metadata?.labels?.[LABEL_EXCLUDE_DISRUPTION] !== undefined;
    const taints = taintsOf(node);
    h.unreachableNoExecute = taints.some((x) => sameTaint(x, UNREACHABLE_NO_EXECUTE));
    h.notReadyNoExecute = taints.some((x) => sameTaint(x, NOT_READY_NO_EXECUTE));
    if (!this.sameNoScheduleTaints(node)) void this.noScheduleTaintingPass(name);
    if (labelsToReconcile(node.metadata?.labels)) void this.reconcileLabels(name);
  }

  /** kube's reconcileNodeLabels: the beta os and arch labels follow the stable ones. */
  private async reconcileLabels(name: string): Promise<void> {
    try {
      await updateIfChanged(this.store, this.nodesT, '', name, (node) => {
        const want = labelsToReconcile(node.metadata?.labels);
        if (!want) return false;
        node.metadata.labels = { ...node.metadata.labels, ...want };
        return true;
      });
    } catch (err) {
      this.log(`reconciling the labels of node ${name}: ${(err as Error).message}`);
    }
  }

  /** A node's Lease renewed: a heartbeat when its renewTime moved on (kube compares renewTime). */
  private onLease(e: CacheEntry, gone: boolean): void {
    if (e.ns !== NODE_LEASE_NAMESPACE) return;
    if (gone) {
      this.leaseRenews.delete(e.name);
      return;
    }
    const renew: string | undefined = peekObject(e)?.spec?.renewTime;
    if (!renew) return;
    this.leaseRenews.set(e.name, renew);
    const h = this.health.get(e.name);
    if (!h) return;
    if (h.leaseRenew === undefined || timeMs(h.leaseRenew) < timeMs(renew)) {
      h.leaseRenew = renew;
      h.probeMs = this.now();
    }
  }

  /** A pod newly bound to a node that is not Ready gets its Ready condition False (kube's processPod). */
  private onPod(ev: WatchEvent): void {
    const { before, after } = this.pods.apply(ev);
    if (!after || after === before) return;
    const h = this.health.get(after);
    if (!h || !h.ready || h.ready === 'True') return;
    void this.markPodsNotReady(after, [ev.entry.key]).catch(() => undefined);
  }

  /** kube's monitorNodeHealth, over the in-memory records. */
  private monitor(): void {
    if (this.stopped) return;
    const t = this.now();
    const zoneStatuses = new Map<string, string[]>();
    for (const h of this.health.values()) {
      if (!h.known) {
        h.known = true;
        this.recorder.event({ kind: 'Node', name: h.name, uid: h.uid }, 'Normal', 'RegisteredNode', `Registered Node ${h.name} in Controller`);
        this.zones.queue(h.zone);
        this.markNodeAsReachable(h);
      }
      this.zones.queue(h.zone);
      const grace = h.savedHasReady ? this.opts.monitorGraceMs : this.opts.startupGraceMs;
      // what the node says now (kube: a node that never posted Ready counts as Unknown)
      const observed = h.ready || 'Unknown';
      let current = observed;
      if (t > h.probeMs + grace && (h.ready !== 'Unknown' || !h.savedHasReady)) {
        current = 'Unknown';
        void this.markUnknown(h);
      }
      if (!h.excluded) {
        let list = zoneStatuses.get(h.zone);
        if (!list) zoneStatuses.set(h.zone, (list = []));
        list.push(current);
      }
      if (!h.savedHasReady && !h.ready) continue;
      this.processTaintBasedEviction(h, observed);
      if (current !== 'True' && observed === 'True') {
        this.recorder.event({ kind: 'Node', name: h.name, uid: h.uid }, 'Normal', 'NodeNotReady', `Node ${h.name} status is now: NodeNotReady`);
        void this.markPodsNotReady(h.name);
      } else if (h.retry && observed !== 'True') {
        void this.markPodsNotReady(h.name);
      } else {
        h.retry = false;
      }
    }
    this.zones.handleDisruption(zoneStatuses, {
      // every zone fully disrupted: no node loses its pods
      enterFull: () => {
        for (const h of this.health.values()) this.markNodeAsReachable(h);
      },
      // leaving it: every node starts a fresh grace period
      leaveFull: () => {
        const t = this.now();
        for (const h of this.health.values()) h.probeMs = t;
      },
    });
  }

  /** kube's tryUpdateNodeHealth past the grace period: the four conditions Unknown, unless the node spoke meanwhile. */
  private async markUnknown(h: Health): Promise<void> {
    if (h.writing) return;
    h.writing = true;
    const probeAtDecision = h.probeMs;
    const heartbeatAtDecision = h.savedHeartbeat;
    const hadReady = h.savedHasReady;
    try {
      const written = await updateIfChanged(this.store, this.nodesT, '', h.name, (node) => {
        if (node.metadata?.uid !== h.uid || h.probeMs !== probeAtDecision) return false;
        const ready = condition(node, 'Ready');
        if (hadReady && ready?.lastHeartbeatTime !== heartbeatAtDecision) return false;
        const ts = nowTime();
        node.status ??= {};
        const conds: any[] = Array.isArray(node.status.conditions) ? node.status.conditions : (node.status.conditions = []);
        let changed = false;
        for (const type of ['Ready', 'MemoryPressure', 'DiskPressure', 'PIDPressure']) {
          const c = conds.find((x: any) => x?.type === type);
          if (!c) {
            conds.push({ type, status: 'Unknown', lastHeartbeatTime: node.metadata.creationTimestamp, lastTransitionTime: ts, reason: 'NodeStatusNeverUpdated', message: 'Kubelet never posted node status.' });
            changed = true;
          } else if (c.status !== 'Unknown') {
            Object.assign(c, { status: 'Unknown', reason: 'NodeStatusUnknown', message: 'Kubelet stopped posting node status.', lastTransitionTime: ts });
            changed = true;
          }
        }
        return changed;
      });
      if (written && !hadReady) {
        // the Ready condition written carries the creation time as its heartbeat: not a heartbeat of the node
        h.savedHasReady = true;
        h.savedHeartbeat = h.creationTimestamp;
      }
    } catch (err) {
      this.log(`updating the health of node ${h.name}: ${(err as Error).message}`);
    } finally {
      h.writing = false;
    }
  }

  /** kube's processTaintBaseEviction, from the Ready status the node has now. */
  private processTaintBasedEviction(h: Health, observed: string): void {
    if (observed === 'False') {
      if (h.unreachableNoExecute) void this.swapTaints(h.name, [NOT_READY_NO_EXECUTE], [UNREACHABLE_NO_EXECUTE]);
      else this.markNodeForTainting(h, 'False');
    } else if (observed === 'Unknown') {
      if (h.notReadyNoExecute) void this.swapTaints(h.name, [UNREACHABLE_NO_EXECUTE], [NOT_READY_NO_EXECUTE]);
      else this.markNodeForTainting(h, 'Unknown');
    } else if (observed === 'True') {
      this.markNodeAsReachable(h);
    }
  }

  private markNodeForTainting(h: Health, status: 'False' | 'Unknown'): boolean {
    const q = this.zones.queue(h.zone);
    if (status === 'False' && !h.notReadyNoExecute) q.remove(h.name);
    if (status === 'Unknown' && !h.unreachableNoExecute) q.remove(h.name);
    return q.add(h.name, h.uid);
  }

  /** kube's markNodeAsReachable: both NoExecute taints off (a write only when one is there), out of the queue. */
  private markNodeAsReachable(h: Health): boolean {
    if (h.unreachableNoExecute || h.notReadyNoExecute) void this.swapTaints(h.name, [], [UNREACHABLE_NO_EXECUTE, NOT_READY_NO_EXECUTE]);
    return this.zones.queue(h.zone).remove(h.name);
  }

  /** kube's doNoExecuteTaintingPass: each zone's queue, as far as its limiter lets it. */
  private taintingPass(): void {
    if (this.stopped) return;
    for (const q of this.zones.queues()) {
      if (q.length === 0) continue;
      q.try((name): TryResult => {
        const h = this.health.get(name);
        if (!h) return { ok: true };
        if (!h.ready) return { ok: false, retryMs: 50 };
        let add: Taint;
        let remove: Taint;
        if (h.ready === 'False') [add, remove] = [NOT_READY_NO_EXECUTE, UNREACHABLE_NO_EXECUTE];
        else if (h.ready === 'Unknown') [add, remove] = [UNREACHABLE_NO_EXECUTE, NOT_READY_NO_EXECUTE];
        else return { ok: true };
        void this.swapTaints(name, [add], [remove]).then((ok) => {
          // a failed write leaves the node to be queued again by the next monitor pass
          if (!ok) q.remove(name);
        });
        return { ok: true };
      });
    }
  }

  /** kube's SwapNodeControllerTaint: taints added (timeAdded now) unless there, others removed; false when the write failed. */
  private async swapTaints(name: string, add: Taint[], remove: Taint[]): Promise<boolean> {
    try {
      await updateIfChanged(this.store, this.nodesT, '', name, (node) => {
        const taints = taintsOf(node);
        const kept = taints.filter((t) => !remove.some((r) => sameTaint(r, t)));
        const ts = nowTime();
        for (const a of add) if (!kept.some((t) => sameTaint(t, a))) kept.push({ ...a, timeAdded: ts });
        if (kept.length === taints.length && kept.every((t, i) => t === taints[i])) return false;
        node.spec ??= {};
        if (kept.length) node.spec.taints = kept;
        else delete node.spec.taints;
        return true;
      });
      return true;
    } catch (err) {
      this.log(`updating the taints of node ${name}: ${(err as Error).message}`);
      return false;
    }
  }

  /** The NoSchedule taints a node's conditions (and spec.unschedulable) call for. */
  private wantedNoSchedule(node: any): Taint[] {
    const out: Taint[] = [];
    for (const c of Array.isArray(node?.status?.conditions) ? node.status.conditions : []) {
      const key = CONDITION_TAINTS[c?.type]?.[c?.status];
      if (key) out.push({ key, effect: 'NoSchedule' });
    }
    if (node?.spec?.unschedulable) out.push({ key: TAINT_UNSCHEDULABLE, effect: 'NoSchedule' });
    return out;
  }

  private haveNoSchedule(node: any): Taint[] {
    return taintsOf(node).filter((t) => t.effect === 'NoSchedule' && (t.key === TAINT_UNSCHEDULABLE || CONDITION_TAINT_KEYS.has(t.key)));
  }

  private sameNoScheduleTaints(node: any): boolean {
    const want = this.wantedNoSchedule(node);
    const have = this.haveNoSchedule(node);
    return want.every((w) => have.some((x) => sameTaint(x, w))) && have.every((x) => want.some((w) => sameTaint(x, w)));
  }

  /** kube's doNoScheduleTaintingPass: the condition NoSchedule taints made to match the conditions. */
  private async noScheduleTaintingPass(name: string): Promise<void> {
    try {
      await updateIfChanged(this.store, this.nodesT, '', name, (node) => {
        if (this.sameNoScheduleTaints(node)) return false;
        const want = this.wantedNoSchedule(node);
        const have = this.haveNoSchedule(node);
        const ts = nowTime();
        const taints = taintsOf(node).filter((t) => !have.some((x) => x === t) || want.some((w) => sameTaint(w, t)));
        for (const w of want) if (!taints.some((t) => sameTaint(t, w))) taints.push({ ...w, timeAdded: ts });
        node.spec ??= {};
        if (taints.length) node.spec.taints = taints;
        else delete node.spec.taints;
        return true;
      });
    } catch (err) {
      this.log(`updating the NoSchedule taints of node ${name}: ${(err as Error).message}`);
    }
  }

  /** kube's MarkPodsNotReady: the Ready condition of the node's pods set False (a write per pod whose Ready is not False yet). */
  private async markPodsNotReady(nodeName: string, keys = this.pods.podsOn(nodeName)): Promise<void> {
    const h = this.health.get(nodeName);
    let failed = false;
    const cache = this.store.cacheOf(this.podsT);
    for (const key of keys) {
      const e = cache.items.get(key);
      if (!e) continue;
      const pod = peekObject(e);
      if (pod?.spec?.nodeName !== nodeName) continue;
      const ready = condition(pod, 'Ready');
      if (!ready || ready.status === 'False') continue;
      try {
        const written = await updateIfChanged(this.store, this.podsT, e.ns, e.name, (p) => {
          if (p.spec?.nodeName !== nodeName) return false;
          const c = condition(p, 'Ready');
          if (!c || c.status === 'False') return false;
          c.status = 'False';
          c.lastTransitionTime = nowTime();
          return true;
        });
        if (written) this.recorder.event({ kind: 'Pod', namespace: e.ns, name: e.name, uid: pod.metadata?.uid }, 'Warning', 'NodeNotReady', 'Node is not ready');
      } catch {
        failed = true;
      }
    }
    if (h) h.retry = failed;
  }

  /** (for tests) the zone's current rate and state */
  zoneInfo(zone = ''): { qps: number; state: ZoneState | undefined } {
    return this.zones.info(zone);
  }
}

