// Decoding of request bodies into objects, with kube-apiserver's errors: a body that is
// not JSON (or YAML) is 400 "couldn't get version/kind", a metadata field of the wrong
// type is 400 "cannot be handled as a <Kind>", an unsupported Content-Type is 415.
import { isAlias, isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Alias, type Document, type Node as YamlNode } from 'yaml';
import { errors } from '../errors.js';
import { decodeProtobufObject, PROTOBUF_MEDIA_TYPE } from './protobuf.js';
import { decodeCbor } from './cbor.js';
import { features } from '../features.js';
import { decodableMediaTypes } from './negotiate.js';

export const DECODABLE_TYPES = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf'];

export function mediaTypeOf(contentType: string | undefined): string {
  if (!contentType || contentType === 'application/json') return 'application/json';
  return contentType.split(/[;,]/)[0].trim().toLowerCase();
}

/** Go's encoding/json (and so kube-apiserver's decoder) refuses input nested deeper than this. */
export const MAX_JSON_DEPTH = 10000;

/**
 * JSON.parse, but refusing input nested deeper than kube's decoder takes, with Go's
 * "exceeded max depth": a deeper body would otherwise parse and then overflow the stack of a
 * recursive walk (merge, prune, validation) into a 500. The scan is one pass over the text.
 */
export function parseJson(text: string): unknown {
  // Nesting deeper than the limit takes more opening brackets than a text this short holds:
  // the scan can only pass (most bodies; it is a third of a small create's decoding).
  if (text.length <= MAX_JSON_DEPTH) return JSON.parse(text);
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > MAX_JSON_DEPTH) throw new Error('exceeded max depth');
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return JSON.parse(text);
}

/** The nesting depth of a decoded value (YAML, CBOR), without recursion. */
function tooDeep(v: unknown): boolean {
  const stack: [unknown, number][] = [[v, 1]];
  while (stack.length) {
    const [x, d] = stack.pop()!;
    if (x === null || typeof x !== 'object') continue;
    if (d > MAX_JSON_DEPTH) return true;
    for (const y of Object.values(x as object)) if (y !== null && typeof y === 'object') stack.push([y, d + 1]);
  }
  return false;
}

// The last body decoded to text, and its text: a write's handler decodes it, then field
// validation reads the same text again for duplicate keys. Keyed by the Buffer itself:
// request bodies are never written to once received. (Keeps one body alive until the next.)
let lastBody: Buffer | null = null;
let lastText = '';

/** A request body as UTF-8 text (the same string for the same Buffer as last time). */
export function bodyText(body: Buffer): string {
  if (body !== lastBody) {
    lastText = body.toString('utf8');
    lastBody = body;
  }
  return lastText;
}

/** Parses a body as JSON or YAML per Content-Type. Throws 400/415 StatusErrors. */
export function parseBody(body: Buffer | null, contentType: string | undefined): unknown {
  const mt = mediaTypeOf(contentType);
  const text = mt === PROTOBUF_MEDIA_TYPE || mt === 'application/cbor' || !body ? '' : bodyText(body);
  if (mt === 'application/json' || mt === '*/*') {
    try {
      return parseJson(text);
    } catch (e) {
      throw errors.badRequest(`couldn't get version/kind; json parse error: ${(e as Error).message}`);
    }
  }
  if (mt === 'application/yaml' || mt === 'application/x-yaml' || mt === 'text/yaml') {
    try {
      const v = parseYaml11(text);
      if (tooDeep(v)) throw new Error('exceeded max depth');
      return v;
    } catch (e) {
      throw errors.badRequest(`couldn't get version/kind; yaml parse error: ${(e as Error).message}`);
    }
  }
  if (mt === PROTOBUF_MEDIA_TYPE) return decodeProtobufObject(body ?? Buffer.alloc(0));
  if (mt === 'application/cbor' && features.enabled('CBORServingAndStorage')) return decodeCbor(body);
  throw errors.unsupportedMediaType(decodableMediaTypes());
}

// YAML bodies are read as kube-apiserver reads them (sigs.k8s.io/yaml on go-yaml v2):
// YAML 1.1 scalars (yes/no/on/off/y/n are booleans, 0777 is octal), but timestamps and
// 1:20 sexagesimals stay strings (go-yaml v2 keeps a timestamp-looking plain scalar a
// string, and has no base-60 numbers). A key given twice is not a parse error: the last
// value wins, and the duplicate is reported by field validation (Strict 400, Warn warning,
// Ignore nothing) in go-yaml's strict wording, `line N: key "k" already set in map`.
const YAML_OPTIONS = {
  version: '1.1' as const,
  uniqueKeys: false,
  merge: true,
  customTags: (tags: any[]) => tags.filter((t) => t.tag !== 'tag:yaml.org,2002:timestamp' && t.format !== 'TIME'),
};

/**
 * The deepest YAML document parseYaml11 parses. go-yaml stops at 10,000 levels; the yaml
 * library recurses per level and overflows the stack near 2,000 (a flow document 5,000 deep
 * took the process down, out of memory while reporting the overflow), and no object the
 * engines take nests past 1,000 (MAX_PATCH_DEPTH) anyway.
 */
export const MAX_YAML_DEPTH = 1000;

/**
 * Whether a YAML text nests deeper than max, over-estimated in one pass without parsing:
 * block levels (a stack of indentation widths, and each `- ` opening a line) plus flow
 * levels (`{` and `[` where a value starts, outside quoted scalars and comments). A bracket
 * inside a plain scalar (`a: b{c`) does not count: it follows no value indicator.
 */
export function yamlNestsDeeperThan(text: string, max: number): boolean {
  // Nesting deeper than max takes more characters than a text this short holds.
  if (text.length <= max) return false;
  const indents: number[] = [];
  let flow = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    // a line: its indentation, then its `- ` sequence entries, then its content
    let indent = 0;
    while (i < n && text.charCodeAt(i) === 32) {
      i++;
      indent++;
    }
    const c0 = text[i];
    if (flow === 0 && c0 !== '\n' && c0 !== '\r' && c0 !== '#' && c0 !== undefined) {
      while (indents.length > 0 && indents[indents.length - 1] >= indent) indents.pop();
      indents.push(indent);
    }
    let dashes = 0;
    while (i + 1 < n && text[i] === '-' && (text[i + 1] === ' ' || text[i + 1] === '\t')) {
      dashes++;
      i += 2;
      while (i < n && text[i] === ' ') i++;
    }
    if (indents.length + dashes + flow > max) return true;
    // the rest of the line
    let prev = '\n'; // the last non-blank character: a bracket after a value indicator opens a level
    while (i < n && text[i] !== '\n') {
      const c = text[i];
      if (c === '"' || c === "'") {
        // a quoted scalar (it may span lines): skipped whole
        i++;
        while (i < n && text[i] !== c) {
          if (c === '"' && text[i] === '\\') i++;
          else if (c === "'" && text[i] === "'" && text[i + 1] === "'") i++;
          i++;
        }
        i++;
        prev = c;
        continue;
      }
      if (c === '#' && (prev === '\n' || text[i - 1] === ' ' || text[i - 1] === '\t')) {
        while (i < n && text[i] !== '\n') i++;
        break;
      }
      if (c === '{' || c === '[') {
        // (a bracket inside a plain scalar opens nothing, nor makes the next one an opener)
        if (prev === '\n' || prev === ':' || prev === ',' || prev === '{' || prev === '[' || prev === '-' || prev === '?') {
          flow++;
          if (indents.length + dashes + flow > max) return true;
          prev = c;
        } else prev = 'x';
      } else if (c === '}' || c === ']') {
        if (flow > 0) flow--;
        prev = c;
      } else if (c !== ' ' && c !== '\t' && c !== '\r') prev = c;
      i++;
    }
    i++;
  }
  return false;
}

/** Duplicate-key messages (possibly none) of each YAML body parseYaml11 decoded, by decoded object (read by field validation). */
const yamlDuplicates = new WeakMap<object, string[]>();

/** go-yaml v2's strict messages for the keys a YAML body repeats in one mapping, e.g. `line 7: key "replicas" already set in map`. */
export function yamlDuplicatesOf(obj: unknown): string[] | undefined {
  return obj !== null && typeof obj === 'object' ? yamlDuplicates.get(obj) : undefined;
}

/**
 * Parses one YAML document the way kube-apiserver does (YAML 1.1, duplicate keys allowed,
 * the last one winning); the duplicates are remembered for yamlDuplicatesOf. Throws the
 * parser's error on malformed YAML.
 */
export function parseYaml11(text: string): unknown {
  if (yamlNestsDeeperThan(text, MAX_YAML_DEPTH)) throw new Error(`yaml: exceeded max depth of ${MAX_YAML_DEPTH}`);
  const lines = new LineCounter();
  const doc = parseDocument(text, { ...YAML_OPTIONS, lineCounter: lines });
  if (doc.errors.length) throw doc.errors[0];
  const dups: string[] = [];
  const walk = (n: unknown): void => {
    if (isMap(n)) {
      const seen = new Set<string>();
      for (const pair of n.items) {
        const k = pair.key as YamlNode | null;
        const v = isScalar(k) ? k.value : k;
        // go-yaml compares resolved keys: yes and true are one key.
        const id = `${typeof v}:${String(v)}`;
        if (seen.has(id)) {
          const line = k?.range ? lines.linePos(k.range[0]).line : 0;
          // Go's %#v of the key: a quoted string, a bare number or bool.
          dups.push(`line ${line}: key ${typeof v === 'string' ? JSON.stringify(v) : String(v)} already set in map`);
        }
        seen.add(id);
        walk(pair.value);
      }
    } else if (isSeq(n)) for (const x of n.items) walk(x);
  };
  walk(doc.contents);
  resolveAliases(doc);
  const out = doc.toJS({ maxAliasCount: -1 });
  if (out !== null && typeof out === 'object') yamlDuplicates.set(out, dups);
  return out;
}

type Slot = (n: unknown) => void;

/**
 * Aliases resolved in one pass, before the yaml library's toJS sees them. Left to it, each
 * alias scans the document's anchors and aliases up to itself (quadratic: 40,000 aliases took
 * 10 s), and each merge key (`<<: *big`) converts its source again, uncounted (5,000 merges of
 * a 5,000-key map took 19 s). Here an alias is looked up in a map of the anchors seen so
 * far, in document order (the last one before it wins, as YAML says); go-yaml v2's budget is
 * applied to the expansion (merges included), stopping as soon as it trips; and only then
 * is each alias replaced in its parent by its anchored node, which toJS then converts at
 * each place, as go-yaml expands it: within the budget, so in bounded time.
 */
function resolveAliases(doc: Document): void {
  const anchors = new Map<string, YamlNode>();
  const targets = new Map<Alias, YamlNode>();
  const slots: Array<[Alias, Slot]> = [];
  const stack: Array<[unknown, Slot]> = [[doc.contents, (n) => (doc.contents = n as any)]];
  while (stack.length) {
    const [n, set] = stack.pop()!;
    if (isAlias(n)) {
      const t = anchors.get(n.source);
      // An alias without an anchor before it stays, for toJS's own error.
      if (t) {
        targets.set(n, t);
        slots.push([n, set]);
      }
      continue;
    }
    const anchor = (n as { anchor?: string } | null)?.anchor;
    if (anchor) anchors.set(anchor, n as YamlNode);
    // Children pushed last first, so they come off the stack in document order.
    if (isMap(n)) {
      for (let i = n.items.length - 1; i >= 0; i--) {
        const pair = n.items[i];
        stack.push([pair.value, (v) => (pair.value = v as any)]);
        stack.push([pair.key, (k) => (pair.key = k as any)]);
      }
    } else if (isSeq(n)) {
      for (let i = n.items.length - 1; i >= 0; i--) stack.push([n.items[i], (v) => (n.items[i] = v)]);
    }
  }
  if (targets.size === 0) return;
  if (excessiveAliasing(doc.contents, targets)) throw new Error('yaml: document contains excessive aliasing');
  for (const [alias, set] of slots) set(targets.get(alias));
}

/** go-yaml v2's share of a document's decoded nodes that may come from alias expansion. */
function allowedAliasRatio(decodeCount: number): number {
  if (decodeCount <= 400_000) return 0.99;
  if (decodeCount >= 4_000_000) return 0.1;
  return 0.99 - 0.89 * ((decodeCount - 400_000) / 3_600_000);
}

/**
 * Walks the document's nodes as go-yaml v2 decodes them (an alias, and a merge key's
 * source, expanded again at each use) and applies its excessive-aliasing rule; stops as soon
 * as the rule trips, so a bomb (or an anchor that contains its own alias) costs little. A
 * document the rule lets through expands to at most about 4M nodes or 1.1 times its own.
 */
function excessiveAliasing(root: unknown, targets: Map<Alias, YamlNode>): boolean {
  const stack: [unknown, boolean][] = [[root, false]];
  let decoded = 0;
  let aliased = 0;
  while (stack.length) {
    const [n, inAlias] = stack.pop()!;
    if (n === null || n === undefined) continue;
    decoded++;
    if (inAlias) aliased++;
    if (aliased > 100 && decoded > 1000 && aliased / decoded > allowedAliasRatio(decoded)) return true;
    if (isAlias(n)) {
      const t = targets.get(n);
      if (t) stack.push([t, true]);
    } else if (isMap(n)) {
      for (const pair of n.items) {
        if (!isPair(pair)) continue;
        stack.push([pair.value, inAlias]);
        stack.push([pair.key, inAlias]);
      }
    } else if (isSeq(n)) {
      for (const x of n.items) stack.push([x, inAlias]);
    }
  }
  return false;
}

type Check = 'string' | 'map' | 'strings' | 'int' | 'array' | 'object';

const META_TYPES: Record<string, Check> = {
  name: 'string',
  generateName: 'string',
  namespace: 'string',
  selfLink: 'string',
  uid: 'string',
  resourceVersion: 'string',
  generation: 'int',
  creationTimestamp: 'string',
  deletionTimestamp: 'string',
  deletionGracePeriodSeconds: 'int',
  labels: 'map',
  annotations: 'map',
  ownerReferences: 'array',
  finalizers: 'strings',
  managedFields: 'array',
};

/** META_TYPES as a list, made once (decodeObject runs on every write). */
const META_CHECKS = Object.entries(META_TYPES) as Array<[string, Check]>;

const GO_TYPE: Record<Check, string> = {
  string: 'string',
  map: 'map[string]string',
  strings: '[]string',
  int: 'int64',
  array: '[]v1.OwnerReference',
  object: 'v1.ObjectMeta',
};

function jsonTypeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'object') return 'object';
  return typeof v;
}

function ok(check: Check, v: unknown): boolean {
  if (v === null || v === undefined) return true;
  switch (check) {
    case 'string':
      return typeof v === 'string';
    case 'int':
      return typeof v === 'number' && Number.isInteger(v);
    case 'map':
      return typeof v === 'object' && !Array.isArray(v) && Object.values(v as object).every((x) => typeof x === 'string' || x === null);
    case 'strings':
      return Array.isArray(v) && v.every((x) => typeof x === 'string');
    case 'array':
      return Array.isArray(v) && v.every((x) => x !== null && typeof x === 'object' && !Array.isArray(x));
    case 'object':
      return typeof v === 'object' && !Array.isArray(v);
  }
}

/**
 * Checks that a decoded body is an object of the expected group/version/kind, with a
 * well-typed metadata, and fills in apiVersion and kind when they are missing.
 */
export function decodeObject(raw: unknown, apiVersion: string, kind: string): Record<string, any> {
  const cannot = (why: string) => errors.badRequest(`${kind} in version "${apiVersion.split('/').pop()}" cannot be handled as a ${kind}: ${why}`);
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw errors.badRequest(`couldn't get version/kind; json parse error: json: cannot unmarshal ${jsonTypeName(raw)} into Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }`);
  }
  const obj = raw as Record<string, any>;
  if (obj.apiVersion !== undefined && typeof obj.apiVersion !== 'string') throw cannot(`json: cannot unmarshal ${jsonTypeName(obj.apiVersion)} into Go struct field .apiVersion of type string`);
  if (obj.kind !== undefined && typeof obj.kind !== 'string') throw cannot(`json: cannot unmarshal ${jsonTypeName(obj.kind)} into Go struct field .kind of type string`);
  if (obj.apiVersion && obj.apiVersion !== apiVersion) {
    throw errors.badRequest(`the API version in the data (${obj.apiVersion}) does not match the expected API version (${apiVersion})`);
  }
  if (obj.kind && obj.kind !== kind) {
    throw errors.badRequest(`the kind in the data (${obj.kind}) does not match the expected kind (${kind})`);
  }
  obj.apiVersion = apiVersion;
  obj.kind = kind;
  if (obj.metadata === undefined || obj.metadata === null) obj.metadata = {};
  if (!ok('object', obj.metadata)) throw cannot(`json: cannot unmarshal ${jsonTypeName(obj.metadata)} into Go struct field ${kind}.metadata of type v1.ObjectMeta`);
  const meta = obj.metadata;
  for (let i = 0; i < META_CHECKS.length; i++) {
    const [field, check] = META_CHECKS[i];
    const v = meta[field];
    if (!ok(check, v)) {
      throw cannot(`json: cannot unmarshal ${jsonTypeName(v)} into Go struct field ObjectMeta.metadata.${field} of type ${GO_TYPE[check]}`);
    }
    if (v === null) delete obj.metadata[field];
  }
  return obj;
}

/**
 * The body of an `application/apply-patch+cbor` patch (CBORServingAndStorage on) as the
 * object it describes, for the apply handler; null when the gate is off (the caller answers 415).
 */
export function decodeApplyPatchCbor(body: Buffer | null): unknown {
  if (!features.enabled('CBORServingAndStorage')) return null;
  return decodeCbor(body);
}
