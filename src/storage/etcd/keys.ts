// kube-apiserver's etcd key layout, so that kube-apiserver and kubeshard find each other's
// objects on one etcd: `<prefix>/<resource prefix>/<namespace>/<name>` for namespaced
// objects, `<prefix>/<resource prefix>/<name>` for cluster-scoped ones.
//
// The resource prefix is what kube's storage factory gives each group-resource
// (DefaultStorageFactory.ResourcePrefix, pkg/kubeapiserver/default_storage_factory_builder.go):
// - the storage group-resource first: a resource stored with another one shares its keys
//   (events.k8s.io events are core events; the catalog's storageResource says so);
// - kube's compiled-in exceptions (SpecialDefaultResourcePrefixes): services under
//   services/specs, endpoints under services/endpoints, nodes under minions, replication
//   controllers under controllers, ingresses under ingress;
// - the servers built on SimpleRestOptionsFactory, which prefix with the group
//   (`<group>/<resource>`): apiextensions-apiserver (customresourcedefinitions, and every
//   custom resource under its CRD's group) and kube-aggregator (apiservices);
// - otherwise the bare resource name, without its group (deployments, flowschemas, leases).
// The keys are joined as Go's path.Join joins them (the etcd3 store's pathPrefix + key).
//
// Thread ownership: pure functions over the immutable catalog; any thread.
import { posix } from 'node:path';
import { catalogData } from '../../api/catalog-data.js';

/** kube's SpecialDefaultResourcePrefixes (the ones that exist in 1.33's API). */
const SPECIAL_PREFIXES: Record<string, string> = {
  '/replicationcontrollers': 'controllers',
  '/endpoints': 'services/endpoints',
  '/nodes': 'minions',
  '/services': 'services/specs',
  'networking.k8s.io/ingresses': 'ingress',
};

/** Groups served by SimpleRestOptionsFactory-based servers: group-qualified prefixes, JSON values. */
export const GROUP_PREFIXED_GROUPS = new Set(['apiextensions.k8s.io', 'apiregistration.k8s.io']);

export interface StorageFacts {
  /** the group-resource the objects are stored as ("" / "events" for events.k8s.io events) */
  storageGroup: string;
  storageResource: string;
  /** kube's storage apiVersion for built-in kinds ("autoscaling/v2"); undefined for custom resources */
  storageApiVersion?: string;
  kind?: string;
  namespaced?: boolean;
  builtin: boolean;
}

const facts = new Map<string, StorageFacts>();
for (const gv of catalogData) {
  for (const r of gv.resources) {
    if (!r.storageVersionHash) continue; // not stored (reviews, bindings)
    const key = `${gv.group}/${r.resource}`;
    let storageGroup = gv.group;
    let storageResource = r.resource;
    if (r.storageResource) {
      const dot = r.storageResource.indexOf('.');
      storageResource = dot < 0 ? r.storageResource : r.storageResource.slice(0, dot);
      storageGroup = dot < 0 ? '' : r.storageResource.slice(dot + 1);
    }
    if (!facts.has(key)) {
      facts.set(key, {
        storageGroup,
        storageResource,
        storageApiVersion: r.storageVersion ?? gv.groupVersion,
        kind: r.kind,
        namespaced: r.namespaced,
        builtin: true,
      });
    }
  }
}

/** What kube knows about storing group/resource; a group-resource the catalog lacks is a custom resource. */
export function storageFactsOf(group: string, resource: string): StorageFacts {
  return facts.get(`${group}/${resource}`) ?? { storageGroup: group, storageResource: resource, builtin: false };
}

/** The resource's part of its keys (kube's ResourcePrefix): "configmaps", "services/specs", "example.com/widgets". */
export function resourcePrefix(group: string, resource: string): string {
  const f = storageFactsOf(group, resource);
  if (!f.builtin) return `${group}/${resource}`;
  const gr = `${f.storageGroup}/${f.storageResource}`;
  const special = SPECIAL_PREFIXES[gr];
  if (special) return special;
  if (GROUP_PREFIXED_GROUPS.has(f.storageGroup)) return gr;
  return f.storageResource.toLowerCase();
}

/** A path segment kube accepts in a key (path.IsValidPathSegmentName). */
function checkSegment(what: string, s: string): void {
  if (s === '.' || s === '..' || s.includes('/') || s.includes('%')) throw new Error(`invalid ${what} in an etcd key: ${JSON.stringify(s)}`);
}

/** Go's path.Join of the etcd prefix and a key that starts with "/". */
function join(prefix: string, rest: string): string {
  return posix.join(prefix || '/', rest);
}

/** The key of one object. */
export function objectKey(prefix: string, group: string, resource: string, namespace: string | undefined, name: string): string {
  checkSegment('name', name);
  if (namespace) {
    checkSegment('namespace', namespace);
    return join(prefix, `/${resourcePrefix(group, resource)}/${namespace}/${name}`);
  }
  return join(prefix, `/${resourcePrefix(group, resource)}/${name}`);
}

/**
 * The key prefix of a list or watch: every object of the resource, or of one namespace.
 * Ends with "/" as kube's etcd3 store makes it, so /registry/services/specs/ does not also
 * take keys that merely start with the same letters.
 */
export function rangePrefix(prefix: string, group: string, resource: string, namespace?: string): string {
  if (namespace) checkSegment('namespace', namespace);
  const p = join(prefix, `/${resourcePrefix(group, resource)}${namespace ? `/${namespace}` : ''}`);
  return p.endsWith('/') ? p : `${p}/`;
}

/** The namespace and name of a key under rangePrefix(prefix, group, resource); undefined if it is not one of its objects. */
export function parseObjectKey(key: string, resourceRange: string, namespaced: boolean): { namespace?: string; name: string } | undefined {
  if (!key.startsWith(resourceRange)) return undefined;
  const parts = key.slice(resourceRange.length).split('/');
  if (namespaced) return parts.length === 2 && parts[0] && parts[1] ? { namespace: parts[0], name: parts[1] } : undefined;
  return parts.length === 1 && parts[0] ? { name: parts[0] } : undefined;
}
