// Structured generators for the fuzz targets: near-valid input rather than random bytes
// alone, so that the fuzzer gets past the first check of each parser and into the code
// behind it. Each generator mixes well-formed pieces with the shapes attackers use: duplicate
// keys, nesting a few thousand levels deep, huge numbers and lengths, escapes, aliases,
// wrong wire types, truncation.
import fc from 'fast-check';
import { protoRoot } from '../../src/codec/protobuf-encode.js';
import { encodeCbor } from '../../src/codec/cbor.js';

// ---------------------------------------------------------------------------------------
// Small pieces

/** A value as JSON.parse would give it back (what every decoder hands the engines). */
export function asJson<T>(v: T): T {
  const t = JSON.stringify(v);
  return t === undefined ? (null as T) : JSON.parse(t);
}

/** Keys that matter to the server's code paths, and a few that matter to JavaScript. */
export const KEYS = ['apiVersion', 'kind', 'metadata', 'name', 'namespace', 'labels', 'annotations', 'spec', 'status', 'data', 'containers', 'image',
  'replicas', 'resources', 'limits', 'requests', 'cpu', 'memory', 'finalizers', 'ownerReferences', 'managedFields', 'fieldsV1', 'uid',
  'resourceVersion', 'generation', 'template', 'selector', 'matchLabels', 'ports', 'port', 'env', 'value', 'a', 'b', '',
  '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'length', '$patch', '$retainKeys', '$setElementOrder/containers',
  '$setElementOrder/finalizers', '$deleteFromPrimitiveList/finalizers', '$deleteFromPrimitiveList/args', 'f:spec', 'k:{"name":"c"}', '.'];

export const key = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...KEYS) },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }) },
);

/** Strings with the characters parsers trip on. */
export const nastyString = fc.oneof(
  fc.string({ maxLength: 16 }),
  fc.string({ unit: 'binary', maxLength: 16 }),
  fc.constantFrom('', '\u0000', '\ud800', '\udfff', '\ud83d\ude00', '\\', '"', '~0', '~1', '/', '-', '.', '..', '/../', '\n', ' ', '\t', '%', '0', '-1', '1e400', 'NaN', 'true', 'null', '<nil>'),
  fc.integer({ min: 1, max: 5000 }).map((n) => 'a'.repeat(n)),
);

export const hugeNumberText = fc.oneof(
  fc.constantFrom('1e400', '-1e400', '1e-400', '9007199254740993', '18446744073709551616', '-0', '0.0000000000000000000000001', '1E+308', '123456789012345678901234567890'),
  fc.integer({ min: 20, max: 3000 }).map((n) => '9'.repeat(n)),
  fc.integer({ min: 1, max: 400 }).map((n) => `1e${'9'.repeat(n)}`),
);

/**
 * A JSON value, kept small; leaves include the nasty strings and huge numbers. Passed
 * through JSON once, so it is what a decoder can give (no null prototypes, no NaN, no -0).
 */
export const jsonValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double(),
    fc.constantFrom(0, -1, 2 ** 53, 2 ** 63, -(2 ** 63), 1e308, Number.MAX_SAFE_INTEGER + 2),
    nastyString,
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(key, tie('value'), { maxKeys: 5 }),
  ),
})).value.map(asJson);

/** A nesting `depth` levels deep, of objects or arrays, around a leaf. */
export function nested(depth: number, kind: 'obj' | 'arr' | 'mixed', leaf = '1'): string {
  if (kind === 'obj') return '{"a":'.repeat(depth) + leaf + '}'.repeat(depth);
  if (kind === 'arr') return '['.repeat(depth) + leaf + ']'.repeat(depth);
  let open = '';
  let close = '';
  for (let i = 0; i < depth; i++) {
    if (i % 2) {
      open += '{"a":';
      close = '}' + close;
    } else {
      open += '[';
      close = ']' + close;
    }
  }
  return open + leaf + close;
}

export const deepText = fc
  .tuple(fc.integer({ min: 1, max: 12_000 }), fc.constantFrom<'obj' | 'arr' | 'mixed'>('obj', 'arr', 'mixed'))
  .map(([d, k]) => nested(d, k));

// ---------------------------------------------------------------------------------------
// Managed fields (FieldsV1) and apply configurations

const pathElement = fc.oneof(
  fc.constantFrom('f:metadata', 'f:spec', 'f:labels', 'f:containers', 'f:image', 'f:data', 'f:a', '.', 'k:{"name":"c"}', 'k:{"name":1}', 'k:{}', 'k:null', 'k:[1]', 'k:', 'k:{', 'v:"x"', 'v:', 'v:{', 'i:0', 'i:-1', 'i:x', 'i:99999999999999999999', 'x:y', '', 'f', 'k', '__proto__'),
  fc.tuple(fc.constantFrom('f:', 'k:', 'v:', 'i:', ''), fc.string({ maxLength: 8 })).map(([p, s]) => p + s),
);

export const fieldsV1: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  set: fc.oneof({ depthSize: 'small' }, fc.constant({}), fc.dictionary(pathElement, tie('set'), { maxKeys: 4 }), jsonValue),
})).set;

export const managedFieldsList = fc.oneof(
  fc.array(
    fc.record(
      {
        manager: fc.oneof(fc.constantFrom('m', 'kubectl', 'before-first-apply', ''), nastyString),
        operation: fc.oneof(fc.constantFrom('Apply', 'Update'), jsonValue),
        apiVersion: fc.oneof(fc.constantFrom('v1', 'apps/v1'), jsonValue),
        time: fc.oneof(fc.constant('2024-01-01T00:00:00Z'), jsonValue),
        fieldsType: fc.oneof(fc.constant('FieldsV1'), jsonValue),
        fieldsV1,
        subresource: fc.oneof(fc.constantFrom('', 'status', 'scale'), jsonValue),
      },
      { requiredKeys: [] },
    ),
    { maxLength: 4 },
  ),
  jsonValue,
);

// ---------------------------------------------------------------------------------------
// JSON bodies

/** Mostly `good`, sometimes any JSON value (a wrong type where the decoder expects one). */
function mostly<T>(good: fc.Arbitrary<T>): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 15, arbitrary: good }, { weight: 1, arbitrary: jsonValue });
}

/** An object of `kind` with fuzzed parts, as a JS value. */
export function objectOf(apiVersion: string, kind: string): fc.Arbitrary<Record<string, unknown>> {
  return fc.record(
    {
      apiVersion: mostly(fc.constant(apiVersion)),
      kind: mostly(fc.constant(kind)),
      metadata: mostly(
        fc.record(
          {
            name: mostly(fc.constantFrom('fz', 'fz-1', 'a.b')),
            labels: mostly(fc.dictionary(key, fc.string({ maxLength: 8 }), { maxKeys: 4 })),
            annotations: mostly(fc.dictionary(key, nastyString, { maxKeys: 3 })),
            finalizers: mostly(fc.array(nastyString, { maxLength: 4 })),
            ownerReferences: jsonValue,
            managedFields: managedFieldsList,
            generation: mostly(fc.integer()),
            creationTimestamp: mostly(fc.constantFrom('2024-01-01T00:00:00Z', 'not a time', '9999-12-31T23:59:59Z')),
            resourceVersion: mostly(fc.constantFrom('', '1', '0', '18446744073709551616', 'x')),
          },
          { requiredKeys: [] },
        ),
      ),
      spec: fc.oneof(jsonValue, fc.record({ containers: fc.array(fc.record({ name: mostly(fc.constantFrom('c', 'd')), image: mostly(fc.constant('nginx')), resources: mostly(fc.record({ limits: fc.dictionary(fc.constantFrom('cpu', 'memory', 'x'), fc.oneof(fc.constantFrom('1', '500m', '1Gi', '1e3', '0.5'), jsonValue), { maxKeys: 2 }) })) }, { requiredKeys: [] }), { maxLength: 3 }), replicas: jsonValue }, { requiredKeys: [] })),
      data: mostly(fc.dictionary(key, nastyString, { maxKeys: 4 })),
    },
    { requiredKeys: ['metadata'] },
  );
}

/** Text edits that keep JSON almost right: duplicate keys, escapes, truncation, inserted bytes. */
function mutateJson(text: string, m: { op: number; at: number; what: string }): string {
  const at = Math.min(text.length, m.at);
  switch (m.op) {
    case 0:
      return text;
    case 1: // a key given twice (JSON.parse keeps the last; field validation reports it)
      return text.replace(/\{"([^"]*)":/, (_, k) => `{"${k}":null,"${k}":`);
    case 2:
      return text.slice(0, at); // truncated
    case 3:
      return text.slice(0, at) + m.what + text.slice(at); // inserted junk
    case 4:
      return text.replace(/"[^"]*"/, `"\\ud800${m.what.replace(/["\\]/g, '')}\\u0000"`); // lone surrogate, NUL
    case 5:
      return text.replace(/:(\d+|null|true|false)/, ':' + m.what); // a value replaced with raw text
    default:
      return text.replace(/"metadata":/, `"metadata":{"x":1},"metadata":`);
  }
}

export function jsonBody(apiVersion: string, kind: string): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.tuple(objectOf(apiVersion, kind), fc.record({ op: fc.integer({ min: 0, max: 6 }), at: fc.nat(400), what: fc.oneof(hugeNumberText, fc.string({ maxLength: 6 }), fc.constantFrom('{', '[', '"', '\\', ',', '}')) })).map(([o, m]) => mutateJson(JSON.stringify(o), m)) },
    { weight: 1, arbitrary: deepText.map((d) => `{"apiVersion":"${apiVersion}","kind":"${kind}","metadata":{"name":"fz"},"spec":${d}}`) },
    { weight: 1, arbitrary: deepText },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 64 }) },
    { weight: 1, arbitrary: fc.array(fc.tuple(key, hugeNumberText), { minLength: 1, maxLength: 6 }).map((kv) => `{"metadata":{"name":"fz"},${kv.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`) },
  );
}

// ---------------------------------------------------------------------------------------
// YAML bodies

const yamlScalar = fc.oneof(
  fc.constantFrom('yes', 'no', 'on', 'off', 'y', 'n', '~', 'null', '0777', '0x1F', '1:20', '2001-12-14t21:59:43.10-05:00', '.inf', '-.nan', '0b101', '1_000', '"\\u0000"', "'\\x'", '!!binary aGk=', '!!int "3"', '!!str 5', '!!float x', '!<tag:yaml.org,2002:map> {}', '!custom x', '|', '>-', '&a x', '*a', '*nope', '<<: *a', '? x', '%YAML 1.1', '---', '...', '@', '`'),
  fc.string({ maxLength: 10 }).map((s) => JSON.stringify(s)),
  hugeNumberText,
);

/** Billion laughs: `levels` anchors, each a list of `fan` aliases to the one before. */
export function yamlBomb(levels: number, fan: number): string {
  let out = `a0: &a0 ["lol"]\n`;
  for (let i = 1; i <= levels; i++) out += `a${i}: &a${i} [${Array(fan).fill(`*a${i - 1}`).join(',')}]\n`;
  return out;
}

export const yamlBody = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(objectOf('v1', 'ConfigMap'), fc.array(fc.tuple(fc.nat(2000), yamlScalar), { maxLength: 3 })).map(([o, edits]) => {
    // JSON is YAML; splice YAML-only syntax into it
    let t = JSON.stringify(o, null, 1);
    for (const [at, s] of edits) t = t.slice(0, at) + s + t.slice(at);
    return t;
  }) },
  { weight: 2, arbitrary: fc.array(fc.tuple(key, yamlScalar), { maxLength: 8 }).map((kv) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fz\ndata:\n${kv.map(([k, v]) => `  ${JSON.stringify(k)}: ${v}`).join('\n')}\n`) },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 12 })).map(([l, f]) => yamlBomb(l, f)) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 3000 }).map((n) => 'metadata:\n  name: fz\nspec: ' + '['.repeat(n) + ']'.repeat(n) + '\n') },
  // (block nesting: the text grows with the square of the depth, and the yaml library
  // parses about 1 MB/s on the front thread, so kept small)
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 150 }).map((n) => 'metadata: {name: fz}\nspec:\n' + Array.from({ length: n }, (_, i) => ' '.repeat(i + 1) + 'a:').join('\n') + ' 1\n') },
  // merge-key bombs: nested merges that the yaml library would convert again and again
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 3 })).map(([n, f]) => 'm0: &m0 {x: 1}\n' + Array.from({ length: n }, (_, i) => `m${i + 1}: &m${i + 1} {<<: [${Array(f).fill(`*m${i}`).join(',')}], y${i}: 1}`).join('\n') + '\nmetadata: {name: fz}\n') },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 40 }).map((n) => 'm0: &m0 {x: 1}\n' + Array.from({ length: n }, (_, i) => `m${i + 1}: &m${i + 1} {<<: [${Array.from({ length: i + 1 }, (_, k) => `*m${k}`).join(',')}], y${i}: 1}`).join('\n') + '\nmetadata: {name: fz}\n') },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 200 }).map((n) => 'base: &b {x: 1}\n' + Array.from({ length: n }, (_, i) => `m${i}: &m${i} {<<: [*${i ? `m${i - 1}` : 'b'}], y${i}: 1}`).join('\n') + '\nmetadata: {name: fz}\n') },
  { weight: 1, arbitrary: fc.array(fc.tuple(fc.constantFrom('a', 'b', 'yes', 'true', '1', '"1"'), yamlScalar), { maxLength: 6 }).map((kv) => `metadata: {name: fz}\ndata:\n${kv.map(([k, v]) => `  ${k}: ${v}`).join('\n')}\n`) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 64 }) },
);

// ---------------------------------------------------------------------------------------
// Protobuf bodies

const MAGIC = Buffer.from('k8s\0', 'latin1');

function varint(n: number | bigint): Buffer {
  let v = BigInt(n);
  const out: number[] = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return Buffer.from(out);
}

function field(no: number, wire: number, payload: Buffer): Buffer {
  return Buffer.concat([varint((no << 3) | wire), payload]);
}

function lengthDelimited(no: number, payload: Buffer): Buffer {
  return field(no, 2, Buffer.concat([varint(payload.length), payload]));
}

/** A random protobuf message: fields of every wire type, lengths that lie, groups, nesting. */
const rawFields: fc.Arbitrary<Buffer> = fc.letrec((tie) => ({
  msg: fc
    .array(
      fc.oneof(
        { depthSize: 'small' },
        fc.tuple(fc.integer({ min: 1, max: 20 }), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n })).map(([no, v]) => field(no, 0, varint(v))),
        fc.tuple(fc.integer({ min: 1, max: 20 }), fc.uint8Array({ minLength: 8, maxLength: 8 })).map(([no, b]) => field(no, 1, Buffer.from(b))),
        fc.tuple(fc.integer({ min: 1, max: 20 }), fc.uint8Array({ minLength: 4, maxLength: 4 })).map(([no, b]) => field(no, 5, Buffer.from(b))),
        fc.tuple(fc.integer({ min: 1, max: 20 }), fc.string({ maxLength: 12 })).map(([no, s]) => lengthDelimited(no, Buffer.from(s))),
        fc.tuple(fc.integer({ min: 1, max: 20 }), tie('msg') as fc.Arbitrary<Buffer>).map(([no, b]) => lengthDelimited(no, b)),
        // a length prefix far beyond the data, or a group that never ends, or a bad wire type
        fc.tuple(fc.integer({ min: 1, max: 20 }), fc.constantFrom(2 ** 31 - 1, 2 ** 32, 2 ** 53, 1e6)).map(([no, n]) => field(no, 2, varint(n))),
        fc.tuple(fc.integer({ min: 1, max: 20 }), fc.constantFrom(3, 4, 6, 7)).map(([no, w]) => field(no, w, Buffer.alloc(0))),
      ),
      { maxLength: 6 },
    )
    .map((parts) => Buffer.concat(parts)),
})).msg;

/** Kinds with deep or odd schemas (CRDs nest JSONSchemaProps; times and quantities convert). */
const PROTO_KINDS: [string, string, string][] = [
  ['v1', 'ConfigMap', 'k8s.io.api.core.v1.ConfigMap'],
  ['v1', 'Pod', 'k8s.io.api.core.v1.Pod'],
  ['apps/v1', 'Deployment', 'k8s.io.api.apps.v1.Deployment'],
  ['apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'k8s.io.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition'],
  ['v1', 'Event', 'k8s.io.api.core.v1.Event'],
];

function envelope(apiVersion: string, kind: string, raw: Buffer): Buffer {
  const typeMeta = Buffer.concat([lengthDelimited(1, Buffer.from(apiVersion)), lengthDelimited(2, Buffer.from(kind))]);
  return Buffer.concat([MAGIC, lengthDelimited(1, typeMeta), lengthDelimited(2, raw)]);
}

/** A valid message of the kind, encoded with the real schema, from a fuzzed JS object (what protobufjs accepts of it). */
function validMessage(typeName: string, obj: unknown): Buffer {
  try {
    const T = protoRoot().lookupType(typeName);
    return Buffer.from(T.encode(T.fromObject(obj as object)).finish());
  } catch {
    return Buffer.alloc(0);
  }
}

/** Deeply nested JSONSchemaProps (properties -> value -> properties ...) in a CRD. */
function deepCrd(depth: number): Buffer {
  // JSONSchemaProps.properties is field 11, a map<string, JSONSchemaProps>: entry {1: key, 2: value}
  let props = Buffer.alloc(0);
  for (let i = 0; i < depth; i++) props = lengthDelimited(11, Buffer.concat([lengthDelimited(1, Buffer.from('a')), lengthDelimited(2, props)]));
  // CRD.spec(2).versions(7)[].schema(4).openAPIV3Schema(1)
  const version = Buffer.concat([lengthDelimited(1, Buffer.from('v1')), lengthDelimited(4, lengthDelimited(1, props))]);
  return lengthDelimited(2, lengthDelimited(7, version));
}

export const protobufBody: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(fc.constantFrom(...PROTO_KINDS), rawFields).map(([[av, k], raw]) => envelope(av, k, raw)) },
  { weight: 3, arbitrary: fc.tuple(fc.constantFrom(...PROTO_KINDS), jsonValue, rawFields).map(([[av, k, t], o, extra]) => envelope(av, k, Buffer.concat([validMessage(t, { metadata: { name: 'fz' }, ...(typeof o === 'object' && o ? o : {}) }), extra]))) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 3000 }).map((d) => envelope('apiextensions.k8s.io/v1', 'CustomResourceDefinition', deepCrd(d))) },
  // Times far outside what a Date holds; RawExtension and FieldsV1 bytes that are not JSON
  { weight: 1, arbitrary: fc.tuple(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })).map(([sec, ns]) => envelope('v1', 'ConfigMap', lengthDelimited(1, lengthDelimited(8, Buffer.concat([field(1, 0, varint(sec)), field(2, 0, varint(BigInt.asUintN(64, BigInt(ns))))]))))) },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }).map((s) => envelope('v1', 'ConfigMap', lengthDelimited(1, lengthDelimited(17, lengthDelimited(7, lengthDelimited(1, Buffer.from(s))))))) },
  { weight: 1, arbitrary: fc.tuple(rawFields, fc.nat(64)).map(([b, cut]) => Buffer.concat([MAGIC, b]).subarray(0, 4 + cut)) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.concat([MAGIC, Buffer.from(b)])) },
);

// ---------------------------------------------------------------------------------------
// CBOR bodies

function cborHead(major: number, n: number | bigint): Buffer {
  const v = BigInt(n);
  const m = major << 5;
  if (v < 24n) return Buffer.from([m | Number(v)]);
  if (v < 256n) return Buffer.from([m | 24, Number(v)]);
  if (v < 65536n) return Buffer.from([m | 25, Number(v >> 8n), Number(v & 255n)]);
  if (v < 2n ** 32n) {
    const b = Buffer.alloc(5);
    b[0] = m | 26;
    b.writeUInt32BE(Number(v), 1);
    return b;
  }
  const b = Buffer.alloc(9);
  b[0] = m | 27;
  b.writeBigUInt64BE(v, 1);
  return b;
}

const cborItem: fc.Arbitrary<Buffer> = fc.letrec((tie) => ({
  item: fc.oneof(
    { depthSize: 'small' },
    fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map((v) => cborHead(0, v)),
    fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map((v) => cborHead(1, v)),
    fc.string({ maxLength: 10 }).map((s) => Buffer.concat([cborHead(3, Buffer.byteLength(s)), Buffer.from(s)])),
    fc.uint8Array({ maxLength: 10 }).map((b) => Buffer.concat([cborHead(2, b.length), Buffer.from(b)])),
    fc.array(tie('item') as fc.Arbitrary<Buffer>, { maxLength: 4 }).map((xs) => Buffer.concat([cborHead(4, xs.length), ...xs])),
    fc.array(fc.tuple(tie('item') as fc.Arbitrary<Buffer>, tie('item') as fc.Arbitrary<Buffer>), { maxLength: 3 }).map((kv) => Buffer.concat([cborHead(5, kv.length), ...kv.flat()])),
    // indefinite-length arrays, maps and strings, with or without their break
    fc.tuple(fc.constantFrom(0x9f, 0xbf, 0x5f, 0x7f), fc.array(tie('item') as fc.Arbitrary<Buffer>, { maxLength: 4 }), fc.boolean()).map(([h, xs, brk]) => Buffer.concat([Buffer.from([h]), ...xs, brk ? Buffer.from([0xff]) : Buffer.alloc(0)])),
    // tags: dates, bignums, decimal fractions, regexps, sets, records, self-described, unknown
    fc.tuple(fc.constantFrom(0, 1, 2, 3, 4, 5, 21, 24, 32, 35, 64, 69, 78, 85, 105, 258, 259, 27, 28, 29, 51111, 55799, 0xffffffff), tie('item') as fc.Arbitrary<Buffer>).map(([t, x]) => Buffer.concat([cborHead(6, t), x])),
    // huge declared lengths with little data behind them
    fc.tuple(fc.constantFrom(2, 3, 4, 5), fc.constantFrom(2 ** 31, 2 ** 32 - 1, 2 ** 53, 2n ** 64n - 1n)).map(([m, n]) => cborHead(m, n)),
    // simple values and floats: false, true, null, undefined, half/single/double floats, reserved
    fc.constantFrom(...[0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xfc, 0xff, 0x1c].map((b) => Buffer.from([b])), Buffer.from([0xf9, 0x7c, 0x00]), Buffer.from([0xfa, 0x7f, 0xc0, 0, 0]), Buffer.from([0xfb, 0x7f, 0xf0, 0, 0, 0, 0, 0, 0])),
  ),
})).item;

export const cborBody: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 3, arbitrary: objectOf('v1', 'ConfigMap').map((o) => encodeCbor(o)) },
  { weight: 4, arbitrary: cborItem.map((x) => Buffer.concat([Buffer.from([0xd9, 0xd9, 0xf7]), x])) },
  { weight: 2, arbitrary: fc.tuple(fc.array(fc.tuple(fc.constantFrom('apiVersion', 'kind', 'metadata', 'spec', '__proto__', 'constructor'), cborItem), { maxLength: 5 })).map(([kv]) => Buffer.concat([Buffer.from([0xd9, 0xd9, 0xf7]), cborHead(5, kv.length), ...kv.flatMap(([k, v]) => [cborHead(3, k.length), Buffer.from(k), v])])) },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 1, max: 12_000 }), fc.constantFrom(0x81, 0xa1, 0x9f, 0xc1)).map(([d, h]) => Buffer.concat([Buffer.from([0xd9, 0xd9, 0xf7]), Buffer.alloc(d, h === 0xa1 ? Buffer.from([0xa1, 0x61, 0x61]) : Buffer.from([h])), Buffer.from([0x01])])) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)) },
);

// ---------------------------------------------------------------------------------------
// Patches

export const pointer = fc.oneof(
  fc.constantFrom('', '/', '/metadata', '/metadata/labels', '/metadata/labels/a', '/metadata/labels/a~1b', '/metadata/labels/~0', '/metadata/finalizers/-', '/metadata/finalizers/0',
    '/metadata/finalizers/99999999999999999999', '/metadata/finalizers/01', '/metadata/finalizers/-1', '/spec/containers/0/image', '/spec/containers/-', '/data/a', '/data/__proto__', '/__proto__/x',
    '/constructor/prototype', 'metadata', '~1', '/metadata/annotations/~2', '/spec/template/spec/containers/0/env/-', '/data'),
  fc.array(fc.oneof(key, fc.nat(5).map(String), fc.constant('-')), { maxLength: 6 }).map((p) => '/' + p.map((s) => s.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')),
);

export const jsonPatchOp = fc.record(
  {
    op: fc.oneof({ weight: 6, arbitrary: fc.constantFrom('add', 'remove', 'replace', 'move', 'copy', 'test') }, { weight: 1, arbitrary: jsonValue }),
    path: fc.oneof({ weight: 6, arbitrary: pointer }, { weight: 1, arbitrary: jsonValue }),
    from: fc.oneof({ weight: 12, arbitrary: pointer }, { weight: 1, arbitrary: jsonValue }),
    value: jsonValue,
  },
  { requiredKeys: ['op', 'from'] },
);

export const jsonPatchDoc = fc.oneof({ weight: 8, arbitrary: fc.array(jsonPatchOp, { maxLength: 8 }) }, { weight: 1, arbitrary: jsonValue });

/** Merge patches: a sparse object tree with nulls, deep nests of the same key. */
export const mergePatchDoc = fc.oneof(
  { weight: 6, arbitrary: jsonValue },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 3000 }).map((d) => JSON.parse(nested(d, 'obj', 'null'))) },
  { weight: 2, arbitrary: objectOf('v1', 'ConfigMap') },
);

const directive = fc.oneof(
  fc.record({ $patch: fc.oneof(fc.constantFrom('replace', 'delete', 'merge', 'bogus'), jsonValue) }, { requiredKeys: [] }),
  fc.record({ $retainKeys: fc.oneof(fc.array(fc.oneof(key, jsonValue), { maxLength: 4 }), jsonValue) }),
  fc.record({ '$setElementOrder/containers': fc.oneof(fc.array(fc.oneof(fc.record({ name: fc.oneof(fc.constantFrom('c', 'd'), jsonValue) }), jsonValue), { maxLength: 4 }), jsonValue) }),
  fc.record({ '$deleteFromPrimitiveList/finalizers': fc.oneof(fc.array(jsonValue, { maxLength: 4 }), jsonValue) }),
  fc.record({ '$setElementOrder/finalizers': fc.oneof(fc.array(jsonValue, { maxLength: 4 }), jsonValue) }),
);

/** Containers lists as strategic merge patches see them: merge key `name`, with directives as items. */
const containers = fc.array(
  fc.oneof(
    fc.record({ name: fc.oneof(fc.constantFrom('c', 'd', 'e'), jsonValue), image: fc.oneof(fc.constant('nginx'), jsonValue), $patch: fc.constantFrom('delete', 'replace', 'merge', 'x') }, { requiredKeys: [] }),
    jsonValue,
  ),
  { maxLength: 4 },
);

export const strategicPatchDoc = fc.oneof(
  { weight: 4, arbitrary: fc.record({ metadata: fc.oneof(fc.tuple(directive, fc.record({ labels: jsonValue, finalizers: jsonValue }, { requiredKeys: [] })).map(([d, m]) => ({ ...m, ...d })), jsonValue), spec: fc.oneof(fc.tuple(directive, fc.record({ containers, initContainers: containers, volumes: jsonValue }, { requiredKeys: [] })).map(([d, s]) => ({ ...s, ...d })), jsonValue) }, { requiredKeys: [] }) },
  { weight: 2, arbitrary: fc.record({ spec: fc.record({ template: fc.record({ spec: fc.record({ containers }, { requiredKeys: [] }), metadata: jsonValue }, { requiredKeys: [] }), replicas: jsonValue, selector: jsonValue }, { requiredKeys: [] }) }) },
  { weight: 1, arbitrary: mergePatchDoc },
  { weight: 1, arbitrary: directive },
);

// ---------------------------------------------------------------------------------------
// Selectors, continue tokens, quantities

const labelKey = fc.oneof(
  fc.constantFrom('a', 'app', 'example.com/a', 'a.b/c', 'x/y/z', '-a', 'a-', 'A', '_', '/a', 'a/', 'in', 'notin', 'a.b.c.d.e.f.g.h/k', 'app.kubernetes.io/name'),
  fc.integer({ min: 60, max: 5000 }).map((n) => 'k'.repeat(n)),
  fc.tuple(fc.integer({ min: 200, max: 300 }), fc.constant('/n')).map(([n, s]) => 'd.'.repeat(n) + s),
  fc.string({ maxLength: 10 }),
);
const labelValue = fc.oneof(fc.constantFrom('', 'v', '1', '-1', '9223372036854775808', '-9223372036854775809', '+5', 'v-', '_v', 'a.b'), fc.integer({ min: 60, max: 3000 }).map((n) => 'v'.repeat(n)), fc.string({ maxLength: 8 }));
const labelOp = fc.constantFrom('=', '==', '!=', ' in ', ' notin ', '>', '<', '', '!', '!!', '=!', '<=', '>=', '===', '(', ')', ',');

export const labelSelectorText = fc.oneof(
  { weight: 4, arbitrary: fc.array(fc.tuple(fc.boolean(), labelKey, labelOp, fc.oneof(labelValue, fc.array(labelValue, { maxLength: 6 }).map((v) => `(${v.join(',')})`))), { maxLength: 5 }).map((rs) => rs.map(([neg, k, op, v]) => `${neg ? '!' : ''}${k}${op}${v}`).join(',')) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 20_000 }).map((n) => `a in (${Array.from({ length: n }, (_, i) => `v${i}`).join(',')})`) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 5000 }).map((n) => Array.from({ length: n }, (_, i) => `k${i}`).join(',')) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('(', ')', ',', '!', '=', ' ', 'in', '<', '>'), fc.integer({ min: 1, max: 20_000 })).map(([c, n]) => c.repeat(n)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
);

export const fieldSelectorText = fc.oneof(
  { weight: 4, arbitrary: fc.array(fc.tuple(fc.constantFrom('metadata.name', 'metadata.namespace', 'spec.nodeName', 'status.phase', 'type', 'a', '', 'metadata..name', 'metadata.name.x'), fc.constantFrom('=', '==', '!=', '', '=!', '!'), fc.oneof(labelValue, fc.constantFrom('\\', '\\,', '\\=', '\\x', 'a,b', 'a=b', '\\\\')))).map((ts) => ts.map(([f, o, v]) => f + o + v).join(',')) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 20_000 }).map((n) => Array.from({ length: n }, (_, i) => `metadata.name=n${i}`).join(',')) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('\\', '=', ',', '!', '\\,', 'a'), fc.integer({ min: 1, max: 20_000 })).map(([c, n]) => c.repeat(n)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
);

/** Continue tokens: base64url of random JSON, of near-valid tokens, and not base64 at all. */
export const continueToken = fc.oneof(
  { weight: 3, arbitrary: fc.record({ v: fc.oneof(fc.constant('meta.k8s.io/v1'), jsonValue), rv: fc.oneof(fc.constantFrom(-1, 0, 1, 2, 1e300, -1e300, 2 ** 64, 0.5, NaN), jsonValue), start: fc.oneof(fc.constantFrom('fz\u0000', '\u0000', '/', '/../', 'a/../b', '', '\uffff', 'fuzz/', 'zzzz'), nastyString, jsonValue), t: fc.oneof(fc.constantFrom(0, Date.now(), -1, 1e300), jsonValue) }, { requiredKeys: [] }).map((o) => Buffer.from(JSON.stringify(o)).toString('base64url')) },
  { weight: 1, arbitrary: jsonValue.map((v) => Buffer.from(JSON.stringify(v) ?? '').toString('base64url')) },
  { weight: 1, arbitrary: fc.oneof(fc.string({ maxLength: 40 }), fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b).toString('base64')), fc.integer({ min: 1, max: 6000 }).map((d) => Buffer.from(nested(d, 'arr')).toString('base64url'))) },
);

export const quantityText = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(fc.constantFrom('', '+', '-', '--', '+-'), fc.oneof(fc.integer({ min: 0, max: 1e9 }).map(String), fc.constantFrom('0', '.', '..', '1.', '.5', '1.2.3', '00012', '0.000000001')), fc.constantFrom('', 'm', 'u', 'n', 'k', 'K', 'M', 'G', 'T', 'P', 'E', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei', 'e', 'E', 'e3', 'E-3', 'e+9', 'e999999', 'e-999999', 'i', 'mi', 'kk', 'e', '+', 'E+')).map(([s, n, u]) => s + n + u) },
  // long digit runs (kept below the 240,000-digit case the regex helper fixes)
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 20, max: 5000 }), fc.constantFrom('', 'Ki', 'm', 'e3', '.5')).map(([n, u]) => '9'.repeat(n) + u) },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 20, max: 5000 }), fc.constantFrom('', 'Ki', 'm')).map(([n, u]) => '0.' + '0'.repeat(n) + '1' + u) },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 1, max: 2000 }), fc.constantFrom('.', 'e', 'i', 'k', 'E')).map(([n, c]) => '1' + c.repeat(n)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
);

/** Server-side apply configurations of a Deployment named fz, mostly valid: labels, annotations (kubectl's last-applied too), finalizers, replicas, containers. */
export const applyConfig = fc
  .record(
    {
      metadata: fc.record({ labels: fc.dictionary(fc.constantFrom('a', 'b', 'app'), fc.constantFrom('1', '2', 'fz'), { maxKeys: 3 }), annotations: fc.dictionary(fc.constantFrom('x', 'kubectl.kubernetes.io/last-applied-configuration'), fc.constantFrom('{}', '{"spec":{"replicas":1}}', 'not json'), { maxKeys: 2 }), finalizers: fc.array(fc.constantFrom('example.com/x', 'example.com/y'), { maxLength: 2 }) }, { requiredKeys: [] }),
      spec: fc.record(
        {
          replicas: fc.integer({ min: -1, max: 5 }),
          selector: fc.constant({ matchLabels: { app: 'fz' } }),
          template: fc.record({ spec: fc.record({ containers: fc.array(fc.record({ name: fc.constantFrom('c', 'd', 'e'), image: fc.constantFrom('nginx', 'busybox'), args: fc.array(fc.constantFrom('a', 'b', 'c'), { maxLength: 3 }), env: fc.array(fc.record({ name: fc.constantFrom('E', 'F'), value: fc.string({ maxLength: 3 }) }), { maxLength: 2 }) }, { requiredKeys: ['name'] }), { maxLength: 3 }) }, { requiredKeys: [] }) }, { requiredKeys: [] }),
        },
        { requiredKeys: [] },
      ),
    },
    { requiredKeys: [] },
  )
  .map((c) => ({ apiVersion: 'apps/v1', kind: 'Deployment', ...c }));
