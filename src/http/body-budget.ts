// The memory the request bodies in flight may hold together, across all requests of a front
// end: a body is charged from its first byte kept until its response has ended (the handler
// holds it until then). Bodies are read only after the filter chain admitted their request,
// so this bounds what authorized clients can pin at once; a body that does not fit is
// refused with 429 and Retry-After (errors.bodiesInFlight), which clients retry.
// kube-apiserver has no such budget (its handlers read bodies under the inflight seats).
//
// Thread ownership: the transport's thread (the one that runs its server); with several
// front threads (issue 18), the count is one slot of shared memory that all of them charge,
// so the bound holds for the process, not per thread.

export class BodyBudget {
  /** the bytes charged, in a slot of its own (shared by the front threads when given one) */
  private readonly slot: BigInt64Array;

  constructor(
    readonly limit: number,
    shared?: SharedArrayBuffer,
  ) {
    this.slot = new BigInt64Array(shared ?? new SharedArrayBuffer(8));
  }

  /** A buffer for a budget several threads share (pass it to each one's BodyBudget). */
  static sharedBuffer(): SharedArrayBuffer {
    return new SharedArrayBuffer(8);
  }

  /** bytes charged now */
  get used(): number {
    return Number(Atomics.load(this.slot, 0));
  }

  /** Charges n bytes if they fit: false (nothing charged) when they do not. */
  take(n: number): boolean {
    const add = BigInt(n);
    const limit = BigInt(this.limit);
    let cur = Atomics.load(this.slot, 0);
    for (;;) {
      if (cur + add > limit) return false;
      const prev = Atomics.compareExchange(this.slot, 0, cur, cur + add);
      if (prev === cur) return true;
      cur = prev;
    }
  }

  /** Charges bytes already in memory (they arrived before the request was admitted). */
  force(n: number): void {
    Atomics.add(this.slot, 0, BigInt(n));
  }

  give(n: number): void {
    Atomics.sub(this.slot, 0, BigInt(n));
  }
}
