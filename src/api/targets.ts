// Resolves a request's group/version/resource to the target the store works on: the
// catalog's facts plus the kind's strategy. Built once per resource and cached.
import type { Catalog } from './catalog.js';
import type { StrategyRegistry } from '../registry/strategies.js';
import type { ResourceTarget } from '../registry/store.js';
import { conversionOf } from '../registry/conversion.js';

export function groupResourceKey(group: string, resource: string): string {
  return group ? `${resource}.${group}` : resource;
}

export class Targets {
  private cache = new Map<string, ResourceTarget | null>();
  constructor(
    private catalog: Catalog,
    private strategies: StrategyRegistry,
  ) {}

  resolve(group: string, version: string, resource: string): ResourceTarget | undefined {
    const k = `${group}/${version}/${resource}`;
    let t = this.cache.get(k);
    if (t === undefined) {
      const info = this.catalog.lookup(group, version, resource);
      if (!info) t = null;
      else {
        const { strategy, nameRule } = this.strategies.get(group, resource);
        // Every version of a group-resource shares one storage (kube's storage version);
        // a version that is not it converts at the store's edges.
        const own = groupResourceKey(group, resource);
        const conv = conversionOf(info);
        t = {
          info,
          gr: info.storageResource ?? own,
          ...(conv ? { conv, selectorGr: own } : {}),
          groupResource: { group, resource },
          strategy,
          nameRule,
          hasStatus: info.subresources.some((s) => s.name === 'status'),
        };
      }
      this.cache.set(k, t);
    }
    return t ?? undefined;
  }

  /** The preferred-version target of a group-resource (for controllers that walk every type). */
  preferred(group: string, resource: string): ResourceTarget | undefined {
    const v = this.catalog.preferredVersion(group);
    return v ? this.resolve(group, v, resource) : undefined;
  }
}
