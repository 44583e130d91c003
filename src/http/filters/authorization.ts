// Authorization (--authorization-mode). AlwaysAllow and AlwaysDeny for now; RBAC and
// Node plug in here later, in the order the flag gives.
import type { Filter } from '../filter-chain.js';
import { errors } from '../../errors.js';

export function authorizationFilter(modes: string[]): Filter {
  return {
    name: 'authorization',
    run(req) {
      for (const mode of modes) {
        if (mode === 'AlwaysAllow') return;
        if (mode === 'AlwaysDeny') break;
      }
      const info = req.requestInfo!;
      const user = req.user?.name ?? 'system:anonymous';
      if (!info.isResourceRequest) {
        throw errors.forbidden({ group: '', resource: '' }, undefined, `forbidden: User "${user}" cannot ${info.verb} path "${info.path}"`);
      }
      // A subresource is a resource of its own to the authorizer ("pods/eviction").
      const gr = { group: info.apiGroup, resource: info.resource };
      const scope = info.namespace ? ` in the namespace "${info.namespace}"` : ' at the cluster scope';
      const res = info.apiGroup ? `${info.resource}.${info.apiGroup}` : info.resource;
      const what = info.name ? `${res} "${info.name}"` : res;
      throw errors.forbidden(gr, info.name || undefined, `${what} is forbidden: User "${user}" cannot ${info.verb} resource "${info.subresource ? `${info.resource}/${info.subresource}` : info.resource}" in API group "${info.apiGroup}"${scope}`);
    },
  };
}
