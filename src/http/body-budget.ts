// The memory the request bodies in flight may hold together, across all requests of a front
// end: a body is charged from its first byte kept until its response has ended (the handler
// holds it until then). Bodies are read only after the filter chain admitted their request,
// so this bounds what authorized clients can pin at once; a body that does not fit is
// refused with 429 and Retry-After (errors.bodiesInFlight), which clients retry.
// kube-apiserver has no such budget (its handlers read bodies under the inflight seats).
//
// Thread ownership: the transport's thread (the one that runs its server).

export class BodyBudget {
  /** bytes charged now */
  used = 0;

  constructor(readonly limit: number) {}

  /** Charges n bytes if they fit: false (nothing charged) when they do not. */
  take(n: number): boolean {
    if (this.used + n > this.limit) return false;
    this.used += n;
    return true;
  }

  /** Charges bytes already in memory (they arrived before the request was admitted). */
  force(n: number): void {
    this.used += n;
  }

  give(n: number): void {
    this.used -= n;
  }
}
