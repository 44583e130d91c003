// A bounded map whose entries expire (kube's utilcache.LRUExpireCache, as the webhook
// authorizer and the token cache use it): the oldest insertion goes first when full.
// Thread ownership: its owner's thread; no locking.
export class TtlCache<V> {
  private entries = new Map<string, { value: V; until: number }>();
  constructor(readonly max = 8192) {}

  get(key: string, now = Date.now()): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.until <= now) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  set(key: string, value: V, ttlMs: number, now = Date.now()): void {
    if (ttlMs <= 0) return;
    this.entries.delete(key);
    if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, until: now + ttlMs });
  }

  get size(): number {
    return this.entries.size;
  }
}
