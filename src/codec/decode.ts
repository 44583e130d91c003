// Decoding of request bodies into objects, with kube-apiserver's errors: a body that is
// not JSON (or YAML) is 400 "couldn't get version/kind", a metadata field of the wrong
// type is 400 "cannot be handled as a <Kind>", an unsupported Content-Type is 415.
import { errors } from '../errors.js';
import { decodeProtobufObject, PROTOBUF_MEDIA_TYPE } from './protobuf.js';
import { decodeCbor } from './cbor.js';
import { features } from '../features.js';
import { decodableMediaTypes } from './negotiate.js';
import { parseYaml11 } from './yaml.js';

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

export { MAX_YAML_DEPTH, parseYaml11, yamlDuplicatesOf, yamlNestsDeeperThan } from './yaml.js';

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
