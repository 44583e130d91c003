// kube-apiserver's etcd value format, both ways, so that kube and kubeshard read each
// other's objects (kube's storage codec: storagebackend/factory + the storage serializer of
// each group, and the etcd3 store's versioner).
//
// Writing (encodeForStorage): the object is in its storage version already (kubeshard keeps
// objects in kube's storage version, src/registry/conversion.ts); metadata.resourceVersion
// and selfLink are dropped, as kube's APIObjectVersioner.PrepareObjectForStorage does (the
// version is the key's mod_revision). Then, by group:
// - built-in kinds: `--storage-media-type`, application/vnd.kubernetes.protobuf by default:
//   the `k8s\0` + runtime.Unknown envelope of src/codec/protobuf-encode.ts (typeMeta, raw,
//   empty contentEncoding and contentType), as kube's protobuf serializer writes;
// - apiextensions.k8s.io and apiregistration.k8s.io (served in kube by servers whose storage
//   codec is JSON): JSON, and CustomResourceDefinitions in v1beta1 (crd-v1beta1.ts);
// - custom resources: JSON, keys sorted (Go marshals the unstructured map in key order).
// JSON values end with a newline, as Go's json.Encoder writes them.
//
// Reading (decodeFromStorage): protobuf or JSON by the value's first bytes (kube's
// recognizing decoder); encrypted values (`k8s:enc:`) are refused here (the transformer is
// not this module's); an object stored in another version of its resource than kubeshard's
// storage version (a CRD in v1beta1, an HPA an older kube wrote in autoscaling/v1) is
// converted to it; metadata.resourceVersion is set from the key's mod_revision. The result
// is the object and the JSON bytes kubeshard serves (kind, apiVersion, metadata first).
//
// Thread ownership: pure functions over the immutable catalog and proto schema; any thread.
import { catalogData } from '../../api/catalog-data.js';
import type { ResourceInfo } from '../../api/catalog-types.js';
import { orderedObject } from '../../codec/json.js';
import { PROTOBUF_MEDIA_TYPE, decodeProtobufObject, isProtobufBody } from '../../codec/protobuf.js';
import { encodeEnveloped } from '../../codec/protobuf-encode.js';
import { conversionOf } from '../../registry/conversion.js';
import { crdToV1, crdToV1beta1 } from './crd-v1beta1.js';
import { GROUP_PREFIXED_GROUPS, storageFactsOf } from './keys.js';

export const JSON_MEDIA_TYPE = 'application/json';
export type StorageMediaType = typeof PROTOBUF_MEDIA_TYPE | typeof JSON_MEDIA_TYPE;

export interface GroupResource {
  group: string;
  resource: string;
}

/** A stored value kubeshard cannot turn back into an object (kube: a corrupt object, StorageReadError). */
export class StorageDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StorageDecodeError';
  }
}

const ENCRYPTED_PREFIX = Buffer.from('k8s:enc:');
const CRDS = 'apiextensions.k8s.io/customresourcedefinitions';

/** Catalog entries by "apiVersion|resource", for converting from a version kubeshard does not store. */
const entries = new Map<string, ResourceInfo>();
for (const gv of catalogData) for (const r of gv.resources) entries.set(`${gv.groupVersion}|${r.resource}`, r);

/** Go's encoding of a map[string]interface{}: keys sorted, recursively. */
function sortedKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortedKeys);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v).sort()) {
    const x = (v as Record<string, unknown>)[k];
    if (x !== undefined) out[k] = sortedKeys(x);
  }
  return out;
}

function withoutVersion(obj: Record<string, any>): Record<string, any> {
  const meta = obj.metadata;
  if (!meta || (meta.resourceVersion === undefined && meta.selfLink === undefined)) return obj;
  const { resourceVersion: _rv, selfLink: _sl, ...rest } = meta;
  return { ...obj, metadata: rest };
}

const jsonLine = (v: unknown): Buffer => Buffer.from(JSON.stringify(v) + '\n');

/** The value kube-apiserver would store for obj (in its storage version) under its key. */
export function encodeForStorage(gr: GroupResource, obj: Record<string, any>, mediaType: StorageMediaType = PROTOBUF_MEDIA_TYPE): Buffer {
  const o = withoutVersion(obj);
  const facts = storageFactsOf(gr.group, gr.resource);
  if (!facts.builtin) return jsonLine(sortedKeys(o));
  if (`${facts.storageGroup}/${facts.storageResource}` === CRDS) return jsonLine(orderedObject(crdToV1beta1(o)));
  if (GROUP_PREFIXED_GROUPS.has(facts.storageGroup) || mediaType === JSON_MEDIA_TYPE) return jsonLine(orderedObject(o));
  const proto = encodeEnveloped(o);
  // every built-in stored kind has a message; a kind without one is kept as JSON, which kube reads too
  return proto ?? jsonLine(orderedObject(o));
}

export interface DecodedObject {
  /** the object in kubeshard's storage version, resourceVersion set */
  obj: Record<string, any>;
  /** its JSON form, as kubeshard stores and serves it */
  json: Buffer;
}

/** An object kube-apiserver (or kubeshard) stored under a key of gr, at mod_revision modRevision. */
export function decodeFromStorage(gr: GroupResource, value: Buffer, modRevision: number): DecodedObject {
  let obj: Record<string, any>;
  if (value.length >= ENCRYPTED_PREFIX.length && value.subarray(0, ENCRYPTED_PREFIX.length).equals(ENCRYPTED_PREFIX)) {
    throw new StorageDecodeError(`the stored ${gr.resource} object is encrypted (${value.subarray(0, value.indexOf(':', 8) + 1).toString('latin1')}...) and no encryption provider configuration reads it`);
  }
  if (isProtobufBody(value)) {
    try {
      obj = decodeProtobufObject(value);
    } catch (e) {
      throw new StorageDecodeError(`the stored ${gr.resource} object is not a valid protobuf object: ${(e as Error).message}`);
    }
  } else {
    try {
      obj = JSON.parse(value.toString('utf8'));
    } catch (e) {
      throw new StorageDecodeError(`the stored ${gr.resource} object is neither protobuf nor JSON: ${(e as Error).message}`);
    }
    if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw new StorageDecodeError(`the stored ${gr.resource} object is not a JSON object`);
  }
  const facts = storageFactsOf(gr.group, gr.resource);
  if (facts.builtin) {
    if (`${facts.storageGroup}/${facts.storageResource}` === CRDS) obj = crdToV1(obj);
    else if (facts.storageApiVersion && obj.apiVersion !== facts.storageApiVersion) {
      // written in another version of the resource (an older kube's storage version)
      const info = entries.get(`${obj.apiVersion}|${facts.storageResource}`) ?? entries.get(`${obj.apiVersion}|${gr.resource}`);
      const conv = info && conversionOf(info);
      if (conv && conv.storageApiVersion === facts.storageApiVersion) obj = conv.toStorage(obj);
    }
  }
  const meta = obj.metadata && typeof obj.metadata === 'object' ? { ...obj.metadata } : {};
  meta.resourceVersion = String(modRevision);
  obj = orderedObject({ ...obj, metadata: meta });
  return { obj, json: Buffer.from(JSON.stringify(obj)) };
}
