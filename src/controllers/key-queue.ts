// A work queue of object keys for the workload controllers, with client-go workqueue's
// guarantees: a key queued many times is worked once, one key is never worked by two
// workers at once (a key queued while it is worked runs again after), failures are retried
// with a per-key backoff, and a key can be queued after a delay (kube's AddAfter).
//
// Thread ownership: the main thread (the controllers' thread); all state is this object's.

const BASE_RETRY_MS = 5;
const MAX_RETRY_MS = 30_000;

export class KeyQueue {
  private queue = new Set<string>();
  private inFlight = new Set<string>();
  private again = new Set<string>();
  private failures = new Map<string, number>();
  private timers = new Map<string, NodeJS.Timeout>();
  private active = 0;
  private stopped = false;

  constructor(
    private readonly work: (key: string) => Promise<void>,
    private readonly workers: number,
    private readonly log: (m: string) => void,
  ) {}

  add(key: string): void {
    if (this.stopped) return;
    if (this.inFlight.has(key)) {
      this.again.add(key);
      return;
    }
    this.queue.add(key);
    this.pump();
  }

  /** Queues key after ms (the earliest of several pending delays wins). */
  addAfter(key: string, ms: number): void {
    if (this.stopped) return;
    if (ms <= 0) return this.add(key);
    if (this.timers.has(key)) return;
    const t = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, ms);
    t.unref?.();
    this.timers.set(key, t);
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    this.queue.clear();
  }

  private pump(): void {
    while (!this.stopped && this.active < this.workers && this.queue.size > 0) {
      const key = this.queue.values().next().value as string;
      this.queue.delete(key);
      this.inFlight.add(key);
      this.active++;
      this.work(key)
        .then(
          () => this.failures.delete(key),
          (err) => {
            // client-go's item exponential backoff: 5 ms doubling, capped
            const n = (this.failures.get(key) ?? 0) + 1;
            this.failures.set(key, n);
            if (n <= 3 || n % 10 === 0) this.log(`${key}: ${(err as Error)?.message ?? err}`);
            this.addAfter(key, Math.min(MAX_RETRY_MS, BASE_RETRY_MS * 2 ** Math.min(n, 20)));
          },
        )
        .finally(() => {
          this.active--;
          this.inFlight.delete(key);
          if (this.again.delete(key)) this.queue.add(key);
          this.pump();
        });
    }
  }
}
