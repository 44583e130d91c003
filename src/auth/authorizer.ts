// The contract of kubeshard's authorization modes (kube's authorizer.Authorizer,
// apiserver/pkg/authorization/authorizer/interfaces.go): Allow, Deny or NoOpinion. The union
// (kube's authorizer/union) asks each mode in order: Allow and Deny end the chain, NoOpinion
// passes to the next; no mode allowing means forbidden, with the reasons gathered.
//
// Thread ownership: the front thread that built them; a mode that calls out (Webhook) keeps
// its decision caches per thread.
import type { AuthorizationAttributes, Rules } from '../http/filters/authorization.js';
import type { UserInfo } from './user.js';

export type AuthorizerDecision = 'Allow' | 'Deny' | 'NoOpinion';

export interface AuthorizerResult {
  decision: AuthorizerDecision;
  /** why, as the mode words it (kept for the 403 message and SubjectAccessReview's status.reason) */
  reason: string;
  /** an evaluation error (SubjectAccessReview's status.evaluationError) */
  error?: string;
}

export interface AuthorizerMode {
  /** the --authorization-mode name (AlwaysAllow, AlwaysDeny, RBAC, Node, ABAC, Webhook) or the configuration's name */
  readonly name: string;
  authorize(a: AuthorizationAttributes): AuthorizerResult | Promise<AuthorizerResult>;
  /** kube's RuleResolver (SelfSubjectRulesReview), when the mode can list what a user may do */
  rulesFor?(user: UserInfo, namespace: string): Rules;
}
