// kube's matchConditions matcher (apiserver/pkg/admission/plugin/webhook/matchconditions/
// matcher.go) on kubeshard's CEL: the contract of src/admission/match-conditions.ts for
// webhooks, and the same matcher with `params` for ValidatingAdmissionPolicy. Conditions
// compile once (the compile cache), must be bool, and run in order under
// RuntimeCELCostBudgetMatchConditions: the first false one decides "no match"; errors are
// gathered and returned for the caller's failurePolicy when none is false.
import type { CompileMatchConditions, MatchCondition, MatchConditionsEvaluator, MatchResult } from '../admission/match-conditions.js';
import { errors } from '../errors.js';
import { compile, evalBudgeted, type Program } from './environment.js';
import { admissionVariables, admissionActivation } from './admission.js';
import { aggregate } from '../admission/plugin.js';
import { celView } from './values.js';
import { RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS, OUT_OF_BUDGET } from './cost.js';

interface Compiled {
  name: string;
  expression: string;
  program?: Program;
  error?: string;
}

/** Compiles conditions (compile errors kept, reported when evaluated, as kube's filter does). */
export function compileConditions(conditions: MatchCondition[], withParams: boolean): Compiled[] {
  const vars = admissionVariables({ authorizer: true, params: withParams });
  return conditions.map((c) => {
    const r = compile(c.expression, vars, ['bool']);
    return { name: c.name, expression: c.expression, program: r.program, error: r.error };
  });
}

/** Runs compiled conditions on an activation (kube's matcher.Match, before its failurePolicy). */
export function matchConditions(compiled: Compiled[], activation: Record<string, any>): MatchResult {
  let budget = RUNTIME_CEL_COST_BUDGET_MATCH_CONDITIONS;
  const errs: string[] = [];
  for (const c of compiled) {
    if (!c.program) {
      errs.push(`compilation error: ${c.error}`);
      continue;
    }
    const r = evalBudgeted(c.program, activation, budget);
    if (r.outOfBudget) return { matches: false, error: OUT_OF_BUDGET };
    budget = r.remaining;
    if (r.error !== undefined) errs.push(`expression '${c.expression}' resulted in error: ${r.error}`);
    else if (r.value === false) return { matches: false, failedConditionName: c.name };
  }
  if (errs.length) return { matches: false, error: aggregate(errs) };
  return { matches: true };
}

export const compileMatchConditions: CompileMatchConditions = (conditions) => {
  const compiled = compileConditions(conditions, false);
  const bad = compiled.find((c) => c.error);
  if (bad) throw errors.celCompilation(`matchCondition '${bad.name}': compilation error: ${bad.error}`);
  const evaluate: MatchConditionsEvaluator = (a, vars): MatchResult => {
    if (compiled.length === 0) return { matches: true };
    const authorize = typeof vars.authorizer === 'function' ? (vars.authorizer as any) : undefined;
    const activation = admissionActivation(a, {
      request: vars.request == null ? null : celView(vars.request),
      object: vars.object == null ? null : celView(vars.object),
      oldObject: vars.oldObject == null ? null : celView(vars.oldObject),
      authorize,
    });
    return matchConditions(compiled, activation);
  };
  return evaluate;
};
