// Authorization (--authorization-mode). AlwaysAllow and AlwaysDeny for now; RBAC and
// Node plug in here later, in the order the flag gives.
//
// The filter decides the request's own verb. It also leaves the decision function on the
// request (req.authorize), for the checks kube-apiserver makes later with another verb on
// the same resource (a DELETE with ignoreStoreReadErrorWithClusterBreakingPotential needs
// "unsafe-delete-ignore-read-errors" as well).
import type { Filter } from '../filter-chain.js';
import type { ApiRequest } from '../types.js';
import { errors } from '../../errors.js';

/** kube's authorizer.Attributes, the part our modes look at. */
export interface AuthorizationAttributes {
  user: string;
  verb: string;
  resourceRequest: boolean;
  apiGroup: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  path: string;
}

export interface Decision {
  allowed: boolean;
  /** why, as the deciding mode words it ("" when none has an opinion) */
  reason: string;
}

/** Runs the modes in order; the first with an opinion decides, none means deny. */
export function decide(modes: string[], _a: AuthorizationAttributes): Decision {
  for (const mode of modes) {
    if (mode === 'AlwaysAllow') return { allowed: true, reason: '' };
    if (mode === 'AlwaysDeny') return { allowed: false, reason: 'Everything is forbidden.' };
  }
  return { allowed: false, reason: 'no authorizer has an opinion' };
}

export interface ResourceRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
}
export interface NonResourceRule {
  verbs: string[];
  nonResourceURLs?: string[];
}
export interface Rules {
  resourceRules: ResourceRule[];
  nonResourceRules: NonResourceRule[];
  incomplete: boolean;
}

/**
 * What a user may do in a namespace (kube's RuleResolver, behind SelfSubjectRulesReview):
 * the rules of every mode, in order. AlwaysAllow grants everything (`*` on every resource
 * and URL); AlwaysDeny grants nothing. Both are complete, as kube's are.
 */
export function rulesFor(modes: string[], _user: string, _namespace: string): Rules {
  const out: Rules = { resourceRules: [], nonResourceRules: [], incomplete: false };
  for (const mode of modes) {
    if (mode === 'AlwaysAllow') {
      out.resourceRules.push({ verbs: ['*'], apiGroups: ['*'], resources: ['*'] });
      out.nonResourceRules.push({ verbs: ['*'], nonResourceURLs: ['*'] });
    }
  }
  return out;
}

/** kube's audit annotations of the authorization decision ("allow" or "forbid", and the deciding mode's reason). */
function annotateDecision(req: ApiRequest, d: Decision): void {
  req.audit!.annotate('authorization.k8s.io/decision', d.allowed ? 'allow' : 'forbid');
  req.audit!.annotate('authorization.k8s.io/reason', d.reason);
}

export function authorizationFilter(modes: string[]): Filter {
  // Modes whose answer does not depend on the request (AlwaysAllow, AlwaysDeny) are decided
  // once: no attributes, closure or decision built per request.
  const fixed = modes.every((m) => m === 'AlwaysAllow' || m === 'AlwaysDeny') ? decide(modes, {} as AuthorizationAttributes) : null;
  const fixedAuthorize = fixed ? () => ({ allowed: fixed.allowed, reason: fixed.reason }) : null;
  return {
    name: 'authorization',
    run(req) {
      const info = req.requestInfo!;
      if (fixedAuthorize && fixed!.allowed) {
        req.authorize = fixedAuthorize;
        if (req.audit !== undefined) annotateDecision(req, fixed!);
        return;
      }
      const user = req.user?.name ?? 'system:anonymous';
      const attrs: AuthorizationAttributes = {
        user,
        verb: info.verb,
        resourceRequest: info.isResourceRequest,
        apiGroup: info.apiGroup,
        resource: info.resource,
        subresource: info.subresource,
        namespace: info.namespace,
        name: info.name,
        path: info.path,
      };
      req.authorize = (verb) => decide(modes, { ...attrs, verb });
      const decision = decide(modes, attrs);
      if (req.audit !== undefined) annotateDecision(req, decision);
      if (decision.allowed) return;
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

/** The decision for another verb on the request's resource; a request that skipped the filter is denied. */
export function authorizeAlso(req: ApiRequest, verb: string): Decision {
  return req.authorize ? req.authorize(verb) : { allowed: false, reason: 'no authorizer' };
}
