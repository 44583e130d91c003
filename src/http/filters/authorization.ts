// Authorization (--authorization-mode): AlwaysAllow, AlwaysDeny, RBAC and Node, in the
// order the flag gives (kube's union authorizer: the first mode that allows or denies
// decides; one with no opinion passes the request on, its reason kept for the message).
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
import { ANONYMOUS, type UserInfo } from '../../auth/user.js';
import type { RbacResolver } from '../../auth/rbac/resolver.js';
import type { AuthorizerMode, AuthorizerResult } from '../../auth/authorizer.js';

/** kube's authorizer.Attributes, the part our modes look at. */
export interface AuthorizationAttributes {
  user: UserInfo;
  verb: string;
  resourceRequest: boolean;
  apiGroup: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  path: string;
  /** the request's fieldSelector (kube's Attributes.GetFieldSelector; the Node mode reads it) */
  fieldSelector?: string;
}

export interface Decision {
  allowed: boolean;
  /** why, as the deciding mode words it ("" when none has an opinion) */
  reason: string;
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
  evaluationError?: string;
}

/** Modes whose answer does not depend on the request. */
const FIXED = new Set(['AlwaysAllow', 'AlwaysDeny']);

export class Authorizer {
  /** the decision when every mode is fixed (none then looks at the request), else null */
  readonly fixed: Decision | null;

  constructor(
    readonly modes: string[],
    readonly rbac: RbacResolver | null = null,
    // [h5-certs hook] the Node mode (src/auth/node), until the integrator moves the modes into the registry
    readonly node: AuthorizerMode | null = null,
  ) {
    this.fixed = modes.every((m) => FIXED.has(m)) ? this.decide({} as AuthorizationAttributes) : null;
  }

  /** Runs the modes in order; the first that allows decides; none means deny, with their reasons. */
  decide(a: AuthorizationAttributes): Decision {
    let reasons: string[] | null = null;
    for (const mode of this.modes) {
      let d: Decision | null = null;
      if (mode === 'AlwaysAllow') return { allowed: true, reason: '' };
      // kube's AlwaysDeny has no opinion: a later mode may still allow
      if (mode === 'AlwaysDeny') d = { allowed: false, reason: 'Everything is forbidden.' };
      else if (mode === 'RBAC' && this.rbac) {
        d = this.rbac.authorize(a);
        if (d.allowed) return d;
      }
      // [h5-certs hook] Node: the node authorizer's graph (synchronous: it reads the front thread's caches)
      else if (mode === 'Node' && this.node) {
        const r = this.node.authorize(a) as AuthorizerResult;
        if (r.decision === 'Allow') return { allowed: true, reason: r.reason };
        d = { allowed: false, reason: r.reason };
        if (r.decision === 'Deny') return d;
      }
      if (d?.reason) (reasons ??= []).push(d.reason);
    }
    return { allowed: false, reason: reasons ? reasons.join('\n') : '' };
  }

  /**
   * What a user may do in a namespace (kube's RuleResolver, behind SelfSubjectRulesReview):
   * the rules of every mode, in order. AlwaysAllow grants everything (`*` on every resource
   * and URL); AlwaysDeny and Node grant nothing; RBAC its bound rules.
   */
  rulesFor(user: UserInfo, namespace: string): Rules {
    const out: Rules = { resourceRules: [], nonResourceRules: [], incomplete: false };
    const errs: string[] = [];
    for (const mode of this.modes) {
      if (mode === 'AlwaysAllow') {
        out.resourceRules.push({ verbs: ['*'], apiGroups: ['*'], resources: ['*'] });
        out.nonResourceRules.push({ verbs: ['*'], nonResourceURLs: ['*'] });
      } else if (mode === 'RBAC' && this.rbac) {
        const r = this.rbac.resolve(user, namespace);
        for (const { rule } of r.rules) {
          if (rule.resources?.length) out.resourceRules.push({ verbs: rule.verbs, apiGroups: rule.apiGroups, resources: rule.resources, ...(rule.resourceNames?.length ? { resourceNames: rule.resourceNames } : {}) });
          if (rule.nonResourceURLs?.length) out.nonResourceRules.push({ verbs: rule.verbs, nonResourceURLs: rule.nonResourceURLs });
        }
        errs.push(...r.errors);
      } else if (mode === 'Node' && this.node?.rulesFor) {
        // [h5-certs hook] a node's rules are not enumerable: incomplete, with the mode's error
        const r = this.node.rulesFor(user, namespace);
        if (r.incomplete) out.incomplete = true;
        if (r.evaluationError) errs.push(r.evaluationError);
      }
    }
    if (errs.length) out.evaluationError = errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`;
    return out;
  }
}

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
      if (req.audit !== undefined) annotateDecision(req, d);
      if (d.allowed) return;
      throw forbiddenError(attrs, d.reason);
    },
  };
}

/** The decision for another verb on the request's resource; a request that skipped the filter is denied. */
export function authorizeAlso(req: ApiRequest, verb: string): Decision {
  return req.authorize ? req.authorize(verb) : { allowed: false, reason: 'no authorizer' };
}
