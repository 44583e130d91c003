// A minimal DER reader and writer: enough ASN.1 to read a PKCS#10 certificate request and a
// CA certificate, and to write an X.509 v3 certificate for the cluster signers (no package
// in node_modules does X.509 writing; node:crypto verifies and signs, and parses
// certificates through X509Certificate, but does not build them).
//
// Thread ownership: none (pure functions).

/** One decoded TLV: its tag byte, the whole encoding and the contents. */
export interface Tlv {
  tag: number;
  /** the whole element (tag, length and contents) */
  raw: Buffer;
  /** the contents */
  body: Buffer;
}

/** Reads the element at `offset` of `buf`; throws on a malformed or truncated encoding. */
export function readTlv(buf: Buffer, offset = 0): Tlv & { end: number } {
  if (offset + 2 > buf.length) throw new Error('asn1: truncated element');
  const tag = buf[offset];
  if ((tag & 0x1f) === 0x1f) throw new Error('asn1: high tag numbers are not supported');
  let len = buf[offset + 1];
  let p = offset + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4 || p + n > buf.length) throw new Error('asn1: bad length');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + buf[p + i];
    p += n;
  }
  const end = p + len;
  if (end > buf.length) throw new Error('asn1: truncated element');
  return { tag, raw: buf.subarray(offset, end), body: buf.subarray(p, end), end };
}

/** The elements inside a constructed element's contents. */
export function children(body: Buffer): Tlv[] {
  const out: Tlv[] = [];
  let p = 0;
  while (p < body.length) {
    const t = readTlv(body, p);
    out.push(t);
    p = t.end;
  }
  return out;
}

export function decodeOid(body: Buffer): string {
  if (body.length === 0) throw new Error('asn1: empty object identifier');
  const parts = [Math.floor(body[0] / 40), body[0] % 40];
  let v = 0;
  for (let i = 1; i < body.length; i++) {
    v = v * 128 + (body[i] & 0x7f);
    if (!(body[i] & 0x80)) {
      parts.push(v);
      v = 0;
    }
  }
  return parts.join('.');
}

// ---- writing ----

function lengthBytes(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  while (n > 0) {
    bytes.unshift(n & 0xff);
    n = Math.floor(n / 256);
  }
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

export function tlv(tag: number, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  return Buffer.concat([Buffer.from([tag]), lengthBytes(body.length), body]);
}

export const seq = (...parts: Buffer[]): Buffer => tlv(0x30, ...parts);
export const set = (...parts: Buffer[]): Buffer => tlv(0x31, ...parts);
export const octets = (b: Buffer): Buffer => tlv(0x04, b);
export const nul = (): Buffer => Buffer.from([0x05, 0x00]);
export const bool = (v: boolean): Buffer => Buffer.from([0x01, 0x01, v ? 0xff : 0x00]);
/** A context-specific constructed (explicit) tag. */
export const explicit = (n: number, inner: Buffer): Buffer => tlv(0xa0 | n, inner);

/** A non-negative INTEGER from its big-endian magnitude. */
export function integer(magnitude: Buffer | number): Buffer {
  let b: Buffer;
  if (typeof magnitude === 'number') {
    const h = magnitude.toString(16);
    b = Buffer.from(h.length % 2 ? `0${h}` : h, 'hex');
  } else b = magnitude;
  let i = 0;
  while (i < b.length - 1 && b[i] === 0 && !(b[i + 1] & 0x80)) i++;
  b = b.subarray(i);
  if (b[0] & 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return tlv(0x02, b);
}

export function oid(dotted: string): Buffer {
  const p = dotted.split('.').map(Number);
  const bytes: number[] = [p[0] * 40 + p[1]];
  for (const v of p.slice(2)) {
    const enc: number[] = [v & 0x7f];
    let x = Math.floor(v / 128);
    while (x > 0) {
      enc.unshift((x & 0x7f) | 0x80);
      x = Math.floor(x / 128);
    }
    bytes.push(...enc);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** A BIT STRING of whole bytes (no unused bits), as signatures and key identifiers are. */
export const bitString = (b: Buffer): Buffer => tlv(0x03, Buffer.from([0]), b);

/** A BIT STRING of named bits (bit 0 first), trimmed as DER requires. */
export function namedBits(bits: number[]): Buffer {
  if (bits.length === 0) return tlv(0x03, Buffer.from([0]));
  const max = Math.max(...bits);
  const bytes = Buffer.alloc(Math.floor(max / 8) + 1);
  for (const b of bits) bytes[Math.floor(b / 8)] |= 0x80 >> b % 8;
  const unused = 7 - (max % 8);
  return tlv(0x03, Buffer.from([unused]), bytes);
}

/** UTCTime before 2050, GeneralizedTime from then on (RFC 5280 4.1.2.5). */
export function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  const year = d.getUTCFullYear();
  if (year >= 1950 && year < 2050) return tlv(0x17, Buffer.from(iso.slice(2) + 'Z', 'latin1'));
  return tlv(0x18, Buffer.from(iso + 'Z', 'latin1'));
}
