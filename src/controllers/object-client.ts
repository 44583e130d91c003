// A typed-client view of one resource type over the generic store, for the controllers
// that kube runs as API clients (leader election, the identity Lease, the endpoint
// reconciler): reads of the most recent state, conditional writes that throw kube's
// Status errors (409 on a stale resourceVersion, 404, 409 AlreadyExists).
//
// Thread ownership: the thread of the store it wraps (the main thread for controllers).
import { StatusError } from '../errors.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import type { ResourceTarget, Store } from '../registry/store.js';

export interface ObjectClient<T = any> {
  get(namespace: string, name: string): Promise<T | undefined>;
  create(obj: T): Promise<T>;
  /** an update; a metadata.resourceVersion in obj makes it conditional */
  update(obj: T): Promise<T>;
  list(namespace: string): Promise<T[]>;
  /** a delete conditional on obj's resourceVersion when it has one */
  delete(obj: T): Promise<void>;
}

export function storeClient(store: Store, t: ResourceTarget): ObjectClient {
  const meta = (o: any) => o.metadata as { name: string; namespace?: string; resourceVersion?: string };
  return {
    async get(ns, name) {
      try {
        return structuredClone(entryObject(await store.get(t, ns, name, '')));
      } catch (err) {
        if (err instanceof StatusError && err.code === 404) return undefined;
        throw err;
      }
    },
    async create(obj) {
      const r = await store.create(t, meta(obj).namespace ?? '', obj, { dryRun: false });
      return JSON.parse(r.json.toString('utf8'));
    },
    async update(obj) {
      const m = meta(obj);
      const r = await store.update(t, m.namespace ?? '', m.name, obj, { dryRun: false, subresource: '' });
      return JSON.parse(r.json.toString('utf8'));
    },
    async list(ns) {
      return (await store.currentEntries(t, ns)).map((e) => structuredClone(entryObject(e)));
    },
    async delete(obj) {
      const m = meta(obj);
      await store.delete(t, m.namespace ?? '', m.name, { dryRun: false, preconditions: m.resourceVersion ? { resourceVersion: m.resourceVersion } : undefined });
    },
  };
}
