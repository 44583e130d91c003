// KUBESHARD_COMMIT_STATS=1, the front's half: where a durable write's time goes between the
// handler's call to Coordinator.write and the acknowledgement, averaged per second (stderr).
// The shard prints its own half (group commits, writes per commit, fdatasync times).
//
//   queued    write() called → the batch posted to the shard (the rest of the event-loop turn)
//   to shard  posted → the shard starts the group commit that takes it (the port, and the
//             commit before it: the shard does one at a time)
//   commit    the group commit: records, log append, fdatasync
//   back      the shard's answer → the front applies it (the front's own queue)
//
// Why: the create scenario's latency is mostly waiting, not work; this says which wait.
// Thread ownership: front thread. Times are absolute (timeOrigin + now), since each thread's
// performance.now() has an origin of its own.

const now = (): number => performance.timeOrigin + performance.now();

export class WriteTrace {
  private readonly submitted = new Map<number, number>();
  private readonly posted = new Map<number, number>();
  private n = 0;
  private batches = 0;
  private queued = 0;
  private toShard = 0;
  private commit = 0;
  private back = 0;
  private timer: NodeJS.Timeout | null = null;

  static fromEnv(): WriteTrace | null {
    return process.env.KUBESHARD_COMMIT_STATS ? new WriteTrace() : null;
  }

  write(id: number): void {
    this.submitted.set(id, now());
    if (!this.timer) {
      this.timer = setInterval(() => this.print(), 1000);
      this.timer.unref();
    }
  }

  post(ids: Iterable<number>): void {
    const t = now();
    for (const id of ids) this.posted.set(id, t);
  }

  /** A commit message: t0 and t1 are when the shard began its group commit and when the log was durable. */
  committed(ids: Iterable<number>, t0: number, t1: number): void {
    const t = now();
    this.batches++;
    for (const id of ids) {
      const w = this.submitted.get(id);
      const p = this.posted.get(id);
      this.submitted.delete(id);
      this.posted.delete(id);
      if (w === undefined || p === undefined) continue;
      this.n++;
      this.queued += p - w;
      this.toShard += t0 - p;
      this.commit += t1 - t0;
      this.back += t - t1;
    }
  }

  private print(): void {
    if (this.n === 0) return;
    const ms = (v: number) => (v / this.n).toFixed(2);
    console.error(`front: ${this.n} writes/s in ${this.batches} commits; ms per write: queued ${ms(this.queued)}, to shard ${ms(this.toShard)}, commit ${ms(this.commit)}, back ${ms(this.back)}`);
    this.n = this.batches = this.queued = this.toShard = this.commit = this.back = 0;
  }
}
