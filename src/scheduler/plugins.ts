// The minimal scheduler's filters and score, after kube-scheduler's default plugins:
// NodeUnschedulable, TaintToleration, NodeAffinity (nodeSelector and required node
// affinity), NodeResourcesFit (cpu, memory, ephemeral-storage, pods, extended resources)
// as filters, in kube's order, each answering the reasons kube's plugin gives; and
// NodeResourcesFit's LeastAllocated score over cpu and memory. Also the pod's requests as
// kube's resource helpers compute them (init containers, sidecars, overhead), and the
// "0/N nodes are available: ..." message of kube's FitError.
//
// Thread ownership: none (pure functions over the scheduler's node records).
import { milliValue, parseQuantity } from '../registry/quantity.js';
import { firstUntoleratedTaint, taintTolerated, TAINT_UNSCHEDULABLE, type Taint, type Toleration } from './taints.js';

/** Resource amounts: cpu in millicores, the others in units (bytes, pods, devices). */
export type Resources = Map<string, number>;

export const CPU = 'cpu';
export const MEMORY = 'memory';
export const PODS = 'pods';
/** kube's non-zero defaults for scoring a container without requests */
const DEFAULT_MILLI_CPU = 100;
const DEFAULT_MEMORY = 200 * 1024 * 1024;

/** parsed quantities by their text: a cluster's pods repeat a few ("100m", "128Mi") */
const parsed = new Map<string, number>();
const MAX_PARSED = 10_000;

function amount(name: string, v: unknown): number {
  const key = typeof v === 'string' ? (name === CPU ? 'c' : 'u') + v : undefined;
  const known = key === undefined ? undefined : parsed.get(key);
  if (known !== undefined) return known;
  const q = parseQuantity(v);
  const m = q ? milliValue(q) : 0n;
  const out = name === CPU ? Number(m) : Math.ceil(Number(m) / 1000);
  if (key !== undefined) {
    if (parsed.size >= MAX_PARSED) parsed.clear();
    parsed.set(key, out);
  }
  return out;
}

/** A ResourceList read into amounts. */
export function readResources(list: unknown): Resources {
  const out: Resources = new Map();
  if (!list || typeof list !== 'object') return out;
  for (const [k, v] of Object.entries(list)) out.set(k, amount(k, v));
  return out;
}

function addInto(to: Resources, from: Resources): void {
  for (const [k, v] of from) to.set(k, (to.get(k) ?? 0) + v);
}

function maxInto(to: Resources, from: Resources): void {
  for (const [k, v] of from) if (v > (to.get(k) ?? 0)) to.set(k, v);
}

function containerRequests(c: any, nonZero: boolean): Resources {
  const r = readResources(c?.resources?.requests);
  if (nonZero) {
    const req = c?.resources?.requests ?? {};
    const out: Resources = new Map();
    out.set(CPU, CPU in req ? (r.get(CPU) ?? 0) : DEFAULT_MILLI_CPU);
    out.set(MEMORY, MEMORY in req ? (r.get(MEMORY) ?? 0) : DEFAULT_MEMORY);
    return out;
  }
  return r;
}

/**
 * kube's PodRequests: the containers' sum, raised to what any init container needs
 * (with the restartable init containers, sidecars, started before it running beside it),
 * plus the pod's overhead. nonZero: kube's scoring variant, cpu and memory only, with
 * defaults for containers that request none.
 */
export function podRequests(pod: any, nonZero = false): Resources {
  const spec = pod?.spec ?? {};
  const reqs: Resources = new Map();
  for (const c of Array.isArray(spec.containers) ? spec.containers : []) addInto(reqs, containerRequests(c, nonZero));
  const sidecars: Resources = new Map();
  const initMax: Resources = new Map();
  for (const c of Array.isArray(spec.initContainers) ? spec.initContainers : []) {
    const r = containerRequests(c, nonZero);
    if (c?.restartPolicy === 'Always') {
      addInto(reqs, r);
      addInto(sidecars, r);
      maxInto(initMax, sidecars);
    } else {
      const need = new Map(r);
      addInto(need, sidecars);
      maxInto(initMax, need);
    }
  }
  maxInto(reqs, initMax);
  const overhead = readResources(spec.overhead);
  if (nonZero) {
    for (const k of [CPU, MEMORY]) if (overhead.has(k)) reqs.set(k, (reqs.get(k) ?? 0) + overhead.get(k)!);
  } else addInto(reqs, overhead);
  return reqs;
}

/** What the scheduler keeps of a node. */
export interface NodeInfo {
  name: string;
  labels: Record<string, string>;
  taints: Taint[];
  unschedulable: boolean;
  allocatable: Resources;
  /** the requests of the pods bound (or being bound) to it */
  requested: Resources;
  /** the same with kube's non-zero defaults (for the score) */
  nonZeroRequested: Resources;
  podCount: number;
}

/** A filter's refusal: the reasons, and whether preemption could help (kube's Unschedulable) or not (UnschedulableAndUnresolvable). */
export interface Refusal {
  reasons: string[];
  resolvable: boolean;
}

export interface PodFacts {
  pod: any;
  tolerations: Toleration[];
  requests: Resources;
  nonZero: Resources;
  /** the resources NodeResourcesFit checks, in kube's order (cpu, memory, ephemeral-storage, the others) */
  checked?: Array<[string, number]>;
}

/** The facts of a pod the filters read, computed once per scheduling attempt. */
export function podFacts(pod: any, tolerations: Toleration[]): PodFacts {
  const requests = podRequests(pod);
  const head = [CPU, MEMORY, 'ephemeral-storage'];
  const rest = [...requests.keys()].filter((k) => !head.includes(k) && k !== PODS).sort();
  const checked: Array<[string, number]> = [];
  for (const r of [...head, ...rest]) {
    const want = requests.get(r) ?? 0;
    if (want > 0) checked.push([r, want]);
  }
  return { pod, tolerations, requests, nonZero: podRequests(pod, true), checked };
}

/** NodeUnschedulable: spec.unschedulable, unless the pod tolerates the unschedulable taint. */
function nodeUnschedulable(n: NodeInfo, p: PodFacts): Refusal | undefined {
  if (!n.unschedulable) return undefined;
  if (taintTolerated({ key: TAINT_UNSCHEDULABLE, effect: 'NoSchedule' }, p.tolerations)) return undefined;
  return { reasons: ['node(s) were unschedulable'], resolvable: false };
}

/** TaintToleration: the first NoSchedule or NoExecute taint not tolerated. */
function taintToleration(n: NodeInfo, p: PodFacts): Refusal | undefined {
  const t = firstUntoleratedTaint(n.taints, p.tolerations, (x) => x.effect === 'NoSchedule' || x.effect === 'NoExecute');
  return t ? { reasons: [`node(s) had untolerated taint {${t.key}: ${t.value ?? ''}}`], resolvable: false } : undefined;
}

function requirementMatches(r: any, value: string | undefined): boolean {
  const vals: string[] = Array.isArray(r?.values) ? r.values : [];
  switch (r?.operator) {
    case 'In':
      return value !== undefined && vals.includes(value);
    case 'NotIn':
      return value === undefined || !vals.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      if (value === undefined || vals.length !== 1 || !/^-?\d+$/.test(value) || !/^-?\d+$/.test(vals[0])) return false;
      return r.operator === 'Gt' ? BigInt(value) > BigInt(vals[0]) : BigInt(value) < BigInt(vals[0]);
    }
    default:
      return false;
  }
}

/** A NodeSelectorTerm: its expressions on labels and its fields (metadata.name) all hold; an empty term matches nothing. */
function termMatches(term: any, n: NodeInfo): boolean {
  const exprs: any[] = Array.isArray(term?.matchExpressions) ? term.matchExpressions : [];
  const fields: any[] = Array.isArray(term?.matchFields) ? term.matchFields : [];
  if (exprs.length === 0 && fields.length === 0) return false;
  for (const r of exprs) if (!requirementMatches(r, Object.prototype.hasOwnProperty.call(n.labels, r?.key) ? n.labels[r.key] : undefined)) return false;
  for (const r of fields) if (r?.key !== 'metadata.name' || !requirementMatches(r, n.name)) return false;
  return true;
}

/** NodeAffinity: spec.nodeSelector, and requiredDuringSchedulingIgnoredDuringExecution's terms (any one). */
function nodeAffinity(n: NodeInfo, p: PodFacts): Refusal | undefined {
  const refuse = { reasons: ["node(s) didn't match Pod's node affinity/selector"], resolvable: false };
  const sel = p.pod?.spec?.nodeSelector;
  if (sel && typeof sel === 'object') for (const [k, v] of Object.entries(sel)) if (n.labels[k] !== v) return refuse;
  const required = p.pod?.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (required) {
    const terms: any[] = Array.isArray(required.nodeSelectorTerms) ? required.nodeSelectorTerms : [];
    if (!terms.some((t) => termMatches(t, n))) return refuse;
  }
  return undefined;
}

/** NodeResourcesFit: the pod count, then each requested resource against what is left. */
function nodeResourcesFit(n: NodeInfo, p: PodFacts): Refusal | undefined {
  let reasons: string[] | undefined;
  if (n.podCount + 1 > (n.allocatable.get(PODS) ?? 0)) (reasons ??= []).push('Too many pods');
  const checked = p.checked ?? podFacts(p.pod, p.tolerations).checked!;
  for (const [r, want] of checked) {
    if (want > (n.allocatable.get(r) ?? 0) - (n.requested.get(r) ?? 0)) (reasons ??= []).push(`Insufficient ${r}`);
  }
  return reasons ? { reasons, resolvable: true } : undefined;
}

/** The filters in kube-scheduler's order (its default plugins' Filter list); the first refusal is the node's. */
export const FILTERS: ReadonlyArray<readonly [string, (n: NodeInfo, p: PodFacts) => Refusal | undefined]> = [
  ['NodeUnschedulable', nodeUnschedulable],
  ['TaintToleration', taintToleration],
  ['NodeAffinity', nodeAffinity],
  ['NodeResourcesFit', nodeResourcesFit],
];

export function filterNode(n: NodeInfo, p: PodFacts): Refusal | undefined {
  for (const [, f] of FILTERS) {
    const r = f(n, p);
    if (r) return r;
  }
  return undefined;
}

/** NodeResourcesFit's LeastAllocated score (0-100) over cpu and memory, equal weights. */
export function leastAllocatedScore(n: NodeInfo, p: PodFacts): number {
  let total = 0;
  for (const r of [CPU, MEMORY]) {
    const cap = n.allocatable.get(r) ?? 0;
    const req = (n.nonZeroRequested.get(r) ?? 0) + (p.nonZero.get(r) ?? 0);
    if (cap === 0 || req > cap) continue;
    total += Math.floor(((cap - req) * 100) / cap);
  }
  return Math.floor(total / 2);
}

/** TaintToleration's raw score: the PreferNoSchedule taints the pod does not tolerate (fewer is better). */
export function intolerablePreferNoSchedule(n: NodeInfo, p: PodFacts): number {
  let count = 0;
  for (const t of n.taints) if (t.effect === 'PreferNoSchedule' && !taintTolerated(t, p.tolerations)) count++;
  return count;
}

/** NodeAffinity's raw score: the weights of the preferred terms the node matches. */
export function preferredAffinityWeight(n: NodeInfo, p: PodFacts): number {
  const prefs = p.pod?.spec?.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution;
  if (!Array.isArray(prefs)) return 0;
  let sum = 0;
  for (const pref of prefs) if (typeof pref?.weight === 'number' && pref.weight !== 0 && termMatches(pref.preference, n)) sum += pref.weight;
  return sum;
}

/** kube's default score weights of the plugins scored here */
const WEIGHT_RESOURCES = 1;
const WEIGHT_TAINTS = 3;
const WEIGHT_AFFINITY = 2;

/**
 * The feasible nodes' scores, as kube's framework sums them: NodeResourcesFit
 * (LeastAllocated), TaintToleration (PreferNoSchedule, normalized and reversed) and
 * NodeAffinity (preferred terms, normalized), each by its default weight.
 */
export function scoreNodes(nodes: NodeInfo[], p: PodFacts): number[] {
  const taints = nodes.map((n) => intolerablePreferNoSchedule(n, p));
  const affinity = nodes.map((n) => preferredAffinityWeight(n, p));
  const maxTaints = Math.max(0, ...taints);
  const maxAffinity = Math.max(0, ...affinity);
  return nodes.map((n, i) => {
    const t = maxTaints === 0 ? 100 : 100 - Math.floor((taints[i] * 100) / maxTaints);
    const a = maxAffinity <= 0 ? 0 : Math.floor((affinity[i] * 100) / maxAffinity);
    return WEIGHT_RESOURCES * leastAllocatedScore(n, p) + WEIGHT_TAINTS * t + WEIGHT_AFFINITY * a;
  });
}

/** kube's numFeasibleNodesToFind with the adaptive percentageOfNodesToScore. */
export function feasibleNodesToFind(all: number): number {
  if (all < 100) return all;
  const pct = Math.max(5, 50 - Math.floor(all / 125));
  return Math.max(100, Math.floor((all * pct) / 100));
}

function histogram(reasons: string[]): string {
  const counts = new Map<string, number>();
  for (const r of reasons) counts.set(r, (counts.get(r) ?? 0) + 1);
  return [...counts].map(([r, c]) => `${c} ${r}`).sort().join(', ');
}

/**
 * kube's FitError message: "0/N nodes are available: <count reason, ...>." and the
 * preemption plugin's part after it (this scheduler does not preempt: a node refused on
 * resources has no victims, one refused otherwise is not helped by preemption).
 */
export function fitErrorMessage(all: number, refusals: Refusal[]): string {
  const reasons = refusals.flatMap((r) => r.reasons);
  const preemption = refusals.map((r) => (r.resolvable ? 'No preemption victims found for incoming pod' : 'Preemption is not helpful for scheduling'));
  return `0/${all} nodes are available: ${histogram(reasons)}. preemption: 0/${all} nodes are available: ${histogram(preemption)}.`;
}
