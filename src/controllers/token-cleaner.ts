// The token cleaner (kube-controller-manager's bootstrap TokenCleaner, off by default as
// there: --controllers=*,tokencleaner): bootstrap-token Secrets in kube-system whose
// `expiration` has passed are deleted, each at its expiry (a timer per Secret), with the
// Secret's uid as the delete's precondition so a re-created Secret is left alone.
//
// Thread ownership: the main thread (leader controllers), driven by the secrets cache (Cacher.observe).
import type { Cacher } from '../storage/cacher.js';
import { entryObject, type CacheEntry } from '../../workers/watch/watch-cache.js';
import type { ResourceTarget, Store } from '../registry/store.js';
import { BOOTSTRAP_TOKEN_SECRET_TYPE, bootstrapSecretExpired, secretValue } from '../auth/bootstrap-token.js';

const NS = 'kube-system';
const MAX_TIMER_MS = 2 ** 31 - 1;

export class TokenCleaner {
  private timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private store: Store,
    private cacher: Cacher,
    private secrets: ResourceTarget,
  ) {}

  start(): void {
    for (const e of this.store.cacheOf(this.secrets).items.values()) this.track(e, false);
    this.cacher.observe((cache, evs) => {
      if (cache.gr !== this.secrets.gr) return;
      for (const ev of evs) this.track(ev.entry, ev.type === 'DELETED');
    });
  }

  stop(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  private track(e: CacheEntry, gone: boolean): void {
    if (e.ns !== NS) return;
    const had = this.timers.get(e.name);
    if (had) {
      clearTimeout(had);
      this.timers.delete(e.name);
    }
    if (gone) return;
    const s = entryObject(e);
    if (!s || s.type !== BOOTSTRAP_TOKEN_SECRET_TYPE || s.metadata?.deletionTimestamp) return;
    const exp = secretValue(s, 'expiration');
    if (!exp) return;
    const at = Date.parse(exp);
    const delay = bootstrapSecretExpired(s) ? 0 : Math.min(MAX_TIMER_MS, Math.max(0, at - Date.now()));
    const uid: string = s.metadata.uid;
    const timer = setTimeout(() => {
      this.timers.delete(e.name);
      this.store.delete(this.secrets, NS, e.name, { dryRun: false, preconditions: { uid } }).catch(() => undefined);
    }, delay);
    timer.unref?.();
    this.timers.set(e.name, timer);
  }
}
