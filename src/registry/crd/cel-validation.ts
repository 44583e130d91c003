// CRD validation rules (x-kubernetes-validations), as apiextensions-apiserver's
// pkg/apiserver/schema/cel/validation.go runs them: each rule compiled once with `self` (the
// value at its schema node) and, for transition rules, `oldSelf` (the correlated old value:
// same property, same map key, same list-map item); a rule that is not true is a field error
// with its message, messageExpression or "failed rule: <rule>", its reason and fieldPath; all
// rules of an object share RuntimeCELCostBudget.
//
// Where we differ: `self` is dynamically typed (kube types it from the schema, so a rule naming
// a field the schema lacks fails to compile there and fails at evaluation here); no ratcheting
// of unchanged values; the estimated cost of a CRD's rules is ours (see validateRuleCompilation).
//
// Thread ownership: the front thread (a validator per CRD version, owned by its strategy).
import type { FieldError } from '../strategy.js';
import type { JSONSchemaProps } from './structural.js';
import { compile, evalBudgeted, typeCheck, type Program } from '../../cel/environment.js';
import { Declarer } from '../../cel/schema-types.js';
import { celView } from '../../cel/values.js';
import { estimateCost, maxSize } from '../../cel/estimate.js';
import { STATIC_ESTIMATED_COST_LIMIT, STATIC_ESTIMATED_CRD_COST_LIMIT, RUNTIME_CEL_COST_BUDGET, OUT_OF_BUDGET, ACTUAL_COST_LIMIT_EXCEEDED, MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES } from '../../cel/cost.js';
import { Optional } from '@marcbachmann/cel-js';
import { GoValue, goQuote } from '../../errors.js';

export interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
  fieldPath?: string;
  optionalOldSelf?: boolean;
}

type Schema = JSONSchemaProps & { 'x-kubernetes-validations'?: ValidationRule[] };

interface CompiledRule {
  rule: ValidationRule;
  program?: Program;
  error?: string;
  usesOldSelf: boolean;
  message?: Program;
  fieldPath: string;
}

const VARS = { self: 'dyn', oldSelf: 'dyn' };
const compiledBySchema = new WeakMap<object, CompiledRule[]>();

function rulesOf(s: Schema): CompiledRule[] {
  let c = compiledBySchema.get(s);
  if (c) return c;
  c = (s['x-kubernetes-validations'] ?? []).map((rule) => {
    const r = compile(rule.rule ?? '', VARS, ['bool']);
    const m = rule.messageExpression ? compile(rule.messageExpression, VARS, ['string']).program : undefined;
    return { rule, program: r.program, error: r.error, usesOldSelf: /\boldSelf\b/.test(rule.rule ?? ''), message: m, fieldPath: normalizeFieldPath(rule.fieldPath ?? '') };
  });
  compiledBySchema.set(s, c);
  return c;
}

/** ".spec.x['a.b']" → "spec.x[a.b]" (kube's ValidFieldPath rendered as a field.Path suffix). */
function normalizeFieldPath(p: string): string {
  let out = '';
  const re = /\.([^.[\]]+)|\[\s*'((?:[^'\\]|\\.)*)'\s*\]/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(p))) out += m[1] !== undefined ? (out ? `.${m[1]}` : m[1]) : `[${m[2].replace(/\\(.)/g, '$1')}]`;
  return out;
}

const child = (path: string, name: string) => (path ? `${path}.${name}` : name);
const ruleText = (r: ValidationRule) => (r.message ? r.message.trim() : (r.rule ?? '').trim());
const schemaType = (s: Schema) => s.type ?? (s['x-kubernetes-int-or-string'] ? 'string' : 'object');

/** Whether a schema tree has any rule (a CRD without rules costs nothing). */
export function hasRules(s: Schema | undefined): boolean {
  if (!s) return false;
  if (s['x-kubernetes-validations']?.length) return true;
  if (s.properties && Object.values(s.properties).some((p) => hasRules(p as Schema))) return true;
  if (s.items && hasRules(s.items as Schema)) return true;
  if (typeof s.additionalProperties === 'object' && hasRules(s.additionalProperties as Schema)) return true;
  return false;
}

/**
 * Runs the rules of a schema over an object. `transition` picks the rules: false for those
 * without oldSelf (a create, or the plain half of an update), true for those with oldSelf,
 * given the old object (the update's half: kube runs a transition rule only where an old value correlates).
 */
export function validateCel(schema: Schema | undefined, obj: unknown, old: unknown, transition: boolean): FieldError[] {
  const errs: FieldError[] = [];
  if (!schema || !hasRules(schema)) return errs;
  const budget = { left: RUNTIME_CEL_COST_BUDGET };
  walk(schema, obj, old, '', errs, budget, transition);
  return errs;
}

function walk(s: Schema, v: unknown, old: unknown, path: string, errs: FieldError[], budget: { left: number }, transition: boolean): void {
  if (budget.left < 0 || v === undefined || v === null) return;
  runRules(s, v, old, path, errs, budget, transition);
  if (Array.isArray(v)) {
    if (!s.items) return;
    const keys = s['x-kubernetes-list-type'] === 'map' ? (s['x-kubernetes-list-map-keys'] ?? []) : null;
    const oldItems = Array.isArray(old) && keys ? old : [];
    v.forEach((item, i) => {
      const o = keys ? oldItems.find((x: any) => keys.every((k) => x?.[k] === (item as any)?.[k])) : undefined;
      walk(s.items as Schema, item, o, `${path}[${i}]`, errs, budget, transition);
    });
    return;
  }
  if (typeof v !== 'object') return;
  const oo = old && typeof old === 'object' && !Array.isArray(old) ? (old as Record<string, unknown>) : undefined;
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    const ps = s.properties?.[k] as Schema | undefined;
    if (ps) walk(ps, x, oo?.[k], child(path, k), errs, budget, transition);
    else if (typeof s.additionalProperties === 'object') {
      const correlate = s['x-kubernetes-map-type'] !== 'atomic';
      walk(s.additionalProperties as Schema, x, correlate ? oo?.[k] : undefined, `${path}[${k}]`, errs, budget, transition);
    }
  }
}

function runRules(s: Schema, v: unknown, old: unknown, path: string, errs: FieldError[], budget: { left: number }, transition: boolean): void {
  const rules = rulesOf(s);
  if (!rules.length) return;
  const type = schemaType(s);
  const fail = (detail: string) => errs.push({ field: path, type: 'FieldValueInvalid', value: type, detail });
  if (budget.left <= 0) {
    fail(OUT_OF_BUDGET);
    budget.left = -1;
    return;
  }
  let self: unknown;
  let oldSelf: unknown;
  for (const c of rules) {
    const isTransition = c.usesOldSelf;
    if (isTransition !== transition) continue;
    if (c.error) {
      fail(`rule compile error: ${c.error}`);
      continue;
    }
    if (isTransition && (old === undefined || old === null) && !c.rule.optionalOldSelf) continue;
    self ??= celView(v);
    if (oldSelf === undefined && old !== undefined && old !== null) oldSelf = celView(old);
    const act = {
      self,
      oldSelf: c.rule.optionalOldSelf ? (oldSelf === undefined ? Optional.none() : Optional.of(oldSelf)) : (oldSelf ?? null),
    };
    const r = evalBudgeted(c.program!, act, budget.left);
    if (r.outOfBudget) {
      fail(OUT_OF_BUDGET);
      budget.left = -1;
      return;
    }
    budget.left = r.remaining;
    if (r.error !== undefined) {
      if (r.error.startsWith('no such overload')) fail(`'${r.error}': call arguments did not match a supported operator, function or macro signature for rule: ${ruleText(c.rule)}`);
      else if (r.error.startsWith(ACTUAL_COST_LIMIT_EXCEEDED)) {
        fail(`'${r.error}': no further validation rules will be run due to call cost exceeds limit for rule: ${ruleText(c.rule)}`);
        budget.left = -1;
        return;
      } else fail(`${r.error} evaluating rule: ${ruleText(c.rule)}`);
      continue;
    }
    if (r.value === true) continue;
    const at = c.fieldPath ? (c.fieldPath.startsWith('[') ? path + c.fieldPath : child(path, c.fieldPath)) : path;
    let detail = '';
    if (c.message) {
      const m = evalBudgeted(c.message, act, budget.left);
      if (m.outOfBudget) {
        errs.push({ field: at, type: 'FieldValueInvalid', value: type, detail: 'messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run' });
        budget.left = -1;
        return;
      }
      budget.left = m.remaining;
      if (typeof m.value === 'string') {
        const t = m.value.trim();
        if (t && t.length <= MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES && !t.includes('\n')) detail = t;
      }
    }
    if (!detail) detail = c.rule.message ? c.rule.message.trim() : `failed rule: ${ruleText(c.rule)}`;
    // kube 1.33 shows the schema type as the value ("object", "string"); later releases show scalars themselves
    const value = type;
    switch (c.rule.reason) {
      case 'FieldValueForbidden':
        errs.push({ field: at, type: 'FieldValueForbidden', detail });
        break;
      case 'FieldValueRequired':
        errs.push({ field: at, type: 'FieldValueRequired', detail });
        break;
      case 'FieldValueDuplicate':
        errs.push({ field: at, type: 'FieldValueDuplicate', value });
        break;
      default:
        errs.push({ field: at, type: 'FieldValueInvalid', value, detail });
    }
  }
}

/** Go's %#v of an apiextensions.ValidationRule, the value kube shows for a rule that does not compile. */
function goRule(r: ValidationRule): GoValue {
  const q = (s: unknown) => goQuote(typeof s === 'string' ? s : '');
  const reason = r.reason ? '(*apiextensions.FieldValueErrorReason)(0xc000000000)' : '(*apiextensions.FieldValueErrorReason)(nil)';
  const oos = r.optionalOldSelf === undefined ? '(*bool)(nil)' : '(*bool)(0xc000000000)';
  return new GoValue(
    `apiextensions.ValidationRule{Rule:${q(r.rule)}, Message:${q(r.message)}, MessageExpression:${q(r.messageExpression)}, Reason:${reason}, FieldPath:${q(r.fieldPath)}, OptionalOldSelf:${oos}}`,
  );
}

/** kube's getCostErrorMessage: the factor by which a cost exceeds its limit, in Go's formatting. */
function costMessage(what: string, cost: number, limit: number): string {
  const f = cost / limit;
  const factor = f > 100 ? 'more than 100x' : f < 1.5 ? `${f.toFixed(6)}x` : `${f.toFixed(1)}x`;
  return `${what} exceeds budget by factor of ${factor} (try simplifying the rule(s), or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)`;
}

/**
 * Our estimate of a rule's cost is close to kube's, not equal (src/cel/estimate.ts): a rule is
 * refused only when the estimate passes the limit by this margin, so no CRD kube accepts is
 * refused here; the rules kube refuses in practice (a loop over an unbounded list, a regex over
 * unbounded strings in one) are over by orders of magnitude.
 */
const ESTIMATE_MARGIN = 2;

/**
 * A CRD's rules must compile when the CRD is written (kube's ValidateCustomResourceDefinition
 * OpenAPISchema): each rule (bool) and messageExpression (string), with the compiler's
 * message; and each rule's estimated cost, times how many times it may run (the sizes of the
 * lists and maps above it), must stay under StaticEstimatedCostLimit, all of them together
 * under StaticEstimatedCRDCostLimit.
 */
export function validateRuleCompilation(root: unknown, at: string, errs: FieldError[]): void {
  const total = { cost: 0 };
  rootAt = at;
  walkRules(root, at, errs, 1, total);
  if (total.cost > STATIC_ESTIMATED_CRD_COST_LIMIT * ESTIMATE_MARGIN) {
    errs.push({ field: at, type: 'FieldValueForbidden', detail: costMessage('x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema', total.cost, STATIC_ESTIMATED_CRD_COST_LIMIT) });
  }
}

let rootAt = '';
const schemaIds = new WeakMap<object, number>();
let nextSchemaId = 0;

/**
 * kube types `self` from the schema, so a rule naming a field the schema does not declare does
 * not compile. We check that with typed `self` and `oldSelf` (other type errors are left to
 * evaluation: the engine's typing of schemas is close to kube's, not equal).
 */
function typedFieldError(rule: string, s: Schema, resourceRoot: boolean): string | undefined {
  let id = schemaIds.get(s);
  if (id === undefined) schemaIds.set(s, (id = nextSchemaId++));
  const issues = typeCheck(rule, `crd-self|${id}|${resourceRoot}`, (env) => {
    const t = new Declarer(env, `S${id}`).custom(s, 'self', resourceRoot);
    env.registerVariable('self', t);
    env.registerVariable('oldSelf', t);
  });
  return issues && /: undefined field '/.test(issues) ? issues : undefined;
}

function walkRules(n: unknown, at: string, errs: FieldError[], cardinality: number, total: { cost: number }): void {
  if (!n || typeof n !== 'object' || Array.isArray(n)) return;
  const s = n as Schema;
  (s['x-kubernetes-validations'] ?? []).forEach((r, i) => {
    const p = `${at}.x-kubernetes-validations[${i}]`;
    if (typeof r?.rule !== 'string' || r.rule.trim() === '') {
      errs.push({ field: `${p}.rule`, type: 'FieldValueRequired', detail: 'rule is not specified' });
      return;
    }
    const c = compile(r.rule, VARS, ['bool']);
    const undefinedField = c.error ? undefined : typedFieldError(r.rule, s, at === rootAt);
    if (c.error) errs.push({ field: `${p}.rule`, type: 'FieldValueInvalid', value: goRule(r), detail: c.error });
    else if (undefinedField) errs.push({ field: `${p}.rule`, type: 'FieldValueInvalid', value: goRule(r), detail: `compilation failed: ${undefinedField}` });
    else {
      const cost = estimateCost(c.program!.ast, { self: s, oldSelf: s }) * cardinality;
      total.cost += cost;
      if (cost > STATIC_ESTIMATED_COST_LIMIT * ESTIMATE_MARGIN) errs.push({ field: `${p}.rule`, type: 'FieldValueForbidden', detail: costMessage('estimated rule cost', cost, STATIC_ESTIMATED_COST_LIMIT) });
    }
    if (r.messageExpression) {
      const m = compile(r.messageExpression, VARS, ['string']);
      if (m.error) errs.push({ field: `${p}.messageExpression`, type: 'FieldValueInvalid', value: goRule(r), detail: `messageExpression ${m.error}` });
    }
  });
  if (s.properties) for (const [k, x] of Object.entries(s.properties)) walkRules(x, `${at}.properties[${k}]`, errs, cardinality, total);
  walkRules(s.items, `${at}.items`, errs, cardinality * maxSize(s), total);
  if (typeof s.additionalProperties === 'object') walkRules(s.additionalProperties, `${at}.additionalProperties`, errs, cardinality * maxSize(s), total);
}
