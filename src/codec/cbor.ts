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

function toJsonForm(v: any): any {
  if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
  if (Array.isArray(v)) return v.map(toJsonForm);
  if (v instanceof Map) {
    // (keys are the client's: `__proto__` is set as a field, not as o's prototype)
    const o: any = {};
    for (const [k, x] of v) setOwn(o, String(k), toJsonForm(x));
    return o;
  }
  if (v instanceof Tag) return toJsonForm(v.value);
  // A plain decoded map (cbor-x builds those; a key `constructor` must not hide that it is one)
  if (v && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    for (const k of Object.keys(v)) v[k] = toJsonForm(v[k]);
    return v;
  }
  return v;
}

/**
 * How deep a decoded body may nest. The decoder takes what it is given; the walks after it
 * (toJsonForm here, then defaulting, validation, the patch engines) recurse per level and
 * overflow the stack near 2,000, and none takes more than MAX_PATCH_DEPTH (1,000) anyway.
 */
export const MAX_CBOR_DEPTH = 1000;

/** Whether a decoded CBOR value (arrays, maps, Maps, tags) nests deeper than max, found without recursion. */
function nestsDeeperThan(v: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[v, 0]];
  while (stack.length > 0) {
    const [x, d] = stack.pop()!;
    if (x === null || typeof x !== 'object' || x instanceof Uint8Array) continue;
    if (x instanceof Tag) {
      stack.push([x.value, d]);
      continue;
    }
    if (d + 1 > max) return true;
    const children = Array.isArray(x) ? x : x instanceof Map ? [...x.values()] : Object.values(x);
    for (const c of children) if (c !== null && typeof c === 'object') stack.push([c, d + 1]);
  }
  return false;
}

/** Decodes a CBOR body into the object's JSON form; 400 when it is not one CBOR item. */
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
  // (fxamacker/cbor's wording of its own nesting limit)
  if (nestsDeeperThan(v, MAX_CBOR_DEPTH)) throw errors.badRequest(`couldn't get version/kind; cbor decode error: cbor: exceeded max nested level ${MAX_CBOR_DEPTH}`);
  return toJsonForm(v);
}
