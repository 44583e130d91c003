// Taints and tolerations as kube's core/v1 helpers read them (Toleration.ToleratesTaint,
// GetMatchingTolerations, FindMatchingUntoleratedTaint), shared by the scheduler's
// TaintToleration filter and the taint eviction controller.
//
// Thread ownership: none (pure functions).

export interface Taint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}

export interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
  tolerationSeconds?: number;
}

export const TAINT_NOT_READY = 'node.kubernetes.io/not-ready';
export const TAINT_UNREACHABLE = 'node.kubernetes.io/unreachable';
export const TAINT_UNSCHEDULABLE = 'node.kubernetes.io/unschedulable';
export const TAINT_MEMORY_PRESSURE = 'node.kubernetes.io/memory-pressure';
export const TAINT_DISK_PRESSURE = 'node.kubernetes.io/disk-pressure';
export const TAINT_PID_PRESSURE = 'node.kubernetes.io/pid-pressure';
export const TAINT_NETWORK_UNAVAILABLE = 'node.kubernetes.io/network-unavailable';

export function taintsOf(node: any): Taint[] {
  const t = node?.spec?.taints;
  return Array.isArray(t) ? t.filter((x: any) => x && typeof x === 'object' && typeof x.key === 'string') : [];
}

export function tolerationsOf(pod: any): Toleration[] {
  const t = pod?.spec?.tolerations;
  return Array.isArray(t) ? t.filter((x: any) => x && typeof x === 'object') : [];
}

/** Whether the toleration covers the taint: effect (empty: all), key (empty with Exists: all), value by operator. */
export function toleratesTaint(tol: Toleration, taint: Taint): boolean {
  if (tol.effect && tol.effect !== taint.effect) return false;
  if (tol.key && tol.key !== taint.key) return false;
  switch (tol.operator || 'Equal') {
    case 'Exists':
      return true;
    case 'Equal':
      return (tol.value ?? '') === (taint.value ?? '');
    default:
      return false;
  }
}

export function taintTolerated(taint: Taint, tols: Toleration[]): boolean {
  return tols.some((t) => toleratesTaint(t, taint));
}

/** The first taint (of those `which` keeps) no toleration covers. */
export function firstUntoleratedTaint(taints: Taint[], tols: Toleration[], which: (t: Taint) => boolean): Taint | undefined {
  return taints.find((t) => which(t) && !taintTolerated(t, tols));
}

/**
 * kube's GetMatchingTolerations: whether every taint is tolerated, and the toleration
 * that covers each (the first that does).
 */
export function matchingTolerations(taints: Taint[], tols: Toleration[]): { all: boolean; used: Toleration[] } {
  const used: Toleration[] = [];
  for (const taint of taints) {
    const t = tols.find((x) => toleratesTaint(x, taint));
    if (!t) return { all: false, used: [] };
    used.push(t);
  }
  return { all: true, used };
}

/**
 * kube's getMinTolerationTime, in ms: 0 (evict now) when there are no tolerations or one
 * has a tolerationSeconds of 0 or less; -1 when none sets tolerationSeconds (tolerated
 * forever); otherwise the shortest tolerationSeconds.
 */
export function minTolerationMs(used: Toleration[]): number {
  if (used.length === 0) return 0;
  let min = Infinity;
  for (const t of used) {
    if (typeof t.tolerationSeconds !== 'number') continue;
    if (t.tolerationSeconds <= 0) return 0;
    min = Math.min(min, t.tolerationSeconds);
  }
  return min === Infinity ? -1 : min * 1000;
}

export function sameTaint(a: Taint, b: Taint): boolean {
  return a.key === b.key && a.effect === b.effect;
}
