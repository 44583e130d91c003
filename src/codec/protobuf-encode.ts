// application/vnd.kubernetes.protobuf responses: objects in their JSON form turned into the
// generated messages (field numbers from src/codec/proto-schema.ts), wrapped in the
// `k8s\0` + runtime.Unknown envelope (spec 2.9).
//
// A field is written when the JSON has it, zero or not: the JSON form already omits what
// Go's encoder omits, and keeping an explicit 0/false/"" preserves pointer fields
// (replicas: 0) for the reader. The special apimachinery types get their wire forms:
// Time/MicroTime as seconds+nanos, Duration as nanoseconds, Quantity as its string,
// IntOrString as type+value, RawExtension/JSON/FieldsV1 as raw JSON bytes.
//
// Lists, envelopes and watch events are assembled from already-encoded parts (length-
// delimited fields are plain concatenation), so an object's bytes are produced once and
// reused inside every list and watch frame that carries it.
import protobuf from 'protobufjs';
import { protoKinds, protoSchema } from './proto-schema.js';
import { apiextensionsKind, fieldsOf, schemaPropsType } from './proto-fields.js';

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);
const META = 'k8s.io.apimachinery.pkg.apis.meta.v1.';

let rootCache: protobuf.Root | undefined;
export function protoRoot(): protobuf.Root {
  return (rootCache ??= protobuf.Root.fromJSON(protoSchema));
}

/** The message type of apiVersion/kind, or undefined when the kind has no protobuf form. */
export function protoTypeOf(apiVersion: string, kind: string): protobuf.Type | undefined {
  const name = protoKinds[`${apiVersion}/${kind}`];
  return name ? protoRoot().lookupType(name) : undefined;
}

function parseTime(v: unknown): { seconds: number; nanos: number } | undefined {
  if (typeof v !== 'string' || v === '') return undefined;
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(v);
  if (!m) return undefined;
  const ms = Date.parse(`${m[1]}${m[3]}`);
  if (!Number.isFinite(ms)) return undefined;
  const nanos = m[2] ? Number(m[2].padEnd(9, '0')) : 0;
  return { seconds: Math.floor(ms / 1000), nanos };
}

const DURATION_UNITS: Record<string, number> = { ns: 1, us: 1e3, µs: 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };
// Longest first where one is a prefix of another ("ms" before "m").
const DURATION_UNIT_NAMES = ['ns', 'us', 'µs', 'ms', 's', 'm', 'h'];

/** metav1.Duration text (Go's time.Duration.String()) in nanoseconds, for protobuf's int64. */
export function parseDuration(v: unknown): number {
  if (typeof v !== 'string') return 0;
  let total = 0;
  const neg = v.startsWith('-');
  // One pass, number then unit (a global regular expression here re-read a long run of digits
  // from each of its positions: quadratic). A number without a unit is skipped whole, as no
  // shorter tail of it could be followed by a unit either.
  const digit = (i: number) => i < v.length && v.charCodeAt(i) >= 48 && v.charCodeAt(i) <= 57;
  let i = 0;
  while (i < v.length) {
    if (!digit(i)) {
      i++;
      continue;
    }
    let j = i;
    while (digit(j)) j++;
    let k = j;
    if (v[k] === '.' && digit(k + 1)) for (k++; digit(k); ) k++;
    const unit = DURATION_UNIT_NAMES.find((u) => v.startsWith(u, k));
    if (unit) {
      total += Number(v.slice(i, k)) * DURATION_UNITS[unit];
      i = k + unit.length;
    } else i = j;
  }
  return Math.round(neg ? -total : total);
}

function rawJsonBytes(v: unknown): Buffer {
  return Buffer.from(JSON.stringify(v ?? null));
}

function scalarOf(f: protobuf.Field, v: any): any {
  switch (f.type) {
    case 'bytes':
      return typeof v === 'string' ? Buffer.from(v, 'base64') : Buffer.from(v ?? []);
    case 'string':
      return typeof v === 'string' ? v : String(v);
    case 'bool':
      return Boolean(v);
    case 'double':
    case 'float':
      return Number(v);
    default:
      // integer kinds (int32, int64, ...): JSON numbers
      return typeof v === 'number' ? Math.trunc(v) : Number(v) || 0;
  }
}

/** The JSON form of a message turned into the plain object protobufjs encodes. */
export function fromJson(type: protobuf.Type, v: any): any {
  switch (type.fullName.slice(1)) {
    case META + 'Time':
    case META + 'MicroTime':
      return parseTime(v) ?? {};
    case META + 'Duration':
      return { duration: parseDuration(v) };
    case 'k8s.io.apimachinery.pkg.api.resource.Quantity':
      return { string: String(v) };
    case 'k8s.io.apimachinery.pkg.util.intstr.IntOrString':
      return typeof v === 'number' ? { type: 0, intVal: v } : { type: 1, strVal: String(v) };
    case 'k8s.io.apimachinery.pkg.runtime.RawExtension':
      return { raw: rawJsonBytes(v) };
    case META + 'FieldsV1':
      return { Raw: rawJsonBytes(v) };
  }
  // CRD schema wrappers: the JSON is a schema, a list or a bool (their Go UnmarshalJSON).
  switch (apiextensionsKind(type)) {
    case 'JSON':
      return { raw: rawJsonBytes(v) };
    case 'JSONSchemaPropsOrArray':
      if (Array.isArray(v)) return { jSONSchemas: v.map((x) => fromJson(schemaPropsType(type), x)) };
      return v && typeof v === 'object' ? { schema: fromJson(schemaPropsType(type), v) } : {};
    case 'JSONSchemaPropsOrBool':
      if (typeof v === 'boolean') return { allows: v };
      return v && typeof v === 'object' ? { allows: true, schema: fromJson(schemaPropsType(type), v) } : {};
    case 'JSONSchemaPropsOrStringArray':
      if (Array.isArray(v)) return { property: v.map(String) };
      return v && typeof v === 'object' ? { schema: fromJson(schemaPropsType(type), v) } : {};
  }
  const fields = fieldsOf(type);
  if (Array.isArray(v)) {
    // Wrapper messages whose Go type is a slice (ExtraValue, Verbs, ...).
    const only = fields[0]?.field;
    if (fields.length === 1 && only.repeated) return { [only.name]: v.map((x) => convert(only, x)) };
    return {};
  }
  if (v === null || typeof v !== 'object') return {};
  const out: any = {};
  for (const { field: f, json, inline } of fields) {
    if (inline) {
      // An embedded struct takes its fields from the parent's JSON (Go writes it always).
      out[f.name] = fromJson(f.resolvedType as protobuf.Type, v);
      continue;
    }
    const x = v[json];
    if (x === undefined) continue;
    if (x === null) {
      // A null Time is Go's zero non-pointer Time (a pod template's creationTimestamp): Go
      // writes it as an empty message, which reads back as null.
      if (!f.repeated && !f.map && isTimeType(f)) out[f.name] = {};
      continue;
    }
    if (f.map) {
      if (typeof x !== 'object') continue;
      const m: any = {};
      for (const [k, y] of Object.entries(x)) if (y !== null && y !== undefined) m[k] = convert(f, y);
      out[f.name] = m;
    } else if (f.repeated) {
      if (!Array.isArray(x)) continue;
      out[f.name] = x.filter((y) => y !== null && y !== undefined).map((y) => convert(f, y));
    } else out[f.name] = convert(f, x);
  }
  return out;
}

function isTimeType(f: protobuf.Field): boolean {
  f.resolve();
  const t = f.resolvedType;
  return t instanceof protobuf.Type && (t.fullName === `.${META}Time` || t.fullName === `.${META}MicroTime`);
}

function convert(f: protobuf.Field, x: any): any {
  f.resolve();
  return f.resolvedType instanceof protobuf.Type ? fromJson(f.resolvedType, x) : scalarOf(f, x);
}

/** The bare message bytes of an object (no envelope), for nesting in lists. */
export function encodeMessage(type: protobuf.Type, obj: any): Buffer {
  const plain = fromJson(type, obj);
  // apiVersion/kind live in the envelope; generated messages have no field for them.
  return Buffer.from(type.encode(plain).finish());
}

// ---- hand-assembled wire pieces: tag + length + bytes ---------------------------

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}

/** A length-delimited field (wire type 2). */
export function lenField(fieldNo: number, bytes: Buffer | Buffer[]): Buffer[] {
  const parts = Array.isArray(bytes) ? bytes : [bytes];
  const len = parts.reduce((a, b) => a + b.length, 0);
  return [varint((fieldNo << 3) | 2), varint(len), ...parts];
}

function str(fieldNo: number, s: string): Buffer[] {
  return lenField(fieldNo, Buffer.from(s, 'utf8'));
}

/** `k8s\0` + Unknown{typeMeta, raw, contentEncoding: "", contentType: ""}, as Go writes it. */
export function envelope(apiVersion: string, kind: string, raw: Buffer | Buffer[]): Buffer {
  const typeMeta = Buffer.concat([...str(1, apiVersion), ...str(2, kind)]);
  return Buffer.concat([MAGIC, ...lenField(1, typeMeta), ...lenField(2, raw), ...str(3, ''), ...str(4, '')]);
}

/** A list message: metadata (ListMeta) then items, from items' already-encoded bytes. */
export function listMessage(listType: protobuf.Type, listMeta: Record<string, unknown>, items: Buffer[]): Buffer[] {
  const metaField = listType.fields.metadata;
  const itemsField = listType.fields.items;
  const metaType = protoRoot().lookupType(META + 'ListMeta');
  const parts: Buffer[] = [...lenField(metaField?.id ?? 1, Buffer.from(metaType.encode(fromJson(metaType, listMeta)).finish()))];
  const id = itemsField?.id ?? 2;
  for (const it of items) parts.push(...lenField(id, it));
  return parts;
}

/**
 * One watch frame: 4-byte big-endian length, then a metav1.WatchEvent message (no
 * envelope: client-go decodes the event with the raw protobuf serializer) whose object is
 * a RawExtension holding the enveloped object, as client-go's embedded decoder expects.
 */
export function watchFrame(type: string, enveloped: Buffer): Buffer {
  const raw = Buffer.concat(lenField(1, enveloped));
  const msg = Buffer.concat([...str(1, type), ...lenField(2, raw)]);
  const len = Buffer.alloc(4);
  len.writeUInt32BE(msg.length, 0);
  return Buffer.concat([len, msg]);
}

/** An enveloped object of any kind the catalog has a message for; undefined otherwise. */
export function encodeEnveloped(obj: any, apiVersion = obj?.apiVersion, kind = obj?.kind): Buffer | undefined {
  const t = protoTypeOf(apiVersion, kind);
  if (!t) return undefined;
  return envelope(apiVersion, kind, encodeMessage(t, obj));
}
