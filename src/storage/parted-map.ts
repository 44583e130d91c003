// A Map split into parts by a cheap hash of the key's last characters. One JavaScript Map of
// every object of a type rehashes all its entries each time it doubles: ≈ 19 ms at 524,288
// keys and 63 ms at 1,048,576 on this machine, a stall of the thread that owns it (the
// front thread's watch cache, a shard worker's key index) long enough to set a create
// load's p99. In 64 parts each rehash moves a sixty-fourth of the entries. Iteration is
// part by part (no global insertion order; none of its users relies on one).
//
// Thread ownership: the thread that owns the structure holding it.

const PARTS = 64;

/** The part of a key: its last three UTF-16 units mixed (object names end in their varying part: generated suffixes, counters). */
function partOf(key: string): number {
  const n = key.length;
  return ((key.charCodeAt(n - 1) | 0) * 961 + (key.charCodeAt(n - 2) | 0) * 31 + (key.charCodeAt(n - 3) | 0)) & (PARTS - 1);
}

export class PartedMap<V> {
  private readonly parts: Array<Map<string, V> | undefined> = new Array(PARTS);
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(key: string): V | undefined {
    return this.parts[partOf(key)]?.get(key);
  }

  has(key: string): boolean {
    return this.parts[partOf(key)]?.has(key) ?? false;
  }

  set(key: string, value: V): this {
    const i = partOf(key);
    let m = this.parts[i];
    if (!m) this.parts[i] = m = new Map();
    const before = m.size;
    m.set(key, value);
    this.count += m.size - before;
    return this;
  }

  delete(key: string): boolean {
    const m = this.parts[partOf(key)];
    if (!m || !m.delete(key)) return false;
    this.count--;
    return true;
  }

  *values(): IterableIterator<V> {
    for (const m of this.parts) if (m) yield* m.values();
  }
}
