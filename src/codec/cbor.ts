// application/cbor (behind the CBORServingAndStorage gate): an object's JSON form as one
// CBOR data item, prefixed with the self-described CBOR tag 55799 (0xd9d9f7) as
// kube-apiserver writes it; application/cbor-seq for watch, one such item per event.
// Request bodies (application/cbor, application/apply-patch+cbor) are decoded back to the
// JSON form: byte strings become base64 strings, as the JSON form carries []byte.
import { Decoder, Encoder } from 'cbor-x';
import { errors } from '../errors.js';

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
    const o: any = {};
    for (const [k, x] of v) o[String(k)] = toJsonForm(x);
    return o;
  }
  if (v && typeof v === 'object' && v.constructor === Object) {
    for (const k of Object.keys(v)) v[k] = toJsonForm(v[k]);
    return v;
  }
  if (v && typeof v === 'object' && 'value' in v && 'tag' in v) return toJsonForm(v.value);
  return v;
}

/** Decodes a CBOR body into the object's JSON form; 400 when it is not one CBOR item. */
export function decodeCbor(body: Buffer | null): unknown {
  if (!body || body.length === 0) throw errors.badRequest("couldn't get version/kind; cbor: unexpected EOF");
  let v: unknown;
  try {
    v = decoder.decode(body);
  } catch (e) {
    throw errors.badRequest(`couldn't get version/kind; cbor decode error: ${(e as Error).message}`);
  }
  return toJsonForm(v);
}
