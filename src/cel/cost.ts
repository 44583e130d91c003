// kube's CEL cost limits (apiserver/pkg/apis/cel/config.go) and the meter the evaluator
// charges while an expression runs.
//
// Thread ownership: the front thread. Evaluation is synchronous, so one meter serves every
// program: a program sets it before it runs and reads it after.

/** kube's PerCallLimit: the most one expression may cost (cel-go's CostLimit). */
export const PER_CALL_LIMIT = 1_000_000;
/** kube's RuntimeCELCostBudget: what all the expressions of one policy evaluation (or one CRD object's rules) may cost together. */
export const RUNTIME_CEL_COST_BUDGET = 10_000_000;
/** kube's StaticEstimatedCostLimit (one CRD rule) and StaticEstimatedCRDCostLimit (all rules of a CRD). */
export const STATIC_ESTIMATED_COST_LIMIT = 10_000_000;
export const STATIC_ESTIMATED_CRD_COST_LIMIT = 100_000_000;
/** kube's MaxRequestSizeBytes, the size it assumes for unbounded lists, maps and strings when estimating. */
export const MAX_REQUEST_SIZE_BYTES = 3 * 1024 * 1024;
/** kube's MaxEvaluatedMessageExpressionSizeBytes. */
export const MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES = 5 * 1024;

/** cel-go's message when a program goes over its cost limit. */
export const ACTUAL_COST_LIMIT_EXCEEDED = 'operation cancelled: actual cost limit exceeded';
/** kube's message when the budget shared by a set of expressions runs out. */
export const OUT_OF_BUDGET = 'validation failed due to running out of cost budget, no further validation rules will be run';

export class CostLimitExceeded extends Error {
  constructor() {
    super(ACTUAL_COST_LIMIT_EXCEEDED);
  }
}

/** The running program's cost so far and its limit. */
export const meter = { cost: 0, limit: Number.POSITIVE_INFINITY };

/** Charges a library function's cost (kube's CostEstimator.CallCost: most string and list work costs 1 per 10 elements or characters). */
export function charge(n: number): void {
  meter.cost += n;
  if (meter.cost > meter.limit) throw new CostLimitExceeded();
}

/** The traversal cost kube charges for n characters or elements (0.1 each, at least 1). */
export function sizeCost(n: number): number {
  return 1 + Math.ceil(n * 0.1);
}
/** kube's RuntimeCELCostBudgetMatchConditions: what a hook's matchConditions may cost together. */
export const RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS = 7_000_000;
