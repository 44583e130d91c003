// Just enough of the protobuf wire format for the KMS v2 messages (kmsv2/v2 EncryptedObject
// and the k8s.io/kms/apis/v2 service messages): varints, length-delimited bytes and
// strings, and map<string, bytes> entries. Fields are written in field-number order, as
// Go's proto.Marshal writes them (map entries sorted by key, as its deterministic mode).
//
// Stateless.

export type Field = { no: number; kind: 'bytes' | 'string'; value: Buffer | string } | { no: number; kind: 'varint'; value: number } | { no: number; kind: 'map'; value: Record<string, Buffer> };

function varint(n: number, out: number[]): void {
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
}

function lengthDelimited(no: number, body: Buffer, parts: Buffer[]): void {
  const head: number[] = [];
  varint((no << 3) | 2, head);
  varint(body.length, head);
  parts.push(Buffer.from(head), body);
}

/** proto3 encoding: zero values (empty bytes, '', 0) are left out. */
export function encodeMessage(fields: Field[]): Buffer {
  const parts: Buffer[] = [];
  for (const f of fields) {
    if (f.kind === 'varint') {
      if (!f.value) continue;
      const head: number[] = [];
      varint(f.no << 3, head);
      varint(f.value, head);
      parts.push(Buffer.from(head));
    } else if (f.kind === 'map') {
      for (const k of Object.keys(f.value).sort()) lengthDelimited(f.no, encodeMessage([{ no: 1, kind: 'string', value: k }, { no: 2, kind: 'bytes', value: f.value[k] }]), parts);
    } else {
      const body = typeof f.value === 'string' ? Buffer.from(f.value) : f.value;
      if (body.length) lengthDelimited(f.no, body, parts);
    }
  }
  return Buffer.concat(parts);
}

export class ProtoError extends Error {}

/** Field number to values (length-delimited ones as Buffers, varints as numbers), in order. */
export function decodeMessage(b: Buffer): Map<number, Array<Buffer | number>> {
  const out = new Map<number, Array<Buffer | number>>();
  let at = 0;
  const readVarint = (): number => {
    let n = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (at >= b.length) throw new ProtoError('unexpected EOF');
      const byte = b[at++];
      n += (byte & 0x7f) * mul;
      if (!(byte & 0x80)) return n;
      mul *= 128;
    }
    throw new ProtoError('variable length integer overflow');
  };
  while (at < b.length) {
    const tag = readVarint();
    const no = Math.floor(tag / 8);
    const wire = tag & 7;
    if (no === 0) throw new ProtoError('invalid field number');
    let value: Buffer | number;
    if (wire === 0) value = readVarint();
    else if (wire === 2) {
      const len = readVarint();
      if (at + len > b.length) throw new ProtoError('unexpected EOF');
      value = b.subarray(at, at + len);
      at += len;
    } else if (wire === 1) {
      at += 8;
      continue;
    } else if (wire === 5) {
      at += 4;
      continue;
    } else throw new ProtoError('cannot parse invalid wire-format data');
    let list = out.get(no);
    if (!list) out.set(no, (list = []));
    list.push(value);
  }
  return out;
}

export function bytesField(m: Map<number, Array<Buffer | number>>, no: number): Buffer {
  const v = m.get(no)?.at(-1);
  return Buffer.isBuffer(v) ? v : Buffer.alloc(0);
}

export function stringField(m: Map<number, Array<Buffer | number>>, no: number): string {
  return bytesField(m, no).toString('utf8');
}

export function varintField(m: Map<number, Array<Buffer | number>>, no: number): number {
  const v = m.get(no)?.at(-1);
  return typeof v === 'number' ? v : 0;
}

export function mapField(m: Map<number, Array<Buffer | number>>, no: number): Record<string, Buffer> {
  const out: Record<string, Buffer> = {};
  for (const entry of m.get(no) ?? []) {
    if (!Buffer.isBuffer(entry)) continue;
    const e = decodeMessage(entry);
    out[stringField(e, 1)] = Buffer.from(bytesField(e, 2));
  }
  return out;
}
