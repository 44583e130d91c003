// The shard's TTL index (--event-ttl): expiry time -> key, for the group-resources whose
// objects expire a fixed time after their last write (Events). It is what an etcd lease is
// to kube-apiserver's Event registry (pkg/registry/core/event/storage: a TTL on every write,
// the key attached to a lease, etcd deleting it when the lease runs out): the shard worker
// asks it which keys are due, and deletes them as ordinary deletions, so that watchers see
// a DELETED event, as they do when etcd revokes a lease. Nothing is scanned: the entries are
// a min-heap on expiry time.
//
// Entries are never removed in place. Each write pushes a new entry; a later write or a
// deletion of the same key leaves the old entry behind, and due() drops it when it comes up
// (the key's current version is no longer the entry's). The heap holds at most one entry
// per write of the last TTL.
//
// Thread ownership: the shard worker thread that owns the key index (shard-worker.ts).

/** A key that is due: the version it held when its TTL started. */
export interface DueKey {
  gr: string;
  key: string;
  rv: number;
}

interface Entry extends DueKey {
  at: number;
}

export class TtlIndex {
  private heap: Entry[] = [];

  /** ttlMs: group-resource -> TTL in ms (only those with a TTL > 0) */
  constructor(private readonly ttlMs: ReadonlyMap<string, number>) {}

  /** Whether objects of gr expire. */
  expires(gr: string): boolean {
    return this.ttlMs.has(gr);
  }

  get size(): number {
    return this.heap.length;
  }

  /** The object of gr at key was written at version rv, at time ts (ms): its TTL starts again. */
  written(gr: string, key: string, rv: number, ts: number): void {
    const ttl = this.ttlMs.get(gr);
    if (ttl === undefined) return;
    this.push({ gr, key, rv, at: ts + ttl });
  }

  /** The time of the earliest entry (superseded ones included), or Infinity. */
  nextAt(): number {
    return this.heap.length ? this.heap[0].at : Infinity;
  }

  /**
   * The keys due at `now` that still hold the version their entry was made for (current:
   * the key's live version, undefined when none), at most `limit` of them. Superseded
   * entries are dropped on the way.
   */
  due(now: number, current: (gr: string, key: string) => number | undefined, limit: number): DueKey[] {
    const out: DueKey[] = [];
    while (this.heap.length && this.heap[0].at <= now && out.length < limit) {
      const e = this.pop();
      if (current(e.gr, e.key) === e.rv) out.push({ gr: e.gr, key: e.key, rv: e.rv });
    }
    return out;
  }

  /** Puts a due key back, to be tried again at `at` (its record was not readable yet). */
  retry(k: DueKey, at: number): void {
    this.push({ ...k, at });
  }

  private push(e: Entry): void {
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (h[p].at <= e.at) break;
      h[i] = h[p];
      i = p;
    }
    h[i] = e;
  }

  private pop(): Entry {
    const h = this.heap;
    const top = h[0];
    const last = h.pop()!;
    if (h.length) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= h.length) break;
        const r = l + 1;
        const c = r < h.length && h[r].at < h[l].at ? r : l;
        if (h[c].at >= last.at) break;
        h[i] = h[c];
        i = c;
      }
      h[i] = last;
    }
    return top;
  }
}
