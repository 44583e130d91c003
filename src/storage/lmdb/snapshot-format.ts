// The snapshot file of the LMDB backend (kubeshard snapshot save / restore / status): every
// shard's revision records up to one resourceVersion, in one file.
//
//   "KSSNAP01" | u32 header length | header (JSON, SnapshotHeader) |
//   per shard, in index order: its records, each u32 length | revision record (record.ts),
//                              then u32 0 (the shard's end) |
//   SHA-256 (32 bytes) of every byte before it
//
// Why records and not a copy of the LMDB files: the copy is one point of the global version
// order (every record up to the snapshot's version, none after), and a copy of a B-tree
// that took more writes while it was copied would need cutting afterwards; records are the
// bytes the B-tree and the write-ahead log already hold, so the file reads back into a new
// environment of any page size, and its checksum covers exactly what is restored. As etcd's
// snapshot keeps its revisions, the records keep theirs (and their previous versions and
// commit times), so history reads and watches from a retained version work after a restore.
//
// Thread ownership: an encoder or a reader belongs to the thread that made it; the rest is
// stateless.
import { createHash, type Hash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { recordRv, validRecord } from '../../../workers/shard/record.js';

export const SNAPSHOT_MAGIC = Buffer.from('KSSNAP01');
export const SNAPSHOT_FORMAT = 1;
const DIGEST = 32;
/** bytes handed to the writer at a time */
const CHUNK = 1 << 20;

export interface SnapshotShard {
  /** the shard's compacted revision: its history at or below it is gone */
  compactedRv: number;
}

export interface SnapshotHeader {
  format: number;
  /** the snapshot's point in the global version order: every record up to it, none after */
  resourceVersion: number;
  shardCount: number;
  shardMap: Record<string, number>;
  /** when it was taken (RFC 3339) */
  created: string;
  /** 'server': taken by the running server; 'data-dir': read from a stopped server's data dir */
  source: 'server' | 'data-dir';
  shards: SnapshotShard[];
}

/** A file that is not a snapshot, or a damaged one: the message says which, for the operator. */
export class SnapshotError extends Error {}

/**
 * Builds the file's bytes. Every byte given out by take() and finish() is hashed; the caller
 * writes them in order.
 */
export class SnapshotEncoder {
  private readonly hash: Hash = createHash('sha256');
  private out: Buffer[] = [];
  private buf = Buffer.allocUnsafe(CHUNK);
  private off = 0;
  private shard = 0;
  private lastRv = 0;
  /** bytes given out so far */
  bytes = 0;

  constructor(readonly header: SnapshotHeader) {
    const json = Buffer.from(JSON.stringify(header));
    const head = Buffer.allocUnsafe(SNAPSHOT_MAGIC.length + 4);
    SNAPSHOT_MAGIC.copy(head, 0);
    head.writeUInt32LE(json.length, SNAPSHOT_MAGIC.length);
    this.put(head);
    this.put(json);
  }

  /** One record of the current shard; records come in version order, none above the snapshot's version. */
  record(rec: Uint8Array): void {
    const rv = recordRv(Buffer.from(rec.buffer, rec.byteOffset, rec.byteLength));
    if (!(rv > this.lastRv) || rv > this.header.resourceVersion) throw new Error(`snapshot: record ${rv} out of order in shard ${this.shard} (after ${this.lastRv}, snapshot at ${this.header.resourceVersion})`);
    this.lastRv = rv;
    this.u32(rec.byteLength);
    this.put(rec);
  }

  /** Ends the current shard's records; the next ones are the next shard's. */
  endShard(): void {
    this.u32(0);
    this.shard++;
    this.lastRv = 0;
  }

  /** The bytes encoded so far, to be written now. */
  take(): Buffer[] {
    this.seal();
    const out = this.out;
    this.out = [];
    return out;
  }

  /** The last bytes: what is left, then the checksum. */
  finish(): Buffer[] {
    if (this.shard !== this.header.shardCount) throw new Error(`snapshot: ${this.shard} shards written of ${this.header.shardCount}`);
    const out = this.take();
    const digest = this.hash.digest();
    this.bytes += digest.length;
    out.push(digest);
    return out;
  }

  private u32(v: number): void {
    if (this.off + 4 > this.buf.length) this.seal();
    this.buf.writeUInt32LE(v, this.off);
    this.off += 4;
  }

  private put(b: Uint8Array): void {
    if (b.byteLength >= CHUNK) {
      this.seal();
      const copy = Buffer.from(b);
      this.hash.update(copy);
      this.bytes += copy.length;
      this.out.push(copy);
      return;
    }
    if (this.off + b.byteLength > this.buf.length) this.seal();
    this.buf.set(b, this.off);
    this.off += b.byteLength;
  }

  private seal(): void {
    if (this.off === 0) return;
    const b = this.buf.subarray(0, this.off);
    this.hash.update(b);
    this.bytes += b.length;
    this.out.push(b);
    this.buf = Buffer.allocUnsafe(CHUNK);
    this.off = 0;
  }
}

/** What a whole read of a snapshot found. */
export interface SnapshotSummary {
  header: SnapshotHeader;
  /** the SHA-256 it carries (and matched), hex */
  sha256: string;
  /** the file's size in bytes */
  bytes: number;
  /** revision records per shard */
  records: number[];
}

/**
 * Reads a file from a descriptor in order, exactly `limit` bytes (the part the checksum
 * covers), hashing each byte read. A returned view is valid until the next read.
 */
class HashedReader {
  private buf = Buffer.allocUnsafe(CHUNK);
  private pos = 0;
  private end = 0;
  private fileOff = 0;
  readonly hash: Hash = createHash('sha256');

  constructor(
    private readonly fd: number,
    private readonly limit: number,
  ) {}

  /** bytes of the covered part not yet returned */
  get left(): number {
    return this.limit - this.fileOff + (this.end - this.pos);
  }

  read(n: number, what: string): Buffer {
    if (n > this.left) throw new SnapshotError(`the snapshot file is truncated or damaged: ${what} runs past its end`);
    if (this.end - this.pos < n) {
      const have = this.end - this.pos;
      if (n > this.buf.length) {
        const bigger = Buffer.allocUnsafe(Math.max(n, CHUNK));
        this.buf.copy(bigger, 0, this.pos, this.end);
        this.buf = bigger;
      } else this.buf.copyWithin(0, this.pos, this.end);
      this.pos = 0;
      this.end = have;
      while (this.end < n) {
        const want = Math.min(this.buf.length - this.end, this.limit - this.fileOff);
        const got = readSync(this.fd, this.buf, this.end, want, this.fileOff);
        if (got === 0) throw new SnapshotError(`the snapshot file is truncated: ${what} runs past its end`);
        this.hash.update(this.buf.subarray(this.end, this.end + got));
        this.fileOff += got;
        this.end += got;
      }
    }
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
}

/** The header alone (a quick look before a restore starts): no checksum is verified. */
export function readSnapshotHeader(path: string): SnapshotHeader {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    return parseHeader(new HashedReader(fd, Math.max(0, size - DIGEST)));
  } finally {
    closeSync(fd);
  }
}

function parseHeader(r: HashedReader): SnapshotHeader {
  const magic = r.read(SNAPSHOT_MAGIC.length + 4, 'the header').subarray(0);
  if (!magic.subarray(0, SNAPSHOT_MAGIC.length).equals(SNAPSHOT_MAGIC)) throw new SnapshotError('not a kubeshard snapshot file (no KSSNAP01 header)');
  const len = magic.readUInt32LE(SNAPSHOT_MAGIC.length);
  let h: SnapshotHeader;
  try {
    h = JSON.parse(r.read(len, 'the header').toString('utf8'));
  } catch (e) {
    if (e instanceof SnapshotError) throw e;
    throw new SnapshotError(`the snapshot file is damaged: its header is not readable (${(e as Error).message})`);
  }
  if (h.format !== SNAPSHOT_FORMAT) throw new SnapshotError(`snapshot format ${h.format} is not supported (this build reads format ${SNAPSHOT_FORMAT})`);
  if (!Number.isSafeInteger(h.resourceVersion) || h.resourceVersion < 0 || !Number.isInteger(h.shardCount) || h.shardCount < 1 || h.shardCount > 64 || !Array.isArray(h.shards) || h.shards.length !== h.shardCount) {
    throw new SnapshotError('the snapshot file is damaged: its header does not hold a version and its shards');
  }
  return h;
}

/**
 * Reads the whole file: checks its structure and every record as it goes, hands each record
 * to `onRecord` (a view, valid during the call), and at the end its checksum. Throws
 * SnapshotError for a file that is not a snapshot, truncated or damaged: a caller that
 * built something from the records must drop it then.
 */
export function readSnapshotFile(path: string, onRecord?: (shard: number, rv: number, rec: Buffer) => void, onHeader?: (h: SnapshotHeader) => void): SnapshotSummary {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size < SNAPSHOT_MAGIC.length + 4 + DIGEST) {
      const head = Buffer.alloc(SNAPSHOT_MAGIC.length);
      readSync(fd, head, 0, head.length, 0);
      if (!head.equals(SNAPSHOT_MAGIC)) throw new SnapshotError('not a kubeshard snapshot file (no KSSNAP01 header)');
      throw new SnapshotError(`the snapshot file is truncated (${size} bytes)`);
    }
    const r = new HashedReader(fd, size - DIGEST);
    const header = parseHeader(r);
    onHeader?.(header);
    const records: number[] = [];
    for (let shard = 0; shard < header.shardCount; shard++) {
      let count = 0;
      let last = 0;
      for (;;) {
        const len = r.read(4, `shard ${shard}'s records`).readUInt32LE(0);
        if (len === 0) break;
        const rec = r.read(len, `a record of shard ${shard}`);
        if (!validRecord(rec)) throw new SnapshotError(`the snapshot file is damaged: a record of shard ${shard} is malformed`);
        const rv = recordRv(rec);
        if (!Number.isSafeInteger(rv) || rv <= last || rv > header.resourceVersion) throw new SnapshotError(`the snapshot file is damaged: shard ${shard} holds version ${rv} after ${last} (snapshot at ${header.resourceVersion})`);
        last = rv;
        count++;
        onRecord?.(shard, rv, rec);
      }
      records.push(count);
    }
    if (r.left !== 0) throw new SnapshotError(`the snapshot file is damaged: ${r.left} unexpected bytes after the last shard`);
    const digest = r.hash.digest();
    const stored = Buffer.allocUnsafe(DIGEST);
    if (readSync(fd, stored, 0, DIGEST, size - DIGEST) !== DIGEST || !digest.equals(stored)) {
      throw new SnapshotError(`the snapshot file is damaged: its SHA-256 checksum does not match its content (recorded ${stored.toString('hex')}, computed ${digest.toString('hex')})`);
    }
    return { header, sha256: digest.toString('hex'), bytes: size, records };
  } catch (e) {
    // (a damaged length can make a read past the covered part: the file is damaged all the same)
    if (e instanceof SnapshotError) throw e;
    throw new SnapshotError(`the snapshot file is damaged: ${(e as Error).message}`);
  } finally {
    closeSync(fd);
  }
}
