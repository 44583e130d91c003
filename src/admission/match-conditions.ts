// The contract between admission's CEL evaluator (src/cel/) and its users (webhooks,
// ValidatingAdmissionPolicy): kube's matchconditions.Matcher
// (apiserver/pkg/admission/plugin/webhook/matchconditions/matcher.go). Conditions are compiled
// once per configuration object (by resourceVersion), never per request.
//
// Thread ownership: the front thread, like the rest of admission.
import type { Attributes } from './plugin.js';

export interface MatchCondition {
  name: string;
  expression: string;
}

/** The result of matching one request: kube's MatchResult. */
export interface MatchResult {
  /** every condition true */
  matches: boolean;
  /** the first condition that was false (kube reports it as the reason of the skip) */
  failedConditionName?: string;
  /** an evaluation error (the caller applies its failurePolicy) */
  error?: string;
}

/**
 * Evaluates compiled conditions against a request. `object` and `oldObject` are the
 * objects in the version the hook asked for (after matchPolicy: Equivalent's conversion);
 * `request` is the AdmissionRequest as the webhook would receive it (CEL's `request`
 * variable); `authorizer` is kube's `authorizer` variable (optional until the authz library lands).
 */
export interface MatchConditionsEvaluator {
  (a: Attributes, vars: { object: any; oldObject: any; request: any; authorizer?: unknown }): MatchResult;
}

/** Compiles a hook's matchConditions; throws a StatusError 422-style message for an expression that does not compile. */
export type CompileMatchConditions = (conditions: MatchCondition[]) => MatchConditionsEvaluator;
