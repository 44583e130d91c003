// ClusterRole aggregation (kube-controller-manager's clusterrole-aggregation controller): a
// ClusterRole with an aggregationRule gets as rules the union of the rules of every other
// ClusterRole its selectors match, taken in name order, each rule once. admin, edit and view
// are kept this way from the system:aggregate-to-* roles and any role a user labels
// rbac.authorization.k8s.io/aggregate-to-<role>: "true".
//
// Thread ownership: the front thread, driven by the cache layer's committed batches (Cacher.observe). A change
// to any ClusterRole schedules one pass over the aggregated roles (coalesced per tick); a
// role's rules are written only when they differ. Writes go through the store without a
// field manager hook, so they skip the escalation checks a client's write meets.
import type { Cacher } from '../storage/cacher.js';
import { StatusError } from '../errors.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import type { ResourceTarget, Store } from '../registry/store.js';
import { selectorMatches } from '../registry/label-selector.js';
import { setOwn } from '../registry/own-keys.js';

/** Key order aside, as stored objects may order a rule's fields differently from the source. */
function canonical(v: any): any {
  if (Array.isArray(v)) return v.map(canonical);
  if (v === null || typeof v !== 'object') return v;
  const out: any = {};
  for (const k of Object.keys(v).sort()) if (v[k] !== undefined) setOwn(out, k, canonical(v[k]));
  return out;
}

export class ClusterRoleAggregation {
  private stopped = false;
  private scheduled = false;
  private running: Promise<void> | null = null;
  private again = false;

  constructor(
    private store: Store,
    private cacher: Cacher,
    private t: ResourceTarget,
  ) {}

  async start(): Promise<void> {
    this.cacher.observe((cache) => {
      if (cache.gr === this.t.gr) this.schedule();
    });
    await this.syncAll();
  }

  stop(): void {
    this.stopped = true;
  }

  private schedule(): void {
    if (this.stopped || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.syncAll();
    });
  }

  /** One pass at a time; a change during a pass runs another after it. */
  async syncAll(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        const roles = [...this.store.cacheOf(this.t).items.values()].map((e) => entryObject(e)).filter((o) => o && !o.metadata?.deletionTimestamp);
        roles.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
        for (const role of roles) if (role.aggregationRule) await this.sync(role, roles);
      } while (this.again && !this.stopped);
    })();
    try {
      await this.running;
    } finally {
      this.running = null;
    }
  }

  private async sync(role: any, all: any[]): Promise<void> {
    const rules: any[] = [];
    const seen = new Set<string>();
    for (const sel of role.aggregationRule.clusterRoleSelectors ?? []) {
      for (const other of all) {
        if (other.metadata.name === role.metadata.name || !selectorMatches(sel, other.metadata.labels)) continue;
        for (const r of other.rules ?? []) {
          const k = JSON.stringify(canonical(r));
          if (seen.has(k)) continue;
          seen.add(k);
          rules.push(r);
        }
      }
    }
    if (JSON.stringify(canonical(role.rules ?? [])) === JSON.stringify(canonical(rules))) return;
    try {
      await this.store.guaranteedUpdate(this.t, '', role.metadata.name, { dryRun: false, subresource: '' }, (o) => {
        delete o.metadata.resourceVersion;
        o.rules = structuredClone(rules);
        return o;
      });
    } catch (e) {
      // gone or changed meanwhile: the change's own event brings another pass
      if (!(e instanceof StatusError)) console.warn(`W clusterrole aggregation: ${role.metadata.name}: ${e}`);
    }
  }
}
