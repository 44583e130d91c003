// One revision record: what the write-ahead log appends and what the B-tree stores under
// the revision's version (layout.ts). The same bytes serve both, so a committed write is
// encoded once.
//
//   f64 rv | f64 previous rv of the key (0 if none) | f64 commit time ms | u8 type |
//   u16 gr length | u16 key length | gr | key | value (flag byte + JSON)
//
// Readers that scan many records (a watch replay, a history read) look at the fixed part
// and the group-resource first, and decode the key and value only of the records they keep.
import type { EventType } from './protocol.js';

export const FIXED = 8 + 8 + 8 + 1 + 2 + 2;
const TYPES: EventType[] = ['ADDED', 'MODIFIED', 'DELETED'];
/** the type byte of a DELETED record (for scans that read the byte, not the name) */
export const DELETED_TYPE = TYPES.indexOf('DELETED');

export interface RevisionRecord {
  rv: number;
  prev: number;
  ts: number;
  type: EventType;
  gr: string;
  key: string;
  /** flag byte + JSON */
  value: Uint8Array;
}

/** The record's bytes, written at `offset` of a buffer of `offset + recordLength(r)` bytes. */
export function writeRecord(r: RevisionRecord, b: Buffer, offset: number): void {
  b.set(r.value, writeRecordHead(r, b, offset));
}

/** Everything of the record but its value, written at `offset`; returns where the value goes. */
export function writeRecordHead(r: Omit<RevisionRecord, 'value'>, b: Buffer, offset: number): number {
  let o = offset;
  b.writeDoubleLE(r.rv, o);
  b.writeDoubleLE(r.prev, o + 8);
  b.writeDoubleLE(r.ts, o + 16);
  b[o + 24] = TYPES.indexOf(r.type);
  o += FIXED;
  const grLen = b.write(r.gr, o);
  b.writeUInt16LE(grLen, offset + 25);
  o += grLen;
  const keyLen = b.write(r.key, o);
  b.writeUInt16LE(keyLen, offset + 27);
  return o + keyLen;
}

export function recordLength(r: RevisionRecord): number {
  return FIXED + Buffer.byteLength(r.gr) + Buffer.byteLength(r.key) + r.value.byteLength;
}

/** The record's bytes in a buffer of their own. */
export function encodePayload(r: RevisionRecord): Buffer {
  const b = Buffer.allocUnsafe(recordLength(r));
  writeRecord(r, b, 0);
  return b;
}

/** Whether the bytes hold a well-formed record (lengths within bounds, a known type). */
export function validRecord(p: Buffer): boolean {
  if (p.length < FIXED || TYPES[p[24]] === undefined) return false;
  return FIXED + p.readUInt16LE(25) + p.readUInt16LE(27) <= p.length;
}

export const recordRv = (p: Buffer): number => p.readDoubleLE(0);
export const recordPrev = (p: Buffer): number => p.readDoubleLE(8);
export const recordTs = (p: Buffer): number => p.readDoubleLE(16);
export const recordType = (p: Buffer): EventType => TYPES[p[24]];
export const recordGr = (p: Buffer): string => p.toString('utf8', FIXED, FIXED + p.readUInt16LE(25));

/** Whether the record is of the group-resource whose bytes are `gr` (no string is made). */
export function recordIsOf(p: Buffer, gr: Buffer): boolean {
  const len = p.readUInt16LE(25);
  return len === gr.length && p.compare(gr, 0, len, FIXED, FIXED + len) === 0;
}

export function recordKey(p: Buffer): string {
  const start = FIXED + p.readUInt16LE(25);
  return p.toString('utf8', start, start + p.readUInt16LE(27));
}

/** The stored value (flag byte + JSON), a view of the record's bytes. */
export function recordValue(p: Buffer): Buffer {
  return p.subarray(FIXED + p.readUInt16LE(25) + p.readUInt16LE(27));
}

export function decodeRecord(p: Buffer): RevisionRecord {
  const grLen = p.readUInt16LE(25);
  const keyLen = p.readUInt16LE(27);
  return {
    rv: p.readDoubleLE(0),
    prev: p.readDoubleLE(8),
    ts: p.readDoubleLE(16),
    type: TYPES[p[24]],
    gr: p.toString('utf8', FIXED, FIXED + grLen),
    key: p.toString('utf8', FIXED + grLen, FIXED + grLen + keyLen),
    value: p.subarray(FIXED + grLen + keyLen),
  };
}
