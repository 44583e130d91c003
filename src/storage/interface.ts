// The storage seam: what a backend (LMDB shards today, etcd3 next) offers the server, in
// the shape of kube's storage.Interface (apiserver/pkg/storage/interfaces.go) adapted to
// kubeshard. Above it sits the cache layer (src/storage/cacher.ts, kube's Cacher), which
// any backend feeds through subscribe(); the generic store, the watch handler, the
// controllers and the health checks see only this file and the cache layer.
//
// Conventions every member keeps:
//  - A resource version is a number (an etcd revision fits in 2^53). Versions increase with
//    every committed change within one group-resource's revision space; a backend may share
//    one space across all group-resources (etcd) or keep several (LMDB shards, each owning
//    some group-resources, drawing versions from one global counter so they never repeat).
//  - A group-resource ("gr") is the storage key of a type: "deployments.apps", "pods".
//  - A key is "<namespace>/<name>"; a cluster-scoped object's namespace is empty ("/name").
//  - Stored bytes are the object's JSON with metadata.resourceVersion set to the version
//    they were committed at (the bytes a GET serves as they are). A backend that keeps the
//    version out of what it stores (as kube's etcd3 store does) puts it back on every read.
//  - Failures that a client sees go through src/errors.ts (storageFailure below maps the
//    backend's kinds of refusal onto them); precondition refusals are WriteRejected.
//
// Thread ownership: a backend instance belongs to the thread that started it (the main
// thread, or a front thread with its own instance); its methods are called on that thread.
import type { MessagePort } from 'node:worker_threads';
import { errors } from '../errors.js';

/** The kind of a committed change, as a watch event names it. */
export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** Preconditions on a key's current version, for StorageWrite.expect. */
export const Expect = {
  /** The key must not exist (create). */
  Absent: -1,
  /** The key must exist, at any version (an unconditional update or delete). */
  Any: 0,
} as const;

/**
 * One conditional write. The caller's literal may be taken over by the backend (fields
 * added to it, e.g. an id): pass a fresh object, and do not reuse it after the call.
 */
export interface StorageWrite {
  /** ADDED: create-if-absent (expect must be Expect.Absent); MODIFIED: put-if-version; DELETED: delete-if-version */
  type: ChangeType;
  gr: string;
  key: string;
  /**
   * Expect.Absent (-1), Expect.Any (0), or the exact version (> 0) the key must hold now.
   * A put or delete whose key is missing is refused 'notfound' (even with a version); one
   * whose key holds another version is refused 'conflict'; a create of an existing key 'exists'.
   */
  expect: number;
  /**
   * The object to store (for a delete: the object's last state, which the DELETED change
   * carries, with the deletion's version). The backend encodes it (src/codec/json.ts
   * encodeForCommit) with metadata.resourceVersion set to the version it commits at; it
   * must not keep or mutate it beyond setting that field.
   */
  obj?: Record<string, unknown>;
  /**
   * Or its JSON already encoded, split where the version goes: the stored bytes are
   * head + version + tail (encodeForCommit's shape). Used for objects that cannot be built
   * as values, e.g. the stub deletion of an object whose stored bytes are corrupt.
   */
  head?: string;
  tail?: string;
}

/** A committed write's answer. */
export interface Committed {
  /** the version the write was committed at */
  rv: number;
  /** the stored bytes (with metadata.resourceVersion = rv); for a delete, the object's last state at rv */
  json: Buffer;
}

/** A write's precondition was not met (the write changed nothing). */
export type PreconditionFailure = 'exists' | 'conflict' | 'notfound';

/** The rejection of a write whose precondition failed: nothing was written. */
export class WriteRejected extends Error {
  constructor(readonly failure: PreconditionFailure) {
    super(failure);
  }
}

/**
 * Kinds of storage failure other than a precondition, each answered to clients as kube
 * answers its etcd counterpart (storageFailure maps them):
 *  - unavailable: not sent, storage cannot take writes now (503 with Retry-After; clients retry);
 *  - unknown: sent, but storage stopped answering before it said (500: may or may not be committed);
 *  - storage: storage could not make it durable (500, "storage write failed: <detail>");
 *  - toolarge: the encoded object is over the backend's size limit (etcd's "request is too large"); detail: its size in bytes;
 *  - nospace: storage is out of space (etcd's NOSPACE alarm, "database space exceeded"); detail: the reason.
 */
export type StorageFailureKind = 'unavailable' | 'unknown' | 'storage' | 'toolarge' | 'nospace';

/**
 * The error a backend rejects a write with for a failure other than a precondition. where
 * names the part of storage that failed ("shard 2", "etcd"); detail says why: for
 * unavailable a clause that follows where ("is unreachable (connection refused)", read as
 * "storage is unavailable: etcd is unreachable (...); retry shortly"), for unknown the cause
 * ("storage etcd stopped before it answered this write (<detail>): ..."), for toolarge the
 * object's encoded size in bytes, for nospace and storage the reason.
 */
export function storageFailure(kind: StorageFailureKind, where: string, detail: string): Error {
  switch (kind) {
    case 'unavailable':
      return errors.storageUnavailable(where, detail);
    case 'unknown':
      return errors.storageOutcomeUnknown(where, detail);
    case 'toolarge':
      return errors.storageRequestTooLarge(Number(detail) || 0);
    case 'nospace':
      return errors.databaseSpaceExceeded(detail || 'database space exceeded');
    default:
      return errors.internal(`storage write failed: ${detail || 'unknown error'}`);
  }
}

/**
 * A read below the compacted version (etcd's ErrCompacted): the history it needs is gone.
 * Callers word their own 410 Expired (a list and a watch say it differently), so they check
 * compactedRv() first; a backend throws this whenever it is asked anyway.
 */
export class CompactedError extends Error {
  constructor(
    readonly rv: number,
    readonly compactedRv: number,
  ) {
    super(`required revision ${rv} has been compacted (compacted revision ${compactedRv})`);
  }
}

/** An object as stored at some version. */
export interface StoredObject {
  key: string;
  /** the version the object was last changed at (its metadata.resourceVersion) */
  rv: number;
  json: Buffer;
}

/** One change read back from history (eventsSince). */
export interface StoredEvent extends StoredObject {
  type: ChangeType;
  /** the key's previous version (0 when none: an ADDED) */
  prevRv: number;
  /** the object at prevRv, when asked for (withPrev) and still held */
  prevJson?: Buffer;
}

/** A value, or a promise of it: a backend that reads from memory or a mapped file answers at once (no promise). */
export type MaybePromise<T> = T | Promise<T>;

/**
 * A subscriber to the committed-change feed (subscribe()). The backend calls change() for
 * every committed change, of every group-resource, in version order, then end() once per
 * batch of changes (a group commit, one etcd watch response); nothing allocated per change.
 * Both run synchronously on the backend's thread. A subscriber may call write() from them
 * (the in-process controllers do): the backend only queues it then, and answers it later,
 * never from within the call.
 */
export interface ChangeSink {
  /**
   * One committed change. bytes: the stored bytes at rv (for DELETED: the object's last
   * state, with metadata.resourceVersion = rv). obj: the writer's parsed object when this
   * thread wrote it (its metadata.resourceVersion already set to String(rv)), else
   * undefined; subscribers may read it during this batch only (the backend's caller owns it).
   */
  change(type: ChangeType, gr: string, key: string, rv: number, bytes: Buffer, obj: any): void;
  /** The end of a batch: every change of it was given to change(). */
  end(): void;
  /**
   * (start-up, the generic path) One object of the state at version `at` that start()
   * lists before it follows the feed: not a change (no watch event, any order). Every load
   * of a start comes before its first change(), which is at a version above `at`. A
   * backend with attachCaches never calls it.
   */
  load(gr: string, key: string, rv: number, bytes: Buffer, at: number): void;
  /**
   * (A backend whose feed lost events: its watch fell below the compaction.) The whole
   * state at version `at`, listed again, for the group-resources `owns` accepts: the
   * subscriber ends every watcher (they resume, and get 410 below `at`, as kube's cacher
   * terminates its watchers when its reflector relists), brings its state to the listed one
   * and forgets its history before `at`. The feed then follows from `at` + 1.
   */
  relist?(at: number, state: Map<string, Map<string, { rv: number; bytes: Buffer }>>, owns: (gr: string) => boolean): void;
}

/** The newest state of one group-resource, as the cache layer holds it (CacheAccess.currentState). */
export interface CurrentState {
  /** the version it is the state at: every change up to it is reflected, none after */
  at: number;
  get(key: string): StoredObject | undefined;
  /** the objects of namespace ns ("" = all) with key >= from, in key order */
  range(ns: string, from: string): Iterable<StoredObject>;
}

/** An object whose stored bytes cannot be decoded: its version and the bytes as stored. */
export interface CorruptObject {
  rv: number;
  bytes: Buffer;
}

/**
 * What the cache layer lets a backend that keeps no index of current objects of its own
 * (LMDB: its B-tree holds revision records only) use: the caches serve as that index, as
 * etcd's in-memory kvindex does for etcd. An etcd backend needs none of it.
 */
export interface CacheAccess {
  /** the cache of gr, created on first use; a fast start-up loads it directly (ResourceCache.load / loadSorted) */
  cache(gr: string): import('../../workers/watch/watch-cache.js').ResourceCache;
  /** every cache created so far */
  caches(): Iterable<import('../../workers/watch/watch-cache.js').ResourceCache>;
  /** a stored object whose bytes are not a JSON object: kept aside, out of the cache (KEP-3926 unsafe delete) */
  markCorrupt(gr: string, key: string, rv: number, bytes: Buffer): void;
  /** the objects kept aside as corrupt, per group-resource (key -> version and bytes) */
  corruptObjects(): Iterable<[string, Map<string, CorruptObject>]>;
  /** gr's current state: its cache at freshRv(gr), with the objects kept aside as corrupt */
  currentState(gr: string): CurrentState;
}

/**
 * A storage backend (kube's storage.Interface). The cache layer (src/storage/cacher.ts)
 * subscribes to it before start() and serves reads of the current state; the generic store
 * writes through it and reads history from it.
 */
export interface Storage {
  /** The backend's name, for messages and metrics ("lmdb", "etcd3"). */
  readonly name: string;

  /**
   * Connects to or opens storage and returns once writes and reads can be served. Every
   * object current at start is given to the subscribers' load() before it resolves, with
   * the version `at` of that state (the generic path: list the current state at one
   * version, then follow the feed from the next one on, as kube's reflector does); a
   * backend with attachCaches loads the caches itself instead. freshRv(gr) is then at
   * least `at` for every group-resource.
   */
  start(): Promise<void>;

  /**
   * Stops: writes still queued are answered (committed or refused), then connections and
   * files close. No change is delivered after it resolves.
   */
  close(): Promise<void>;

  /**
   * Submits one conditional write (kube's Create, GuaranteedUpdate's final put, Delete with
   * Preconditions). Writes submitted in one turn of the event loop may travel together (one
   * round trip per batch), but each is decided and answered on its own. Resolves once the
   * write is durable AND every subscriber has seen its change (ChangeSink.change and end),
   * so that a client that has its answer reads its write back from the caches (an etcd
   * backend answers once its watch stream has delivered the Txn's revision: the feed stays
   * in version order with other writers' changes in between). Rejects with
   * WriteRejected on a failed precondition (nothing written), or with storageFailure(...)
   * for any other failure. obj: the parsed object the bytes encode, handed to the
   * subscribers with the change (so they need not parse the bytes); its
   * metadata.resourceVersion is set to the committed version before they see it.
   */
  write(op: StorageWrite, obj?: any): Promise<Committed>;

  /** Subscribes to the committed-change feed (see ChangeSink). Call before start(). */
  subscribe(sink: ChangeSink): void;

  /**
   * Optional, for a backend that reads its current objects from the caches (CacheAccess)
   * and loads them itself at start-up (LMDB: straight from its memory-mapped B-tree, with a
   * key index written at clean shutdown, no change per object on the feed). The cache layer
   * calls it once, before start(). A backend without it delivers the current state at start
   * as ADDED changes on the feed.
   */
  attachCaches?(caches: CacheAccess): void;

  /**
   * The newest version handed out in gr's revision space, committed or about to be (etcd:
   * the newest revision known). A read asking for a version beyond it asks for the future
   * (kube's "Too large resource version" without a wait).
   */
  currentRv(gr: string): number;

  /**
   * The newest version committed in gr's revision space that this thread must see: at
   * least the version of every write acknowledged to any client before the call, on any
   * thread. A "most recent" read waits until freshRv(gr) reaches it.
   */
  committedRv(gr: string): number;

  /**
   * Optional, for a backend shared with writers this process does not hear from (etcd:
   * other replicas, a kube-apiserver): the newest version committed in gr's revision space,
   * asked of storage itself (kube's getCurrentResourceVersionFromStorage, the first step of
   * ConsistentListFromCache). A "most recent" read, and a write that does not find its
   * object in the cache, wait until freshRv(gr) reaches it. A backend without it (LMDB: one
   * process holds every writer, committedRv already covers them) costs those paths no
   * promise while the cache is fresh.
   */
  latestRv?(gr: string): Promise<number>;

  /**
   * The version up to which the feed has delivered every change of gr to this thread's
   * subscribers: no change of gr at or below it is still to come. Only grows.
   */
  freshRv(gr: string): number;

  /**
   * Resolves true once freshRv(gr) >= rv, false once timeoutMs passes first. Resolves at
   * once (true) when it is already so. An etcd backend asks for a progress notification
   * when nothing else would move its feed forward.
   */
  waitFresh(gr: string, rv: number, timeoutMs: number): Promise<boolean>;

  /**
   * The oldest version whose state storage can still read: getAt, rangeAt and eventsSince
   * answer for rv >= compactedRv(gr), and throw CompactedError below it (today's 410
   * Expired paths). 0 while nothing was compacted.
   */
  compactedRv(gr: string): number;

  /**
   * One object as it was at version rv (rv <= freshRv(gr), or the read waits for storage to
   * catch up, or it throws errors.timeout): undefined when absent at rv.
   */
  getAt(gr: string, key: string, rv: number): MaybePromise<StoredObject | undefined>;

  /**
   * The objects of gr in namespace ns ("" = all namespaces) as they were at version rv,
   * from the key `from` on (inclusive; "" = from the first; a list's continue key), in key
   * order. May be lazy (read as the caller iterates, within one consistent snapshot); the
   * caller may stop early. Same version rules as getAt.
   */
  rangeAt(gr: string, rv: number, ns: string, from: string): MaybePromise<Iterable<StoredObject>>;

  /**
   * The changes of gr with afterRv < version <= uptoRv, in version order (a watch's replay
   * beyond the cache's ring). withPrev: each non-ADDED event carries its key's previous
   * state (prevJson), which a filtered watcher needs to judge selector transitions.
   * Throws CompactedError when afterRv < compactedRv(gr).
   */
  eventsSince(gr: string, afterRv: number, uptoRv: number, withPrev: boolean): MaybePromise<StoredEvent[]>;

  /**
   * Optional (several front threads, issue 18), on the main thread: readies storage for
   * another front thread of this process, whose own backend instance of the same kind
   * starts from `data` (structured-cloneable; `transfer` lists the ports inside it, to move
   * with it). Later news for that thread's instance (LMDB: a shard worker restarted, with
   * its new port) goes through `control`, which the front-thread plumbing delivers to that
   * instance's control(). Without it, another front thread's backend starts from the
   * options alone.
   */
  connectFront?(control: (m: unknown, transfer: MessagePort[]) => Promise<void>): { data: unknown; transfer: MessagePort[] };

  /**
   * Optional: where the replicas of a shared storage keep their master leases (the kubernetes
   * Service's endpoints, controllers/endpoint-reconciler.ts): etcd's keys with TTLs, as
   * kube-apiserver's. Without it the server is the only replica (LocalMasterLeases).
   */
  masterLeases?(): import('../controllers/endpoint-reconciler.js').MasterLeases;

  /**
   * Optional, for a storage several replicas share: the NodePorts of [min, max] claimed in
   * storage before a Service holding them is stored (etcd: kube's RangeAllocation), so that
   * two replicas never hand out one port. Without it the server is the only writer.
   */
  nodePortClaims?(min: number, max: number): import('./etcd/range-allocation.js').NodePortClaims;

  /** Optional: another front thread's instance takes a message its main thread's connectFront control sent. */
  control?(m: unknown): Promise<void>;

  /**
   * Optional: encryption at rest (--encryption-provider-config), given before start(). The
   * backend passes the values of configured resources through enc's transformers (encrypted
   * on every write, decrypted on every read); `file` is where other threads of the backend
   * load their own transformers from.
   */
  useEncryption?(enc: import('./encryption/index.js').EncryptionTransformers, file: { configFile: string; automaticReload: boolean }): void;

  /** Optional (main thread): the configuration was reloaded; threads of the backend with transformers of their own reload theirs. */
  encryptionReloaded?(): void;

  /**
   * Optional: whether the stored value of gr's object at key, version rv, was written by
   * another provider (or key) than the current configuration's first (kube's stale). An
   * update that changes nothing is written all the same then (kube's GuaranteedUpdate), so
   * that `kubectl replace` moves every object to the current key. Absent: never.
   */
  storedStale?(gr: string, key: string, rv: number): MaybePromise<boolean>;

  /**
   * Why storage cannot take writes now ('' when it can): a shard being restarted, a storage
   * alarm (no space), an unreachable etcd. The storage check of /livez and /readyz fails
   * while it is set (handlers/health.ts).
   */
  storageProblem(): string;

  /**
   * Optional: the number of gr's objects, counted in storage (etcd: a count-only range),
   * for apiserver_storage_objects every --etcd-count-metric-poll-period. A backend without
   * it is counted from the caches (LMDB: they hold every object).
   */
  count?(gr: string): Promise<number>;
}
