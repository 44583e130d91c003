// The scheduler's active queue: a binary heap of pending pods, higher spec.priority first,
// then in order of arrival (kube-scheduler's PrioritySort queue sort).
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
