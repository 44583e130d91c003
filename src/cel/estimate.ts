// An upper bound on what an expression can cost, before it runs, from the sizes its inputs
// may have: kube's static cost estimation (cel-go's checker.Cost with kube's library
// estimator), as CRD validation rules need it. A rule's `self` and `oldSelf` are sized by
// their schema (maxItems, maxLength, maxProperties); what is unbounded is as large as the
// largest request allows (kube's MaxRequestSizeBytes over the smallest encoding of an element).
//
// Where we differ: the per-node and per-function costs are this engine's runtime charges
// (one a node, a tenth a character or element traversed), so a bound here is close to
// kube's, not equal to it; a rule near the limit may be judged differently.
import { MAX_REQUEST_SIZE_BYTES } from './cost.js';
import type { JSONSchemaProps } from '../registry/crd/structural.js';

type Schema = JSONSchemaProps;

interface Est {
  cost: number;
  /** the schema of the value, when known */
  schema?: Schema;
  /** the most elements or characters the value can have */
  size?: number;
}

/** The smallest JSON encoding of a value of this schema (kube's estimateMinSizeJSON). */
function minSize(s: Schema | undefined): number {
  if (!s) return 1;
  switch (s.type) {
    case 'string':
      return 2; // ""
    case 'boolean':
      return 4; // true
    case 'integer':
    case 'number':
      return 1;
    case 'array':
    case 'object':
      return 2; // [] {}
  }
  return 1;
}

/** The most elements or characters a value of this schema can hold. */
export function maxSize(s: Schema | undefined): number {
  const unbounded = MAX_REQUEST_SIZE_BYTES - 2;
  if (!s) return unbounded;
  if (s.type === 'string') return s.maxLength ?? unbounded;
  if (s.type === 'array') return s.maxItems ?? Math.floor(unbounded / (minSize(s.items) + 1));
  if (s.type === 'object') {
    if (s.maxProperties !== undefined) return s.maxProperties;
    if (s.properties) return Object.keys(s.properties).length;
    const v = typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined;
    return Math.floor(unbounded / (minSize(v) + 4)); // "":v,
  }
  return unbounded;
}

const elementOf = (s: Schema | undefined): Schema | undefined =>
  s?.type === 'array' ? s.items : s?.type === 'object' && typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined;
const STRING_KEY: Schema = { type: 'string' };

/** Functions whose work is proportional to their receiver's (or first argument's) size. */
const TRAVERSING = new Set([
  'startsWith', 'endsWith', 'contains', 'matchesRE2', 'matches', 'find', 'findAll', 'split', 'replace', 'lowerAscii', 'upperAscii', 'trim',
  'indexOf', 'lastIndexOf', 'substring', 'charAt', 'join', 'format', 'isSorted', 'sum', 'min', 'max', 'quote', 'url', 'isURL', 'ip', 'cidr', 'quantity',
]);
const COMPREHENSIONS = new Set(['all', 'exists', 'exists_one', 'existsOne', 'map', 'filter', 'transformList', 'transformMap', 'transformMapEntry']);

/**
 * The estimated most an expression (its checked syntax tree) costs, with `vars` giving the
 * schema of each variable (a variable not given is unbounded).
 */
export function estimateCost(ast: any, vars: Record<string, Schema | undefined>): number {
  return est(ast, new Map(Object.entries(vars))).cost;
}

function est(n: any, scope: Map<string, Schema | undefined>): Est {
  if (!n || typeof n !== 'object' || !n.op) return { cost: 0 };
  const a = n.args;
  switch (n.op) {
    case 'value':
      return { cost: 0, size: typeof a === 'string' ? a.length : undefined };
    case 'id': {
      const s = scope.get(a);
      return { cost: 1, schema: s, size: maxSize(s) };
    }
    case '.':
    case '.?': {
      const t = est(a[0], scope);
      const s = t.schema?.properties?.[a[1]] ?? elementOf(t.schema);
      return { cost: t.cost + 1, schema: s, size: maxSize(s) };
    }
    case '[]':
    case '[?]': {
      const t = est(a[0], scope);
      const i = est(a[1], scope);
      const s = elementOf(t.schema);
      return { cost: t.cost + i.cost + 1, schema: s, size: maxSize(s) };
    }
    case '&&':
    case '||': {
      return { cost: est(a[0], scope).cost + est(a[1], scope).cost };
    }
    case '?:': {
      const c = est(a[0], scope);
      const x = est(a[1], scope);
      const y = est(a[2], scope);
      return x.cost >= y.cost ? { ...x, cost: c.cost + x.cost } : { ...y, cost: c.cost + y.cost };
    }
    case 'list': {
      let cost = 1;
      for (const x of a) cost += est(x, scope).cost;
      return { cost, size: a.length };
    }
    case 'map': {
      let cost = 1;
      for (const [k, v] of a) cost += est(k, scope).cost + est(v, scope).cost;
      return { cost, size: a.length };
    }
    case 'call':
    case 'rcall':
      return call(n, scope);
  }
  // operators: both sides, then one step; string or list concatenation and comparison traverse
  const parts: Est[] = Array.isArray(a) ? a.map((x: any) => est(x, scope)) : a?.op ? [est(a, scope)] : [];
  let cost = 1;
  let size: number | undefined;
  for (const p of parts) cost += p.cost;
  const traversed = parts.map((p) => (p.schema?.type === 'string' || p.schema?.type === 'array' ? (p.size ?? 0) : 0));
  if (n.op === '+') {
    size = parts.reduce((s, p) => s + (p.size ?? 0), 0);
    cost += Math.ceil(0.1 * size);
  } else if (n.op === 'in' || n.op === '==' || n.op === '!=') cost += Math.ceil(0.1 * Math.max(0, ...traversed));
  return { cost, size };
}

function call(n: any, scope: Map<string, Schema | undefined>): Est {
  const rec = n.op === 'rcall';
  const name: string = n.args[0];
  const args: any[] = rec ? n.args[2] : n.args[1];
  const receiver = rec ? n.args[1] : undefined;
  if (rec && COMPREHENSIONS.has(name) && args.length >= 2 && args[0]?.op === 'id') {
    const r = est(receiver, scope);
    const n2 = r.size ?? maxSize(undefined);
    const inner = new Map(scope);
    const isList = r.schema?.type !== 'object';
    const twoVars = args.length >= 3 && args[1]?.op === 'id' && !['map', 'filter'].includes(name);
    if (twoVars) {
      inner.set(args[0].args, isList ? { type: 'integer' } : STRING_KEY);
      inner.set(args[1].args, elementOf(r.schema));
    } else inner.set(args[0].args, isList ? elementOf(r.schema) : STRING_KEY);
    let body = 0;
    for (const x of args.slice(twoVars ? 2 : 1)) body += est(x, inner).cost;
    const listOut = name === 'map' || name === 'filter' || name === 'transformList';
    return { cost: r.cost + n2 * (body + 1) + 1, size: listOut ? n2 : undefined, schema: listOut ? { type: 'array' } : undefined };
  }
  if (!rec && name === 'has') return { cost: 1 + est(args[0]?.args?.[0], scope).cost };
  if (rec && name === 'bind' && args.length === 3 && args[0]?.op === 'id') {
    const v = est(args[1], scope);
    const inner = new Map(scope);
    inner.set(args[0].args, v.schema);
    return { ...est(args[2], inner), cost: v.cost + est(args[2], inner).cost + 1 };
  }
  let cost = 1;
  const r = receiver ? est(receiver, scope) : undefined;
  if (r) cost += r.cost;
  const ps = args.map((x) => est(x, scope));
  for (const p of ps) cost += p.cost;
  if (TRAVERSING.has(name)) {
    const main = r ?? ps[0];
    const size = main?.size ?? maxSize(main?.schema);
    cost += Math.ceil(0.1 * size);
    if (name === 'matchesRE2' || name === 'find' || name === 'findAll') cost += Math.ceil(0.1 * size) * Math.max(1, Math.ceil(0.1 * (ps[ps.length - 1]?.size ?? 1)));
  }
  if (name === 'size') return { cost };
  return { cost, size: r?.size };
}
