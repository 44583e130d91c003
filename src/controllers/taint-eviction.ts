// The taint eviction controller (kube-controller-manager's taint-eviction-controller, the
// NoExecute taint manager): a pod on a node with NoExecute taints it does not tolerate is
// deleted at once; one that tolerates them all for a while (tolerationSeconds) is deleted
// when the shortest of those runs out, counted from when the taints were first seen; one
// that tolerates them forever stays. Before the delete the pod gets the DisruptionTarget
// condition (reason DeletionByTaintManager), as kube 1.33 does; the taints' removal, or
// the pod's, cancels a pending deletion.
//
// Mirrors kube's tainteviction Controller (handleNodeUpdate, handlePodUpdate,
// processPodOnNode, addConditionAndDeletePod) with one timer per scheduled deletion in
// place of its TimedWorkerQueue.
//
// Cost: a pod event costs a map lookup unless the pod's node has NoExecute taints; a node
// event compares its NoExecute taints only.
//
// Thread ownership: the main thread (leader controllers), driven by the nodes and pods
// caches (Cacher.observe) and its deletion timers.
import type { Cacher } from '../storage/cacher.js';
import type { Targets } from '../api/targets.js';
import type { CacheEntry, WatchEvent } from '../../workers/watch/watch-cache.js';
import type { ResourceTarget, Store } from '../registry/store.js';
import { EventRecorder } from './event-recorder.js';
import { PodsByNode, inSlices, peekObject } from './pods-by-node.js';
import { updateIfChanged } from './update-if-changed.js';
import { matchingTolerations, minTolerationMs, taintsOf, tolerationsOf, type Taint } from '../scheduler/taints.js';

const MAX_TIMER_MS = 2 ** 31 - 1;
/** kube's retries of a failed deletion, 10 ms apart */
const DELETE_RETRIES = 5;

interface Work {
  createdAt: number;
  fireAt: number;
  timer: NodeJS.Timeout | undefined;
}

function noExecuteTaints(node: any): Taint[] {
  return taintsOf(node).filter((t) => t.effect === 'NoExecute');
}

function taintsSignature(taints: Taint[]): string {
  return JSON.stringify(taints.map((t) => [t.key, t.value ?? '', t.effect, t.timeAdded ?? '']));
}

export class TaintEvictionController {
  private readonly nodesT: ResourceTarget;
  private readonly podsT: ResourceTarget;
  /** node -> its NoExecute taints (only nodes that have some) */
  private tainted = new Map<string, { taints: Taint[]; sig: string }>();
  private pods = new PodsByNode();
  private work = new Map<string, Work>();
  private recorder: EventRecorder;
  private stopped = false;
  private loading = true;

  constructor(
    private readonly store: Store,
    private readonly cacher: Cacher,
    targets: Targets,
    private readonly log: (m: string) => void = (m) => console.warn(`W taint-eviction-controller: ${m}`),
    private readonly now: () => number = Date.now,
  ) {
    this.nodesT = targets.resolve('', 'v1', 'nodes')!;
    this.podsT = targets.resolve('', 'v1', 'pods')!;
    this.recorder = new EventRecorder(store, targets.resolve('', 'v1', 'events')!, { component: 'taint-eviction-controller' });
  }

  start(): void {
    this.cacher.observe((cache, evs) => {
      if (this.stopped) return;
      if (cache.gr === this.nodesT.gr) {
        // (while the pods load, the nodes wait for the pass at the end, which reads them as they are then)
        if (!this.loading) for (const ev of evs) this.onNode(ev.entry, ev.type === 'DELETED');
      } else if (cache.gr === this.podsT.gr) for (const ev of evs) this.onPod(ev);
    });
    // the pods indexed in slices, then every node's NoExecute taints judged (kube waits for its informers' sync)
    inSlices(
      this.store.cacheOf(this.podsT).items.values(),
      (e) => this.pods.add(e),
      () => this.stopped,
      () => {
        this.loading = false;
        for (const e of this.store.cacheOf(this.nodesT).items.values()) this.onNode(e, false);
      },
    );
  }

  stop(): void {
    this.stopped = true;
    for (const w of this.work.values()) if (w.timer) clearTimeout(w.timer);
    this.work.clear();
    this.recorder.stop();
  }

  /** kube's handleNodeUpdate: a change of the node's NoExecute taints re-judges every pod on it. */
  private onNode(e: CacheEntry, gone: boolean): void {
    if (gone) {
      this.tainted.delete(e.name);
      return;
    }
    const taints = noExecuteTaints(peekObject(e));
    const sig = taintsSignature(taints);
    const was = this.tainted.get(e.name);
    if ((was?.sig ?? '[]') === sig) return;
    if (taints.length) this.tainted.set(e.name, { taints, sig });
    else this.tainted.delete(e.name);
    const keys = this.pods.podsOn(e.name);
    if (!taints.length) {
      for (const key of keys) this.cancel(key);
      return;
    }
    const t = this.now();
    const cache = this.store.cacheOf(this.podsT);
    for (const key of keys) {
      const pe = cache.items.get(key);
      if (pe) this.processPod(key, peekObject(pe), taints, t);
    }
  }

  /** kube's handlePodUpdate: a pod on a tainted node judged again; a pod gone loses its deletion. */
  private onPod(ev: WatchEvent): void {
    const { after } = this.pods.apply(ev);
    const key = ev.entry.key;
    if (ev.type === 'DELETED') {
      this.cancel(key);
      return;
    }
    if (!after) return;
    const node = this.tainted.get(after);
    if (!node) return;
    this.processPod(key, peekObject(ev.entry), node.taints, this.now());
  }

  /** kube's processPodOnNode. */
  private processPod(key: string, pod: any, taints: Taint[], t: number): void {
    // (a pod being deleted already needs no eviction; kube would delete it again)
    if (pod?.metadata?.deletionTimestamp && !this.work.has(key)) return;
    const { all, used } = matchingTolerations(taints, tolerationsOf(pod));
    if (!all) {
      const had = this.work.get(key);
      // (already due: a repeated event does not delete twice)
      if (had && had.fireAt <= t) return;
      this.cancel(key);
      this.schedule(key, t, t);
      return;
    }
    const min = minTolerationMs(used);
    if (min < 0) {
      this.cancel(key);
      return;
    }
    let start = t;
    const had = this.work.get(key);
    if (had) {
      start = had.createdAt;
      if (start + min < t + min) return;
      this.cancel(key);
    }
    this.schedule(key, start, t + min);
  }

  private schedule(key: string, createdAt: number, fireAt: number): void {
    const w: Work = { createdAt, fireAt, timer: undefined };
    this.work.set(key, w);
    w.timer = setTimeout(() => {
      w.timer = undefined;
      void this.evict(key, w);
    }, Math.min(MAX_TIMER_MS, Math.max(0, fireAt - this.now())));
    w.timer.unref?.();
  }

  /** Cancels a scheduled deletion not yet under way, with kube's event (cancelWorkWithEvent). */
  private cancel(key: string): void {
    const w = this.work.get(key);
    if (!w) return;
    this.work.delete(key);
    if (!w.timer) return;
    clearTimeout(w.timer);
    this.podEvent(key, `Cancelling deletion of Pod ${key}`);
  }

  private podEvent(key: string, message: string): void {
    const i = key.indexOf('/');
    this.recorder.event({ kind: 'Pod', apiVersion: 'v1', namespace: key.slice(0, i), name: key.slice(i + 1) }, 'Normal', 'TaintManagerEviction', message);
  }

  /** kube's deletePodHandler and addConditionAndDeletePod: DisruptionTarget, then the delete (as a client's, with the pod's grace period). */
  private async evict(key: string, w: Work): Promise<void> {
    if (this.stopped || this.work.get(key) !== w) return;
    const i = key.indexOf('/');
    const ns = key.slice(0, i);
    const name = key.slice(i + 1);
    this.podEvent(key, `Marking for deletion Pod ${key}`);
    let lastErr: unknown;
    for (let attempt = 0; attempt < DELETE_RETRIES && !this.stopped; attempt++) {
      try {
        await updateIfChanged(this.store, this.podsT, ns, name, (pod) => {
          pod.status ??= {};
          const conds: any[] = Array.isArray(pod.status.conditions) ? pod.status.conditions : (pod.status.conditions = []);
          const c = conds.find((x: any) => x?.type === 'DisruptionTarget');
          const want = { type: 'DisruptionTarget', status: 'True', reason: 'DeletionByTaintManager', message: 'Taint manager: deleting due to NoExecute taint' };
          if (c && c.status === want.status && c.reason === want.reason && c.message === want.message) return false;
          const ts = new Date(this.now()).toISOString().replace(/\.\d+Z$/, 'Z');
          if (c) Object.assign(c, want, c.status === want.status ? {} : { lastTransitionTime: ts });
          else conds.push({ ...want, lastProbeTime: null, lastTransitionTime: ts });
          return true;
        });
        await this.store.delete(this.podsT, ns, name, { dryRun: false });
        if (this.work.get(key) === w) this.work.delete(key);
        return;
      } catch (err) {
        if ((err as { code?: number }).code === 404) {
          if (this.work.get(key) === w) this.work.delete(key);
          return;
        }
        lastErr = err;
        await new Promise((r) => setTimeout(r, 10));
      }
    }
    if (this.work.get(key) === w) this.work.delete(key);
    this.log(`deleting pod ${key}: ${(lastErr as Error)?.message ?? 'stopped'}`);
  }

  /** (for tests) the pods with a deletion scheduled */
  scheduled(): string[] {
    return [...this.work.keys()];
  }
}
