// The leases that expiring objects (--event-ttl: Events) are written with on etcd, as kube's
// etcd3 store does (apiserver/pkg/storage/etcd3/lease_manager.go): a lease grant is costly
// for etcd, so one lease is shared by the writes of a short window. A write asking for a TTL
// reuses the last lease granted while that lease still outlives the TTL and expires no later
// than the TTL plus the reuse margin (5% of the TTL, at most 60 s: kube's defaults) and has
// not carried more than maxObjects writes (kube 1.33's LeaseMaxObjectCount, 1000); else a
// new lease of TTL + margin is granted. So an object outlives its TTL by at most the margin,
// never expires before it, and etcd deletes the key when the lease runs out (a DELETE on
// the watch, which the feed hands on as any deletion).
//
// Thread ownership: the thread of the EtcdStorage that owns it (one per instance, as one per
// kube-apiserver); concurrent callers of one turn share one grant.

export interface LeaseGranter {
  leaseGrant(ttlSeconds: number): Promise<{ id: string; ttl: number }>;
}

export class LeaseManager {
  private prevId = '';
  /** when the last lease granted expires (ms since the epoch, measured from before its grant) */
  private prevExpiresAt = 0;
  private prevObjects = 0;
  /** a grant in flight: callers meanwhile wait for it rather than ask for another */
  private granting: Promise<string> | null = null;

  constructor(
    private readonly client: LeaseGranter,
    private readonly reuseSeconds = 60,
    private readonly reusePercent = 0.05,
    private readonly maxObjects = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  /** A lease ID (decimal) for a write whose key must expire ttlSeconds from now. */
  async leaseFor(ttlSeconds: number): Promise<string> {
    for (;;) {
      const now = this.now();
      const margin = this.margin(ttlSeconds);
      const outlives = now + ttlSeconds * 1000 < this.prevExpiresAt;
      const soonEnough = now + (ttlSeconds + margin) * 1000 >= this.prevExpiresAt;
      if (this.prevId && outlives && soonEnough && this.prevObjects < this.maxObjects) {
        this.prevObjects++;
        return this.prevId;
      }
      if (this.granting) {
        // (the new lease may suit this caller too: checked again once it is there)
        await this.granting.catch(() => undefined);
        continue;
      }
      const granted = ttlSeconds + margin;
      this.granting = this.client.leaseGrant(granted).then(
        (r) => {
          this.prevId = r.id;
          this.prevExpiresAt = now + granted * 1000;
          // (the granting write is its first object; it takes it whatever the checks say)
          this.prevObjects = 1;
          this.granting = null;
          return r.id;
        },
        (e) => {
          this.granting = null;
          throw e;
        },
      );
      return this.granting;
    }
  }

  private margin(ttlSeconds: number): number {
    return Math.min(this.reuseSeconds, Math.floor(this.reusePercent * ttlSeconds));
  }
}
