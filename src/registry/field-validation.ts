// Schema-driven field validation of request bodies (spec 4.8), from the committed schema
// catalog (src/api/schema.ts):
//  - types: a value of the wrong JSON type is always fatal, 400 BadRequest worded as
//    kube-apiserver's JSON decoder words it ("json: cannot unmarshal string into Go struct
//    field DeploymentSpec.spec.replicas of type int32"); quantities, int-or-string,
//    date-time and base64 (format byte) values are checked as their Go types parse them;
//  - required fields: missing ones are 422 Invalid ("Required value"), on full objects only;
//  - unknown fields (not in the schema) and duplicated fields (a key twice in one JSON
//    object, found by findDuplicateFields on the raw text) follow `fieldValidation`:
//    Ignore drops them, Warn (the default) drops them and adds one warning per field,
//    Strict fails with 400 naming every one ("strict decoding error: unknown field
//    \"spec.foo\", duplicate field \"spec.replicas\"").
//
// Entry points:
//  - fieldValidationMode(query, verb): reads and checks the fieldValidation parameter.
//  - checkFields(obj, gvk, mode, opts): the pure check; drops unknown fields in place and
//    returns { warnings, errors, typeError, required }. The apply path (server-side apply)
//    calls it on the apply configuration with { required: false } and then enforceFieldCheck.
//  - enforceFieldCheck(result, kind, apiVersion, warnings): turns a result into kube's
//    responses (throws 400/422, or appends warnings).
//  - validateBody(...): the one call the create/update/patch handlers make.
//
// Stateless and pure except for the in-place dropping; runs on the front thread.
import { definition, definitionOf, type SchemaDef, type SchemaProp } from '../api/schema.js';
import { errors, StatusError, StatusReason } from '../errors.js';
import { bodyText, yamlDuplicatesOf } from '../codec/decode.js';
import { customSchemaOf } from '../api/custom-resources.js';
import { prune } from './crd/structural.js';
import { matchesQuantityPattern, QUANTITY_ERROR } from './quantity.js';
import { MAX_PATCH_DEPTH, nestsDeeperThan } from './patch-limits.js';

export type FieldValidationMode = 'Ignore' | 'Warn' | 'Strict';

const QUANTITY = 'io.k8s.apimachinery.pkg.api.resource.Quantity';
const INT_OR_STRING = 'io.k8s.apimachinery.pkg.util.intstr.IntOrString';
// RFC 3339 as Go's time.RFC3339 parses it (fractional seconds allowed).
const RFC3339_RE = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

const OPTIONS_KIND: Record<string, string> = { create: 'CreateOptions', update: 'UpdateOptions', patch: 'PatchOptions' };

/**
 * The fieldValidation parameter: '' means the default, Warn. Any other value is rejected as
 * kube-apiserver rejects it, 422 Invalid on the verb's options kind.
 */
export function fieldValidationMode(query: URLSearchParams, verb: 'create' | 'update' | 'patch'): FieldValidationMode {
  const v = query.get('fieldValidation') ?? '';
  if (v === '') return 'Warn';
  if (v === 'Ignore' || v === 'Warn' || v === 'Strict') return v;
  throw errors.invalid(OPTIONS_KIND[verb], 'meta.k8s.io', '', [
    { field: 'fieldValidation', type: 'FieldValueNotSupported', value: v, detail: 'supported values: "", "Ignore", "Strict", "Warn"' },
  ]);
}

export interface FieldCheckResult {
  /** Warning texts for the Warning header (Warn mode only), e.g. 'unknown field "spec.foo"'. */
  warnings: string[];
  /** The unknown/duplicate fields in kube's wording (Strict mode only); non-empty means 400. */
  errors: string[];
  /** The first type mismatch, in Go's decoder wording; always fatal (400). */
  typeError?: string;
  /** Missing required fields, e.g. "spec.template.spec.containers[0].name". */
  required: string[];
}

export interface CheckOptions {
  /** Dotted paths of duplicated keys (from findDuplicateFields). */
  duplicates?: string[];
  /** A YAML body's duplicate keys, in go-yaml's words (from yamlDuplicatesOf). */
  yamlDuplicates?: string[];
  /** Check required fields (full objects: create, update, the result of a patch). Default true. */
  required?: boolean;
}

// ---------------------------------------------------------------------------------------
// Go type names, as the decoder's messages print them

function goDefName(name: string): string {
  const parts = name.split('.');
  return parts.length >= 2 ? `${parts[parts.length - 2]}.${parts[parts.length - 1]}` : name;
}

function goTypeOf(p: SchemaProp): string {
  if (p.r) return goDefName(p.r);
  switch (p.t) {
    case 'string':
      return p.f === 'byte' ? '[]uint8' : 'string';
    case 'integer':
      return p.f === 'int32' ? 'int32' : 'int64';
    case 'number':
      return 'float64';
    case 'boolean':
      return 'bool';
    case 'array':
      return `[]${p.i ? goTypeOf(p.i) : 'interface {}'}`;
    case 'object':
      return p.a ? `map[string]${goTypeOf(p.a)}` : 'map[string]interface {}';
  }
  return 'interface {}';
}

function jsonKind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'boolean') return 'bool';
  return typeof v; // string, number, object
}

// ---------------------------------------------------------------------------------------
// The walk

type Seg = string | number | { k: string };

class Walker {
  unknown: string[] = [];
  typeError?: string;
  required: string[] = [];
  /** Where the walk is: field names, array indexes, map keys. Paths are rendered only when needed. */
  private segs: Seg[] = [];

  constructor(
    private drop: boolean,
    private checkRequired: boolean,
  ) {}

  /** kube's field path of the current position plus an optional child field: spec.containers[0].name */
  private path(child?: string): string {
    let out = '';
    for (const s of this.segs) {
      if (typeof s === 'string') out = out ? `${out}.${s}` : s;
      else if (typeof s === 'number') out += `[${s}]`;
      else out += `[${s.k}]`;
    }
    if (child !== undefined) out = out ? `${out}.${child}` : child;
    return out;
  }

  /** The Go-decoder message of a type mismatch; `struct` is the innermost Go struct. */
  private mismatch(v: unknown, struct: string, goType: string, detail?: string): void {
    if (this.typeError) return;
    const what = detail ?? jsonKind(v);
    // Go's decoder names the field by its field names from the root, without indexes or keys.
    const fields = this.segs.filter((x): x is string => typeof x === 'string');
    this.typeError = fields.length
      ? `json: cannot unmarshal ${what} into Go struct field ${struct}.${fields.join('.')} of type ${goType}`
      : `json: cannot unmarshal ${what} into Go value of type ${goType}`;
  }

  /** Checks `v` against a property schema; `struct` is the Go struct holding the current field. */
  value(v: unknown, p: SchemaProp, struct: string, inStatus: boolean): void {
    if (v === null || v === undefined || this.typeError) return;
    if (p.r) {
      this.ref(v, p.r, struct, inStatus);
      return;
    }
    switch (p.t) {
      case 'string':
        if (typeof v !== 'string') return this.mismatch(v, struct, goTypeOf(p));
        if (p.f === 'byte') {
          const bad = base64Error(v);
          if (bad !== undefined && !this.typeError) this.typeError = `illegal base64 data at input byte ${bad}`;
        }
        return;
      case 'integer': {
        if (typeof v !== 'number') return this.mismatch(v, struct, goTypeOf(p));
        const lim = p.f === 'int32' ? 2 ** 31 : 2 ** 63;
        if (!Number.isInteger(v) || v < -lim || v >= lim) this.mismatch(v, struct, goTypeOf(p), `number ${v}`);
        return;
      }
      case 'number':
        if (typeof v !== 'number') this.mismatch(v, struct, goTypeOf(p));
        return;
      case 'boolean':
        if (typeof v !== 'boolean') this.mismatch(v, struct, goTypeOf(p));
        return;
      case 'array': {
        if (!Array.isArray(v)) return this.mismatch(v, struct, goTypeOf(p));
        if (p.i) {
          for (let i = 0; i < v.length; i++) {
            this.segs.push(i);
            this.value(v[i], p.i, struct, inStatus);
            this.segs.pop();
          }
        }
        return;
      }
      case 'object': {
        if (typeof v !== 'object' || Array.isArray(v)) return this.mismatch(v, struct, goTypeOf(p));
        if (p.a) {
          const a = p.a;
          // Scalar map values (labels, data, ...) are checked without tracking the key.
          const scalar = !a.r && a.t !== 'array' && a.t !== 'object';
          for (const k in v as object) {
            const x = (v as Record<string, unknown>)[k];
            if (scalar) {
              this.value(x, a, struct, inStatus);
            } else {
              this.segs.push({ k });
              this.value(x, a, struct, inStatus);
              this.segs.pop();
            }
          }
        }
        return;
      }
    }
    // no type: anything goes
  }

  private ref(v: unknown, name: string, struct: string, inStatus: boolean): void {
    const def = definition(name);
    if (!def) return;
    if (name === QUANTITY) {
      const s = typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined;
      if (s === undefined || !matchesQuantityPattern(s.trim()) || s.trim() === '') {
        if (!this.typeError) this.typeError = QUANTITY_ERROR;
      }
      return;
    }
    if (name === INT_OR_STRING) {
      if (typeof v === 'string') return;
      if (typeof v !== 'number' || !Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31) {
        if (!this.typeError) this.typeError = `json: cannot unmarshal ${typeof v === 'number' ? `number ${v}` : jsonKind(v)} into Go value of type int32`;
      }
      return;
    }
    if (def.f === 'date-time') {
      if (typeof v !== 'string') return this.mismatch(v, struct, goDefName(name));
      if (v !== '' && !RFC3339_RE.test(v) && !this.typeError) this.typeError = `parsing time ${JSON.stringify(v)} as "2006-01-02T15:04:05Z07:00": cannot parse ${JSON.stringify(v)} as "2006"`;
      return;
    }
    this.def(v, def, name, struct, inStatus);
  }

  /** An object of a definition: known properties checked, unknown ones recorded (and dropped). */
  def(v: unknown, def: SchemaDef, name: string, struct: string, inStatus: boolean): void {
    if (!def.p) {
      // A definition without properties is free-form (RawExtension, FieldsV1, JSON, ...),
      // unless it is a plain scalar.
      if (def.t && def.t !== 'object') this.value(v, { t: def.t, f: def.f }, struct, inStatus);
      return;
    }
    if (typeof v !== 'object' || Array.isArray(v) || v === null) return this.mismatch(v, struct, goDefName(name));
    const obj = v as Record<string, unknown>;
    const here = name.slice(name.lastIndexOf('.') + 1);
    const top = this.segs.length === 0;
    for (const k in obj) {
      // (own properties of the schema only: `__proto__` or `toString` is an unknown field)
      const p = Object.hasOwn(def.p, k) ? def.p[k] : undefined;
      if (!p) {
        this.unknown.push(this.path(k));
        if (this.drop) delete obj[k];
        continue;
      }
      this.segs.push(k);
      this.value(obj[k], p, here, inStatus || (top && k === 'status'));
      this.segs.pop();
      if (this.typeError) return;
    }
    if (this.checkRequired && !inStatus && def.req) {
      for (const r of def.req) if (!Object.hasOwn(obj, r)) this.required.push(this.path(r));
    }
  }
}

/** Index of the first byte Go's base64.StdEncoding rejects, or undefined when the text decodes. */
function base64Error(s: string): number | undefined {
  const t = s.replace(/[\r\n]/g, '');
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    const ok = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 || c === 47;
    if (ok) continue;
    if (c === 61) {
      // padding: only at the end, making the length a multiple of 4
      const rest = t.slice(i);
      if (/^=+$/.test(rest) && t.length % 4 === 0 && rest.length <= 2) return undefined;
      return i;
    }
    return i;
  }
  if (t.length % 4 !== 0) return t.length - (t.length % 4) + (t.length % 4 === 1 ? 0 : t.length % 4);
  return undefined;
}

/**
 * Checks a decoded object against the schema of group/version/kind. Unknown fields are
 * dropped from `obj` in place unless mode is Strict (where the request fails anyway).
 * Kinds the schema catalog does not know pass unchecked.
 */
export function checkFields(obj: unknown, gvk: { group: string; version: string; kind: string }, mode: FieldValidationMode, opts: CheckOptions = {}): FieldCheckResult {
  const result: FieldCheckResult = { warnings: [], errors: [], required: [] };
  const custom = customSchemaOf(gvk.group, gvk.version, gvk.kind);
  if (custom) {
    // Nesting deeper than pruning, defaulting, validation and encoding recurse through is
    // the decoder's error, before any of them runs (a custom resource 2,000 deep was
    // stored, then failed to encode: a 500).
    if (nestsDeeperThan(obj, MAX_PATCH_DEPTH)) {
      result.typeError = EXCEEDED_MAX_DEPTH;
      return result;
    }
    // A custom resource: fields its schema does not name are pruned (kube's structural
    // pruning) and reported as unknown; types and required fields are the schema
    // validation's (422), not the decoder's.
    const unknown = custom.schema ? prune(obj, custom.schema, mode !== 'Strict') : [];
    // metadata is an ObjectMeta like any other kind's: checked (and pruned) by its definition.
    const o = obj as Record<string, unknown> | null;
    if (o && typeof o === 'object' && o.metadata !== undefined) {
      const w = new Walker(mode !== 'Strict', false);
      w.def({ metadata: o.metadata }, { p: { metadata: { r: 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' } } }, `custom.${gvk.kind}`, gvk.kind, false);
      if (w.typeError) {
        result.typeError = w.typeError;
        return result;
      }
      unknown.unshift(...w.unknown);
    }
    const problems = [...(opts.duplicates ?? []).map((p) => `duplicate field ${JSON.stringify(p)}`), ...unknown.map((p) => `unknown field ${JSON.stringify(p)}`)];
    if (mode === 'Strict') result.errors = problems;
    else if (mode === 'Warn') result.warnings = problems;
    return result;
  }
  const name = definitionOf(gvk.group, gvk.version, gvk.kind);
  const def = name ? definition(name) : undefined;
  if (!name || !def) return result;
  const w = new Walker(mode !== 'Strict', opts.required !== false);
  try {
    w.def(obj, def, name, gvk.kind, false);
  } catch (e) {
    // A body nested deeper than the stack allows (JSON.parse takes any depth) is rejected as
    // Go's decoder rejects one deeper than its limit, before anything else recurses into it.
    if (!(e instanceof RangeError)) throw e;
    result.typeError = EXCEEDED_MAX_DEPTH;
    return result;
  }
  if (w.typeError) {
    result.typeError = w.typeError;
    return result;
  }
  // What is left once unknown fields are dropped (kube's typed decoding skips them, at any
  // depth) must nest no deeper than the write path recurses through: a free-form field
  // (RawExtension, JSON) may hold anything. (Strict keeps unknown fields: they fail anyway.)
  if ((mode !== 'Strict' || w.unknown.length === 0) && nestsDeeperThan(obj, MAX_PATCH_DEPTH)) {
    result.typeError = EXCEEDED_MAX_DEPTH;
    return result;
  }
  result.required = w.required;
  // A YAML body reaches kube's JSON decoder through a Go map (sigs.k8s.io/yaml), so its
  // unknown fields are found in sorted key order.
  const unknown = opts.yamlDuplicates !== undefined ? [...w.unknown].sort(comparePaths) : w.unknown;
  const problems = [...(opts.duplicates ?? []).map((p) => `duplicate field ${JSON.stringify(p)}`), ...unknown.map((p) => `unknown field ${JSON.stringify(p)}`)];
  // A YAML body's duplicate keys are one go-yaml error, listed first; its lines are one
  // warning each (kube's parseYAMLWarnings splits that error).
  const yaml = opts.yamlDuplicates ?? [];
  if (mode === 'Strict') result.errors = yaml.length ? [`yaml: unmarshal errors:\n  ${yaml.join('\n  ')}`, ...problems] : problems;
  else if (mode === 'Warn') result.warnings = [...yaml, ...problems];
  return result;
}

/** Go's JSON decoder on input nested past its limit (ours: MAX_PATCH_DEPTH, see patch-limits.ts). */
const EXCEEDED_MAX_DEPTH = 'json: exceeded max depth';

/** Orders field paths as a walk of key-sorted maps would meet them: segment by segment. */
function comparePaths(a: string, b: string): number {
  const x = a.split('.');
  const y = b.split('.');
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
  return x.length - y.length;
}

/**
 * Turns a check into kube-apiserver's answer: a type error or Strict problems are 400
 * BadRequest ("<Kind> in version "<v>" cannot be handled as a <Kind>: ..."), missing required
 * fields 422 Invalid; otherwise warnings are appended to `warnings`.
 */
export function enforceFieldCheck(r: FieldCheckResult, kind: string, apiVersion: string, group: string, name: string, warnings: string[] | undefined): void {
  const version = apiVersion.slice(apiVersion.lastIndexOf('/') + 1);
  const cannot = (why: string) => new StatusError(400, StatusReason.BadRequest, `${kind} in version "${version}" cannot be handled as a ${kind}: ${why}`);
  if (r.typeError) throw cannot(r.typeError);
  if (r.errors.length) throw cannot(`strict decoding error: ${r.errors.join(', ')}`);
  if (r.required.length) {
    throw errors.invalid(kind, group, name, r.required.map((field) => ({ field, type: 'FieldValueRequired' as const })));
  }
  if (warnings) for (const w of r.warnings) if (!warnings.includes(w)) warnings.push(w);
}

// ---------------------------------------------------------------------------------------
// Duplicate keys, found on the raw JSON text (JSON.parse keeps the last one silently)

/**
 * Paths of keys that occur twice in one JSON object, e.g. ["spec.replicas",
 * "spec.template.spec.containers[0].image"]. Expects text that JSON.parse accepted; one pass.
 * It runs on every JSON write, so the open containers are kept in stacks indexed by depth
 * (no object per container) and an object's keys in a small array (a Set past 16 keys);
 * paths are rendered only when a duplicate is found.
 */
export function findDuplicateFields(text: string): string[] {
  let out: string[] | undefined;
  // The stacks are the module's, reused by every call (it runs to completion, and never
  // inside itself): new arrays for them were most of a call's allocation.
  const isObj = scanIsObj;
  const keys = scanKeys;
  const nkeys = scanKeyCount;
  const sets = scanSets;
  const at = scanAt;
  let depth = 0;
  // A string right after '{' or an object's ',' is a key; after anything else it is a value.
  let expectKey = false;
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      // The closing quote is the next one not preceded by an odd run of backslashes.
      let j = text.indexOf('"', i + 1);
      let escaped = false;
      while (j > 0 && text.charCodeAt(j - 1) === 0x5c) {
        let k = j - 1;
        while (text.charCodeAt(k - 1) === 0x5c) k--;
        escaped = true;
        if ((j - k) % 2 === 0) break;
        j = text.indexOf('"', j + 1);
      }
      if (j < 0) break;
      if (expectKey && depth > 0 && isObj[depth - 1]) {
        const key = escaped ? (JSON.parse(text.slice(i, j + 1)) as string) : text.slice(i + 1, j);
        const t = depth - 1;
        let dup = false;
        const cnt = nkeys[t];
        if (cnt >= 0) {
          let arr = keys[t];
          if (!arr) keys[t] = arr = [];
          for (let q = 0; q < cnt; q++) {
            if (arr[q] === key) {
              dup = true;
              break;
            }
          }
          if (!dup) {
            if (cnt < 16) {
              arr[cnt] = key;
              nkeys[t] = cnt + 1;
            } else {
              // past 16 keys, a set
              let set = sets[t];
              if (set) set.clear();
              else sets[t] = set = new Set();
              for (let q = 0; q < cnt; q++) set.add(arr[q]);
              set.add(key);
              nkeys[t] = -1;
            }
          }
        } else if (sets[t]!.has(key)) dup = true;
        else sets[t]!.add(key);
        if (dup) {
          const p = containerPath(isObj, at, t);
          (out ??= []).push(p ? `${p}.${key}` : key);
        }
        at[t] = key;
      }
      expectKey = false;
      i = j + 1;
      continue;
    }
    if (c === 0x7b /* { */) {
      isObj[depth] = true;
      nkeys[depth] = 0;
      at[depth] = '';
      depth++;
      expectKey = true;
    } else if (c === 0x5b /* [ */) {
      isObj[depth] = false;
      nkeys[depth] = 0;
      at[depth] = 0;
      depth++;
      expectKey = false;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      if (depth > 0) depth--;
      // (an empty object's '{' left expectKey set: what follows its '}' is no key)
      expectKey = false;
    } else if (c === 0x2c /* , */) {
      if (depth > 0) {
        if (isObj[depth - 1]) expectKey = true;
        else (at[depth - 1] as number)++;
      }
    }
    i++;
  }
  return out ?? [];
}

// findDuplicateFields' stacks, indexed by depth.
const scanIsObj: boolean[] = [];
/** the keys of the object open at a depth, its first nkeys entries (the array is reused) */
const scanKeys: string[][] = [];
/** how many keys the object open at a depth has had; -1 past 16, when scanSets holds them */
const scanKeyCount: number[] = [];
const scanSets: Array<Set<string>> = [];
/** an object's current key, or an array's current index */
const scanAt: Array<string | number> = [];

/** The field path of the container at depth t: its parents' keys and indexes ("spec.x[0]"). */
function containerPath(isObj: boolean[], at: Array<string | number>, t: number): string {
  let s = '';
  for (let d = 0; d < t; d++) s += isObj[d] ? `.${at[d]}` : `[${at[d]}]`;
  return s.charCodeAt(0) === 0x2e ? s.slice(1) : s;
}

/** True when a media type's body is JSON text (duplicates can be looked for). */
export function isJsonMediaType(mt: string): boolean {
  return mt === 'application/json' || mt.endsWith('+json');
}

/**
 * The handlers' one call: checks a decoded body of the target's kind under the request's
 * fieldValidation, dropping unknown fields, and throws or records warnings as kube does.
 */
export function validateBody(
  obj: unknown,
  gvk: { group: string; version: string; kind: string },
  mode: FieldValidationMode,
  rawJson: Buffer | string | null,
  warnings: string[] | undefined,
  opts: { required?: boolean; name?: string } = {},
): void {
  const duplicates = rawJson && mode !== 'Ignore' ? findDuplicateFields(typeof rawJson === 'string' ? rawJson : bodyText(rawJson)) : [];
  const r = checkFields(obj, gvk, mode, { duplicates, yamlDuplicates: yamlDuplicatesOf(obj), required: opts.required });
  const apiVersion = gvk.group ? `${gvk.group}/${gvk.version}` : gvk.version;
  const name = opts.name ?? ((obj as any)?.metadata?.name as string | undefined) ?? '';
  enforceFieldCheck(r, gvk.kind, apiVersion, gvk.group, name, warnings);
}

/**
 * Field validation of a subresource's body (scale, eviction, binding, ...), whose kind is the
 * subresource's (autoscaling/v1 Scale, policy/v1 Eviction, v1 Binding), not the resource's.
 * `raw` is the JSON text when duplicates can be looked for; `required` is false for patches.
 */
export function validateSubresourceBody(
  target: { info: { group: string; version: string; subresources: Array<{ name: string; kind: string; group?: string; version?: string }> } },
  subresource: string,
  verb: 'create' | 'update' | 'patch',
  query: URLSearchParams,
  obj: unknown,
  raw: Buffer | string | null,
  warnings: string[] | undefined,
  name: string,
): void {
  const sub = target.info.subresources.find((s) => s.name === subresource);
  if (!sub) return;
  const mode = fieldValidationMode(query, verb);
  const gvk = { group: sub.group ?? target.info.group, version: sub.version ?? target.info.version, kind: sub.kind };
  validateBody(obj, gvk, mode, raw, warnings, { name });
}
