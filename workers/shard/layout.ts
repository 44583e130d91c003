// The on-disk layout of one shard's LMDB environment: etcd's mvcc in miniature.
//
//   hist: rv -> revision record (record.ts: type, previous rv of the key, commit time,
//         group-resource, key, flag byte + JSON; flag 1 marks a tombstone, the object's
//         last state at the delete's rv)
//   meta: 'maxRv' -> highest rv committed here, 'compactedRv' -> history below it is gone,
//         'layout' -> LAYOUT
//
// Why keyed by revision alone: versions only grow, so every commit appends to the last
// pages of one B-tree. Keyed by object ([gr, key, rv], the first layout), each write landed
// on a random leaf page of its own and split it often; copying and flushing those pages
// cost more CPU per create than the rest of the write path behind the front thread. As in
// etcd, the key index lives in memory: the shard keeps each live key's version (its
// preconditions), and the front answers "key at revision" from its cache, which is the
// current state, with the records after that revision undone (reader.ts).
//
// Compaction keeps the newest revision of every live key and drops what was superseded
// (and tombstones) up to the compacted revision, so a scan of hist from the start sees
// each live object at least once: that is how both threads load at start-up.
//
// The writer is the shard worker. The front thread opens the same environment and only
// reads it (a read transaction is a stable snapshot), so reads never hop threads.
import { open, type RootDatabase, type Database } from 'lmdb';
import { encodePayload } from './record.js';
import type { EventType } from './protocol.js';

export const FLAG_LIVE = 0;
export const FLAG_TOMBSTONE = 1;
export const LAYOUT = 2;

export interface ShardEnv {
  root: RootDatabase;
  hist: Database<Buffer, number>;
  meta: Database<number, string>;
}

export function openShardEnv(path: string, readOnly = false): ShardEnv {
  // overlappingSync: a commit is visible at once and flushed behind later commits, with the
  // last flushed state kept whole for after a crash. Durability comes first from the
  // shard's write-ahead log (wal.ts), so no write waits for this flush.
  const root = open({ path, maxDbs: 8, readOnly, compression: false, overlappingSync: true, mapSize: 64 * 1024 * 1024 * 1024 });
  const hist = root.openDB<Buffer, number>({ name: 'hist', encoding: 'binary' });
  const meta = root.openDB<number, string>({ name: 'meta' });
  const env = { root, hist, meta };
  if (!readOnly) upgrade(env);
  return env;
}

/** The live value stored for an object: a flag byte then the JSON bytes. */
export function encodeRev(flag: number, json: Uint8Array): Buffer {
  const b = Buffer.allocUnsafe(json.length + 1);
  b[0] = flag;
  b.set(json, 1);
  return b;
}

interface V1LogEntry {
  g: string;
  k: string;
  t: EventType;
  p: number;
  ts: number;
}

/**
 * Rewrites a store of the first layout (revs: [gr, key, rv] -> value, log: rv -> event) in
 * this one, in one transaction, so a data directory written by an earlier build keeps
 * every object and its history. A revision whose log entry was compacted away becomes an
 * ADDED record with no previous revision: nothing older than it can be asked for.
 */
function upgrade(env: ShardEnv): void {
  if (env.meta.get('layout') === LAYOUT) return;
  const revs = env.root.openDB<Buffer, [string, string, number]>({ name: 'revs', encoding: 'binary' });
  const log = env.root.openDB<V1LogEntry, number>({ name: 'log' });
  env.root.transactionSync(() => {
    for (const { key, value } of revs.getRange({})) {
      const [gr, k, rv] = key;
      const e = log.get(rv);
      const type: EventType = value[0] === FLAG_TOMBSTONE ? 'DELETED' : (e?.t ?? 'ADDED');
      env.hist.putSync(rv, encodePayload({ rv, prev: e?.p ?? 0, ts: e?.ts ?? 0, type, gr, key: k, value }));
    }
    revs.clearSync();
    log.clearSync();
    env.meta.putSync('layout', LAYOUT);
  });
}

export const MAX_STRING = '\uffff';
