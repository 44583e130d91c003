// Authorization: the filter asks the chain of modes (src/auth/authorizer-union.ts, built from
// --authorization-mode by src/auth/authorizer-modes.ts) and turns a refusal into kube's 403.
// It waits only when a mode had to call out (an uncached webhook).
//
// The filter decides the request's own verb. It also leaves the decision function on the
// request (req.authorize), for the checks kube-apiserver makes later with another verb on
// the same resource (a DELETE with ignoreStoreReadErrorWithClusterBreakingPotential needs
// "unsafe-delete-ignore-read-errors" as well), and for RBAC's escalation checks.
//
// Thread ownership: the front thread; the RBAC resolver's index lives there too.
import type { Filter } from '../filter-chain.js';
import type { ApiRequest } from '../types.js';
import { errors } from '../../errors.js';
import { ANONYMOUS } from '../../auth/user.js';
import type { AuthorizerUnion } from '../../auth/authorizer-union.js';

// The attributes, decision and rules types live with the authorizers (src/auth/attributes.ts).
export type { AuthorizationAttributes, Decision, ResourceRule, NonResourceRule, Rules } from '../../auth/attributes.js';
import type { AuthorizationAttributes, Decision } from '../../auth/attributes.js';

/** The chain of modes (src/auth/authorizer-union.ts); the filter only calls it. */
export type Authorizer = AuthorizerUnion;

/** The attributes of a request, for a verb (the request's own or another). */
export function attributesOfRequest(req: ApiRequest, verb?: string): AuthorizationAttributes {
  const info = req.requestInfo!;
  return {
    user: req.user ?? ANONYMOUS,
    verb: verb ?? info.verb,
    resourceRequest: info.isResourceRequest,
    apiGroup: info.apiGroup,
    resource: info.resource,
    subresource: info.subresource,
    namespace: info.namespace,
    name: info.name,
    path: info.path,
    fieldSelector: req.query?.get('fieldSelector') ?? undefined,
  };
}

/** kube's forbidden message for a request the authorizer refused (with the modes' reasons after a colon). */
export function forbiddenError(attrs: AuthorizationAttributes, reason: string): Error {
  const user = attrs.user.name;
  const tail = reason ? `: ${reason}` : '';
  if (!attrs.resourceRequest) {
    return errors.forbidden({ group: '', resource: '' }, undefined, `forbidden: User "${user}" cannot ${attrs.verb} path "${attrs.path}"${tail}`);
  }
  // A subresource is a resource of its own to the authorizer ("pods/eviction").
  const gr = { group: attrs.apiGroup, resource: attrs.resource };
  const scope = attrs.namespace ? ` in the namespace "${attrs.namespace}"` : ' at the cluster scope';
  const res = attrs.apiGroup ? `${attrs.resource}.${attrs.apiGroup}` : attrs.resource;
  const what = attrs.name ? `${res} "${attrs.name}"` : res;
  return errors.forbidden(gr, attrs.name || undefined, `${what} is forbidden: User "${user}" cannot ${attrs.verb} resource "${attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource}" in API group "${attrs.apiGroup}"${scope}${tail}`);
}

/** kube's audit annotations of the authorization decision ("allow" or "forbid", and the deciding mode's reason). */
function annotateDecision(req: ApiRequest, d: Decision): void {
  req.audit!.annotate('authorization.k8s.io/decision', d.allowed ? 'allow' : 'forbid');
  req.audit!.annotate('authorization.k8s.io/reason', d.reason);
}

export function authorizationFilter(authorizer: Authorizer): Filter {
  // Modes whose answer does not depend on the request (AlwaysAllow, AlwaysDeny) are decided
  // once: no attributes, closure or decision built per request.
  const fixed = authorizer.fixed;
  const fixedAuthorize = fixed ? () => ({ allowed: fixed.allowed, reason: fixed.reason }) : null;
  return {
    name: 'authorization',
    run(req) {
      if (fixedAuthorize && fixed!.allowed) {
        req.authorize = fixedAuthorize;
        if (req.audit !== undefined) annotateDecision(req, fixed!);
        return;
      }
      const attrs = attributesOfRequest(req);
      req.authorize = (verb) => authorizer.decide({ ...attrs, verb });
      const d = authorizer.decide(attrs);
      if (d instanceof Promise) return d.then((r) => finish(req, attrs, r));
      finish(req, attrs, d);
    },
  };
}

function finish(req: ApiRequest, attrs: AuthorizationAttributes, d: Decision): void {
  if (req.audit !== undefined) annotateDecision(req, d);
  if (d.allowed) return;
  throw forbiddenError(attrs, d.reason);
}

/** The decision for another verb on the request's resource; a request that skipped the filter is denied. */
export async function authorizeAlso(req: ApiRequest, verb: string): Promise<Decision> {
  return req.authorize ? req.authorize(verb) : { allowed: false, reason: 'no authorizer' };
}
