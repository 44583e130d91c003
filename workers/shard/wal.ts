// The shard's write-ahead log (etcd's WAL in miniature).
//
// Why: a durable write used to be acknowledged only after the LMDB transaction holding it
// was fsync'd. Object keys are random, so every write dirties a B-tree leaf page of its
// own, and the fsync of those scattered pages (~8 KB per write) bounded a shard at a few
// thousand writes per second. The log is sequential: a group commit appends its records in
// one write and fdatasyncs them (a fraction of a millisecond), the write is acknowledged,
// and the B-tree is brought up to date afterwards without waiting for its own flush.
// After a crash, the records the B-tree had not made durable are applied again at start.
//
// Segments are zero-filled ahead of the writes (a fill step at a time), so that an append
// overwrites blocks the file already owns: fdatasync then flushes data only, with no
// journal commit for a change of size (which, on ext4, would also flush every other
// file's newly allocated blocks). A segment is removed once the B-tree has flushed every
// version in it.
//
// Thread ownership: one WriteAheadLog belongs to one shard worker thread.
//
//   segment: wal-<first rv, 16 digits>.log, up to SEGMENT_BYTES, zero-filled past its end
//   record:  u32 payload length | u32 crc32(payload) | payload
//   payload: one revision record (record.ts), the same bytes the B-tree stores
// A zero length, a record past the end, or a bad checksum ends the log (a torn tail:
// its batch was never acknowledged).
import { closeSync, fdatasyncSync, fsyncSync, openSync, readdirSync, readSync, rmSync, statSync, writeSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { join } from 'node:path';
import { FIXED, decodeRecord, recordLength, validRecord, writeRecord, writeRecordHead, type RevisionRecord } from './record.js';

export const SEGMENT_BYTES = 64 * 1024 * 1024;
/** how far ahead of the appends a segment is zero-filled at a time, at most */
export const ZERO_STEP = 4 * 1024 * 1024;

/**
 * The fill step for a file system of `total` bytes: ZERO_STEP, or a 32nd of a small one
 * (at least 256 KiB), so that the log's fill ahead does not hold a large share of a small
 * disk (each shard has its own).
 */
export function fillStepFor(total: number): number {
  return Math.min(ZERO_STEP, Math.max(256 * 1024, Math.floor(total / 32 / 4096) * 4096));
}
const ZEROS = Buffer.alloc(ZERO_STEP);
const HEADER = 8;

export type WalRecord = RevisionRecord;

/** The bytes of one log entry, header included; payload() of it is the record alone. */
export function encodeRecord(r: WalRecord): Buffer {
  const payloadLen = recordLength(r);
  const b = Buffer.allocUnsafe(HEADER + payloadLen);
  b.writeUInt32LE(payloadLen, 0);
  writeRecord(r, b, HEADER);
  b.writeUInt32LE(crc32(b.subarray(HEADER)), 4);
  return b;
}

/**
 * The log entry of a committed write, made straight from the object's JSON text: the
 * record's fields, the flag byte and the text, in an ArrayBuffer of exactly the entry's
 * size. Why its own ArrayBuffer: the record (payload() of the entry) is posted to the front
 * thread, which keeps it (its JSON is what the cache serves) and a view of a pooled Buffer
 * would copy, and pin, the whole 8 KiB slab.
 */
export function encodeEntry(r: Omit<WalRecord, 'value'>, flag: number, json: string | Buffer): Buffer {
  const grLen = Buffer.byteLength(r.gr);
  const keyLen = Buffer.byteLength(r.key);
  const payloadLen = FIXED + grLen + keyLen + 1 + Buffer.byteLength(json);
  const b = Buffer.allocUnsafeSlow(HEADER + payloadLen);
  b.writeUInt32LE(payloadLen, 0);
  writeRecordHead(r, b, HEADER);
  let o = HEADER + FIXED + grLen + keyLen;
  b[o++] = flag;
  if (typeof json === 'string') b.write(json, o);
  else b.set(json, o);
  b.writeUInt32LE(crc32(b.subarray(HEADER)), 4);
  return b;
}

/** The record inside an entry encodeRecord made (a view, no copy). */
export const payload = (entry: Buffer): Buffer => entry.subarray(HEADER);

/** The records of one segment's bytes, up to the first zero, torn or corrupt record. */
export function* decodeRecords(buf: Buffer): Generator<WalRecord> {
  let o = 0;
  while (o + HEADER <= buf.length) {
    const len = buf.readUInt32LE(o);
    if (len === 0 || o + HEADER + len > buf.length) return;
    const p = buf.subarray(o + HEADER, o + HEADER + len);
    if (crc32(p) !== buf.readUInt32LE(o + 4) || !validRecord(p)) return;
    yield decodeRecord(p);
    o += HEADER + len;
  }
}

interface Segment {
  path: string;
  firstRv: number;
  /** highest version written to it (0 while empty) */
  lastRv: number;
}

const segName = (rv: number) => `wal-${String(rv).padStart(16, '0')}.log`;

export class WriteAheadLog {
  private segments: Segment[] = [];
  private fd = -1;
  private pos = 0;
  /** bytes of the current segment known to be zero-filled */
  private filled = 0;

  constructor(
    private readonly dir: string,
    /** how far ahead of the appends the segment is zero-filled at a time (at most ZERO_STEP) */
    readonly fillStep = ZERO_STEP,
  ) {}

  /**
   * Every record of every segment, oldest first. Called once, at start-up, before append.
   * Replay whatever the B-tree has not flushed: the caller skips what it already holds.
   */
  *replay(): Generator<WalRecord> {
    const names = readdirSync(this.dir).filter((n) => /^wal-\d{16}\.log$/.test(n)).sort();
    for (const n of names) {
      const path = join(this.dir, n);
      const seg: Segment = { path, firstRv: Number(n.slice(4, 20)), lastRv: 0 };
      this.segments.push(seg);
      const size = statSync(path).size;
      const fd = openSync(path, 'r');
      const buf = Buffer.allocUnsafe(size);
      let got = 0;
      while (got < size) {
        const r = readSync(fd, buf, got, size - got, got);
        if (r === 0) break;
        got += r;
      }
      closeSync(fd);
      for (const rec of decodeRecords(buf.subarray(0, got))) {
        seg.lastRv = rec.rv;
        yield rec;
      }
    }
  }

  /**
   * Starts appending: to a fresh segment after the replayed ones (a replayed segment may end
   * in a torn record, and is never written again).
   */
  open(nextRv: number): void {
    this.rotate(nextRv);
  }

  /**
   * The bytes the file system must still give for an append of `size` bytes: the zero-fill
   * ahead of it (a whole step, or a fresh segment's first step) and nothing for the records
   * themselves, which overwrite blocks the fill already took. The shard checks free space
   * against this before it logs a batch (shard-worker.ts, the space reserve).
   */
  allocationFor(size: number): number {
    const rotates = this.fd < 0 || (this.pos + size > SEGMENT_BYTES && this.pos > 0);
    const from = rotates ? 0 : this.pos;
    const filled = rotates ? 0 : this.filled;
    let need = 0;
    while (filled + need < from + size) need += this.fillStep;
    return need;
  }

  /**
   * Appends one group commit's records and makes them durable. Throws when it cannot; the
   * log is then as it was before the call (no record of the batch can be replayed), so the
   * caller may refuse the batch and append later ones.
   */
  append(records: Buffer[], firstRv: number, lastRv: number): void {
    let size = 0;
    for (const r of records) size += r.length;
    if (this.fd < 0 || (this.pos + size > SEGMENT_BYTES && this.pos > 0)) this.rotate(firstRv);
    // ENOSPC surfaces here, before any record is written: the fill is what takes new blocks.
    // A short write (a nearly full file system) counts only what it wrote.
    while (this.filled < this.pos + size) this.filled += writeSync(this.fd, ZEROS, 0, this.fillStep, this.filled);
    const chunk = records.length === 1 ? records[0] : Buffer.concat(records, size);
    let off = 0;
    try {
      while (off < chunk.length) off += writeSync(this.fd, chunk, off, chunk.length - off, this.pos + off);
      fdatasyncSync(this.fd);
    } catch (err) {
      // Some of the batch may be in the file (and its checksums are good): were it left
      // there, a later, shorter batch written at the same place would leave its tail behind
      // to be replayed after a crash, a write that was answered with an error. Zero it.
      this.scrub(this.pos, off);
      throw err;
    }
    this.pos += chunk.length;
    this.segments[this.segments.length - 1].lastRv = lastRv;
  }

  /**
   * Zeroes [at, at+len) of the current segment and syncs it: blocks the fill already owns, so
   * a full file system does not refuse it. When even that fails, the segment can no longer
   * be trusted to end where the log says: the next append starts a new one.
   */
  private scrub(at: number, len: number): void {
    try {
      let off = 0;
      while (off < len) off += writeSync(this.fd, ZEROS, 0, Math.min(ZERO_STEP, len - off), at + off);
      fdatasyncSync(this.fd);
    } catch {
      this.abandon();
    }
  }

  /** Stops writing the current segment: the next append rotates to a new one. */
  private abandon(): void {
    try {
      closeSync(this.fd);
    } catch {
      /* already unusable */
    }
    this.fd = -1;
  }

  /**
   * Under the space alarm, with the B-tree idle: when it has flushed every record of the
   * current segment, appending moves to a new, empty segment (named by a version below any
   * still to come), so that the old one can be removed. A segment is otherwise removed only
   * once it is full, and on a small disk the log would hold a copy of everything.
   */
  reclaim(flushedRv: number, nextRv: number): number {
    const cur = this.segments[this.segments.length - 1];
    if (!cur || this.fd < 0 || this.pos === 0 || cur.lastRv > flushedRv) return 0;
    const before = this.segments.length;
    this.rotate(nextRv);
    this.release(flushedRv);
    return before + 1 - this.segments.length;
  }

  /** Removes the segments whose every version the B-tree has made durable. The newest stays. */
  release(flushedRv: number): void {
    while (this.segments.length > 1 && this.segments[0].lastRv <= flushedRv) {
      const seg = this.segments.shift()!;
      rmSync(seg.path, { force: true });
    }
  }

  /**
   * Seals the current segment and starts a new one, named by its first version. The new file
   * is opened before the old one is closed: a rotation that fails (no inode, no directory
   * block) leaves the log appending where it was.
   */
  private rotate(firstRv: number): void {
    const path = join(this.dir, segName(firstRv));
    const fd = openSync(path, 'w+');
    try {
      fsyncDir(this.dir);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    if (this.fd >= 0) closeSync(this.fd);
    // A segment of that name can only hold records that were never made durable (else the
    // versions would have moved past firstRv): it is started afresh.
    this.segments = this.segments.filter((s) => s.path !== path);
    this.fd = fd;
    this.pos = 0;
    this.filled = 0;
    this.segments.push({ path, firstRv, lastRv: 0 });
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}

/** Makes a directory's entries durable (a file created or renamed in it). */
export function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
