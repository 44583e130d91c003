// kubeshard's minimal in-process scheduler ('scheduler' in --controllers; off with
// --controllers=*,-scheduler where a real kube-scheduler runs): pods with no
// spec.nodeName whose spec.schedulerName is default-scheduler are bound, through the
// pods/binding write, to a node that passes kube-scheduler's basic filters
// (NodeUnschedulable, TaintToleration, NodeAffinity with nodeSelector, NodeResourcesFit;
// plugins.ts), the least allocated of those looked at (kube's adaptive
// percentageOfNodesToScore, from a start that rotates). A pod no node takes gets
// PodScheduled=False (Unschedulable) and a FailedScheduling event with kube's
// "0/N nodes are available: ..." message, and waits until a node or a bound pod changes
// (kube's queueing hints, coarsely: a node's labels, taints, unschedulable or allocatable,
// a bound pod going) or five minutes pass, with kube's backoff (1 s doubling to 10 s).
//
// It keeps kube-scheduler's cache: each node's allocatable and the requests of the pods
// bound to it (a pod it binds counts at once, "assumed", before the watch confirms it).
// Not done: preemption, pod (anti-)affinity, topology spread, host ports, volumes,
// PreferNoSchedule and preferred affinity in the score, in-place resizes of bound pods.
//
// Thread ownership: the main thread (leader controllers), driven by the nodes and pods
// caches (Cacher.observe), its drain turns (setImmediate) and a one-second timer.
import type { Cacher } from '../storage/cacher.js';
import type { Targets } from '../api/targets.js';
import type { CacheEntry, WatchEvent } from '../../workers/watch/watch-cache.js';
import type { ResourceTarget, Store } from '../registry/store.js';
import { EventRecorder } from '../controllers/event-recorder.js';
import { inSlices, peekObject, podFields } from '../controllers/pods-by-node.js';
import { updateIfChanged } from '../controllers/update-if-changed.js';
import { bindPod } from '../handlers/binding.js';
import { taintsOf, tolerationsOf } from './taints.js';
import { feasibleNodesToFind, filterNode, podFacts, fitErrorMessage, leastAllocatedScore, podRequests, readResources, type NodeInfo, type PodFacts, type Refusal, type Resources } from './plugins.js';
import { ActiveQueue } from './queue.js';

export const DEFAULT_SCHEDULER_NAME = 'default-scheduler';
const INITIAL_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 10_000;
/** kube's podMaxInUnschedulablePodsDuration */
const MAX_UNSCHEDULABLE_MS = 5 * 60_000;
/** how long one turn of scheduling holds the thread */
const TURN_MS = 10;

interface Pending {
  priority: number;
  seq: number;
  attempts: number;
  state: 'active' | 'backoff' | 'unschedulable' | 'binding';
  lastAttemptAt: number;
  unschedulableSince: number;
  lastMessage: string;
  specSig: string;
}

interface Assigned {
  node: string;
  requests: Resources;
  nonZero: Resources;
  /** counted by this scheduler's binding, not yet seen bound in the cache */
  assumed: boolean;
}

function addTo(to: Resources, from: Resources, sign: number): void {
  for (const [k, v] of from) to.set(k, (to.get(k) ?? 0) + sign * v);
}

function nowTime(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

export class Scheduler {
  private readonly podsT: ResourceTarget;
  private readonly nodesT: ResourceTarget;
  private nodes = new Map<string, NodeInfo>();
  private nodeSigs = new Map<string, string>();
  private nodeNames: string[] | null = null;
  private nextStart = 0;
  private assigned = new Map<string, Assigned>();
  /** node name -> keys of the pods bound to it (whether the node is known or not) */
  private podsOnNode = new Map<string, Set<string>>();
  private pending = new Map<string, Pending>();
  private active = new ActiveQueue();
  private backoff = new Set<string>();
  private unschedulable = new Set<string>();
  private seq = 0;
  private draining = false;
  private timer: NodeJS.Timeout | undefined;
  private lastFlush = 0;
  private stopped = false;
  private loading = true;
  private recorder: EventRecorder;

  constructor(
    private readonly store: Store,
    private readonly cacher: Cacher,
    targets: Targets,
    identity: string,
    private readonly schedulerName = DEFAULT_SCHEDULER_NAME,
    private readonly log: (m: string) => void = (m) => console.warn(`W scheduler: ${m}`),
  ) {
    this.podsT = targets.resolve('', 'v1', 'pods')!;
    this.nodesT = targets.resolve('', 'v1', 'nodes')!;
    this.recorder = new EventRecorder(store, targets.resolve('', 'v1', 'events')!, { reportingController: schedulerName, reportingInstance: `${schedulerName}-${identity}`.slice(0, 128) });
  }

  start(): void {
    this.cacher.observe((cache, evs: WatchEvent[]) => {
      if (this.stopped) return;
      if (cache.gr === this.nodesT.gr) for (const ev of evs) this.onNode(ev.entry, ev.type === 'DELETED');
      else if (cache.gr === this.podsT.gr) for (const ev of evs) this.onPod(ev.entry, ev.type === 'DELETED');
    });
    for (const e of this.store.cacheOf(this.nodesT).items.values()) this.onNode(e, false);
    // the pods read in slices; nothing is scheduled before they all are (kube waits for its
    // informers' sync), so that no node's bound pods are missed when it is judged
    inSlices(
      this.store.cacheOf(this.podsT).items.values(),
      (e) => this.onPod(e, false),
      () => this.stopped,
      () => {
        this.loading = false;
        this.timer = setInterval(() => this.tick(), 1_000);
        this.timer.unref?.();
        this.kick();
      },
    );
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.recorder.stop();
  }

  // ------------------------------------------------------------ the cache

  private onNode(e: CacheEntry, gone: boolean): void {
    if (gone) {
      this.nodes.delete(e.name);
      this.nodeSigs.delete(e.name);
      this.nodeNames = null;
      return;
    }
    const node = peekObject(e);
    const labels = node.metadata?.labels && typeof node.metadata.labels === 'object' ? node.metadata.labels : {};
    const taints = taintsOf(node);
    const unschedulable = !!node.spec?.unschedulable;
    const allocatable = readResources(node.status?.allocatable);
    const sig = JSON.stringify([labels, taints.map((t) => [t.key, t.value ?? '', t.effect]), unschedulable, node.status?.allocatable ?? null]);
    const had = this.nodes.get(e.name);
    if (had) {
      Object.assign(had, { labels, taints, unschedulable, allocatable });
    } else {
      this.nodes.set(e.name, { name: e.name, labels, taints, unschedulable, allocatable, requested: new Map(), nonZeroRequested: new Map(), podCount: 0 });
      this.nodeNames = null;
    }
    if (!had) {
      // pods bound before their node was seen (or while it was gone) count now
      for (const key of this.podsOnNode.get(e.name) ?? []) {
        const a = this.assigned.get(key);
        if (a) this.count(a, +1);
      }
    }
    if (this.nodeSigs.get(e.name) !== sig) {
      this.nodeSigs.set(e.name, sig);
      this.moveUnschedulable();
    }
  }

  private onPod(e: CacheEntry, gone: boolean): void {
    const key = e.key;
    if (gone) {
      this.forgetPending(key);
      if (this.unassign(key)) this.moveUnschedulable();
      return;
    }
    // (a bound pod's event costs no parse unless it is new to its node)
    const fields = podFields(e);
    const nodeName = fields['spec.nodeName'] ?? '';
    const phase = fields['status.phase'];
    const terminal = phase === 'Succeeded' || phase === 'Failed';
    if (nodeName) {
      this.forgetPending(key);
      if (terminal) {
        if (this.unassign(key)) this.moveUnschedulable();
        return;
      }
      const a = this.assigned.get(key);
      if (a?.node === nodeName) {
        a.assumed = false;
        return;
      }
      if (a) this.unassign(key);
      const bound = peekObject(e);
      this.assign(key, nodeName, podRequests(bound), podRequests(bound, true), false);
      return;
    }
    const pod = peekObject(e);
    if (this.unassign(key)) this.moveUnschedulable();
    const mine = (pod.spec?.schedulerName || DEFAULT_SCHEDULER_NAME) === this.schedulerName;
    const gated = Array.isArray(pod.spec?.schedulingGates) && pod.spec.schedulingGates.length > 0;
    if (terminal || pod.metadata?.deletionTimestamp || !mine || gated) {
      this.forgetPending(key);
      return;
    }
    const specSig = JSON.stringify(pod.spec ?? {});
    const p = this.pending.get(key);
    if (!p) {
      const np: Pending = { priority: typeof pod.spec?.priority === 'number' ? pod.spec.priority : 0, seq: this.seq++, attempts: 0, state: 'active', lastAttemptAt: 0, unschedulableSince: 0, lastMessage: '', specSig };
      this.pending.set(key, np);
      this.active.push({ key, priority: np.priority, seq: np.seq });
      this.kick();
    } else if (p.specSig !== specSig) {
      p.specSig = specSig;
      if (p.state === 'unschedulable') this.requeue(key, p);
    }
  }

  private assign(key: string, node: string, requests: Resources, nonZero: Resources, assumed: boolean): void {
    const a: Assigned = { node, requests, nonZero, assumed };
    this.assigned.set(key, a);
    let s = this.podsOnNode.get(node);
    if (!s) this.podsOnNode.set(node, (s = new Set()));
    s.add(key);
    this.count(a, +1);
  }

  /** Forgets a bound pod; true when it was counted. */
  private unassign(key: string): boolean {
    const a = this.assigned.get(key);
    if (!a) return false;
    this.assigned.delete(key);
    const s = this.podsOnNode.get(a.node);
    s?.delete(key);
    if (s?.size === 0) this.podsOnNode.delete(a.node);
    this.count(a, -1);
    return true;
  }

  /** A pod's requests added to (or taken from) its node's counters, when the node is known. */
  private count(a: Assigned, sign: number): void {
    const n = this.nodes.get(a.node);
    if (!n) return;
    addTo(n.requested, a.requests, sign);
    addTo(n.nonZeroRequested, a.nonZero, sign);
    n.podCount += sign;
  }

  private forgetPending(key: string): void {
    if (!this.pending.delete(key)) return;
    this.active.forget(key);
    this.backoff.delete(key);
    this.unschedulable.delete(key);
  }

  // ------------------------------------------------------------ the queues

  private backoffMs(p: Pending): number {
    return Math.min(MAX_BACKOFF_MS, INITIAL_BACKOFF_MS * 2 ** Math.max(0, p.attempts - 1));
  }

  /** An unschedulable pod back in play: active once its backoff has passed. */
  private requeue(key: string, p: Pending): void {
    this.unschedulable.delete(key);
    if (p.attempts > 0 && p.lastAttemptAt + this.backoffMs(p) > Date.now()) {
      p.state = 'backoff';
      this.backoff.add(key);
      return;
    }
    p.state = 'active';
    this.backoff.delete(key);
    this.active.push({ key, priority: p.priority, seq: p.seq });
    this.kick();
  }

  private moveUnschedulable(): void {
    for (const key of [...this.unschedulable]) {
      const p = this.pending.get(key);
      if (p) this.requeue(key, p);
      else this.unschedulable.delete(key);
    }
  }

  /** Every second: pods whose backoff is over go to the active queue; every 30 s, those unschedulable for 5 minutes. */
  private tick(): void {
    if (this.stopped) return;
    const t = Date.now();
    for (const key of [...this.backoff]) {
      const p = this.pending.get(key);
      if (!p) this.backoff.delete(key);
      else if (p.lastAttemptAt + this.backoffMs(p) <= t) this.requeue(key, p);
    }
    if (t - this.lastFlush >= 30_000) {
      this.lastFlush = t;
      for (const key of [...this.unschedulable]) {
        const p = this.pending.get(key);
        if (p && t - p.unschedulableSince >= MAX_UNSCHEDULABLE_MS) this.requeue(key, p);
      }
    }
  }

  private kick(): void {
    if (this.draining || this.stopped || this.loading) return;
    this.draining = true;
    setImmediate(() => this.drain());
  }

  private drain(): void {
    this.draining = false;
    if (this.stopped) return;
    const until = performance.now() + TURN_MS;
    while (performance.now() < until) {
      const q = this.active.popLive();
      if (!q) return;
      const p = this.pending.get(q.key);
      if (p && p.state === 'active') this.scheduleOne(q.key, p);
    }
    if (this.active.size) this.kick();
  }

  // ------------------------------------------------------------ one pod

  private nodeList(): string[] {
    if (!this.nodeNames) this.nodeNames = [...this.nodes.keys()].sort();
    return this.nodeNames;
  }

  private scheduleOne(key: string, p: Pending): void {
    const e = this.store.cacheOf(this.podsT).items.get(key);
    if (!e) {
      this.forgetPending(key);
      return;
    }
    const pod = peekObject(e);
    if (pod.spec?.nodeName || pod.metadata?.deletionTimestamp) {
      this.forgetPending(key);
      return;
    }
    p.attempts++;
    p.lastAttemptAt = Date.now();
    const names = this.nodeList();
    if (names.length === 0) {
      this.unschedulableNow(key, p, pod, 'no nodes available to schedule pods');
      return;
    }
    const facts: PodFacts = podFacts(pod, tolerationsOf(pod));
    const want = feasibleNodesToFind(names.length);
    const feasible: NodeInfo[] = [];
    const refusals: Refusal[] = [];
    const start = this.nextStart % names.length;
    let looked = 0;
    for (let i = 0; i < names.length && feasible.length < want; i++) {
      const n = this.nodes.get(names[(start + i) % names.length])!;
      looked++;
      const r = filterNode(n, facts);
      if (r) refusals.push(r);
      else feasible.push(n);
    }
    this.nextStart = (start + looked) % names.length;
    if (feasible.length === 0) {
      this.unschedulableNow(key, p, pod, fitErrorMessage(names.length, refusals));
      return;
    }
    // the highest score; among equals, each as likely (kube's selectHost)
    let best = feasible[0];
    let bestScore = -1;
    let ties = 0;
    for (const n of feasible) {
      const s = leastAllocatedScore(n, facts);
      if (s > bestScore) {
        best = n;
        bestScore = s;
        ties = 1;
      } else if (s === bestScore && Math.random() * ++ties < 1) best = n;
    }
    this.bind(key, p, pod, best.name, facts);
  }

  /** Assumes the pod on the node, then binds it; a failed binding forgets the assumption and retries after backoff. */
  private bind(key: string, p: Pending, pod: any, node: string, facts: PodFacts): void {
    p.state = 'binding';
    this.assign(key, node, facts.requests, facts.nonZero, true);
    const ns: string = pod.metadata.namespace;
    const name: string = pod.metadata.name;
    bindPod(this.store, this.podsT, ns, name, { node, uid: pod.metadata.uid }, false).then(
      () => {
        this.forgetPending(key);
        this.recorder.event({ kind: 'Pod', namespace: ns, name, uid: pod.metadata.uid }, 'Normal', 'Scheduled', `Successfully assigned ${ns}/${name} to ${node}`, 'Binding');
      },
      (err) => {
        const a = this.assigned.get(key);
        if (a?.assumed && a.node === node) this.unassign(key);
        const code = (err as { code?: number }).code;
        if (code === 404 || code === 409) {
          // gone, bound by someone else, being deleted or replaced: nothing left to schedule
          this.forgetPending(key);
          return;
        }
        this.log(`binding ${key} to ${node}: ${(err as Error).message}`);
        if (this.pending.get(key) === p) {
          p.state = 'backoff';
          this.backoff.add(key);
        }
      },
    );
  }

  /** kube's handleSchedulingFailure: PodScheduled=False (Unschedulable) and a FailedScheduling event when the message is new. */
  private unschedulableNow(key: string, p: Pending, pod: any, message: string): void {
    p.state = 'unschedulable';
    if (!p.unschedulableSince) p.unschedulableSince = Date.now();
    this.unschedulable.add(key);
    const ns: string = pod.metadata.namespace;
    const name: string = pod.metadata.name;
    const uid: string = pod.metadata.uid;
    void updateIfChanged(this.store, this.podsT, ns, name, (o) => {
      if (o.metadata?.uid !== uid || o.spec?.nodeName) return false;
      o.status ??= {};
      const conds: any[] = Array.isArray(o.status.conditions) ? o.status.conditions : (o.status.conditions = []);
      const c = conds.find((x: any) => x?.type === 'PodScheduled');
      if (c && c.status === 'False' && c.reason === 'Unschedulable' && c.message === message) return false;
      const fresh = { type: 'PodScheduled', status: 'False', lastProbeTime: null, lastTransitionTime: c && c.status === 'False' ? c.lastTransitionTime : nowTime(), reason: 'Unschedulable', message };
      if (c) Object.assign(c, fresh);
      else conds.push(fresh);
      return true;
    }).catch((err) => this.log(`status of ${key}: ${(err as Error).message}`));
    if (p.lastMessage !== message) {
      p.lastMessage = message;
      this.recorder.event({ kind: 'Pod', namespace: ns, name, uid }, 'Warning', 'FailedScheduling', message, 'Scheduling');
    }
  }

  /** (for tests and metrics) what the scheduler holds */
  stats(): { nodes: number; pending: number; unschedulable: number; assigned: number } {
    return { nodes: this.nodes.size, pending: this.pending.size, unschedulable: this.unschedulable.size, assigned: this.assigned.size };
  }
}

