// apiserver_storage_objects for a backend that can count in storage (etcd): every poll
// period, each known group-resource's objects are counted there, as kube-apiserver's storage
// counts each resource every --etcd-count-metric-poll-period. A count that fails is -1, as
// kube reports it. (The LMDB backend's counts come from the caches, which hold every object.)
//
// Thread ownership: the main thread's (apiserver_storage_objects is process-wide); its timer
// and counts are that thread's.

export class StorageObjectCounts {
  private readonly last = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(
    private readonly count: (gr: string) => Promise<number>,
    /** the group-resources to count (those the server knows of now) */
    private readonly grs: () => Iterable<string>,
    private readonly periodMs: number,
  ) {}

  /** Counts once now, then every period (none with period 0: the metric stays empty). */
  start(): void {
    if (!(this.periodMs > 0)) return;
    void this.poll();
    this.timer = setInterval(() => void this.poll(), this.periodMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * One group-resource's last count: undefined when never counted; a count that failed is
   * taken as a huge one (kube's work estimator charges a stale count the most).
   */
  countOf(gr: string): number | undefined {
    const n = this.last.get(gr);
    return n === undefined ? undefined : n < 0 ? 1e9 : n;
  }

  /** The last counts, by group-resource. */
  counts(): Array<[string, number]> {
    return [...this.last];
  }

  /** One round; a round still running when the next is due is not overlapped. */
  async poll(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await Promise.all(
        [...this.grs()].map(async (gr) => {
          try {
            this.last.set(gr, await this.count(gr));
          } catch {
            this.last.set(gr, -1);
          }
        }),
      );
    } finally {
      this.running = false;
    }
  }
}
