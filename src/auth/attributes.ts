// What an authorizer is asked and answers (kube's authorizer.Attributes, the part
// kubeshard's modes look at; the union's two-valued Decision with its Deny flag and errors;
// RuleResolver's rules for SelfSubjectRulesReview). Types only.
import type { UserInfo } from './user.js';

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
  /** a mode denied outright (SubjectAccessReview's status.denied) */
  denied?: boolean;
  /** the modes' evaluation errors (SubjectAccessReview's status.evaluationError) */
  error?: string;
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

