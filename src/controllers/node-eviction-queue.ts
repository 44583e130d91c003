// The rate limits of taint-based eviction (kube's nodelifecycle/scheduler
// RateLimitedTimedQueue over client-go's token bucket): the node lifecycle controller keeps
// one queue per zone of nodes waiting for their NoExecute taint, and a pass every 100 ms
// taints as many as the zone's limiter lets through (--node-eviction-rate nodes per
// second, burst 1; the secondary rate or 0 while the zone is disrupted).
//
// A node stays in the queue's set after it was processed (as kube's UniqueQueue keeps it),
// so that later monitor passes do not queue it again; remove() forgets it (the node is
// reachable again, or its taint went away and it must be queued anew).
//
// Thread ownership: the main thread (leader controllers); no timers of its own.

/** A token bucket of `qps` tokens per second holding at most `burst`; it starts full. qps <= 0 never accepts. */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    readonly qps: number,
    readonly burst: number,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = qps > 0 ? burst : 0;
    this.last = now();
  }

  tryAccept(): boolean {
    if (this.qps <= 0) return false;
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.qps);
    this.last = t;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return true;
    }
    return false;
  }
}

/** kube's EvictionRateLimiterBurst */
export const EVICTION_BURST = 1;

interface Timed {
  value: string;
  uid: string;
  processAt: number;
  addedAt: number;
}

/** What a processed item answers: done, or retry after `retryMs`. */
export type TryResult = { ok: true } | { ok: false; retryMs: number };

export class RateLimitedTimedQueue {
  /** ordered by processAt (then by arrival) */
  private queue: Timed[] = [];
  /** every value added and not removed (processed ones included) */
  private set = new Set<string>();
  private limiter: TokenBucket;

  constructor(
    qps: number,
    private readonly now: () => number = Date.now,
  ) {
    this.limiter = new TokenBucket(qps, EVICTION_BURST, now);
  }

  get qps(): number {
    return this.limiter.qps;
  }

  get length(): number {
    return this.queue.length;
  }

  has(value: string): boolean {
    return this.set.has(value);
  }

  /** Queues value unless it is in the set already; true when it was added. */
  add(value: string, uid: string): boolean {
    if (this.set.has(value)) return false;
    const t = this.now();
    this.set.add(value);
    this.insert({ value, uid, processAt: t, addedAt: t });
    return true;
  }

  /** Forgets value (queued or processed); true when it was known. */
  remove(value: string): boolean {
    if (!this.set.delete(value)) return false;
    const i = this.queue.findIndex((x) => x.value === value);
    if (i >= 0) this.queue.splice(i, 1);
    return true;
  }

  clear(): void {
    this.queue = [];
    this.set.clear();
  }

  /**
   * Processes the queue's head while the limiter allows it and the head is due (kube's
   * Try: a token is taken before the head's time is looked at). A failed item goes back
   * with its new time; a done one leaves the queue and stays in the set.
   */
  try(fn: (value: string, uid: string, addedAt: number) => TryResult): void {
    while (this.queue.length) {
      if (!this.limiter.tryAccept()) return;
      const head = this.queue[0];
      const t = this.now();
      if (t < head.processAt) return;
      this.queue.shift();
      const r = fn(head.value, head.uid, head.addedAt);
      if (!r.ok) this.insert({ ...head, processAt: t + r.retryMs + 1 });
    }
  }

  /** A new rate (kube's SwapLimiter): 0 stops the queue; a waiting limiter's debt carries over. */
  swapLimiter(qps: number): void {
    if (this.limiter.qps === qps) return;
    const next = new TokenBucket(qps, EVICTION_BURST, this.now);
    if (qps > 0 && !this.limiter.tryAccept()) next.tryAccept();
    this.limiter = next;
  }

  private insert(item: Timed): void {
    let i = this.queue.length;
    while (i > 0 && this.queue[i - 1].processAt > item.processAt) i--;
    this.queue.splice(i, 0, item);
  }
}
