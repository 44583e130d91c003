// State shared by the front thread and the shard workers through one SharedArrayBuffer.
// Every slot is written with Atomics so that reads on another thread are ordered.
//
//   [0]            the global resourceVersion counter (the coordinator's allocator)
//   [1 + 3i + 0]   shard i: the last resourceVersion it committed and published
//   [1 + 3i + 1]   shard i: while it commits, a lower bound of every version it takes (0 when idle)
//   [1 + 3i + 2]   shard i: its compacted revision (history at or below it is gone)

export class SharedState {
  readonly view: BigInt64Array;
  constructor(readonly sab: SharedArrayBuffer) {
    this.view = new BigInt64Array(sab);
  }

  static create(shardCount: number): SharedState {
    return new SharedState(new SharedArrayBuffer(8 * (1 + 3 * shardCount)));
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
    return Number(Atomics.load(this.view, 1 + 3 * shard));
  }
  setLastRv(shard: number, rv: number): void {
    Atomics.store(this.view, 1 + 3 * shard, BigInt(rv));
  }
  /** While shard i commits: no version it takes is below this. 0 when it holds no unpublished version. */
  pendingFrom(shard: number): number {
    return Number(Atomics.load(this.view, 2 + 3 * shard));
  }
  /** Called by the shard before it takes its first version of a batch, and with 0 after it published. */
  setPendingFrom(shard: number, from: number): void {
    Atomics.store(this.view, 2 + 3 * shard, BigInt(from));
  }
  compactedRv(shard: number): number {
    return Number(Atomics.load(this.view, 3 + 3 * shard));
  }
  setCompactedRv(shard: number, rv: number): void {
    Atomics.store(this.view, 3 + 3 * shard, BigInt(rv));
  }
}
