// The server's watcher counts for the work estimator (kube's WatchTracker): how many
// watchers a write of a type in a namespace will notify, over every front thread. Each
// front thread keeps its own watchers (workers/watch/watcher-group.ts); a write on one
// thread is as wide as the watchers on all of them, so the counts live in one
// SharedArrayBuffer that the main thread makes and every front thread maps, changed with
// Atomics when a watcher comes or goes.
//
// Layout: SLOTS pairs of 32-bit words [key, count], open addressing from the key's hash.
// The key is a 31-bit FNV-1a hash of the counted thing, plus one (0 marks a free slot):
//   "<gr>\0*"      every watcher of the type (what a cluster-scoped write reaches)
//   "<gr>\0"       the type's watchers of all namespaces
//   "<gr>\0<ns>"   the type's watchers of one namespace
// Two things whose hashes collide share a count (an overestimate of one write's width, at
// odds of about one in 10^5 among a few thousand namespaces). Slots are never freed (a
// client can claim them with watches of made-up namespaces), so a lookup probes at most
// MAX_PROBES slots: a key that finds neither itself nor a free slot within them is not
// counted server-wide (interested() answers undefined, and the caller uses its thread's
// own count). Every write's estimate looks keys up: the probe bound keeps that cheap however
// full the table is.
//
// Thread ownership: the buffer is every front thread's, written only through Atomics.

const SLOTS = 1 << 16;
const MASK = SLOTS - 1;
/** the most slots one lookup probes (the table is full for a key beyond them) */
const MAX_PROBES = 64;

function keyHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return ((h >>> 1) | 0) + 1;
}

export class SharedWatchCounts {
  readonly sab: SharedArrayBuffer;
  private readonly words: Int32Array;
  /** the slot of each key this thread has looked up */
  private readonly slots = new Map<string, number>();

  constructor(sab?: SharedArrayBuffer) {
    this.sab = sab ?? new SharedArrayBuffer(SLOTS * 8);
    this.words = new Int32Array(this.sab);
  }

  /** A watcher of type gr came (+1) or went (-1): of namespace ns, or of all namespaces (''). */
  note(gr: string, ns: string, delta: number): void {
    const total = this.slot(`${gr}\0*`, true);
    if (total >= 0) Atomics.add(this.words, total + 1, delta);
    const one = this.slot(`${gr}\0${ns}`, true);
    if (one >= 0) Atomics.add(this.words, one + 1, delta);
  }

  /**
   * Watchers of type gr, on every thread, that a change in namespace ns reaches: all of the
   * type's for a cluster-scoped change (''), else its all-namespaces watchers and the
   * namespace's. Undefined when the table had no room for a key (count on the thread).
   */
  interested(gr: string, ns: string): number | undefined {
    if (ns === '') return this.count(`${gr}\0*`);
    const all = this.count(`${gr}\0`);
    const one = this.count(`${gr}\0${ns}`);
    return all === undefined || one === undefined ? undefined : all + one;
  }

  private count(key: string): number | undefined {
    const s = this.slot(key, false);
    if (s === -2) return 0;
    return s < 0 ? undefined : Atomics.load(this.words, s + 1);
  }

  /**
   * The word index of key's slot; without `claim`, -2 when the key has none (nobody counted
   * it: 0 watchers). -1: no room for it within MAX_PROBES.
   */
  private slot(key: string, claim: boolean): number {
    const known = this.slots.get(key);
    if (known !== undefined) return known;
    const h = keyHash(key);
    for (let i = 0; i < MAX_PROBES; i++) {
      const at = ((h + i) & MASK) * 2;
      let cur = Atomics.load(this.words, at);
      if (cur === 0) {
        if (!claim) return -2;
        cur = Atomics.compareExchange(this.words, at, 0, h);
        if (cur === 0) cur = h;
      }
      if (cur === h) {
        if (this.slots.size > 100_000) this.slots.clear();
        this.slots.set(key, at);
        return at;
      }
    }
    return -1;
  }
}
