// Messages between the front thread and a shard worker. One message carries a batch:
// the front sends every write of one event-loop turn together, and the shard answers
// each commit with one message that carries the committed events (a write's event is its
// acknowledgement) and the refusals, so a write costs one hop there and one hop back,
// shared by everything in the batch.
import type { MetricRecord } from '../../src/storage/encryption/metrics.js';
import type { ChangeType, Expect as StorageExpect, StorageWrite } from '../../src/storage/interface.js';

export type EventType = ChangeType;

/** Precondition on the stored object's current resourceVersion (the values of src/storage/interface.ts Expect). */
export const Expect = {
  /** The key must not exist (create). */
  Absent: -1,
  /** The key must exist; any version (used by unconditional deletes). */
  Any: 0,
} as const satisfies typeof StorageExpect;

/**
 * A write as it travels to the shard: the interface's StorageWrite (type, gr, key, expect,
 * and the object, or its JSON split around the version: head + resourceVersion + tail) with
 * the id its answer comes back under. The shard encodes the object (src/codec/json.ts
 * encodeForCommit) with its version in place: JSON.stringify is the largest single cost of
 * a write, and the front thread, which sets the pace of writes, only pays the structured
 * clone of the object.
 */
export interface WriteOp extends StorageWrite {
  id: number;
}

/**
 * storage: the write could not be made durable (the log failed, or the B-tree cannot take
 * what the log holds); nospace: refused before logging, the file system is below the space
 * reserve (space-guard.ts); toolarge: the encoded object is over the shard's maxObjectBytes
 * (etcd's "request is too large"). message says why.
 */
export type WriteFailure = 'exists' | 'conflict' | 'notfound' | 'storage' | 'nospace' | 'toolarge';

/** A write refused: a failed precondition, or storage that could not take it. */
export interface Ack {
  id: number;
  err: WriteFailure;
  message?: string;
}

export interface CommittedEvent {
  /**
   * op id: the front holds the write it sent (its type, group-resource and key, and the
   * object, which it reuses instead of parsing the bytes), so they do not travel back
   */
  id: number;
  rv: number;
  /** the revision record as stored (record.ts): the front keeps it until the B-tree holds it, and serves its JSON */
  rec: Uint8Array;
  /**
   * The object's JSON when the record holds it encrypted (--encryption-provider-config):
   * the caches take the plaintext from here, so that nothing on the commit path decrypts.
   * Absent for every unconfigured resource: the record's JSON is the plaintext.
   */
  json?: Uint8Array;
}

/**
 * Write ids carry the front thread that sent them in their low bits (id = seq * FRONT_IDS +
 * front), so that one commit message can go to every front and each picks out its own.
 */
export const FRONT_IDS = 64;

export type FrontToShard =
  | { t: 'write'; ops: WriteOp[] }
  /** (main thread only) another front thread's port: it sends writes there and hears every commit */
  | { t: 'attach'; port: import('node:worker_threads').MessagePort }
  | { t: 'compact-now'; retentionMs?: number }
  /**
   * (main thread) A snapshot (src/storage/lmdb/snapshot.ts): take no more versions until
   * 'release' (or a few seconds pass); answered with 'held' once no batch is in flight.
   */
  | { t: 'hold' }
  | { t: 'release' }
  /** (main thread) the encryption configuration was reloaded there: reload it here too (after the readers, before the next write) */
  | { t: 'encryption-reload' }
  | { t: 'close' };

export type ShardToFront =
  | { t: 'ready'; maxRv: number; compactedRv: number }
  /** t0, t1 (KUBESHARD_COMMIT_STATS only): when the group commit began, and when its log was durable (ms, absolute) */
  | { t: 'commit'; refused: Ack[]; events: CommittedEvent[]; lastRv: number; t0?: number; t1?: number; xm?: MetricRecord[] }
  | { t: 'compacted'; compactedRv: number }
  /**
   * The shard's storage alarm changed: while reason is not empty, it refuses every write
   * with that reason (no space, or a B-tree that cannot take the log's records), and the
   * front's storage health check fails; '' when it clears.
   */
  | { t: 'alarm'; reason: string }
  | { t: 'closed' }
  /** (to the main thread only) commits are held: every version the shard took is logged or refused, and its commit was posted */
  | { t: 'held'; lastRv: number }
  | { t: 'fatal'; message: string }
  /** on an attached front's port, first: the shard's last committed version when it took the port */
  | { t: 'attached'; lastRv: number; alarm: string };

export interface ShardWorkerData {
  index: number;
  path: string;
  /** SharedArrayBuffer layout in src/storage/lmdb/shared-state.ts */
  shared: SharedArrayBuffer;
  shardCount: number;
  retentionMs: number;
  compactIntervalMs: number;
  /** the B-tree takes the log's records at most once per this interval (0: after every group commit) */
  treeIntervalMs: number;
  /** the largest object, in encoded bytes, a write may store (--max-object-size-bytes); deletions are never refused */
  maxObjectBytes: number;
  /**
   * --encryption-provider-config: the worker encrypts the records of configured resources
   * with transformers of its own (shard-worker.ts says why); absent without a configuration.
   */
  encryption?: { configFile: string; automaticReload: boolean };
  /** how many times this shard's worker has been started again after it ended (0: the first start) */
  restart: number;
  /**
   * (--event-ttl) group-resource -> ms after its last write that an object is deleted
   * (ttl-index.ts); absent or empty: nothing expires.
   */
  ttlMs?: Record<string, number>;
}
