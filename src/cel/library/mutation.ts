// kube's CEL for MutatingAdmissionPolicy (apiserver/pkg/cel/mutation: the dynamic `Object`
// types, `JSONPatch`, and the jsonpatch library). The engine has no message construction
// (`Object.spec{replicas: 3}`), so a mutation's expression is rewritten before it is
// compiled: each `TypeName{field: expr, ...}` becomes a call of OBJECT_FN with the type name
// and a map of the fields, each value wrapped in dyn() (fields of one object differ in type;
// the map literal must stay homogeneous). The call returns the map, remembering its type
// name, so that the plugin can tell an `Object` from a plain map and check, as kube's
// CheckTypeNamesMatchFieldPathNames does, that nested names follow their field path.
//
// An optional field initializer (`?field: expr`, cel-go's optional syntax, which the engine
// cannot parse either) becomes an entry whose value is a call of OPTIONAL_FIELD_FN on the
// optional: that call marks it, and the construction leaves the field out when the optional
// is empty and sets its value otherwise, as cel-go does for `?field:` in a message.
//
// Where we differ: a compile error in a rewritten expression quotes the rewritten text; a
// `?field:` given a value that is not optional is refused when evaluated, with cel-go's runtime
// message, where cel-go's checker would refuse a statically known one at compile time; and
// optional entries of plain map and list literals (`{?"k": v}`, `[?v]`) are not supported.
//
// Thread ownership: the type names live in a WeakMap keyed by the values an evaluation made
// (front thread, as every CEL evaluation).
import { Optional, type Environment } from '@marcbachmann/cel-js';
import { def, fail, namespace } from './def.js';

export const OBJECT_FN = '__kubeshardObject';
export const OPTIONAL_FIELD_FN = '__kubeshardOptionalField';

/** The value of a `?field: expr` initializer until its construction reads it. */
class OptionalField {
  constructor(readonly value: Optional) {}
}

const typeNames = new WeakMap<object, string>();

/** The type name a constructed value was given (`Object`, `Object.spec`, `JSONPatch`), if it is one. */
export function constructedType(v: unknown): string | undefined {
  return v !== null && typeof v === 'object' ? typeNames.get(v as object) : undefined;
}

export function registerMutation(env: Environment): void {
  def(env, `${OBJECT_FN}(string, map<string, dyn>): dyn`, (name: string, fields: any) => {
    const made = withOptionalFields(fields);
    typeNames.set(made, name);
    return made;
  });
  // The value is dyn here, as every field of a constructed object: where cel-go knows it is not
  // optional it refuses while checking; here the evaluation refuses it, in cel-go's words.
  env.registerType('OptionalFieldInitializer', OptionalField as any);
  def(env, `${OPTIONAL_FIELD_FN}(string, dyn): dyn`, (field: string, v: unknown) => {
    if (!(v instanceof Optional)) fail(`cannot initialize optional entry '${field}' from non-optional value ${formatValue(v)}`);
    return new OptionalField(v);
  });
  // kube's jsonpatch.escapeKey: a map key as one JSON pointer segment (RFC 6901)
  namespace(env, 'jsonpatch', 'JsonPatchNamespace');
  def(env, 'JsonPatchNamespace.escapeKey(string): string', (_ns: unknown, s: string) => s.replaceAll('~', '~0').replaceAll('/', '~1'));
}

/** A value as cel-go's %v prints it in an error (close enough for scalars, which are the usual case). */
function formatValue(v: unknown): string {
  if (typeof v === 'string' || typeof v === 'bigint' || typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v === null || v === undefined) return 'null';
  try {
    return JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? Number(x) : x));
  } catch {
    return String(v);
  }
}

/** The fields with each `?field:` entry resolved: dropped when empty, its value when present. */
function withOptionalFields(fields: any): any {
  if (fields instanceof Map) {
    if (![...fields.values()].some((v) => v instanceof OptionalField)) return fields;
    const out = new Map();
    for (const [k, v] of fields) {
      if (!(v instanceof OptionalField)) out.set(k, v);
      else if (v.value.hasValue()) out.set(k, v.value.value());
    }
    return out;
  }
  if (!Object.values(fields).some((v) => v instanceof OptionalField)) return fields;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) {
    if (!(v instanceof OptionalField)) out[k] = v;
    else if (v.value.hasValue()) out[k] = v.value.value();
  }
  return out;
}

const KEYWORDS = new Set(['in', 'true', 'false', 'null', 'as', 'break', 'const', 'continue', 'else', 'for', 'function', 'if', 'import', 'let', 'loop', 'package', 'namespace', 'return', 'var', 'void', 'while']);
const JSON_PATCH_FIELDS = new Set(['op', 'path', 'from', 'value']);

class Unrewritable extends Error {}

/** constructions nested deeper than cel-go's parser allows (its recursion limit, 250) are not rewritten */
const MAX_NESTING = 250;

/**
 * The expression with kube's object constructions turned into calls the engine compiles.
 * Only `Object`, `Object.<path>` and `JSONPatch` are constructible (kube's type provider);
 * anything it cannot read is left as written, for the engine to report.
 */
export function rewriteObjectConstruction(src: string): string {
  if (!/[A-Za-z_0-9]\s*\{/.test(src)) return src;
  let i = 0;
  const n = src.length;
  const isIdStart = (c: string) => /[A-Za-z_]/.test(c);
  const isId = (c: string) => /[A-Za-z_0-9]/.test(c);
  const skipWs = (j: number) => {
    while (j < n && /\s/.test(src[j])) j++;
    return j;
  };
  const readId = (j: number) => {
    let k = j;
    while (k < n && isId(src[k])) k++;
    return src.slice(j, k);
  };
  /** a string or bytes literal at i (with its r/b prefixes), copied whole */
  const literal = (): string | undefined => {
    let j = i;
    let raw = false;
    while (j < n && j - i < 2 && /[rRbB]/.test(src[j])) {
      if (/[rR]/.test(src[j])) raw = true;
      j++;
    }
    const q = src[j];
    if (q !== '"' && q !== "'") return undefined;
    const triple = src.startsWith(q.repeat(3), j);
    const close = triple ? q.repeat(3) : q;
    let k = j + close.length;
    while (k < n) {
      if (!raw && src[k] === '\\') {
        k += 2;
        continue;
      }
      if (src.startsWith(close, k)) {
        k += close.length;
        break;
      }
      k++;
    }
    const text = src.slice(i, k);
    i = k;
    return text;
  };
  const prevSignificant = (j: number) => {
    let k = j - 1;
    while (k >= 0 && /\s/.test(src[k])) k--;
    return k >= 0 ? src[k] : '';
  };
  /** copies up to (not including) one of `stops` outside any brackets */
  const expr = (stops: string): string => {
    let out = '';
    let depth = 0;
    while (i < n) {
      const c = src[i];
      if (depth === 0 && stops.includes(c)) return out;
      if (c === '"' || c === "'" || (/[rRbB]/.test(c) && !isId(src[i - 1] ?? ''))) {
        const lit = literal();
        if (lit !== undefined) {
          out += lit;
          continue;
        }
      }
      if (isIdStart(c) && !isId(src[i - 1] ?? '')) {
        const first = readId(i);
        const construction = prevSignificant(i) !== '.' && !KEYWORDS.has(first) ? constructionAt() : undefined;
        if (construction !== undefined) {
          out += construction;
          continue;
        }
        out += first;
        i += first.length;
        continue;
      }
      if (c === '(' || c === '[' || c === '{') depth++;
      else if (c === ')' || c === ']' || c === '}') depth--;
      out += c;
      i++;
    }
    return out;
  };
  /** constructions open around i: past MAX_NESTING the text is left to the parser, which refuses it */
  let nesting = 0;
  /** `Name.path{f: e, ...}` at i, rewritten; undefined (i unmoved) when there is none */
  const constructionAt = (): string | undefined => {
    if (++nesting > MAX_NESTING) throw new Unrewritable();
    try {
      return constructionBody();
    } finally {
      nesting--;
    }
  };
  const constructionBody = (): string | undefined => {
    const parts = [readId(i)];
    let j = i + parts[0].length;
    for (;;) {
      const k = skipWs(j);
      if (src[k] !== '.') break;
      const m = skipWs(k + 1);
      const id = readId(m);
      if (!id || !isIdStart(id[0])) break;
      parts.push(id);
      j = m + id.length;
    }
    const brace = skipWs(j);
    if (src[brace] !== '{') return undefined;
    const name = parts.join('.');
    if (name !== 'JSONPatch' && parts[0] !== 'Object') throw new Unrewritable();
    i = brace + 1;
    let out = `${OBJECT_FN}(${JSON.stringify(name)}, {`;
    let first = true;
    for (;;) {
      let k = skipWs(i);
      if (src[k] === '}') {
        i = k + 1;
        return `${out}})`;
      }
      const optional = src[k] === '?';
      if (optional) k = skipWs(k + 1);
      const field = readId(k);
      if (!field || !isIdStart(field[0])) throw new Unrewritable();
      if (name === 'JSONPatch' && !JSON_PATCH_FIELDS.has(field)) throw new Unrewritable();
      const colon = skipWs(k + field.length);
      if (src[colon] !== ':') throw new Unrewritable();
      i = colon + 1;
      const value = expr(',}');
      const init = optional ? `${OPTIONAL_FIELD_FN}(${JSON.stringify(field)}, ${value})` : `dyn(${value})`;
      out += `${first ? '' : ', '}${JSON.stringify(field)}: ${init}`;
      first = false;
      if (src[i] === ',') {
        i++;
        continue;
      }
      if (src[i] === '}') {
        i++;
        return `${out}})`;
      }
      throw new Unrewritable();
    }
  };
  try {
    const out = expr('');
    return out;
  } catch (e) {
    if (e instanceof Unrewritable) return src;
    throw e;
  }
}

/**
 * kube's ObjectVal.CheckTypeNamesMatchFieldPathNames: every object constructed inside an
 * `Object...` value is named by its field path from the root (`Object.spec.template`);
 * lists and maps in between add nothing to the path. The mismatches, in kube's words.
 */
export function typeNameMismatches(v: unknown, path: string[] = []): string[] {
  const errs: string[] = [];
  if (v === null || typeof v !== 'object') return errs;
  const tn = constructedType(v);
  if (tn !== undefined) {
    const here = path.length ? path : [tn];
    if (here.join('.') !== tn) errs.push(`unexpected type name "${tn}", expected "${here.join('.')}", which matches field name path from root Object type`);
    for (const [k, f] of Object.entries(v)) errs.push(...typeNameMismatches(f, [...here, k]));
    return errs;
  }
  if (!path.length) return errs;
  if (Array.isArray(v)) for (const x of v) errs.push(...typeNameMismatches(x, path));
  else if (v instanceof Map) for (const x of v.values()) errs.push(...typeNameMismatches(x, path));
  else if (Object.getPrototypeOf(v) === Object.prototype) for (const x of Object.values(v)) errs.push(...typeNameMismatches(x, path));
  return errs;
}
