// State shared by the front thread and the shard workers through one SharedArrayBuffer.
// Every slot is written with Atomics so that reads on another thread are ordered.
//
//   [0]            the global resourceVersion counter (the coordinator's allocator)
//   [1 + 5i + 0]   shard i: the last resourceVersion it committed (durable in its log) and published
//   [1 + 5i + 1]   shard i: while it commits, a lower bound of every version it takes (0 when idle)
//   [1 + 5i + 2]   shard i: its compacted revision (history at or below it is gone)
//   [1 + 5i + 3]   shard i: the last version its LMDB B-tree holds (readable there; Atomics.notify on change)
//   [1 + 5i + 4]   shard i: bytes its B-tree is estimated to still need for records logged and
//                  not yet committed to it (workers/shard/space-guard.ts; every shard reads all)

const SLOTS = 5;

export class SharedState {
  readonly view: BigInt64Array;
  /** how many shards the buffer has slots for */
  readonly shardCount: number;
  constructor(readonly sab: SharedArrayBuffer) {
    this.view = new BigInt64Array(sab);
    this.shardCount = (this.view.length - 1) / SLOTS;
  }

  static create(shardCount: number): SharedState {
    return new SharedState(new SharedArrayBuffer(8 * (1 + SLOTS * shardCount)));
  }

  /** Takes the next resourceVersion. Called by a shard inside its commit, in commit order. */
  nextRv(): number {
    return Number(Atomics.add(this.view, 0, 1n)) + 1;
  }
  currentRv(): number {
    return Number(Atomics.load(this.view, 0));
  }
  /** Start-up only: no version may ever be handed out twice, even across restarts. */
  raiseRv(min: number): void {
    let cur = Atomics.load(this.view, 0);
    while (cur < BigInt(min)) {
      const prev = Atomics.compareExchange(this.view, 0, cur, BigInt(min));
      if (prev === cur) return;
      cur = prev;
    }
  }
  lastRv(shard: number): number {
    return Number(Atomics.load(this.view, 1 + SLOTS * shard));
  }
  setLastRv(shard: number, rv: number): void {
    Atomics.store(this.view, 1 + SLOTS * shard, BigInt(rv));
  }
  /** While shard i commits: no version it takes is below this. 0 when it holds no unpublished version. */
  pendingFrom(shard: number): number {
    return Number(Atomics.load(this.view, 2 + SLOTS * shard));
  }
  /** Called by the shard before it takes its first version of a batch, and with 0 after it published. */
  setPendingFrom(shard: number, from: number): void {
    Atomics.store(this.view, 2 + SLOTS * shard, BigInt(from));
  }
  compactedRv(shard: number): number {
    return Number(Atomics.load(this.view, 3 + SLOTS * shard));
  }
  setCompactedRv(shard: number, rv: number): void {
    Atomics.store(this.view, 3 + SLOTS * shard, BigInt(rv));
  }
  /** The last version readable from the shard's B-tree. */
  appliedRv(shard: number): number {
    return Number(Atomics.load(this.view, 4 + SLOTS * shard));
  }
  setAppliedRv(shard: number, rv: number): void {
    Atomics.store(this.view, 4 + SLOTS * shard, BigInt(rv));
    Atomics.notify(this.view, 4 + SLOTS * shard);
  }
  /**
   * Blocks this thread until the shard's B-tree holds rv, or timeoutMs passes. True when it
   * does. The wait is the B-tree's commit lag behind the log (normally a millisecond or two).
   */
  waitApplied(shard: number, rv: number, timeoutMs: number): boolean {
    const i = 4 + SLOTS * shard;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const cur = Atomics.load(this.view, i);
      if (Number(cur) >= rv) return true;
      const left = deadline - Date.now();
      if (left <= 0) return false;
      Atomics.wait(this.view, i, cur, left);
    }
  }
  treeDebt(shard: number): number {
    return Number(Atomics.load(this.view, 5 + SLOTS * shard));
  }
  setTreeDebt(shard: number, bytes: number): void {
    Atomics.store(this.view, 5 + SLOTS * shard, BigInt(Math.round(bytes)));
  }
}
