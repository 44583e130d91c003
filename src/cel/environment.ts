// kube's CEL environment (apiserver/pkg/cel/environment, base.go as of 1.33) on
// @marcbachmann/cel-js: the base libraries, one environment per set of declared variables,
// programs compiled once per (environment, expression, return types) and evaluated under
// kube's cost limits. See bench/README.md "CEL (issue 20)" for why this engine.
//
// Where we differ from cel-go: the runtime cost is one unit per evaluated node plus what the
// library functions charge for the sizes they traverse (cel-go charges per interpretable step
// and per call with its own estimator), so the same expression costs about what it costs in
// kube, not exactly; messages of evaluation errors are cel-go's where we know them.
//
// Thread ownership: the front thread (the compile cache and the cost meter live there).
import { Environment } from '@marcbachmann/cel-js';
import { meter, CostLimitExceeded, PER_CALL_LIMIT, ACTUAL_COST_LIMIT_EXCEEDED } from './cost.js';
import { registerStrings } from './library/strings.js';
import { registerLists } from './library/lists.js';
import { registerRegex, rewriteMatches } from './library/regex.js';
import { registerUrls } from './library/urls.js';
import { registerQuantity } from './library/quantity.js';
import { registerIpCidr } from './library/ip-cidr.js';
import { registerFormat } from './library/format.js';
import { registerSemver } from './library/semver.js';
import { registerAuthz } from './library/authz.js';
import { registerSets } from './library/sets.js';
import { registerComprehensions } from './library/comprehensions.js';
import { registerMutation } from './library/mutation.js';

/** Declared variables: name → type in the engine's notation ('dyn', 'map<string, dyn>', 'Authorizer'). */
export type VariableDecls = Record<string, string>;

export interface CompileResult {
  program?: Program;
  /** kube's CompilationResult.Error detail ("compilation failed: ERROR: <input>:1:1: ..." or "must evaluate to bool but got int") */
  error?: string;
}

export class CelEvalError extends Error {
  /** what the evaluation had cost when it failed */
  cost = 0;
}

const PROBE = '__kubeshardEvaluator';
let base: Environment | null = null;

function baseEnv(): Environment {
  if (base) return base;
  // kube: HomogeneousAggregateLiterals, CrossTypeNumericComparisons, OptionalTypes
  const env = new Environment({ unlistedVariablesAreDyn: false, enableOptionalTypes: true, homogeneousAggregateLiterals: true });
  registerStrings(env);
  registerLists(env);
  registerRegex(env);
  registerUrls(env);
  registerQuantity(env);
  registerIpCidr(env);
  registerFormat(env);
  registerSemver(env);
  registerAuthz(env);
  registerSets(env);
  registerComprehensions(env);
  registerMutation(env);
  // Lets each environment reach its evaluator once, to meter it (see meterEvaluator).
  env.registerFunction(`${PROBE}(): dyn`, function (this: unknown) {
    return this as any;
  });
  base = env;
  return env;
}

/**
 * Every node the evaluator runs goes through its run(); counting there is cel-go's
 * per-step cost tracking. The evaluator is private to the engine: a function called
 * from an expression receives it as `this`.
 */
function meterEvaluator(env: Environment): void {
  const ev: any = env.evaluate(`${PROBE}()`);
  ev.run = function (ast: any, ctx: any) {
    if (++meter.cost > meter.limit) throw new CostLimitExceeded();
    return ast.evaluate(this, ast, ctx);
  };
}

const envs = new Map<string, Environment>();

function envFor(vars: VariableDecls): { env: Environment; key: string } {
  const key = Object.keys(vars)
    .sort()
    .map((k) => `${k}:${vars[k]}`)
    .join(',');
  let env = envs.get(key);
  if (!env) {
    env = baseEnv().clone();
    for (const [name, type] of Object.entries(vars)) env.registerVariable(name, type);
    meterEvaluator(env);
    envs.set(key, env);
  }
  return { env, key };
}

const cache = new Map<string, CompileResult>();
const CACHE_MAX = 20_000;

/**
 * Compiles an expression in the environment with these variables, once: the result (a
 * program or kube's compile error) is kept by environment, expression and return types.
 */
export function compile(expression: string, vars: VariableDecls, returnTypes?: string[]): CompileResult {
  const { env, key } = envFor(vars);
  const ck = `${key}\0${returnTypes?.join('|') ?? ''}\0${expression}`;
  let r = cache.get(ck);
  if (r) return r;
  r = compileUncached(env, expression, returnTypes);
  if (cache.size >= CACHE_MAX) cache.clear();
  cache.set(ck, r);
  return r;
}

function compileUncached(env: Environment, expression: string, returnTypes?: string[]): CompileResult {
  let parsed: any;
  try {
    parsed = env.parse(expression);
  } catch (e: any) {
    return { error: 'compilation failed: ' + issue(expression, e, true) };
  }
  rewriteMatches(parsed.ast);
  const checked = parsed.check();
  if (!checked.valid) return { error: 'compilation failed: ' + issue(expression, checked.error, false) };
  const out: string = checked.type;
  if (returnTypes && returnTypes.length && !returnTypes.includes('dyn') && !returnTypes.includes(out)) {
    const reason =
      returnTypes.length === 1
        ? `must evaluate to ${returnTypes[0]} but got ${out}`
        : `must evaluate to one of [${returnTypes.join(' ')}] but got ${out}`;
    return { error: reason };
  }
  return { program: new Program(expression, parsed, out) };
}

/** cel-go's Issues.String(): "ERROR: <input>:line:col: message", the line, a caret under the column. */
function issue(expression: string, e: any, syntax: boolean): string {
  let msg: string = e?.summary ?? String(e?.message ?? e);
  const unknownVar = /^Unknown variable: (.*)$/.exec(msg);
  const noField = /^No such key: (.*)$/.exec(msg);
  if (unknownVar) msg = `undeclared reference to '${unknownVar[1]}' (in container '')`;
  else if (noField) msg = `undefined field '${noField[1]}'`;
  else if (syntax) msg = `Syntax error: ${msg.charAt(0).toLowerCase()}${msg.slice(1)}`;
  let pos: number = e?.range?.start ?? e?.node?.start ?? e?.node?.pos ?? 0;
  // cel-go places a field selection at its '.', the engine at the field's name
  if (noField && pos > 0 && expression[pos - 1] === '.') pos--;
  const before = expression.slice(0, pos);
  const line = before.split('\n').length;
  const lineStart = before.lastIndexOf('\n') + 1;
  const col = pos - lineStart;
  const text = expression.split('\n')[line - 1] ?? '';
  return `ERROR: <input>:${line}:${col + 1}: ${msg}\n | ${text}\n | ${'.'.repeat(col)}^`;
}

/** An evaluation's outcome: the value, and what it cost. */
export interface EvalResult {
  value: any;
  cost: number;
}

/** A compiled expression. */
export class Program {
  constructor(
    readonly expression: string,
    private readonly parsed: ((ctx?: any) => any) & { ast?: any },
    /** the checked output type ('bool', 'string', 'dyn', ...) */
    readonly outputType: string,
  ) {}

  /**
   * Runs the program on these variable values (CEL values: see values.ts toCel), with at
   * most `limit` cost (kube's PerCallLimit unless less budget remains). Throws CelEvalError
   * with cel-go's message ("operation cancelled: actual cost limit exceeded", "no such key: x").
   * Nested runs (a composited variable evaluated inside another expression) add their cost to the outer one's.
   */
  /** the checked syntax tree (for cost estimation) */
  get ast(): any {
    return this.parsed.ast;
  }

  eval(activation: Record<string, any>, limit = PER_CALL_LIMIT): EvalResult {
    const outerCost = meter.cost;
    const outerLimit = meter.limit;
    meter.cost = 0;
    meter.limit = Math.min(limit, PER_CALL_LIMIT);
    try {
      let value: any;
      try {
        value = this.parsed(activation);
      } catch (e: any) {
        const over = meter.cost > meter.limit || e instanceof CostLimitExceeded;
        throw Object.assign(new CelEvalError(over ? ACTUAL_COST_LIMIT_EXCEEDED : evalMessage(e)), { cost: meter.cost });
      }
      if (meter.cost > meter.limit) throw Object.assign(new CelEvalError(ACTUAL_COST_LIMIT_EXCEEDED), { cost: meter.cost });
      return { value, cost: meter.cost };
    } finally {
      const spent = meter.cost;
      meter.cost = outerCost + spent;
      meter.limit = outerLimit;
    }
  }
}

/** cel-go's wording for the engine's evaluation errors. */
function evalMessage(e: any): string {
  if (e instanceof CelEvalError) return e.message;
  if (e?.cause instanceof CostLimitExceeded) return ACTUAL_COST_LIMIT_EXCEEDED;
  let msg: string = e?.summary ?? String(e?.message ?? e).split('\n')[0];
  const noKey = /^No such key: (.*)$/.exec(msg);
  if (noKey) msg = `no such key: ${noKey[1]}`;
  return msg;
}

/** One expression of a set sharing a budget (kube's activation.Evaluate): its value or error, and the budget left. */
export interface BudgetedResult {
  value?: any;
  /** cel-go's error message (the caller words it: "expression '...' resulted in error: ...") */
  error?: string;
  /** the budget ran out: kube stops the whole set with OUT_OF_BUDGET */
  outOfBudget?: boolean;
  remaining: number;
}

/** Runs a program under PerCallLimit and charges what it cost to the set's remaining budget. */
export function evalBudgeted(program: Program, activation: Record<string, any>, remaining: number): BudgetedResult {
  let value: any;
  let cost: number;
  let error: string | undefined;
  try {
    const r = program.eval(activation);
    value = r.value;
    cost = r.cost;
  } catch (e) {
    if (!(e instanceof CelEvalError)) throw e;
    error = e.message;
    cost = e.cost;
  }
  if (cost > remaining) return { outOfBudget: true, remaining: -1 };
  return error !== undefined ? { error, remaining: remaining - cost } : { value, remaining: remaining - cost };
}

const typedEnvs = new Map<string, Environment>();

/**
 * Type checks an expression in an environment whose variables carry declared types (kube's
 * policy type checking, which types `object` and `params` from the kinds' schemas). `declare`
 * registers the types and variables once per key. Returns cel-go's issues text, or undefined.
 */
export function typeCheck(expression: string, key: string, declare: (env: Environment) => void): string | undefined {
  let env = typedEnvs.get(key);
  if (!env) {
    env = baseEnv().clone();
    declare(env);
    if (typedEnvs.size > 200) typedEnvs.clear();
    typedEnvs.set(key, env);
  }
  let parsed: any;
  try {
    parsed = env.parse(expression);
  } catch (e: any) {
    return issue(expression, e, true);
  }
  rewriteMatches(parsed.ast);
  const checked = parsed.check();
  return checked.valid ? undefined : issue(expression, checked.error, false);
}
