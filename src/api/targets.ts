// Resolves a request's group/version/resource to the target the store works on: the
// catalog's facts plus the kind's strategy. Built once per resource and cached.
import type { Catalog } from './catalog.js';
import type { StrategyRegistry } from '../registry/strategies.js';
import type { ResourceTarget } from '../registry/store.js';
import { conversionOf } from '../registry/conversion.js';

export function groupResourceKey(group: string, resource: string): string {
  return group ? `${resource}.${group}` : resource;
}

/** A strategy for a resource the catalog learned at run time (custom resources), or undefined. */
export type DynamicStrategies = (group: string, version: string, resource: string) => { strategy: import('../registry/strategy.js').Strategy; nameRule: ResourceTarget['nameRule'] } | undefined;

export class Targets {
  private cache = new Map<string, Map<string, Map<string, ResourceTarget | null>>>();
  private dynamic?: DynamicStrategies;
  private generation = -1;
  constructor(
    private catalog: Catalog,
    private strategies: StrategyRegistry,
  ) {}

  /** Custom resources' strategies (src/registry/crd/crd-controller.ts). */
  setDynamic(fn: DynamicStrategies): void {
    this.dynamic = fn;
    this.cache.clear();
  }

  resolve(group: string, version: string, resource: string): ResourceTarget | undefined {
    // The served set changed (a CRD came or went): resolve everything afresh.
    if (this.generation !== this.catalog.generation) {
      this.generation = this.catalog.generation;
      this.cache.clear();
    }
    // Nested by group, version and resource: three lookups of the path's own segments cost
    // less than building (and hashing) one joined key per request.
    let byVersion = this.cache.get(group);
    if (!byVersion) this.cache.set(group, (byVersion = new Map()));
    let byResource = byVersion.get(version);
    if (!byResource) byVersion.set(version, (byResource = new Map()));
    let t = byResource.get(resource);
    if (t === undefined) {
      const info = this.catalog.lookup(group, version, resource);
      if (!info) t = null;
      else {
        const { strategy, nameRule } = this.dynamic?.(group, version, resource) ?? this.strategies.get(group, resource);
        // Every version of a group-resource shares one storage (kube's storage version);
        // a version that is not it converts at the store's edges.
        const own = groupResourceKey(group, resource);
        const conv = conversionOf(info);
        t = {
          info,
          gr: info.storageResource ?? own,
          ...(conv ? { conv, selectorGr: own } : {}),
          // a custom resource's field labels are its version's selectableFields
          ...(info.custom ? { selectorGr: `${own}@${version}` } : {}),
          groupResource: { group, resource },
          strategy,
          nameRule,
          hasStatus: info.subresources.some((s) => s.name === 'status'),
        };
      }
      byResource.set(resource, t);
    }
    return t ?? undefined;
  }

  /** The preferred-version target of a group-resource (for controllers that walk every type). */
  preferred(group: string, resource: string): ResourceTarget | undefined {
    const v = this.catalog.preferredVersion(group);
    return v ? this.resolve(group, v, resource) : undefined;
  }
}
