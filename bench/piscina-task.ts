// The task piscina-offload.ts sends to its pool: a list's stored JSON, joined into one
// transferred buffer with each object's end, converted to a Table or to protobuf by the
// server's own encoder (src/codec/representation.ts encodeList), answered as one
// transferred buffer.
import { encodeList, type Encodable } from '../src/codec/representation.js';
import { listContext, representationOf, type Conversion } from './piscina-offload-shared.js';

// (piscina is loaded by name: it is not a dependency of the server)
const PISCINA = 'piscina';
const { move } = (await import(PISCINA)) as { move: (v: ArrayBuffer) => unknown };

export interface ConvertTask {
  buf: ArrayBuffer;
  ends: Int32Array;
  conversion: Conversion;
  resource: 'configmaps' | 'pods';
  listMeta: Record<string, unknown>;
}

export default function convert(t: ConvertTask): unknown {
  const bytes = Buffer.from(t.buf);
  const entries: Encodable[] = new Array(t.ends.length);
  let start = 0;
  for (let i = 0; i < t.ends.length; i++) {
    entries[i] = { json: bytes.subarray(start, t.ends[i]) };
    start = t.ends[i];
  }
  const out = encodeList(entries, t.listMeta, representationOf(t.conversion), listContext(t.resource, t.conversion));
  // (a large Buffer.concat has a buffer of its own; a small answer may sit in the pool)
  const ab = out.byteOffset === 0 && out.byteLength === out.buffer.byteLength ? (out.buffer as ArrayBuffer) : Uint8Array.prototype.slice.call(out).buffer;
  return move(ab);
}
