// Structural schemas of custom resources (apiextensions-apiserver's structural schema, pruning,
// defaulting and schema validation), over a CRD version's openAPIV3Schema as stored:
//  - prune: drops fields the schema does not name (unless x-kubernetes-preserve-unknown-fields),
//    reporting each as kube's field validation does ('unknown field "spec.foo"');
//  - applyDefaults: fills `default`s of missing properties, parents first;
//  - validate: types, required, enum, min/max, lengths, pattern, items and properties counts,
//    with kube-apiserver's 422 wording ("spec.replicas in body must be of type integer");
//  - typeNode: the view server-side apply walks (list types, map keys, atomic maps; lists
//    without a declared type are atomic).
//
// Thread ownership: pure functions over plain data; run on the front thread.
import type { FieldError } from '../strategy.js';
import type { TypeNode } from '../schema-walk.js';
import { compilePattern } from '../re2.js';
import { ownValue, setOwn } from '../own-keys.js';

export interface JSONSchemaProps {
  type?: string;
  format?: string;
  properties?: Record<string, JSONSchemaProps>;
  items?: JSONSchemaProps;
  additionalProperties?: JSONSchemaProps | boolean;
  required?: string[];
  enum?: unknown[];
  default?: unknown;
  nullable?: boolean;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minProperties?: number;
  maxProperties?: number;
  multipleOf?: number;
  allOf?: JSONSchemaProps[];
  anyOf?: JSONSchemaProps[];
  oneOf?: JSONSchemaProps[];
  not?: JSONSchemaProps;
  description?: string;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
}

type Path = Array<string | number>;

function render(path: Path): string {
  let out = '';
  for (const s of path) out += typeof s === 'number' ? `[${s}]` : out ? `.${s}` : s;
  return out;
}

function isObj(v: unknown): v is Record<string, any> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

const ROOT_META = new Set(['apiVersion', 'kind', 'metadata']);

// ------------------------------------------------------------------ pruning

/**
 * Drops, in place, what the schema does not name, and returns the dropped paths. The root's
 * apiVersion, kind and metadata are always kept (kube prunes metadata by ObjectMeta's own rules).
 */
export function prune(obj: unknown, schema: JSONSchemaProps | undefined, drop = true): string[] {
  const out: string[] = [];
  if (!schema) return out;
  pruneAt(obj, schema, [], out, drop, true);
  return out;
}

function pruneAt(v: unknown, s: JSONSchemaProps, path: Path, out: string[], drop: boolean, root = false): void {
  if (Array.isArray(v)) {
    if (s.items) for (let i = 0; i < v.length; i++) pruneAt(v[i], s.items, [...path, i], out, drop);
    return;
  }
  if (!isObj(v)) return;
  const embedded = s['x-kubernetes-embedded-resource'] === true;
  const preserve = s['x-kubernetes-preserve-unknown-fields'] === true;
  const ap = s.additionalProperties;
  for (const k of Object.keys(v)) {
    if ((root || embedded) && ROOT_META.has(k)) continue;
    const p = propOf(s, k);
    if (p) {
      pruneAt(v[k], p, [...path, k], out, drop);
      continue;
    }
    if (isObj(ap)) {
      pruneAt(v[k], ap, [...path, k], out, drop);
      continue;
    }
    if (preserve || ap === true) continue;
    out.push(render([...path, k]));
    if (drop) delete v[k];
  }
}

/** The schema of property k: an own entry of properties (`__proto__` or `toString` inherits none). */
function propOf(s: JSONSchemaProps, k: string): JSONSchemaProps | undefined {
  return s.properties && Object.hasOwn(s.properties, k) ? s.properties[k] : undefined;
}

// ------------------------------------------------------------------ defaulting

/** Sets the schema's defaults on missing properties (and in list items and map values), in place. */
export function applyDefaults(v: unknown, s: JSONSchemaProps | undefined): void {
  if (!s) return;
  if (Array.isArray(v)) {
    if (s.items) for (const x of v) applyDefaults(x, s.items);
    return;
  }
  if (!isObj(v)) return;
  if (s.properties) {
    for (const [k, p] of Object.entries(s.properties)) {
      const cur = ownValue(v, k);
      if (cur === undefined && p.default !== undefined) setOwn(v, k, structuredClone(p.default));
      // A null where the schema is not nullable takes the default too (kube drops the null, then defaults).
      else if (cur === null && p.default !== undefined && !p.nullable) setOwn(v, k, structuredClone(p.default));
      if (ownValue(v, k) !== undefined) applyDefaults(v[k], p);
    }
  }
  if (isObj(s.additionalProperties)) for (const k of Object.keys(v)) if (!propOf(s, k)) applyDefaults(v[k], s.additionalProperties);
}

// ------------------------------------------------------------------ validation

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v; // string, boolean, object
}

function typeMatches(v: unknown, s: JSONSchemaProps): boolean {
  if (s['x-kubernetes-int-or-string']) return typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v));
  const t = s.type;
  if (!t) return true;
  const j = jsonType(v);
  if (t === 'number') return j === 'number' || j === 'integer';
  return j === t;
}

function goValueText(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  return JSON.stringify(v) ?? 'null';
}

/** Validates a whole custom object against its schema; errors carry kube's paths and details. */
export function validateSchema(obj: unknown, schema: JSONSchemaProps | undefined): FieldError[] {
  const errs: FieldError[] = [];
  if (!schema) return errs;
  validateAt(obj, schema, [], errs, true);
  return errs;
}

function validateAt(v: unknown, s: JSONSchemaProps, path: Path, errs: FieldError[], root = false): void {
  const at = render(path);
  const name = at || '<root>';
  if (v === null) {
    if (!s.nullable && (s.type || s['x-kubernetes-int-or-string'])) {
      errs.push({ field: at, type: 'FieldValueTypeInvalid', value: null, detail: `${name} in body must be of type ${s.type ?? 'integer-or-string'}: "null"` });
    }
    return;
  }
  if (!typeMatches(v, s)) {
    errs.push({ field: at, type: 'FieldValueTypeInvalid', value: v, detail: `${name} in body must be of type ${s.type}: ${JSON.stringify(jsonType(v) === 'integer' ? 'number' : jsonType(v))}` });
    return;
  }
  if (s.enum && s.enum.length && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) {
    errs.push({ field: at, type: 'FieldValueNotSupported', value: v, detail: `supported values: ${s.enum.map(goValueText).join(', ')}` });
  }
  if (typeof v === 'number') {
    if (s.maximum !== undefined) {
      if (s.exclusiveMaximum ? v >= s.maximum : v > s.maximum) {
        errs.push({ field: at, type: 'FieldValueInvalid', value: v, detail: `${name} in body should be less than ${s.exclusiveMaximum ? '' : 'or equal to '}${s.maximum}` });
      }
    }
    if (s.minimum !== undefined) {
      if (s.exclusiveMinimum ? v <= s.minimum : v < s.minimum) {
        errs.push({ field: at, type: 'FieldValueInvalid', value: v, detail: `${name} in body should be greater than ${s.exclusiveMinimum ? '' : 'or equal to '}${s.minimum}` });
      }
    }
    if (s.multipleOf !== undefined && s.multipleOf > 0 && !Number.isInteger(v / s.multipleOf)) {
      errs.push({ field: at, type: 'FieldValueInvalid', value: v, detail: `${name} in body should be a multiple of ${s.multipleOf}` });
    }
  }
  if (typeof v === 'string') {
    const len = [...v].length;
    if (s.maxLength !== undefined && len > s.maxLength) errs.push({ field: at, type: 'FieldValueTooLong', value: v, detail: `may not be more than ${s.maxLength} bytes` });
    if (s.minLength !== undefined && len < s.minLength) errs.push({ field: at, type: 'FieldValueInvalid', value: v, detail: `${name} in body should be at least ${s.minLength} chars long` });
    if (typeof s.pattern === 'string' && s.pattern !== '') {
      // Go's regexp, linear in the value (V8's RegExp backtracks: '^(a+)+$' took seconds on 31 bytes).
      const c = compilePattern(s.pattern);
      if (c.error !== undefined) {
        errs.push({ field: at, type: 'FieldValueInvalid', value: v, detail: `${name} in body should match '${s.pattern}, but pattern is invalid: ${c.error}'` });
      } else if (!c.pattern.test(v)) {
        errs.push({ field: at, type: 'FieldValueInvalid', value: v, detail: `${name} in body should match '${s.pattern}'` });
      }
    }
  }
  if (Array.isArray(v)) {
    if (s.maxItems !== undefined && v.length > s.maxItems) errs.push({ field: at, type: 'FieldValueTooMany', value: v.length, detail: `must have at most ${s.maxItems} items` });
    if (s.minItems !== undefined && v.length < s.minItems) errs.push({ field: at, type: 'FieldValueInvalid', value: v.length, detail: `${name} in body should have at least ${s.minItems} items` });
    const lt = s['x-kubernetes-list-type'];
    if (s.uniqueItems || lt === 'set') {
      const seen = new Set<string>();
      v.forEach((x, i) => {
        const k = JSON.stringify(x);
        if (seen.has(k)) errs.push({ field: render([...path, i]), type: 'FieldValueDuplicate', value: x });
        seen.add(k);
      });
    }
    if (lt === 'map' && s['x-kubernetes-list-map-keys']?.length) {
      const keys = s['x-kubernetes-list-map-keys'];
      const seen = new Set<string>();
      v.forEach((x, i) => {
        if (!isObj(x)) return;
        const k = JSON.stringify(keys.map((key) => x[key]));
        if (seen.has(k)) errs.push({ field: render([...path, i]), type: 'FieldValueDuplicate', value: Object.fromEntries(keys.map((key) => [key, x[key]])) });
        seen.add(k);
      });
    }
    if (s.items) v.forEach((x, i) => validateAt(x, s.items!, [...path, i], errs));
  }
  if (isObj(v)) {
    const n = Object.keys(v).length;
    if (s.maxProperties !== undefined && n > s.maxProperties) errs.push({ field: at, type: 'FieldValueTooMany', value: n, detail: `must have at most ${s.maxProperties} items` });
    if (s.minProperties !== undefined && n < s.minProperties) errs.push({ field: at, type: 'FieldValueInvalid', value: n, detail: `${name} in body should have at least ${s.minProperties} properties` });
    for (const r of s.required ?? []) if (ownValue(v, r) === undefined) errs.push({ field: render([...path, r]), type: 'FieldValueRequired', detail: '' });
    for (const k of Object.keys(v)) {
      if (root && ROOT_META.has(k)) continue;
      const p = propOf(s, k) ?? (isObj(s.additionalProperties) ? s.additionalProperties : undefined);
      if (p) validateAt(v[k], p, [...path, k], errs);
    }
  }
  for (const sub of s.allOf ?? []) validateAt(v, { ...sub, properties: sub.properties }, path, errs);
}

// ------------------------------------------------------------------ apply's view

const nodes = new WeakMap<JSONSchemaProps, TypeNode>();

/** The TypeNode of a schema for server-side apply: lists atomic unless declared, maps granular unless atomic. */
export function typeNode(s: JSONSchemaProps | undefined): TypeNode {
  if (!s) return { kind: 'any' };
  const hit = nodes.get(s);
  if (hit) return hit;
  let n: TypeNode;
  if (s.type === 'array') {
    const lt = s['x-kubernetes-list-type'] ?? 'atomic';
    n = { kind: 'list', elem: typeNode(s.items), listType: lt, listKeys: s['x-kubernetes-list-map-keys'] };
  } else if (s.type === 'object' || s.properties || s.additionalProperties) {
    if (s.properties) {
      const props = s.properties;
      const extra = isObj(s.additionalProperties) ? s.additionalProperties : undefined;
      n = { kind: 'struct', fields: (k) => (Object.hasOwn(props, k) ? typeNode(props[k]) : extra ? typeNode(extra) : undefined) };
    }
    else if (isObj(s.additionalProperties)) n = { kind: 'map', elem: typeNode(s.additionalProperties) };
    else n = { kind: 'any' };
    if (s['x-kubernetes-map-type'] === 'atomic') n.atomic = true;
  } else if (s.type) {
    n = { kind: 'scalar' };
  } else {
    n = { kind: 'any' };
  }
  nodes.set(s, n);
  return n;
}
