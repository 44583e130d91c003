// matchPolicy: Equivalent (kube's EquivalentResourceMapper, runtime.EquivalentResourceRegistry):
// resources are equivalent when they are served from the same storage (the versions of one
// group-resource, and core/v1 events with events.k8s.io events), and a hook whose rules name
// another version is called with the object converted to that version. Built-in kinds come
// from the catalog (every served version, CustomResourceDefinitions' too when the server's
// Catalog is given), else from the built-in data plus the CRDs in the cache.
//
// Thread ownership: the front thread (memoized tables, rebuilt when the CRDs change).
import type { GroupVersionInfo, ResourceInfo } from '../../api/catalog-types.js';
import { catalogData } from '../../api/catalog-data.js';
import { conversionOf } from '../../registry/conversion.js';
import type { GroupVersionKind, GroupVersionResource, ObjectSource } from '../plugin.js';

/** What the mapper reads: the served group-versions (Catalog.servedGroupVersions). */
export interface ServedGroupVersions {
  servedGroupVersions(): GroupVersionInfo[];
  /** bumped when the served set changes */
  generation?: number;
}

const gvrKey = (r: GroupVersionResource) => `${r.group}/${r.version}/${r.resource}`;
const storageKey = (i: ResourceInfo) => i.storageResource ?? (i.group ? `${i.resource}.${i.group}` : i.resource);

interface Table {
  byGvr: Map<string, ResourceInfo>;
  byStorage: Map<string, ResourceInfo[]>;
}

function tableOf(infos: Iterable<ResourceInfo>): Table {
  const byGvr = new Map<string, ResourceInfo>();
  const byStorage = new Map<string, ResourceInfo[]>();
  for (const i of infos) {
    byGvr.set(gvrKey(i), i);
    const k = storageKey(i);
    const list = byStorage.get(k);
    if (list) list.push(i);
    else byStorage.set(k, [i]);
  }
  return { byGvr, byStorage };
}

function* builtinInfos(): Iterable<ResourceInfo> {
  for (const gv of catalogData) if (gv.enabledByDefault) yield* gv.resources;
}

/** ResourceInfo-like records of a stored CustomResourceDefinition's served versions (enough to map and convert). */
function* crdInfos(crd: any): Iterable<ResourceInfo> {
  const spec = crd?.spec;
  if (!spec || typeof spec.group !== 'string' || typeof spec.names?.plural !== 'string') return;
  const versions: any[] = Array.isArray(spec.versions) ? spec.versions : [];
  const storage = versions.find((v) => v?.storage)?.name;
  for (const v of versions) {
    if (!v?.served || typeof v.name !== 'string') continue;
    const subresources: ResourceInfo['subresources'] = [];
    if (v.subresources?.status) subresources.push({ name: 'status', kind: spec.names.kind, verbs: [] });
    if (v.subresources?.scale) subresources.push({ name: 'scale', kind: 'Scale', group: 'autoscaling', version: 'v1', verbs: [] });
    yield {
      group: spec.group,
      version: v.name,
      resource: spec.names.plural,
      kind: spec.names.kind,
      listKind: spec.names.listKind ?? `${spec.names.kind}List`,
      namespaced: spec.scope !== 'Cluster',
      verbs: [],
      singularName: spec.names.singular ?? '',
      shortNames: [],
      categories: [],
      subresources,
      storageVersionHash: '',
      ...(storage && storage !== v.name ? { storageVersion: `${spec.group}/${storage}` } : {}),
    };
  }
}

export class EquivalentResourceMapper {
  private builtin?: Table;
  private current?: { stamp: string; table: Table };

  constructor(
    private readonly objects: ObjectSource,
    private readonly served?: ServedGroupVersions,
  ) {}

  private table(): Table {
    if (this.served) {
      const stamp = `g${this.served.generation ?? 0}`;
      if (this.current?.stamp !== stamp) {
        const infos: ResourceInfo[] = [];
        for (const gv of this.served.servedGroupVersions()) infos.push(...gv.resources);
        this.current = { stamp, table: tableOf(infos) };
      }
      return this.current.table;
    }
    const crds = this.objects.list('customresourcedefinitions.apiextensions.k8s.io', '');
    if (crds.length === 0) return (this.builtin ??= tableOf(builtinInfos()));
    const stamp = crds.map((c) => `${c?.metadata?.uid}@${c?.metadata?.resourceVersion}`).join(',');
    if (this.current?.stamp !== stamp) {
      const infos = [...builtinInfos()];
      for (const c of crds) infos.push(...crdInfos(c));
      this.current = { stamp, table: tableOf(infos) };
    }
    return this.current.table;
  }

  info(r: GroupVersionResource): ResourceInfo | undefined {
    return this.table().byGvr.get(gvrKey(r));
  }

  /** kube's EquivalentResourcesFor: the resources stored with r that also have the subresource. */
  equivalentResourcesFor(r: GroupVersionResource, subresource: string): GroupVersionResource[] {
    const t = this.table();
    const self = t.byGvr.get(gvrKey(r));
    if (!self) return [];
    const out: GroupVersionResource[] = [];
    for (const i of t.byStorage.get(storageKey(self)) ?? []) {
      if (subresource && !i.subresources?.some((s) => s.name === subresource)) continue;
      out.push({ group: i.group, version: i.version, resource: i.resource });
    }
    return out;
  }

  /** kube's KindFor: the kind a resource (and subresource) is served as. */
  kindFor(r: GroupVersionResource, subresource: string): GroupVersionKind | undefined {
    const i = this.table().byGvr.get(gvrKey(r));
    if (!i) return undefined;
    return kindOf(i, subresource);
  }
}

/** The kind of a resource or of one of its subresources (scale is autoscaling/v1 Scale). */
export function kindOf(i: Pick<ResourceInfo, 'group' | 'version' | 'kind' | 'subresources'>, subresource: string): GroupVersionKind {
  if (subresource) {
    const s = i.subresources?.find((x) => x.name === subresource);
    if (s) return { group: s.group ?? i.group, version: s.version ?? i.version, kind: s.kind };
  }
  return { group: i.group, version: i.version, kind: i.kind };
}

/**
 * An object of one version of a resource in another version of the same storage: up to the
 * storage version, then down (the store's own conversions). Objects of a subresource's own
 * kind (Scale, Eviction) are the same in every version and are passed through.
 */
export function convertObject(obj: any, from: ResourceInfo | undefined, to: ResourceInfo | undefined): any {
  if (obj === null || obj === undefined || !from || !to || (from.group === to.group && from.version === to.version)) return obj;
  const up = conversionOf(from);
  const stored = up ? up.toStorage(obj) : obj;
  const down = conversionOf(to);
  const out = down ? down.fromStorage(stored) : stored;
  // both sides already the storage version of different group (events): set the apiVersion at least
  const apiVersion = to.group ? `${to.group}/${to.version}` : to.version;
  return out === obj ? { ...obj, apiVersion } : out.apiVersion === apiVersion ? out : { ...out, apiVersion };
}
