// application/vnd.kubernetes.protobuf request bodies: the `k8s\0` prefix, the
// runtime.Unknown envelope (spec 2.9), and the object inside it, decoded with the message
// definitions of the generated schema and turned into the object's JSON form.
//
// Go's encoders write every non-pointer field, zero or not, while its JSON encoder omits
// the zero ones marked omitempty. The wire does not say which fields are pointers, so a zero
// scalar is kept only where the generated per-type facts (protoKeepZero, see
// scripts/gen-proto-schema.mjs) say the JSON form keeps it: fields without omitempty
// (status.replicas: 0, ready: false) and pointers (spec.replicas: 0,
// automountServiceAccountToken: false). Messages are kept even when empty: Go writes a
// struct field (pointer set, or not a pointer) as {} too.
import protobuf from 'protobufjs';
import { protoKinds } from './proto-schema.js';
import { protoRoot } from './protobuf-encode.js';
import { apiextensionsKind, fieldsOf, schemaPropsType } from './proto-fields.js';
import { errors } from '../errors.js';

export const PROTOBUF_MEDIA_TYPE = 'application/vnd.kubernetes.protobuf';
const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

// One root for decoding and encoding: building it from the schema takes a while.
const root = protoRoot;

const META = 'k8s.io.apimachinery.pkg.apis.meta.v1.';

function goDuration(nanos: number): string {
  if (nanos === 0) return '0s';
  let s = nanos / 1e9;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  const sec = Number(s.toFixed(9)).toString();
  if (h) return `${h}h${m}m${sec}s`;
  if (m) return `${m}m${sec}s`;
  return `${sec}s`;
}

function timeString(v: any, micro: boolean): string | undefined {
  const seconds = Number(v?.seconds ?? 0);
  const nanos = Number(v?.nanos ?? 0);
  if (seconds === 0 && nanos === 0) return undefined;
  // Go's Time.MarshalJSON refuses years outside [0, 9999]
  if (!(seconds >= -62167219200 && seconds < 253402300800)) throw new Error(`Time.MarshalJSON: year outside of range [0,9999]`);
  const iso = new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, '');
  return micro ? `${iso}.${String(Math.floor(nanos / 1000)).padStart(6, '0')}Z` : `${iso}Z`;
}

function rawJson(bytes: unknown): unknown {
  const b = typeof bytes === 'string' ? Buffer.from(bytes, 'base64') : Buffer.from(bytes as Uint8Array);
  if (b.length === 0) return undefined;
  return JSON.parse(b.toString('utf8'));
}

function isZero(v: unknown): boolean {
  return v === '' || v === 0 || v === false;
}

/** A decoded message as the object Go's JSON encoder would produce. */
function toJson(type: protobuf.Type, msg: any): any {
  const full = type.fullName.slice(1);
  switch (full) {
    // A Time on the wire is a struct Go wrote (a non-pointer field, or a set pointer); at zero,
    // Go's Time.MarshalJSON writes null (a pod template's metadata.creationTimestamp, a pod
    // condition's lastProbeTime), so the JSON form keeps it as null.
    case META + 'Time':
      return timeString(msg, false) ?? null;
    case META + 'MicroTime':
      return timeString(msg, true) ?? null;
    case META + 'Duration':
      return goDuration(Number(msg.duration ?? 0));
    case 'k8s.io.apimachinery.pkg.api.resource.Quantity':
      return msg.string ?? '0';
    case 'k8s.io.apimachinery.pkg.util.intstr.IntOrString':
      return Number(msg.type ?? 0) === 1 ? (msg.strVal ?? '') : Number(msg.intVal ?? 0);
    case 'k8s.io.apimachinery.pkg.runtime.RawExtension':
      return rawJson(msg.raw);
    case META + 'FieldsV1':
      return rawJson(msg.Raw);
  }
  // CRD schema wrappers marshal to a schema, a list or a bool (their Go MarshalJSON).
  switch (apiextensionsKind(type)) {
    case 'JSON':
      return rawJson(msg.raw);
    case 'JSONSchemaPropsOrArray':
      if (msg.jSONSchemas?.length) return msg.jSONSchemas.map((x: any) => toJson(schemaPropsType(type), x));
      return msg.schema ? toJson(schemaPropsType(type), msg.schema) : null;
    case 'JSONSchemaPropsOrBool':
      return msg.schema ? toJson(schemaPropsType(type), msg.schema) : !!msg.allows;
    case 'JSONSchemaPropsOrStringArray':
      if (msg.property?.length) return msg.property;
      return msg.schema ? toJson(schemaPropsType(type), msg.schema) : null;
  }
  const fields = fieldsOf(type);
  // Wrapper messages whose Go type is a slice (ExtraValue, Verbs, ...).
  if (fields.length === 1 && fields[0].field.name === 'items' && fields[0].field.repeated && fields[0].field.resolvedType === null) {
    return msg.items ?? [];
  }
  const out: any = {};
  for (const { field: f, json, inline, keepZero } of fields) {
    const v = msg[f.name];
    if (v === undefined || v === null) continue;
    if (inline) {
      // An embedded struct: its fields are the parent's in JSON.
      Object.assign(out, toJson(f.resolvedType as protobuf.Type, v));
      continue;
    }
    const conv = (x: any) => (f.resolvedType instanceof protobuf.Type ? toJson(f.resolvedType, x) : scalar(f, x));
    if (f.map) {
      const m: any = {};
      for (const [k, x] of Object.entries(v)) m[k] = conv(x);
      if (Object.keys(m).length) out[json] = m;
    } else if (f.repeated) {
      if (v.length) out[json] = v.map(conv);
    } else {
      const c = conv(v);
      if (c === undefined) continue;
      // Zero scalars: omitempty unless a pointer or a field without omitempty (keepZero).
      // Messages that convert to a zero value (IntOrString 0, a schema-or-bool false) are
      // Go structs or pointers: kept.
      if (isZero(c) && !(f.resolvedType instanceof protobuf.Type) && !keepZero) continue;
      // An empty message on the wire is a struct Go's JSON encoder also writes (as {}).
      out[json] = c;
    }
  }
  return out;
}

function scalar(f: protobuf.Field, v: any): any {
  if (f.type === 'bytes') return typeof v === 'string' ? v : Buffer.from(v).toString('base64');
  if (typeof v === 'object' && v !== null && 'low' in v) return Number(v.toString());
  return v;
}

export function isProtobufBody(body: Buffer | null): boolean {
  return !!body && body.length >= 4 && body.subarray(0, 4).equals(MAGIC);
}

/**
 * Decodes a `k8s\0`-prefixed body into { apiVersion, kind, object }. The object carries
 * apiVersion and kind from the envelope, as the JSON form would.
 */
export function decodeProtobufObject(body: Buffer): Record<string, any> {
  if (!isProtobufBody(body)) throw errors.badRequest('provided object is not a protobuf message: missing the k8s\\0 prefix');
  const r = root();
  let env: any;
  try {
    env = r.lookupType('k8s.io.apimachinery.pkg.runtime.Unknown').toObject(r.lookupType('k8s.io.apimachinery.pkg.runtime.Unknown').decode(body.subarray(4)), { bytes: Buffer as any });
  } catch (e) {
    throw errors.badRequest(`unable to decode the protobuf envelope: ${(e as Error).message}`);
  }
  const apiVersion: string = env.typeMeta?.apiVersion ?? '';
  const kind: string = env.typeMeta?.kind ?? '';
  const typeName = protoKinds[`${apiVersion}/${kind}`];
  if (!typeName) throw errors.badRequest(`no kind "${kind}" is registered for version "${apiVersion}"`);
  const type = r.lookupType(typeName);
  let msg: any;
  try {
    msg = type.toObject(type.decode(env.raw ?? Buffer.alloc(0)), { longs: Number, bytes: String, defaults: false });
  } catch (e) {
    throw errors.badRequest(`unable to decode ${kind}: ${(e as Error).message}`);
  }
  // The message's bytes decoded; what they hold may still have no JSON form: a time beyond
  // what RFC 3339 can write, RawExtension or FieldsV1 bytes that are not JSON, nesting (CRD
  // schemas) deeper than the walk's stack. Those are the client's errors too.
  let obj: any;
  try {
    obj = toJson(type, msg);
  } catch (e) {
    throw errors.badRequest(`unable to decode ${kind}: ${(e as Error).message}`);
  }
  return { apiVersion, kind, ...obj };
}
