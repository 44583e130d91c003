// The scheduler's cache (kube-scheduler's internal/cache): each node's labels, taints,
// unschedulable and allocatable, and the requests of the pods bound to it, a pod the
// scheduler is binding counted at once ("assumed") until the pods cache shows it bound.
// Pods bound to a node not (yet) known are remembered and counted when it comes.
//
// Thread ownership: the main thread (the scheduler that owns it).
import type { CacheEntry } from '../../workers/watch/watch-cache.js';
import { peekObject } from '../controllers/pods-by-node.js';
import { taintsOf } from './taints.js';
import { readResources, type NodeInfo, type Resources } from './plugins.js';

interface Assigned {
  node: string;
  requests: Resources;
  nonZero: Resources;
  /** counted by this scheduler's binding, not yet seen bound in the pods cache */
  assumed: boolean;
}

function addTo(to: Resources, from: Resources, sign: number): void {
  for (const [k, v] of from) to.set(k, (to.get(k) ?? 0) + sign * v);
}

export class SchedulerCache {
  readonly nodes = new Map<string, NodeInfo>();
  /** what of each node the filters read, to tell a change that may let a pod in from a heartbeat */
  private nodeSigs = new Map<string, string>();
  private names: string[] | null = null;
  private assigned = new Map<string, Assigned>();
  /** node name -> keys of the pods bound to it (whether the node is known or not) */
  private podsOnNode = new Map<string, Set<string>>();

  /** The node as the cache entry has it; true when something the filters read changed (or it is new). */
  setNode(e: CacheEntry): boolean {
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
      this.names = null;
      // pods bound before their node was seen (or while it was gone) count now
      for (const key of this.podsOnNode.get(e.name) ?? []) {
        const a = this.assigned.get(key);
        if (a) this.count(a, +1);
      }
    }
    if (this.nodeSigs.get(e.name) === sig) return false;
    this.nodeSigs.set(e.name, sig);
    return true;
  }

  removeNode(name: string): void {
    this.nodes.delete(name);
    this.nodeSigs.delete(name);
    this.names = null;
  }

  /** the node names, in a stable order (the scheduler's rotating start walks it) */
  nodeList(): string[] {
    if (!this.names) this.names = [...this.nodes.keys()].sort();
    return this.names;
  }

  /** the node a pod is counted on, if any */
  nodeOf(key: string): string | undefined {
    return this.assigned.get(key)?.node;
  }

  /** The pods cache shows the pod bound to node: an assumption confirmed; true when it was counted there already. */
  confirm(key: string, node: string): boolean {
    const a = this.assigned.get(key);
    if (a?.node !== node) return false;
    a.assumed = false;
    return true;
  }

  isAssumed(key: string, node: string): boolean {
    const a = this.assigned.get(key);
    return !!a && a.assumed && a.node === node;
  }

  assign(key: string, node: string, requests: Resources, nonZero: Resources, assumed: boolean): void {
    const a: Assigned = { node, requests, nonZero, assumed };
    this.assigned.set(key, a);
    let s = this.podsOnNode.get(node);
    if (!s) this.podsOnNode.set(node, (s = new Set()));
    s.add(key);
    this.count(a, +1);
  }

  /** Forgets a bound pod; true when it was counted. */
  unassign(key: string): boolean {
    const a = this.assigned.get(key);
    if (!a) return false;
    this.assigned.delete(key);
    const s = this.podsOnNode.get(a.node);
    s?.delete(key);
    if (s?.size === 0) this.podsOnNode.delete(a.node);
    this.count(a, -1);
    return true;
  }

  get assignedCount(): number {
    return this.assigned.size;
  }

  /** A pod's requests added to (or taken from) its node's counters, when the node is known. */
  private count(a: Assigned, sign: number): void {
    const n = this.nodes.get(a.node);
    if (!n) return;
    addTo(n.requested, a.requests, sign);
    addTo(n.nonZeroRequested, a.nonZero, sign);
    n.podCount += sign;
  }
}
