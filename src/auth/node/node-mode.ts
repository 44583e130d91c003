// Builds the Node authorization mode over a server's caches: the graph from the pods cache
// as it stands, then kept by each committed batch's pod events (kube's graph_populator over
// informers); claims, volumes, VolumeAttachments and ResourceSlices read from their caches
// when a request asks. What a registry of authorization modes calls to make "Node".
//
// Thread ownership: the front thread that calls it (its caches and observer).
import type { Cacher } from '../../storage/cacher.js';
import type { Targets } from '../../api/targets.js';
import { objectKey, type Store } from '../../registry/store.js';
import { entryObject } from '../../../workers/watch/watch-cache.js';
import { NodeGraph } from './node-graph.js';
import { NodeAuthorizer } from './node-authorizer.js';
import { registerAuthorizerMode } from '../authorizer.js';

export function createNodeMode(deps: { store: Store; cacher: Cacher; targets: Targets }): NodeAuthorizer {
  const { store, cacher, targets } = deps;
  const kinds = [['', 'pods'], ['', 'persistentvolumeclaims'], ['', 'persistentvolumes'], ['storage.k8s.io', 'volumeattachments'], ['resource.k8s.io', 'resourceslices']] as const;
  const t = Object.fromEntries(kinds.map(([g, r]) => [r, targets.preferred(g, r) ?? null]));
  const graph = new NodeGraph({
    get: (resource, ns, name) => {
      const target = t[resource];
      const e = target ? store.cacheOf(target).items.get(objectKey(ns, name)) : undefined;
      return e ? entryObject(e) : undefined;
    },
  });
  const podsT = t.pods!;
  for (const e of store.cacheOf(podsT).items.values()) graph.setPod(entryObject(e));
  cacher.observe((cache, evs) => {
    if (cache.gr !== podsT.gr) return;
    for (const ev of evs) {
      if (ev.type === 'DELETED') graph.deletePod(ev.entry.ns, ev.entry.name);
      else if (ev.type === 'ADDED' || ev.type === 'MODIFIED') graph.setPod(entryObject(ev.entry));
    }
  });
  return new NodeAuthorizer(graph);
}

// --authorization-mode=Node (and the AuthorizationConfiguration's Node type) builds it over
// the server's caches that the mode context carries.
registerAuthorizerMode('Node', (ctx) =>
  createNodeMode({ store: ctx.services.store as Store, cacher: ctx.services.cacher as Cacher, targets: ctx.services.targets as Targets }),
);
