// The on-disk layout of one shard's LMDB environment (etcd mvcc in miniature).
//
//   revs: [gr, key, rv] -> flag byte + object JSON   (revision-keyed storage)
//         flag 0 = live object at rv, flag 1 = tombstone (the object's last state, at the delete's rv)
//   log:  rv -> { g: gr, k: key, t: type, p: previous rv of the key (0 if none), ts: commit time ms }
//   meta: 'maxRv' -> highest rv ever committed here, 'compactedRv' -> history below it is gone
//
// The writer is the shard worker. The front thread opens the same environment and only
// reads it (a read transaction is a stable snapshot), so reads never hop threads.
import { open, type RootDatabase, type Database } from 'lmdb';

export const FLAG_LIVE = 0;
export const FLAG_TOMBSTONE = 1;

export interface LogEntry {
  g: string;
  k: string;
  t: 'ADDED' | 'MODIFIED' | 'DELETED';
  p: number;
  ts: number;
}

export interface ShardEnv {
  root: RootDatabase;
  revs: Database<Buffer, [string, string, number]>;
  log: Database<LogEntry, number>;
  meta: Database<number, string>;
}

export function openShardEnv(path: string, readOnly = false): ShardEnv {
  // overlappingSync: a commit is visible at once and flushed behind later commits, with the
  // last flushed state kept whole for after a crash. Durability comes first from the
  // shard's write-ahead log (wal.ts), so no write waits for this flush.
  const root = open({ path, maxDbs: 8, readOnly, compression: false, overlappingSync: true, mapSize: 64 * 1024 * 1024 * 1024 });
  const revs = root.openDB<Buffer, [string, string, number]>({ name: 'revs', encoding: 'binary' });
  const log = root.openDB<LogEntry, number>({ name: 'log' });
  const meta = root.openDB<number, string>({ name: 'meta' });
  return { root, revs, log, meta };
}

/** The live value stored for an object: a flag byte then the JSON bytes. */
export function encodeRev(flag: number, json: Uint8Array): Buffer {
  const b = Buffer.allocUnsafe(json.length + 1);
  b[0] = flag;
  b.set(json, 1);
  return b;
}

export const MAX_STRING = '\uffff';
