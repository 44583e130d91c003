// kubeshard's minimal in-process scheduler ('scheduler' in --controllers; off with
// --controllers=*,-scheduler where a real kube-scheduler runs): pods with no
// spec.nodeName whose spec.schedulerName is default-scheduler are bound, through the
// pods/binding write, to a node that passes kube-scheduler's basic filters
// (NodeUnschedulable, TaintToleration, NodeAffinity with nodeSelector, NodeResourcesFit;
// plugins.ts), the best scored of those looked at (least allocated, fewest untolerated
// PreferNoSchedule taints, preferred node affinity; kube's adaptive
// percentageOfNodesToScore, from a start that rotates). A pod no node takes gets
// PodScheduled=False (Unschedulable) and a FailedScheduling event with kube's
// "0/N nodes are available: ..." message, and waits until a node or a bound pod changes
// (kube's queueing hints, coarsely: a node's labels, taints, unschedulable or allocatable,
// a bound pod going) or five minutes pass, with kube's backoff (queue.ts). Its cache
// (cache.ts, kube's scheduler cache) counts a pod it binds at once ("assumed"), before the
// watch confirms it.
//
// Not done: preemption, pod (anti-)affinity, topology spread, host ports, volumes,
// the other score plugins (balanced allocation, image locality), in-place resizes of bound pods.
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
import { tolerationsOf } from './taints.js';
import { feasibleNodesToFind, filterNode, podFacts, fitErrorMessage, scoreNodes, podRequests, type NodeInfo, type PodFacts, type Refusal } from './plugins.js';
import { SchedulingQueue, type Pending } from './queue.js';
import { SchedulerCache } from './cache.js';

export const DEFAULT_SCHEDULER_NAME = 'default-scheduler';
/** how long one turn of scheduling holds the thread */
const TURN_MS = 10;

function nowTime(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

export class Scheduler {
  private readonly podsT: ResourceTarget;
  private readonly nodesT: ResourceTarget;
  private cache = new SchedulerCache();
  private nextStart = 0;
  private queue = new SchedulingQueue(() => this.kick());
  private draining = false;
  private timer: NodeJS.Timeout | undefined;
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
        this.timer = setInterval(() => this.queue.flush(), 1_000);
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

  private onNode(e: CacheEntry, gone: boolean): void {
    if (gone) this.cache.removeNode(e.name);
    else if (this.cache.setNode(e)) this.queue.moveAllUnschedulable();
  }

  private onPod(e: CacheEntry, gone: boolean): void {
    const key = e.key;
    if (gone) {
      this.queue.forget(key);
      if (this.cache.unassign(key)) this.queue.moveAllUnschedulable();
      return;
    }
    // (a bound pod's event costs no parse unless it is new to its node)
    const fields = podFields(e);
    const nodeName = fields['spec.nodeName'] ?? '';
    const phase = fields['status.phase'];
    const terminal = phase === 'Succeeded' || phase === 'Failed';
    if (nodeName) {
      this.queue.forget(key);
      if (terminal) {
        if (this.cache.unassign(key)) this.queue.moveAllUnschedulable();
        return;
      }
      if (this.cache.confirm(key, nodeName)) return;
      this.cache.unassign(key);
      const bound = peekObject(e);
      this.cache.assign(key, nodeName, podRequests(bound), podRequests(bound, true), false);
      return;
    }
    const pod = peekObject(e);
    if (this.cache.unassign(key)) this.queue.moveAllUnschedulable();
    const mine = (pod.spec?.schedulerName || DEFAULT_SCHEDULER_NAME) === this.schedulerName;
    const gated = Array.isArray(pod.spec?.schedulingGates) && pod.spec.schedulingGates.length > 0;
    if (terminal || pod.metadata?.deletionTimestamp || !mine || gated) {
      this.queue.forget(key);
      return;
    }
    this.queue.addOrUpdate(key, typeof pod.spec?.priority === 'number' ? pod.spec.priority : 0, JSON.stringify(pod.spec ?? {}));
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
      const next = this.queue.pop();
      if (!next) return;
      this.scheduleOne(next[0], next[1]);
    }
    if (this.queue.activeSize) this.kick();
  }

  private scheduleOne(key: string, p: Pending): void {
    const e = this.store.cacheOf(this.podsT).items.get(key);
    if (!e) {
      this.queue.forget(key);
      return;
    }
    const pod = peekObject(e);
    if (pod.spec?.nodeName || pod.metadata?.deletionTimestamp) {
      this.queue.forget(key);
      return;
    }
    const names = this.cache.nodeList();
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
      const n = this.cache.nodes.get(names[(start + i) % names.length])!;
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
    const scores = scoreNodes(feasible, facts);
    let best = feasible[0];
    let bestScore = -1;
    let ties = 0;
    for (let i = 0; i < feasible.length; i++) {
      const n = feasible[i];
      const s = scores[i];
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
    this.cache.assign(key, node, facts.requests, facts.nonZero, true);
    const ns: string = pod.metadata.namespace;
    const name: string = pod.metadata.name;
    bindPod(this.store, this.podsT, ns, name, { node, uid: pod.metadata.uid }, false).then(
      () => {
        this.queue.forget(key);
        this.recorder.event({ kind: 'Pod', namespace: ns, name, uid: pod.metadata.uid }, 'Normal', 'Scheduled', `Successfully assigned ${ns}/${name} to ${node}`, 'Binding');
      },
      (err) => {
        if (this.cache.isAssumed(key, node)) this.cache.unassign(key);
        const code = (err as { code?: number }).code;
        if (code === 404 || code === 409) {
          // gone, bound by someone else, being deleted or replaced: nothing left to schedule
          this.queue.forget(key);
          return;
        }
        this.log(`binding ${key} to ${node}: ${(err as Error).message}`);
        this.queue.markBackoff(key, p);
      },
    );
  }

  /** kube's handleSchedulingFailure: PodScheduled=False (Unschedulable) and a FailedScheduling event when the message is new. */
  private unschedulableNow(key: string, p: Pending, pod: any, message: string): void {
    this.queue.markUnschedulable(key, p);
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
    return { nodes: this.cache.nodes.size, pending: this.queue.size, unschedulable: this.queue.unschedulableSize, assigned: this.cache.assignedCount };
  }
}

