// application/cbor (behind the CBORServingAndStorage gate): an object's JSON form as one
// CBOR data item, prefixed with the self-described CBOR tag 55799 (0xd9d9f7) as
// kube-apiserver writes it; application/cbor-seq for watch, one such item per event.
// Request bodies (application/cbor, application/apply-patch+cbor) are decoded back to the
// JSON form: byte strings become base64 strings, as the JSON form carries []byte.
import { Decoder, Encoder, Tag } from 'cbor-x';
import { errors } from '../errors.js';
import { setOwn } from '../registry/own-keys.js';

const SELF_DESCRIBED = Buffer.from([0xd9, 0xd9, 0xf7]);
const encoder = new Encoder({ useRecords: false, mapsAsObjects: true, variableMapSize: true, tagUint8Array: false } as any);
const decoder = new Decoder({ useRecords: false, mapsAsObjects: true } as any);

/** One self-described CBOR item. */
export function encodeCbor(v: unknown): Buffer {
  return Buffer.concat([SELF_DESCRIBED, encoder.encode(v)]);
}

/** A CBOR watch event (one entry of an application/cbor-seq stream). */
export function cborWatchFrame(type: string, obj: unknown): Buffer {
  return encodeCbor({ type, object: obj });
}

/**
 * How deep a decoded body may nest. The decoder takes what it is given; the walks after it
 * (defaulting, validation, the patch engines) recurse per level and overflow the stack near
 * 2,000, and none takes more than MAX_PATCH_DEPTH (1,000) anyway.
 */
export const MAX_CBOR_DEPTH = 1000;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * A decoded CBOR item as the JSON form kube's decoder gives (byte strings as base64, an
 * unrecognised tag as its content, a time tag as an RFC 3339 string), refusing what that
 * decoder refuses or what has no JSON form: integers beyond int64, NaN and the infinities,
 * `undefined`, nesting deeper than JSON's limit, and cbor-x's own extensions (value sharing
 * and cycles (tags 28/29), sets, regular expressions, errors, records): one value reached
 * twice would otherwise be a cycle (a stack overflow) or an alias bomb when encoded.
 * Iterative (an explicit stack), so that deep nesting cannot overflow the call stack;
 * arrays and plain objects are converted in place.
 */
function jsonForm(root: unknown): unknown {
  const fail = (why: string) => errors.badRequest(`couldn't get version/kind; cbor decode error: ${why}`);
  const seen = new Set<object>();
  /** One value as it goes in its parent's slot; a container comes back to be walked. */
  const convert = (v: unknown): unknown => {
    while (v instanceof Tag) v = v.value;
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return v;
      case 'number':
        if (!Number.isFinite(v)) throw fail(`floating-point number ${v} is not allowed`);
        return v;
      case 'bigint':
        if (v < INT64_MIN || v > INT64_MAX) throw fail(`integer ${v} overflows Go's int64`);
        return Number(v);
      case 'object':
        break;
      default:
        throw fail(`unsupported item of type ${typeof v}`);
    }
    if (v === null) return null;
    if (seen.has(v)) throw fail('shared or cyclic values are not supported');
    seen.add(v);
    if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
    if (v instanceof Date) {
      if (Number.isNaN(v.getTime())) throw fail('invalid time');
      return v.toISOString().replace('.000Z', 'Z');
    }
    if (Array.isArray(v)) return v;
    if (v instanceof Map) {
      const o: Record<string, unknown> = {};
      for (const [k, x] of v) {
        if (typeof k !== 'string') throw fail(`map key of type ${typeof k} is not a string`);
        // (keys are the client's: `__proto__` is set as a field, not as o's prototype)
        setOwn(o, k, x);
      }
      return o;
    }
    if (Object.getPrototypeOf(v) === Object.prototype) return v;
    throw fail(`unsupported item ${Object.prototype.toString.call(v)}`);
  };
  const top = convert(root);
  const stack: Array<[unknown, number]> = [[top, 1]];
  while (stack.length) {
    const [c, depth] = stack.pop()!;
    if (c === null || typeof c !== 'object') continue;
    // (fxamacker/cbor's wording of its own nesting limit)
    if (depth > MAX_CBOR_DEPTH) throw fail(`cbor: exceeded max nested level ${MAX_CBOR_DEPTH}`);
    const o = c as Record<string, unknown>;
    for (const k of Object.keys(o)) {
      const x = convert(o[k]);
      setOwn(o, k, x);
      if (x !== null && typeof x === 'object') stack.push([x, depth + 1]);
    }
  }
  return top;
}

/** Decodes a CBOR body into the object's JSON form; 400 when it is not one CBOR item with a JSON form. */
export function decodeCbor(body: Buffer | null): unknown {
  if (!body || body.length === 0) throw errors.badRequest("couldn't get version/kind; cbor: unexpected EOF");
  let v: unknown;
  try {
    v = decoder.decode(body);
  } catch (e) {
    // (the decoder recurses per level: a stack overflow is nesting past the limit)
    const why = e instanceof RangeError ? `cbor: exceeded max nested level ${MAX_CBOR_DEPTH}` : (e as Error).message;
    throw errors.badRequest(`couldn't get version/kind; cbor decode error: ${why}`);
  }
  return jsonForm(v);
}
