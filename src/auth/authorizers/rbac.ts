// RBAC as an authorization mode (kube's rbac.RBACAuthorizer): the resolver (../rbac/resolver.ts)
// allows or has no opinion; RBAC never denies. Thread ownership: the resolver's, the front thread.
import type { AuthorizerMode, AuthorizerResult } from '../authorizer.js';
import type { AuthorizationAttributes, Rules } from '../attributes.js';
import type { RbacResolver } from '../rbac/resolver.js';
import type { UserInfo } from '../user.js';

export class RbacMode implements AuthorizerMode {
  readonly name = 'RBAC';
  constructor(readonly rbac: RbacResolver) {}

  authorize(a: AuthorizationAttributes): AuthorizerResult {
    const d = this.rbac.authorize(a);
    return { decision: d.allowed ? 'Allow' : 'NoOpinion', reason: d.reason };
  }

  /** kube's RBAC RulesFor: the rules of the roles bound to the user, errors as evaluationError */
  rulesFor(user: UserInfo, namespace: string): Rules {
    const out: Rules = { resourceRules: [], nonResourceRules: [], incomplete: false };
    const r = this.rbac.resolve(user, namespace);
    for (const { rule } of r.rules) {
      if (rule.resources?.length) out.resourceRules.push({ verbs: rule.verbs, apiGroups: rule.apiGroups, resources: rule.resources, ...(rule.resourceNames?.length ? { resourceNames: rule.resourceNames } : {}) });
      if (rule.nonResourceURLs?.length) out.nonResourceRules.push({ verbs: rule.verbs, nonResourceURLs: rule.nonResourceURLs });
    }
    if (r.errors.length) out.evaluationError = r.errors.length === 1 ? r.errors[0] : `[${r.errors.join(', ')}]`;
    return out;
  }
}
