// A scan of a shard's whole revision history with no copy per record: the start-up loads
// (the front's caches, load-caches.ts; the shard's key index, shard-worker.ts) look at a
// few fixed fields and the key of every record, and never keep its bytes.
//
// Why not env.hist.getRange: lmdb-js copies each binary value out of the map into an
// ArrayBuffer of its own; a million of them cost more (allocation and then garbage
// collection) than the scan itself. A handle of the same database with a decoder that says
// it copies (needsStableBuffer false) is handed lmdb-js's one shared read buffer instead,
// valid until the next record: the visitor reads what it needs from it at once.
//
// Thread ownership: none; any thread that opened the environment (the shard worker, a
// front thread) may scan it. The handle is made once per environment and thread.
import type { Database } from 'lmdb';
import type { ShardEnv } from './layout.js';

/**
 * Called with each record's version and bytes: rec[0, size) is the record, valid only during
 * the call. rec is lmdb-js's shared buffer, longer than the record, with its length property
 * set to size: read it with explicit bounds only (Buffer's native methods, indexOf among
 * them, see the whole buffer), or take rec.subarray(0, size).
 */
export type RecordVisitor = (rv: number, rec: Buffer, size: number) => void;

interface ScanDecoder {
  needsStableBuffer: false;
  encode(v: Buffer): Buffer;
  decode(bytes: Buffer, size: number): number;
  visit: ((rec: Buffer, size: number) => void) | null;
}

const handles = new WeakMap<ShardEnv, { db: Database<number, number>; decoder: ScanDecoder }>();

function scanHandle(env: ShardEnv) {
  let h = handles.get(env);
  if (!h) {
    const decoder: ScanDecoder = {
      needsStableBuffer: false,
      encode: (v) => v,
      decode(bytes, size) {
        this.visit!(bytes, size);
        return 0;
      },
      visit: null,
    };
    const db = env.root.openDB<number, number>({ name: 'hist', encoder: decoder } as unknown as { name: string });
    h = { db, decoder };
    handles.set(env, h);
  }
  return h;
}

/** Visits every record with version >= start in version order, in one read transaction. */
export function scanRecords(env: ShardEnv, visit: RecordVisitor, start = 0): number {
  const { db, decoder } = scanHandle(env);
  let n = 0;
  let rv = 0;
  // lmdb-js decodes the value before it hands out the key: the decoder keeps the record's
  // bytes, the loop below hands them over with the key.
  let pending: Buffer | null = null;
  let pendingSize = 0;
  decoder.visit = (rec, size) => {
    pending = rec;
    pendingSize = size;
  };
  try {
    for (const { key } of db.getRange({ start })) {
      rv = key;
      visit(rv, pending!, pendingSize);
      pending = null;
      n++;
    }
  } finally {
    decoder.visit = null;
  }
  return n;
}
