// The scheduler's queue of pending pods (kube-scheduler's scheduling_queue.go): the
// active queue, a binary heap of pods to try, higher spec.priority first, then in order of
// arrival (the PrioritySort plugin); the pods in backoff after a failed try (1 s doubling
// to 10 s); the unschedulable ones, back in play when the cluster changes in a way that may
// let them in (moveAllUnschedulable) or after five minutes.
//
// Thread ownership: the main thread (the scheduler that owns it).

export interface Queued {
  key: string;
  priority: number;
  seq: number;
}

function before(a: Queued, b: Queued): boolean {
  return a.priority !== b.priority ? a.priority > b.priority : a.seq < b.seq;
}

export class ActiveQueue {
  private heap: Queued[] = [];
  private keys = new Set<string>();

  get size(): number {
    return this.heap.length;
  }

  has(key: string): boolean {
    return this.keys.has(key);
  }

  push(q: Queued): void {
    if (this.keys.has(q.key)) return;
    this.keys.add(q.key);
    const h = this.heap;
    h.push(q);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(h[i], h[p])) break;
      [h[i], h[p]] = [h[p], h[i]];
      i = p;
    }
  }

  pop(): Queued | undefined {
    const h = this.heap;
    if (h.length === 0) return undefined;
    const top = h[0];
    const last = h.pop()!;
    if (h.length) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && before(h[l], h[m])) m = l;
        if (r < h.length && before(h[r], h[m])) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]];
        i = m;
      }
    }
    this.keys.delete(top.key);
    return top;
  }

  /** Lazy removal: the key is forgotten; its heap entry is skipped when popped. */
  forget(key: string): void {
    this.keys.delete(key);
  }

  /** pops until an entry still wanted comes out */
  popLive(): Queued | undefined {
    for (;;) {
      const h = this.heap;
      if (h.length === 0) return undefined;
      const wanted = this.keys.has(h[0].key);
      const q = this.pop();
      if (wanted) return q;
    }
  }
}

const INITIAL_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 10_000;
/** kube's podMaxInUnschedulablePodsDuration */
const MAX_UNSCHEDULABLE_MS = 5 * 60_000;
/** how often unschedulable pods are looked at for that duration (kube: 30 s) */
const UNSCHEDULABLE_FLUSH_MS = 30_000;

export interface Pending {
  priority: number;
  seq: number;
  attempts: number;
  state: 'active' | 'backoff' | 'unschedulable' | 'binding';
  lastAttemptAt: number;
  unschedulableSince: number;
  /** the last FailedScheduling message recorded */
  lastMessage: string;
  /** the spec as last seen: a change may let an unschedulable pod in */
  specSig: string;
}

export class SchedulingQueue {
  private pending = new Map<string, Pending>();
  private active = new ActiveQueue();
  private backoff = new Set<string>();
  private unschedulable = new Set<string>();
  private seq = 0;
  private lastFlush = 0;

  constructor(
    /** called when a pod becomes active */
    private readonly onActive: () => void,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.pending.size;
  }

  get activeSize(): number {
    return this.active.size;
  }

  get unschedulableSize(): number {
    return this.unschedulable.size;
  }

  get(key: string): Pending | undefined {
    return this.pending.get(key);
  }

  /** A pending pod seen: a new one goes to the active queue; a changed spec brings an unschedulable one back. */
  addOrUpdate(key: string, priority: number, specSig: string): void {
    const p = this.pending.get(key);
    if (!p) {
      const np: Pending = { priority, seq: this.seq++, attempts: 0, state: 'active', lastAttemptAt: 0, unschedulableSince: 0, lastMessage: '', specSig };
      this.pending.set(key, np);
      this.active.push({ key, priority, seq: np.seq });
      this.onActive();
    } else if (p.specSig !== specSig) {
      p.specSig = specSig;
      if (p.state === 'unschedulable') this.requeue(key, p);
    }
  }

  forget(key: string): void {
    if (!this.pending.delete(key)) return;
    this.active.forget(key);
    this.backoff.delete(key);
    this.unschedulable.delete(key);
  }

  /** The next pod to try (marked as tried now), or undefined. */
  pop(): [string, Pending] | undefined {
    for (;;) {
      const q = this.active.popLive();
      if (!q) return undefined;
      const p = this.pending.get(q.key);
      if (!p || p.state !== 'active') continue;
      p.attempts++;
      p.lastAttemptAt = this.now();
      return [q.key, p];
    }
  }

  markUnschedulable(key: string, p: Pending): void {
    p.state = 'unschedulable';
    if (!p.unschedulableSince) p.unschedulableSince = this.now();
    this.unschedulable.add(key);
  }

  /** A try that failed for another reason than the cluster (a binding error): retried after backoff. */
  markBackoff(key: string, p: Pending): void {
    if (this.pending.get(key) !== p) return;
    p.state = 'backoff';
    this.backoff.add(key);
  }

  /** The cluster changed in a way that may let unschedulable pods in: each back, after its backoff. */
  moveAllUnschedulable(): void {
    for (const key of [...this.unschedulable]) {
      const p = this.pending.get(key);
      if (p) this.requeue(key, p);
      else this.unschedulable.delete(key);
    }
  }

  /** Every second: pods whose backoff is over become active; every 30 s, those unschedulable for 5 minutes. */
  flush(): void {
    const t = this.now();
    for (const key of [...this.backoff]) {
      const p = this.pending.get(key);
      if (!p) this.backoff.delete(key);
      else if (p.lastAttemptAt + backoffMs(p) <= t) this.requeue(key, p);
    }
    if (t - this.lastFlush >= UNSCHEDULABLE_FLUSH_MS) {
      this.lastFlush = t;
      for (const key of [...this.unschedulable]) {
        const p = this.pending.get(key);
        if (p && t - p.unschedulableSince >= MAX_UNSCHEDULABLE_MS) this.requeue(key, p);
      }
    }
  }

  private requeue(key: string, p: Pending): void {
    this.unschedulable.delete(key);
    if (p.attempts > 0 && p.lastAttemptAt + backoffMs(p) > this.now()) {
      p.state = 'backoff';
      this.backoff.add(key);
      return;
    }
    p.state = 'active';
    this.backoff.delete(key);
    this.active.push({ key, priority: p.priority, seq: p.seq });
    this.onActive();
  }
}

function backoffMs(p: Pending): number {
  return Math.min(MAX_BACKOFF_MS, INITIAL_BACKOFF_MS * 2 ** Math.max(0, p.attempts - 1));
}
