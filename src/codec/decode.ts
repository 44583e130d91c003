// Decoding of request bodies into objects, with kube-apiserver's errors: a body that is
// not JSON (or YAML) is 400 "couldn't get version/kind", a metadata field of the wrong
// type is 400 "cannot be handled as a <Kind>", an unsupported Content-Type is 415.
import { parse as parseYaml } from 'yaml';
import { errors } from '../errors.js';
import { decodeProtobufObject, PROTOBUF_MEDIA_TYPE } from './protobuf.js';
import { decodeCbor } from './cbor.js';
import { features } from '../features.js';
import { decodableMediaTypes } from './negotiate.js';

export const DECODABLE_TYPES = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf'];

export function mediaTypeOf(contentType: string | undefined): string {
  if (!contentType) return 'application/json';
  return contentType.split(/[;,]/)[0].trim().toLowerCase();
}

/** Parses a body as JSON or YAML per Content-Type. Throws 400/415 StatusErrors. */
export function parseBody(body: Buffer | null, contentType: string | undefined): unknown {
  const mt = mediaTypeOf(contentType);
  const text = mt === PROTOBUF_MEDIA_TYPE || mt === 'application/cbor' || !body ? '' : body.toString('utf8');
  if (mt === 'application/json' || mt === '*/*') {
    try {
      return JSON.parse(text);
    } catch (e) {
      throw errors.badRequest(`couldn't get version/kind; json parse error: ${(e as Error).message}`);
    }
  }
  if (mt === 'application/yaml' || mt === 'application/x-yaml' || mt === 'text/yaml') {
    try {
      return parseYaml(text);
    } catch (e) {
      throw errors.badRequest(`couldn't get version/kind; yaml parse error: ${(e as Error).message}`);
    }
  }
  if (mt === PROTOBUF_MEDIA_TYPE) return decodeProtobufObject(body ?? Buffer.alloc(0));
  if (mt === 'application/cbor' && features.enabled('CBORServingAndStorage')) return decodeCbor(body);
  throw errors.unsupportedMediaType(decodableMediaTypes());
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
  for (const [field, check] of Object.entries(META_TYPES)) {
    const v = obj.metadata[field];
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
