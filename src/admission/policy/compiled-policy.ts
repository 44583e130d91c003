// A ValidatingAdmissionPolicy (and a MutatingAdmissionPolicy) compiled for evaluation (kube's validating plugin: compiling
// in policy_source/compile, the validator in validator.go): its validations, messageExpressions,
// auditAnnotations, variables and matchConditions, each compiled once in the environment
// its declarations call for (params when paramKind is set; authorizer for validations).
import { compile, evalBudgeted, type Program } from '../../cel/environment.js';
import { admissionVariables } from '../../cel/admission.js';
import { compileConditions } from '../../cel/match-conditions.js';
import { OUT_OF_BUDGET } from '../../cel/cost.js';
import { rewriteObjectConstruction } from '../../cel/library/mutation.js';

export interface CompiledExpr {
  expression: string;
  program?: Program;
  /** kube's CompilationResult error detail */
  error?: string;
}

export interface CompiledValidation extends CompiledExpr {
  message?: string;
  reason?: string;
  messageExpression?: CompiledExpr;
}

export interface CompiledPolicy {
  name: string;
  resourceVersion: string;
  policy: any;
  validations: CompiledValidation[];
  auditAnnotations: Array<CompiledExpr & { key: string }>;
  variables: Array<CompiledExpr & { name: string }>;
  matchConditions: ReturnType<typeof compileConditions>;
  failurePolicy: 'Fail' | 'Ignore';
}

function one(expression: string, vars: Record<string, string>, returnTypes?: string[]): CompiledExpr {
  const r = compile(expression, vars, returnTypes);
  return { expression, program: r.program, error: r.error };
}

export function compilePolicy(policy: any): CompiledPolicy {
  const spec = policy.spec ?? {};
  const hasParams = !!spec.paramKind;
  const withAuthz = admissionVariables({ params: hasParams, authorizer: true, variables: true });
  const noAuthz = admissionVariables({ params: hasParams, variables: true });
  return {
    name: policy.metadata?.name ?? '',
    resourceVersion: policy.metadata?.resourceVersion ?? '',
    policy,
    validations: (spec.validations ?? []).map((v: any) => ({
      ...one(v.expression ?? '', withAuthz, ['bool']),
      message: v.message,
      reason: v.reason,
      messageExpression: v.messageExpression ? one(v.messageExpression, noAuthz, ['string']) : undefined,
    })),
    auditAnnotations: (spec.auditAnnotations ?? []).map((x: any) => ({ ...one(x.valueExpression ?? '', noAuthz), key: x.key })),
    variables: (spec.variables ?? []).map((x: any) => ({ ...one(x.expression ?? '', withAuthz), name: x.name })),
    matchConditions: compileConditions(spec.matchConditions ?? [], hasParams),
    failurePolicy: spec.failurePolicy === 'Ignore' ? 'Ignore' : 'Fail',
  };
}

/**
 * kube's composition (admission/plugin/cel/composition.go): `variables.<name>` evaluated
 * lazily, at most once per evaluation, its cost charged to the expression that reads it.
 * An error in a variable fails the expression that reads it.
 */
export function lazyVariables(compiled: { variables: CompiledPolicy['variables'] }, activation: Record<string, any>): Record<string, any> {
  const vars: Record<string, any> = {};
  for (const v of compiled.variables) {
    let done = false;
    let value: any;
    Object.defineProperty(vars, v.name, {
      enumerable: true,
      get() {
        if (done) return value;
        if (!v.program) throw new Error(`composited variable "${v.name}" fails to compile: ${v.error}`);
        const r = evalBudgeted(v.program, activation, Number.MAX_SAFE_INTEGER);
        if (r.outOfBudget) throw new Error(OUT_OF_BUDGET);
        if (r.error !== undefined) throw new Error(`composited variable "${v.name}" fails to evaluate: ${r.error}`);
        done = true;
        value = r.value;
        return value;
      },
    });
  }
  return vars;
}

export interface CompiledMutation extends CompiledExpr {
  patchType: string;
}

/** A MutatingAdmissionPolicy compiled for evaluation (kube's mutating/compilation.go). */
export interface CompiledMutatingPolicy {
  name: string;
  resourceVersion: string;
  policy: any;
  mutations: CompiledMutation[];
  variables: Array<CompiledExpr & { name: string }>;
  matchConditions: ReturnType<typeof compileConditions>;
  failurePolicy: 'Fail' | 'Ignore';
  reinvocationPolicy: 'Never' | 'IfNeeded';
}

/** The engine's output types a mutation may have (its constructions are dyn: see cel/library/mutation.ts). */
const MUTATION_OUTPUTS: Record<string, { accepts: string[]; name: string }> = {
  ApplyConfiguration: { accepts: ['dyn'], name: 'Object' },
  JSONPatch: { accepts: ['dyn', 'list', 'list<dyn>'], name: 'list(JSONPatch)' },
};

/** One mutation of a policy (with `params` when the policy has a paramKind): its program, or kube's compile error. */
export function compileMutation(m: any, hasParams: boolean): CompiledMutation {
  const patchType = m?.patchType ?? '';
  const expression = (patchType === 'JSONPatch' ? m?.jsonPatch?.expression : m?.applyConfiguration?.expression) ?? '';
  const out = MUTATION_OUTPUTS[patchType];
  if (!out) return { expression, patchType, error: `unsupported patch type: ${patchType}` };
  const c = one(rewriteObjectConstruction(expression), admissionVariables({ params: hasParams, authorizer: true, variables: true }));
  c.expression = expression;
  if (c.program && !out.accepts.includes(c.program.outputType)) return { expression, patchType, error: `must evaluate to ${out.name} but got ${celGoTypeName(c.program.outputType)}` };
  return { ...c, patchType };
}

export function compileMutatingPolicy(policy: any): CompiledMutatingPolicy {
  const spec = policy.spec ?? {};
  const hasParams = !!spec.paramKind;
  const vars = admissionVariables({ params: hasParams, authorizer: true, variables: true });
  return {
    name: policy.metadata?.name ?? '',
    resourceVersion: policy.metadata?.resourceVersion ?? '',
    policy,
    mutations: (spec.mutations ?? []).map((m: any) => compileMutation(m, hasParams)),
    variables: (spec.variables ?? []).map((x: any) => ({ ...one(x.expression ?? '', vars), name: x.name })),
    matchConditions: compileConditions(spec.matchConditions ?? [], hasParams),
    failurePolicy: spec.failurePolicy === 'Ignore' ? 'Ignore' : 'Fail',
    reinvocationPolicy: spec.reinvocationPolicy === 'IfNeeded' ? 'IfNeeded' : 'Never',
  };
}

/** cel-go's spelling of a type in messages: `map(string, int)` for the engine's `map<string, int>`. */
function celGoTypeName(t: string): string {
  return t.replaceAll('<', '(').replaceAll('>', ')');
}
