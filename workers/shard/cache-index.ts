// The persisted key index of one shard: every live object's type, key and version, in key
// order per type, as of one version of the shard (its B-tree's maxRv). Written at clean
// shutdown from the front's caches (LmdbStorage.close), read at the next start instead of
// a scan of the whole B-tree: by the front threads, which load their caches from it
// (workers/watch/load-caches.ts), and by the shard worker, which builds its key index from it.
//
// It holds no object bytes: those stay in the B-tree, which is memory-mapped, and the
// caches read them from there on demand. So the file is small (tens of bytes per object)
// and is read in one read, with no copy of the store into the heap.
//
// Validity: the file names the version it is the state at, and the LMDB transaction the
// environment was at. It is used only when the B-tree, after the worker applied its log,
// is at exactly both: any write since (applied from the log after a kill -9, committed by a
// later run, a compaction, or bytes changed by anything else) commits a transaction of the
// environment. A file that is torn, of another format or fails its checksum is ignored
// too, and the loaders scan the store.
//
//   header (48 bytes): magic "KSCIDX01" | u32 format | u32 type count | f64 maxRv |
//                      f64 body length | u32 body crc32 | u32 header crc32 (of bytes 0..36 and 40..48) |
//                      f64 LMDB transaction id
//   body, per type:    u16 gr length | gr | u32 live count | u32 corrupt count |
//                      per object (live ones first, in key order): f64 rv | u8 hints | u16 key length | key
//
// Thread ownership: stateless; any thread may read the file. Only the front's main thread
// writes it, once the shard workers have closed.
import { closeSync, fsyncSync, openSync, readSync, renameSync, rmSync, fstatSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';

export const CACHE_INDEX_FILE = 'cache-index.bin';
const MAGIC = Buffer.from('KSCIDX01');
const FORMAT = 1;
const HEADER = 48;

export interface IndexedType {
  gr: string;
  /** the live objects' keys, in key order (one namespace's keys are one run) */
  keys: string[];
  rvs: number[];
  /** what each one's bytes hold (watch-cache.ts HINT_*) */
  hints: number[];
  /** live objects whose bytes are not a JSON object (kept aside by the front) */
  corrupt: Array<{ key: string; rv: number }>;
}

export interface CacheIndex {
  maxRv: number;
  types: IndexedType[];
}

/** The objects of one type to write: live ones in key order, and the corrupt ones. */
export interface TypeToIndex {
  gr: string;
  live: Iterable<{ key: string; rv: number; hints?: number }>;
  corrupt: Iterable<{ key: string; rv: number }>;
}

/** (an object whose hints were not given: its readers look at its bytes; watch-cache.ts HINTS_UNKNOWN) */
const HINTS_UNKNOWN = 0x80;

/** Bytes written in chunks of this size: the body of a million objects is never one string or one array. */
const CHUNK = 1 << 20;

class ChunkWriter {
  chunks: Buffer[] = [];
  private cur = Buffer.allocUnsafe(CHUNK);
  private off = 0;
  length = 0;

  private room(n: number): void {
    if (this.off + n <= this.cur.length) return;
    this.chunks.push(this.cur.subarray(0, this.off));
    this.cur = Buffer.allocUnsafe(Math.max(CHUNK, n));
    this.off = 0;
  }

  u16(v: number): void {
    this.room(2);
    this.off = this.cur.writeUInt16LE(v, this.off);
    this.length += 2;
  }

  u32(v: number): void {
    this.room(4);
    this.off = this.cur.writeUInt32LE(v, this.off);
    this.length += 4;
  }

  /** an f64, a u8, then a u16-length-prefixed string (one bound check) */
  object(rv: number, hints: number, key: string): void {
    const max = 11 + key.length * 3;
    this.room(max);
    const o = this.off;
    this.cur.writeDoubleLE(rv, o);
    this.cur[o + 8] = hints;
    const n = this.cur.write(key, o + 11, 'utf8');
    if (n > 0xffff) throw new Error(`cache index: key too long (${n} bytes)`);
    this.cur.writeUInt16LE(n, o + 9);
    this.off = o + 11 + n;
    this.length += 11 + n;
  }

  str(s: string): void {
    const max = 2 + s.length * 3;
    this.room(max);
    const n = this.cur.write(s, this.off + 2, 'utf8');
    this.cur.writeUInt16LE(n, this.off);
    this.off += 2 + n;
    this.length += 2 + n;
  }

  end(): Buffer[] {
    this.chunks.push(this.cur.subarray(0, this.off));
    return this.chunks;
  }
}

/**
 * Writes the index of a shard at version maxRv into dir, atomically (a temporary file,
 * synced, then renamed over the old one).
 */
export function writeCacheIndex(dir: string, maxRv: number, txnId: number, types: TypeToIndex[]): { objects: number; bytes: number } {
  const w = new ChunkWriter();
  let objects = 0;
  for (const t of types) {
    w.str(t.gr);
    const live = [...t.live];
    const corrupt = [...t.corrupt];
    w.u32(live.length);
    w.u32(corrupt.length);
    for (const o of live) w.object(o.rv, o.hints ?? HINTS_UNKNOWN, o.key);
    for (const o of corrupt) w.object(o.rv, 0, o.key);
    objects += live.length + corrupt.length;
  }
  const body = w.end();
  let crc = 0;
  for (const c of body) crc = crc32(c, crc);
  const head = Buffer.alloc(HEADER);
  MAGIC.copy(head, 0);
  head.writeUInt32LE(FORMAT, 8);
  head.writeUInt32LE(types.length, 12);
  head.writeDoubleLE(maxRv, 16);
  head.writeDoubleLE(w.length, 24);
  head.writeUInt32LE(crc, 32);
  head.writeDoubleLE(txnId, 40);
  head.writeUInt32LE(headerCrc(head), 36);
  const path = join(dir, CACHE_INDEX_FILE);
  const tmp = path + '.tmp';
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, head);
    for (const c of body) writeSync(fd, c);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  return { objects, bytes: HEADER + w.length };
}

/** Removes the index (a start that cannot trust it any more need not read it again). */
export function removeCacheIndex(dir: string): void {
  rmSync(join(dir, CACHE_INDEX_FILE), { force: true });
}

type Utf8Slicing = Buffer & { utf8Slice(start: number, end: number): string };

function headerCrc(head: Buffer): number {
  return crc32(head.subarray(40, HEADER), crc32(head.subarray(0, 36)));
}

/** The environment's last committed LMDB transaction: any write to it moves this on. */
export function lastTxnId(root: { getStats(): unknown }): number {
  return (root.getStats() as { lastTxnId: number }).lastTxnId;
}

/** A whole index at the store's version: its body, not yet parsed. */
export interface IndexBody {
  maxRv: number;
  typeCount: number;
  body: Buffer;
}

/**
 * The index in dir, if it is whole and at version maxRv and transaction txnId (the shard's
 * B-tree's, after its log was applied); else why not, as a string.
 */
export function readCacheIndex(dir: string, maxRv: number, txnId: number): CacheIndex | string {
  const found = openCacheIndex(dir, maxRv, txnId);
  if (typeof found === 'string') return found;
  try {
    return { maxRv: found.maxRv, types: parseBody(found) };
  } catch (err) {
    return `index damaged: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/** openCacheIndex: the file read in one read and checked, its body left as bytes. */
export function openCacheIndex(dir: string, maxRv: number, txnId: number): IndexBody | string {
  let fd: number;
  try {
    fd = openSync(join(dir, CACHE_INDEX_FILE), 'r');
  } catch {
    return 'no index';
  }
  let b: Buffer;
  try {
    const size = fstatSync(fd).size;
    if (size < HEADER) return 'index torn';
    b = Buffer.allocUnsafe(size);
    let off = 0;
    while (off < size) {
      const n = readSync(fd, b, off, size - off, off);
      if (n <= 0) break;
      off += n;
    }
    if (off < size) return 'index torn';
  } finally {
    closeSync(fd);
  }
  if (!b.subarray(0, 8).equals(MAGIC) || b.readUInt32LE(36) !== headerCrc(b)) return 'index header damaged';
  if (b.readUInt32LE(8) !== FORMAT) return `index format ${b.readUInt32LE(8)}, not ${FORMAT}`;
  const at = b.readDoubleLE(16);
  if (at !== maxRv) return `index at resource version ${at}, the store at ${maxRv}`;
  const txn = b.readDoubleLE(40);
  if (txn !== txnId) return `index at storage transaction ${txn}, the store at ${txnId}`;
  const bodyLen = b.readDoubleLE(24);
  if (b.length !== HEADER + bodyLen) return 'index torn';
  const body = b.subarray(HEADER);
  if (crc32(body) !== b.readUInt32LE(32)) return 'index checksum mismatch';
  return { maxRv: at, typeCount: b.readUInt32LE(12), body };
}

/**
 * Visits every object of a checked index body with no string made for its key: the type's
 * name (and its bytes), the object's version, and where its key's bytes are in body.
 * corrupt: kept aside by the front. Throws on a body whose lengths do not add up.
 */
export function forEachIndexed(ix: IndexBody, visit: (gr: string, grBytes: Buffer, rv: number, hints: number, keyStart: number, keyEnd: number, corrupt: boolean) => void): void {
  const b = ix.body;
  let o = 0;
  const need = (n: number) => {
    if (o + n > b.length) throw new Error('body ends early');
  };
  for (let t = 0; t < ix.typeCount; t++) {
    need(2);
    const grLen = b.readUInt16LE(o);
    need(2 + grLen + 8);
    const grBytes = b.subarray(o + 2, o + 2 + grLen);
    const gr = grBytes.toString('utf8');
    o += 2 + grLen;
    const liveCount = b.readUInt32LE(o);
    const corruptCount = b.readUInt32LE(o + 4);
    o += 8;
    for (let i = 0; i < liveCount + corruptCount; i++) {
      need(11);
      const rv = b.readDoubleLE(o);
      const h = b[o + 8];
      const len = b[o + 9] | (b[o + 10] << 8);
      need(11 + len);
      visit(gr, grBytes, rv, h, o + 11, o + 11 + len, i >= liveCount);
      o += 11 + len;
    }
  }
  if (o !== b.length) throw new Error('trailing bytes');
}

function parseBody(ix: IndexBody): IndexedType[] {
  const b = ix.body as Utf8Slicing;
  const types: IndexedType[] = [];
  let t: IndexedType | null = null;
  forEachIndexed(ix, (gr, _grBytes, rv, h, keyStart, keyEnd, corrupt) => {
    if (t === null || t.gr !== gr) types.push((t = { gr, keys: [], rvs: [], hints: [], corrupt: [] }));
    const key = b.utf8Slice(keyStart, keyEnd);
    if (corrupt) t.corrupt.push({ key, rv });
    else {
      t.keys.push(key);
      t.rvs.push(rv);
      t.hints.push(h);
    }
  });
  return types;
}
