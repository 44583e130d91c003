// The shard worker's key index: "gr\nkey" -> version of the live object, for the writes'
// preconditions (etcd's kvindex). Absent means no live object.
//
// The keys loaded at start-up stay in sorted arrays per type, found by binary search; only
// the keys written since are in a Map. Why: a Map of a million keys costs more to build (its
// growth, and the garbage of its outgrown tables) than the scan that finds them, and more
// memory than the arrays; lookups of loaded keys cost a binary search instead of a hash.
//
// Thread ownership: the shard worker alone.

interface LoadedType {
  /** sorted, no duplicates */
  keys: string[];
  rvs: Float64Array;
}

export class KeyIndex {
  private loaded = new Map<string, LoadedType>();
  /** changes since the load: the version, or 0 once the key was deleted */
  private changed = new Map<string, number>();

  get(ik: string): number | undefined {
    const c = this.changed.get(ik);
    if (c !== undefined) return c === 0 ? undefined : c;
    if (this.loaded.size === 0) return undefined;
    const nl = ik.indexOf('\n');
    const t = this.loaded.get(ik.slice(0, nl));
    if (!t) return undefined;
    const key = ik.slice(nl + 1);
    const keys = t.keys;
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (keys[mid] < key) lo = mid + 1;
      else hi = mid;
    }
    return lo < keys.length && keys[lo] === key ? t.rvs[lo] : undefined;
  }

  set(ik: string, rv: number): void {
    this.changed.set(ik, rv);
  }

  delete(ik: string): void {
    if (this.loaded.size === 0) this.changed.delete(ik);
    else this.changed.set(ik, 0);
  }

  /**
   * Start-up: one type's keys and versions. Sorted by key, with each key once, they are
   * taken as they are; else (a scan of the store, in version order) they are sorted here,
   * the newest version of a key winning and deleted keys (rv 0) dropped.
   */
  load(gr: string, keys: string[], rvs: ArrayLike<number>): void {
    let sorted = true;
    for (let i = 1; i < keys.length && sorted; i++) if (keys[i - 1] >= keys[i]) sorted = false;
    let out: LoadedType;
    if (sorted) {
      out = { keys, rvs: Float64Array.from(rvs) };
    } else {
      const order = new Int32Array(keys.length);
      for (let i = 0; i < order.length; i++) order[i] = i;
      order.sort((a, b) => (keys[a] < keys[b] ? -1 : keys[a] > keys[b] ? 1 : a - b));
      const k: string[] = [];
      const r: number[] = [];
      for (let n = 0; n < order.length; n++) {
        const i = order[n];
        if (n + 1 < order.length && keys[order[n + 1]] === keys[i]) continue;
        if (rvs[i] === 0) continue;
        k.push(keys[i]);
        r.push(rvs[i]);
      }
      out = { keys: k, rvs: Float64Array.from(r) };
    }
    if (this.loaded.has(gr)) throw new Error(`key index: ${gr} loaded twice`);
    this.loaded.set(gr, out);
  }
}
