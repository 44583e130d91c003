// A small work queue of names, the shape kube's aggregator controllers share: a name added
// is synced soon (once at a time per name, again if added meanwhile); a failed sync is
// retried after a growing delay (kube's rate-limited requeue); every name is synced again
// each period (the informer resync that catches what no event tells, such as a backend
// that went away).
//
// Thread ownership: the thread that made it (timers on its event loop).
export interface ResyncQueueOptions {
  periodMs: number;
  /** the names resynced each period */
  keys: () => Iterable<string>;
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

export class ResyncQueue {
  private running = new Set<string>();
  private again = new Set<string>();
  private failures = new Map<string, number>();
  private retryTimers = new Map<string, NodeJS.Timeout>();
  private periodic?: NodeJS.Timeout;
  private stopped = false;

  /** sync resolves true when the name is done, false (or rejects) to retry it later */
  constructor(
    private sync: (key: string) => Promise<boolean>,
    private opts: ResyncQueueOptions,
  ) {}

  start(): void {
    for (const k of this.opts.keys()) this.add(k);
    this.periodic = setInterval(() => {
      for (const k of this.opts.keys()) this.add(k);
    }, this.opts.periodMs);
    this.periodic.unref();
  }

  add(key: string): void {
    if (this.stopped) return;
    if (this.running.has(key)) {
      this.again.add(key);
      return;
    }
    const t = this.retryTimers.get(key);
    if (t) {
      clearTimeout(t);
      this.retryTimers.delete(key);
    }
    this.running.add(key);
    setImmediate(() => void this.run(key));
  }

  private async run(key: string): Promise<void> {
    let ok = false;
    try {
      ok = await this.sync(key);
    } catch (e) {
      console.warn(`W ${(e as Error).message}`);
    }
    this.running.delete(key);
    if (this.stopped) return;
    if (this.again.delete(key)) return this.add(key);
    if (ok) {
      this.failures.delete(key);
      return;
    }
    const n = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, n);
    const delay = Math.min((this.opts.minBackoffMs ?? 100) * 2 ** (n - 1), this.opts.maxBackoffMs ?? 30_000);
    const timer = setTimeout(() => {
      this.retryTimers.delete(key);
      this.add(key);
    }, delay);
    timer.unref();
    this.retryTimers.set(key, timer);
  }

  stop(): void {
    this.stopped = true;
    if (this.periodic) clearInterval(this.periodic);
    for (const t of this.retryTimers.values()) clearTimeout(t);
    this.retryTimers.clear();
  }
}
