// The LMDB storage backend (src/storage/interface.ts): starts the shard workers, owns the
// global resourceVersion allocator (a counter in shared memory that the shards take
// versions from at commit time), routes each write to the shard that owns its resource
// type, and hands every committed batch to the feed's subscribers (the cache layer,
// src/storage/cacher.ts) before it answers the writes. The shards' B-trees hold revision
// records only: the current objects are the caches' (CacheAccess), as etcd's in-memory
// kvindex, and this backend loads them at start-up straight from the mapped B-tree.
//
// Thread ownership: an LmdbStorage lives on a front thread (the main one starts the shard
// workers; another front thread's talks to them over ports). The shard workers own the
// write side of their LMDB environments; this class holds read-only handles.
//
// A shard worker that ends after start-up, for any cause (issue 17, item 4), does not take
// the server or its waiters with it: the writes it had not answered fail at once (their
// outcome unknown: 500), writes for it fail fast while it is down (503 with Retry-After),
// and it is started again from its log (the start-up path: the log's records the B-tree
// lacks are applied), with a growing delay while it cannot start. Once it is ready, the
// caches take what it committed and never announced, from its B-tree, and writes resume.
// Meanwhile reads are served from the caches, and the storage health check fails
// (storageProblem()), as it does while a shard raises its storage alarm (no space).
//
// Encryption at rest (useEncryption): the shard workers encrypt the records of configured
// resources (shard-worker.ts); this thread decrypts what it reads from the B-tree: the live
// objects before the caches load (decryptLive), the records of history reads (records():
// RecordSource.plain), a restarted shard's missed commits. The commits themselves bring the
// plaintext along, so the caches, and GET, LIST and WATCH, are as fast as without. Without a
// configuration none of it runs: no lookup, no check.
import { setTimeout as sleep } from 'node:timers/promises';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SharedState } from './shared-state.js';
import { WriteTrace } from './write-trace.js';
import { errors } from '../../errors.js';
import { encodeForCommit } from '../../codec/json.js';
import { openShardEnv, type ShardEnv } from '../../../workers/shard/layout.js';
import { overlayRecords, treeRecords, type History, type RecordEntry, type RecordSource } from '../../../workers/shard/reader.js';
import { recordGr, recordKey, recordType, recordValue } from '../../../workers/shard/record.js';
import { FRONT_IDS, type Ack, type CommittedEvent, type FrontToShard, type ShardToFront, type ShardWorkerData, type WriteOp } from '../../../workers/shard/protocol.js';
import { StoredEntry, hintsOf, type CacheEntry } from '../../../workers/watch/watch-cache.js';
import { loadCaches } from '../../../workers/watch/load-caches.js';
import { eventsBetween, getAt, objectsAt } from '../../../workers/shard/reader.js';
import { FIXED, recordValue as valueOf } from '../../../workers/shard/record.js';
import { scanRecords } from '../../../workers/shard/scan.js';
import { FLAG_LIVE } from '../../../workers/shard/layout.js';
import type { EncryptionTransformers } from '../encryption/index.js';
import { storageKeyOf } from '../encryption/storage-key.js';
import type { MaybePromise } from '../interface.js';
import { CompactedError, WriteRejected, storageFailure, type CacheAccess, type ChangeSink, type Committed, type Storage, type StorageWrite, type StoredEvent, type StoredObject as Stored } from '../interface.js';
import { lastTxnId, removeCacheIndex, writeCacheIndex, type TypeToIndex } from '../../../workers/shard/cache-index.js';

export interface LmdbStorageOptions {
  dataDir: string;
  shardCount: number;
  /** explicit placement: group-resource -> shard index; others are hashed */
  shardMap: Record<string, number>;
  retentionMs: number;
  compactIntervalMs: number;
  /** the shards' B-trees take the log's records at most once per this interval (0: after every group commit) */
  treeIntervalMs: number;
  /** the largest object a write may store, in encoded bytes (default etcd's 1.5 MiB) */
  maxObjectBytes?: number;
  /**
   * (--event-ttl) group-resource -> seconds after its last write that an object is deleted
   * (the shard's TTL index, workers/shard/ttl-index.ts); absent: nothing expires.
   */
  ttlSeconds?: Record<string, number>;
  /**
   * Set on another front thread than the main one (issue 18): this backend starts no
   * shard workers; it talks to the main thread's over the ports given (one per shard), and
   * hears of their restarts through control() (FrontControl).
   */
  front?: { index: number } & LmdbFrontData;
}

/** What another front thread's LmdbStorage starts from (connectFront): the shared counters, a port per shard. */
export interface LmdbFrontData {
  sab: SharedArrayBuffer;
  ports: MessagePort[];
}

/**
 * What the main thread's storage tells another front thread's: a shard worker ended
 * (its writes in flight fail), or was started again (its new port; the front catches up
 * from the B-tree).
 */
export type FrontControl = { t: 'shard-down'; index: number; why: string } | { t: 'shard-up'; index: number; port: MessagePort };

/** Where a front's writes and control messages for one shard go: its worker (main thread) or a port to it. */
interface ShardLink {
  postMessage(msg: FrontToShard, transfer?: any[]): void;
}


/** What starts an encrypted value at rest (any provider's prefix but identity's). */
const ENCRYPTED = Buffer.from('k8s:enc:');

/** A history read met a value whose KMS v2 data key this thread has not cached: it is read again once the plugin answered. */
class KeyPending extends Error {
  constructor(readonly wait: Promise<unknown>) {
    super('waiting for a KMS data key');
  }
}

/** How long a storage read waits for the B-tree to catch up with the log. */
const STORAGE_WAIT_MS = 10_000;


interface PendingWrite {
  resolve: (c: Committed) => void;
  reject: (err: Error) => void;
  obj?: any;
  /** the write as sent: its commit names the type, group-resource and key by its id alone */
  op: WriteOp;
}

interface ShardHandle {
  index: number;
  /** (main thread only) the shard's worker */
  worker: Worker;
  /** where writes go: the worker itself, or on another front thread the port to it */
  link: ShardLink;
  env: ShardEnv;
  /** highest rv of this shard applied to the caches */
  applied: number;
  /**
   * The shard's committed records the B-tree may not hold yet, in version order: reads of
   * the revision history take them from here (records()). Dropped once a read snapshot of
   * the B-tree holds them.
   */
  newer: RecordEntry[];
  queue: WriteOp[];
  flushScheduled: boolean;
  freshWaiters: Array<() => void>;
  closed?: () => void;
  /** the worker takes writes ('up'), or is being started again after it ended ('down') */
  state: 'up' | 'down';
  /** why the shard is down: the error its worker ended with */
  down: string;
  /** the shard's storage alarm ('' when none): it refuses every write with this reason */
  alarm: string;
  /** delay before the next start of a worker that is down; grows while starts fail */
  restartDelayMs: number;
  restarts: number;
  /** (compact) who waits for the shard's next compaction report */
  compactWaiters: Array<() => void>;
  /** (main thread) a snapshot waits for the worker's 'held' */
  onHeld?: () => void;
}

/**
 * One shard as of a snapshot's version (snapshotView): its B-tree in a read transaction of
 * its own, and the committed records that B-tree did not hold yet. The caller reads what it
 * needs and calls done().
 */
export interface ShardSnapshotView {
  env: ShardEnv;
  txn: ReturnType<ShardEnv['root']['useReadTransaction']>;
  /** the last version to read from the transaction's B-tree (what it holds, up to the snapshot's) */
  treeRv: number;
  compactedRv: number;
  /** the records after treeRv, up to the snapshot's version, in version order */
  newer: RecordEntry[];
}

/** A shard's handle before its worker (or, on another front thread, its port) is there. */
function newShardHandle(index: number, env: ShardEnv): ShardHandle {
  return {
    index,
    worker: null as unknown as Worker,
    link: null as unknown as ShardLink,
    env,
    applied: 0,
    newer: [],
    queue: [],
    flushScheduled: false,
    freshWaiters: [],
    state: 'up',
    down: '',
    alarm: '',
    restartDelayMs: 0,
    restarts: 0,
    compactWaiters: [],
  };
}

/** The first restart of a shard that ended is at once; later ones back off up to this. */
const RESTART_DELAY_MAX_MS = 5000;
/**
 * A restarted shard that is neither ready nor failed after this long is stuck, most likely
 * on a write lock its dead worker left held inside lmdb-js, which no thread of this process
 * can free: the process exits (every acknowledged write is in a log) for its supervisor to
 * start it again, rather than refuse that shard's writes forever.
 */
const RESTART_STUCK_MS = 60_000;
/** The failures of a full (or failing) disk, which a later try may get past. */
const DISK_TROUBLE = /ENOSPC|EDQUOT|No space left|Input\/output error|EIO\b|database space exceeded/i;

const here = fileURLToPath(new URL('.', import.meta.url));
const SHARD_WORKER = join(here, '../../../workers/shard/shard-worker.js');

/**
 * A type's objects in key order. list('') is in namespace order, which differs where one
 * namespace's name is a prefix of another's ("a/x" sorts after "a-b/y"); readers of the
 * cache index search its keys by binary search.
 */
function inKeyOrder(list: CacheEntry[]): CacheEntry[] {
  for (let i = 1; i < list.length; i++) if (list[i - 1].key >= list[i].key) return [...list].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return list;
}

function hashString(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** The shard a resource type lives in: explicit placement first, else a hash of the type. */
export function shardOf(gr: string, shardCount: number, shardMap: Record<string, number>): number {
  return shardMap[gr] ?? hashString(gr) % shardCount;
}

export class LmdbStorage implements Storage {
  readonly name = 'lmdb';
  readonly shared: SharedState;
  private shards: ShardHandle[] = [];
  /** the feed's subscribers (subscribe) */
  private sinks: ChangeSink[] = [];
  /** the caches, which hold the current objects for this backend (attachCaches) */
  private caches!: CacheAccess;
  /** group-resource -> shard index, memoized (the hash is not taken per read) */
  private grShard = new Map<string, number>();
  private pending = new Map<number, PendingWrite>();
  private nextId = 1;
  /** KUBESHARD_COMMIT_STATS: where each write's time goes (write-trace.ts) */
  private readonly trace = WriteTrace.fromEnv();

  /** this thread's number among the front threads (0: the main thread): the low bits of its write ids */
  readonly frontIndex: number;
  /** the encryption transformers of this thread (useEncryption); null: nothing is encrypted */
  private enc: EncryptionTransformers | null = null;
  /** (main thread) what the shard workers load their own transformers from */
  private encFile: { configFile: string; automaticReload: boolean } | undefined;
  /** (main thread) the other front threads, told of every shard restart */
  private frontControls: Array<(m: FrontControl, transfer: MessagePort[]) => Promise<void>> = [];

  constructor(readonly opts: LmdbStorageOptions) {
    this.shared = opts.front ? new SharedState(opts.front.sab) : SharedState.create(opts.shardCount);
    this.frontIndex = opts.front?.index ?? 0;
  }

  /** The TTLs in ms for the shard workers (ShardWorkerData.ttlMs). */
  private ttlMs(): Record<string, number> | undefined {
    const t = this.opts.ttlSeconds;
    if (!t) return undefined;
    return Object.fromEntries(Object.entries(t).filter(([, s]) => s > 0).map(([gr, s]) => [gr, s * 1000]));
  }

  shardFor(gr: string): number {
    // (a GET asks twice for its type's shard: the last answer first, then the map)
    if (gr === this.lastGr) return this.lastShard;
    let i = this.grShard.get(gr);
    if (i === undefined) this.grShard.set(gr, (i = shardOf(gr, this.opts.shardCount, this.opts.shardMap)));
    this.lastGr = gr;
    this.lastShard = i;
    return i;
  }

  private lastGr = '';
  private lastShard = 0;

  subscribe(sink: ChangeSink): void {
    this.sinks.push(sink);
  }

  attachCaches(caches: CacheAccess): void {
    this.caches = caches;
  }

  /**
   * Encryption at rest (before start): `enc` decrypts on this thread, and (main thread) each
   * shard worker loads transformers of its own from `file` to encrypt with.
   */
  useEncryption(enc: EncryptionTransformers, file: { configFile: string; automaticReload: boolean }): void {
    if (!enc.configured) return;
    this.enc = enc;
    this.encFile = file;
  }

  /**
   * (main thread) The configuration was reloaded here: the shard workers reload theirs now.
   * This thread reads with the new keys first, so nothing a worker writes with them is
   * unreadable here (kube's order for a key rotation: every reader knows a key before any
   * writer uses it).
   */
  encryptionReloaded(): void {
    if (this.opts.front) return;
    for (const s of this.shards) if (s.state === 'up') s.worker.postMessage({ t: 'encryption-reload' } satisfies FrontToShard);
  }

  /**
   * The plaintext of a stored value (a record's value past its flag byte) of gr's object at
   * key: the value itself for an unencrypted one (a view), a promise while a KMS v2 plugin
   * is asked for its data key. Fails as kube's etcd3 store does: an internal error.
   */
  private decrypt(gr: string, key: string, stored: Buffer): Buffer | Promise<Buffer> {
    const t = this.enc!.transformerFor(gr);
    const skey = storageKeyOf(gr, key);
    const fail = (e: unknown) => errors.internal(`unable to transform key "${skey}": ${e instanceof Error ? e.message : String(e)}`);
    let r;
    try {
      r = t.fromStorage(stored, skey);
    } catch (e) {
      throw fail(e);
    }
    return r instanceof Promise ? r.then((x) => x.data, (e) => Promise.reject(fail(e))) : r.data;
  }

  /** A record's JSON for a history read (RecordSource.plain): a copy, decrypted when it is stored encrypted. */
  private plainRecord = (rec: Buffer): Buffer => {
    const stored = valueOf(rec).subarray(1);
    const r = this.decrypt(recordGr(rec), recordKey(rec), stored);
    if (r instanceof Promise) throw new KeyPending(r);
    return r === stored ? Buffer.from(r) : r;
  };

  /** Runs a read that decrypts; when it met a data key not cached yet, again once the plugin answered. */
  private readDecrypted<T>(read: () => T, attempt = 0): MaybePromise<T> {
    try {
      return read();
    } catch (e) {
      if (!(e instanceof KeyPending) || attempt >= 8) throw e;
      return e.wait.then(() => this.readDecrypted(read, attempt + 1));
    }
  }

  /** Whether gr's values may be stored encrypted (a configuration is loaded, gr is in it). */
  private encrypts(gr: string): boolean {
    return this.enc !== null && !this.enc.transformerFor(gr).identity;
  }

  /**
   * Whether the stored value of gr's object at key, version rv, was not written by the first
   * provider of the current configuration (kube's stale): an update that changes nothing
   * writes it all the same then, so that a rewrite moves it to the current key.
   */
  storedStale(gr: string, key: string, rv: number): MaybePromise<boolean> {
    if (!this.enc) return false;
    const t = this.enc.transformerFor(gr);
    if (t.identity) return false;
    const rec = this.records(this.shardFor(gr), rv).get(rv);
    if (!rec) return false;
    try {
      const r = t.fromStorage(Buffer.from(valueOf(rec).subarray(1)), storageKeyOf(gr, key));
      return r instanceof Promise ? r.then((x) => x.stale, () => true) : r.stale;
    } catch {
      return true;
    }
  }

  /**
   * Before a shard's caches load: the live objects of configured resources that are stored
   * encrypted, decrypted (version -> JSON; KMS v2 plugins asked for the data keys this thread
   * has not seen, all at once). Only each key's newest record is decrypted. One that cannot
   * be is left out: the load keeps it aside as corrupt, as kube does with a value it cannot
   * transform. Undefined without a configuration.
   */
  private async decryptLive(h: ShardHandle): Promise<{ plain: Map<number, Buffer>; failed: number } | undefined> {
    if (!this.enc) return undefined;
    /** "gr\nkey" -> the version of its newest record, while that one is live and encrypted */
    const newest = new Map<string, number>();
    let grBytes: Buffer | null = null;
    let configured = false;
    let gr = '';
    scanRecords(h.env, (rv, rec, size) => {
      const grLen = rec[25] | (rec[26] << 8);
      const keyLen = rec[27] | (rec[28] << 8);
      const keyEnd = FIXED + grLen + keyLen;
      if (keyEnd >= size) return;
      if (grBytes === null || grBytes.length !== grLen || rec.compare(grBytes, 0, grLen, FIXED, FIXED + grLen) !== 0) {
        gr = rec.toString('utf8', FIXED, FIXED + grLen);
        grBytes = Buffer.from(gr);
        configured = this.encrypts(gr);
      }
      if (!configured) return;
      const id = gr + '\n' + rec.toString('utf8', FIXED + grLen, keyEnd);
      const encrypted = size - keyEnd - 1 >= ENCRYPTED.length && rec.compare(ENCRYPTED, 0, ENCRYPTED.length, keyEnd + 1, keyEnd + 1 + ENCRYPTED.length) === 0;
      if (rec[keyEnd] === FLAG_LIVE && encrypted) newest.set(id, rv);
      else newest.delete(id);
    });
    const plain = new Map<number, Buffer>();
    const waits: Promise<void>[] = [];
    let failed = 0;
    const failure = (e: unknown) => {
      failed++;
      console.error(`shard ${h.index}: ${e instanceof Error ? e.message : String(e)}`);
    };
    for (const [id, rv] of newest) {
      const nl = id.indexOf('\n');
      const rec = h.env.hist.get(rv);
      if (!rec) continue;
      try {
        const r = this.decrypt(id.slice(0, nl), id.slice(nl + 1), Buffer.from(valueOf(rec).subarray(1)));
        if (r instanceof Promise) waits.push(r.then((b) => void plain.set(rv, b), failure));
        else plain.set(rv, r);
      } catch (e) {
        failure(e);
      }
    }
    await Promise.all(waits);
    return { plain, failed };
  }

  async start(): Promise<void> {
    if (this.opts.front) return this.startFront(this.opts.front.ports);
    const { dataDir, shardCount } = this.opts;
    mkdirSync(dataDir, { recursive: true });
    // Placement is a property of the data: refuse a shard count that differs from the one the data was written with.
    const layoutFile = join(dataDir, 'shards.json');
    if (existsSync(layoutFile)) {
      const prev = JSON.parse(readFileSync(layoutFile, 'utf8'));
      if (prev.shardCount !== shardCount || JSON.stringify(prev.shardMap ?? {}) !== JSON.stringify(this.opts.shardMap)) {
        throw new Error(`data dir ${dataDir} was written with ${prev.shardCount} shards and shard map ${JSON.stringify(prev.shardMap ?? {})}; start with the same settings`);
      }
    } else {
      writeFileSync(layoutFile, JSON.stringify({ shardCount, shardMap: this.opts.shardMap }) + '\n');
    }
    const ready: Promise<{ maxRv: number }>[] = [];
    for (let i = 0; i < shardCount; i++) {
      mkdirSync(join(dataDir, `shard-${i}`), { recursive: true });
      const handle = newShardHandle(i, null as unknown as ShardEnv);
      this.shards.push(handle);
      ready.push(this.spawnAtStart(handle));
    }
    const states = await Promise.all(ready);
    // The allocator starts above every version stored anywhere, so versions never repeat across restarts.
    this.shared.raiseRv(Math.max(0, ...states.map((s) => s.maxRv)));
    for (const h of this.shards) {
      const dir = join(dataDir, `shard-${h.index}`);
      h.env = openShardEnv(dir, true);
      h.applied = this.shared.lastRv(h.index);
      await this.loadShard(h);
    }
  }

  /**
   * At clean shutdown, once every shard worker has closed: each shard's key index (its
   * caches' keys and versions) for the next start (workers/shard/cache-index.ts). Only for
   * a shard whose caches took every commit it made (it closed in time): the file names the
   * version the caches are at, and the next start uses it only if the store is still there.
   */
  private writeIndexes(closedInTime: Set<number>): void {
    for (const s of this.shards) {
      const dir = join(this.opts.dataDir, `shard-${s.index}`);
      try {
        if (!closedInTime.has(s.index) || s.state === 'down' || s.applied !== this.shared.lastRv(s.index)) {
          removeCacheIndex(dir);
          continue;
        }
        const types: TypeToIndex[] = [];
        const corruptOf = new Map(this.caches.corruptObjects());
        const cached = new Set<string>();
        for (const c of this.caches.caches()) {
          const gr = c.gr;
          cached.add(gr);
          if (this.shardFor(gr) !== s.index) continue;
          const corrupt = corruptOf.get(gr);
          // (a key written since it was kept aside is the cache's)
          types.push({ gr, live: inKeyOrder(c.list('')).map((e) => ({ key: e.key, rv: e.rv, hints: e instanceof StoredEntry ? e.hints : hintsOf(e.json) })), corrupt: corrupt ? [...corrupt].filter(([key]) => !c.items.has(key)).map(([key, o]) => ({ key, rv: o.rv })) : [] });
        }
        for (const [gr, m] of corruptOf) {
          if (this.shardFor(gr) === s.index && !cached.has(gr)) types.push({ gr, live: [], corrupt: [...m].map(([key, o]) => ({ key, rv: o.rv })) });
        }
        writeCacheIndex(dir, s.applied, lastTxnId(s.env.root), types);
      } catch (err) {
        console.error(`shard ${s.index}: cache index not written: ${err instanceof Error ? err.message : String(err)}`);
        try {
          removeCacheIndex(dir);
        } catch {
          /* the next start checks it anyway */
        }
      }
    }
  }

  /**
   * The shard's current objects into the caches, from its B-tree (which holds every version
   * up to h.applied), or from the key index its last clean shutdown wrote when the store is
   * still exactly as it left it (load-caches.ts). Bytes that are not a JSON object cannot be
   * served: they are kept aside, so that start-up, reads of other objects and (unsafe)
   * deletion still work (KEP-3926).
   */
  private loadShard(h: ShardHandle): void | Promise<void> {
    if (this.enc) return this.decryptLive(h).then((d) => this.loadShardWith(h, d));
    this.loadShardWith(h, undefined);
  }

  private loadShardWith(h: ShardHandle, decrypted: { plain: Map<number, Buffer>; failed: number } | undefined): void {
    // (a value that could not be decrypted may be among the keys of the persisted index, as
    // live: the scan of the store then decides, and keeps it aside as corrupt)
    const dir = decrypted?.failed ? '' : join(this.opts.dataDir, `shard-${h.index}`);
    const report = loadCaches(h.env, dir, (gr) => this.caches.cache(gr), (gr, key, rv, bytes) => this.caches.markCorrupt(gr, key, rv, bytes), decrypted?.plain);
    if (!this.opts.front && report.indexRefused && report.indexRefused !== 'no index') console.error(`shard ${h.index}: cache index not used (${report.indexRefused}); loaded ${report.objects} objects from the store`);
  }

  /**
   * Start-up of another front thread's storage: no workers of its own; one port per
   * shard, which the main thread's storage attached to the shard's worker (connectFront).
   */
  private async startFront(ports: MessagePort[]): Promise<void> {
    const { dataDir, shardCount } = this.opts;
    for (let i = 0; i < shardCount; i++) this.shards.push(newShardHandle(i, openShardEnv(join(dataDir, `shard-${i}`), true)));
    await Promise.all(this.shards.map((h) => this.attachPort(h, ports[h.index], true)));
  }

  /**
   * Takes a port to a shard's worker (another front thread). The worker answers first with
   * its last committed version; every commit after that comes on the port. What came before
   * is read from the B-tree once it holds that version: the whole shard at start-up, the
   * versions this thread missed after a restart of the worker. Commits the port then brings
   * that the B-tree read already had are skipped (applyCommit).
   */
  private attachPort(h: ShardHandle, port: MessagePort, initial: boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      let attached = false;
      /** commits that came while the B-tree's part was read (decrypting may wait on a KMS plugin): applied after it */
      let held: ShardToFront[] | null = null;
      port.on('message', (m: ShardToFront) => {
        if (attached) {
          if (held) held.push(m);
          else this.onShardMessage(h, m);
          return;
        }
        if (m.t !== 'attached') return;
        attached = true;
        h.link = port;
        h.alarm = m.alarm;
        held = [];
        // The B-tree must hold every version up to the mark before it is read: the port brings
        // only later commits, so a cache loaded from a B-tree that lags would miss the versions
        // between for good. A stalled disk therefore holds this thread's start (or its catch-up
        // after a worker restart), without blocking its event loop.
        this.treeReaches(h.index, m.lastRv)
          .then(() => {
            h.env.root.resetReadTxn();
            if (!initial) return this.catchUp(h, m.lastRv);
            h.applied = Math.max(m.lastRv, h.env.meta.get('maxRv') ?? 0);
            return this.loadShard(h);
          })
          .then(() => {
            const q = held!;
            held = null;
            for (const x of q) this.onShardMessage(h, x);
            resolve();
          }, reject);
      });
    });
  }

  /** Resolves once shard's B-tree holds version rv, looking every few ms; a line in the log every STORAGE_WAIT_MS it does not. */
  private async treeReaches(shard: number, rv: number): Promise<void> {
    for (let waited = 0; !this.shared.waitApplied(shard, rv, 0); waited += 5) {
      if (waited > 0 && waited % STORAGE_WAIT_MS === 0) console.error(`E shard ${shard}: its B-tree has not reached resource version ${rv} after ${waited / 1000}s; this front thread waits for it before loading its caches`);
      await sleep(5);
    }
  }

  /**
   * (main thread) Connects another front thread: a port to every shard's worker, for it to
   * pass to its own storage (LmdbStorageOptions.front), and from now on its control
   * messages: shard restarts (with the new worker's port).
   */
  connectFront(control: (m: FrontControl, transfer: MessagePort[]) => Promise<void>): { data: LmdbFrontData; transfer: MessagePort[] } {
    this.frontControls.push(control);
    const ports = this.shards.map((h) => this.portTo(h));
    return { data: { sab: this.shared.sab, ports }, transfer: ports };
  }

  private portTo(h: ShardHandle): MessagePort {
    const { port1, port2 } = new MessageChannel();
    h.worker.postMessage({ t: 'attach', port: port1 } satisfies FrontToShard, [port1]);
    return port2;
  }

  /** (another front thread) What the main thread's storage tells of the shards' restarts. */
  control(msg: unknown): Promise<void> {
    const m = msg as FrontControl;
    const h = this.shards[m.index];
    if (!h || this.closing) return Promise.resolve();
    if (m.t === 'shard-down') {
      if (h.state !== 'down') this.onShardExit(h, m.why);
      return Promise.resolve();
    }
    return this.attachPort(h, m.port, false).then(() => {
      h.state = 'up';
      h.down = '';
    });
  }

  /**
   * Starts the shard's worker; resolves with its high-water mark once it is ready (its log
   * applied to its B-tree), rejects if it fails before. After start-up, its end is handled
   * by onShardExit.
   */
  private spawn(handle: ShardHandle): Promise<{ maxRv: number }> {
    const i = handle.index;
    const worker = new Worker(SHARD_WORKER, {
      workerData: { index: i, path: join(this.opts.dataDir, `shard-${i}`), shared: this.shared.sab, shardCount: this.opts.shardCount, retentionMs: this.opts.retentionMs, compactIntervalMs: this.opts.compactIntervalMs, treeIntervalMs: this.opts.treeIntervalMs, maxObjectBytes: this.opts.maxObjectBytes ?? 1_572_864, encryption: this.encFile, restart: handle.restarts, ttlMs: this.ttlMs() } satisfies ShardWorkerData,
    });
    handle.worker = worker;
    handle.link = worker;
    let why = '';
    worker.on('error', (err) => {
      why = err instanceof Error ? err.message : String(err);
      console.error(`shard ${i} failed:`, err);
    });
    return new Promise((resolve, reject) => {
      let isReady = false;
      const onMsg = (m: ShardToFront) => {
        if (m.t === 'ready') {
          isReady = true;
          worker.off('message', onMsg);
          worker.on('message', (msg: ShardToFront) => this.onShardMessage(handle, msg));
          resolve({ maxRv: m.maxRv });
        } else if (m.t === 'fatal') why = m.message;
      };
      worker.on('message', onMsg);
      worker.once('exit', (code) => {
        if (!isReady) reject(new Error(`shard ${i}: ${why || `its worker exited with code ${code} before it was ready`}`));
        else if (handle.worker === worker && !this.closing) this.onShardExit(handle, why || `its worker exited with code ${code}`);
      });
    });
  }

  private closing = false;

  /**
   * The first start of a shard. One that fails for want of space (its log's records cannot be
   * applied to its B-tree on a full disk) is tried again until space returns, as kube-apiserver
   * waits for etcd; any other failure stops start-up, as before.
   */
  private async spawnAtStart(handle: ShardHandle): Promise<{ maxRv: number }> {
    let delay = 250;
    for (;;) {
      try {
        return await this.spawn(handle);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        if (!DISK_TROUBLE.test(message)) throw err;
        console.error(`${message}: trying again in ${delay} ms, once there is space on the data directory's file system`);
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, RESTART_DELAY_MAX_MS);
      }
    }
  }

  /**
   * A shard's worker ended after start-up. Whatever it had not answered fails now: the
   * writes it never received (still queued here) with 503, as they were not applied; the
   * writes it held with 500, for it may have made them durable before it ended (a restart
   * replays them; the caches then take them). Waiters for fresh caches are woken (they wait
   * on until their own deadline), and the shard is started again.
   */
  private onShardExit(handle: ShardHandle, why: string): void {
    handle.state = 'down';
    handle.down = why;
    console.error(`shard ${handle.index} stopped (${why}); starting it again from its log`);
    const queued = handle.queue;
    handle.queue = [];
    for (const op of queued) {
      const p = this.pending.get(op.id);
      if (!p) continue;
      this.pending.delete(op.id);
      p.reject(storageFailure('unavailable', `shard ${handle.index}`, `is being restarted from its log (${why})`));
    }
    for (const [id, p] of this.pending) {
      if (this.shardFor(p.op.gr) !== handle.index) continue;
      this.pending.delete(id);
      p.reject(storageFailure('unknown', `shard ${handle.index}`, why));
    }
    this.wakeFreshWaiters(handle);
    // (another front thread: the main thread starts the worker again, and says when)
    if (this.opts.front) return;
    for (const c of this.frontControls) c({ t: 'shard-down', index: handle.index, why }, []);
    this.scheduleRestart(handle);
  }

  private scheduleRestart(handle: ShardHandle): void {
    const delay = handle.restartDelayMs;
    handle.restartDelayMs = Math.min(Math.max(100, delay * 2), RESTART_DELAY_MAX_MS);
    setTimeout(() => this.restart(handle), delay).unref();
  }

  private restart(handle: ShardHandle): void {
    if (this.closing) return;
    handle.restarts++;
    const stuck = setTimeout(() => {
      console.error(`shard ${handle.index} has not started again within ${RESTART_STUCK_MS / 1000}s (${handle.down}); exiting so that the process is started afresh`);
      process.exit(1);
    }, RESTART_STUCK_MS);
    stuck.unref();
    this.spawn(handle).then(
      async ({ maxRv }) => {
        clearTimeout(stuck);
        if (this.closing) return;
        await this.catchUp(handle, maxRv);
        // The other front threads take the new worker's port first: once the shard is up
        // here (and the storage check passes), a write on any thread goes through.
        // (one that does not answer in time catches up on its own; it refuses writes meanwhile)
        await Promise.all(
          this.frontControls.map((c) => {
            const port = this.portTo(handle);
            return Promise.race([c({ t: 'shard-up', index: handle.index, port }, [port]), new Promise((r) => setTimeout(r, RESTART_DELAY_MAX_MS).unref())]);
          }),
        );
        if (this.closing) return;
        handle.state = 'up';
        handle.down = '';
        // a new worker starts with no alarm: it posts one when its first batch is refused
        handle.alarm = '';
        handle.restartDelayMs = 0;
        console.error(`shard ${handle.index} is running again (restart ${handle.restarts}), at resource version ${maxRv}`);
      },
      (err: Error) => {
        clearTimeout(stuck);
        handle.down = err.message;
        console.error(`shard ${handle.index} could not start again: ${err.message}`);
        if (!this.closing) this.scheduleRestart(handle);
      },
    );
  }

  /**
   * After a restart: the records the shard committed that the caches never heard of (a
   * batch logged just before its worker ended) are read from its B-tree, which holds every
   * logged record once the worker is ready, and applied as that batch would have been.
   */
  private catchUp(handle: ShardHandle, maxRv: number): void | Promise<void> {
    const missed: CommittedEvent[] = [];
    const waits: Promise<void>[] = [];
    // (no environment yet: the worker ended during start-up, which loads the caches afterwards)
    if (handle.env && maxRv > handle.applied) {
      handle.env.root.resetReadTxn();
      for (const { key, value } of handle.env.hist.getRange({ start: handle.applied + 1 })) {
        if (key > maxRv) break;
        const e: CommittedEvent = { id: 0, rv: key, rec: Buffer.from(value) };
        missed.push(e);
        // encrypted at rest: the caches take the plaintext, as a commit brings it
        const rec = e.rec as Buffer;
        const gr = recordGr(rec);
        if (!this.enc || !this.encrypts(gr)) continue;
        try {
          const r = this.decrypt(gr, recordKey(rec), valueOf(rec).subarray(1));
          if (r instanceof Promise) waits.push(r.then((b) => void (e.json = b), (err: Error) => console.error(`shard ${handle.index}: ${err.message}`)));
          else e.json = r;
        } catch (err) {
          console.error(`shard ${handle.index}: ${(err as Error).message}`);
        }
      }
    }
    if (missed.length) console.error(`shard ${handle.index}: ${missed.length} committed change(s) the caches had not taken, applied from its log`);
    if (waits.length) return Promise.all(waits).then(() => this.applyCommit(handle, [], missed, maxRv));
    this.applyCommit(handle, [], missed, maxRv);
  }

  private wakeFreshWaiters(shard: ShardHandle): void {
    if (shard.freshWaiters.length === 0) return;
    const waiters = shard.freshWaiters;
    shard.freshWaiters = [];
    for (const w of waiters) w();
  }

  /**
   * Why storage cannot take writes now ('' when it can): a shard down, or a shard's storage
   * alarm. The storage check of /livez and /readyz (handlers/health.ts) fails while it is set.
   */
  storageProblem(): string {
    for (const s of this.shards) {
      if (s.state === 'down') return `shard ${s.index} is not running: ${s.down}`;
      if (s.alarm) return `shard ${s.index}: ${s.alarm}`;
    }
    return '';
  }

  /**
   * The shard's revision records, for a read of the state at version rv (Infinity: the
   * newest): the B-tree's read snapshot, then the newer records this thread holds. A write
   * is acknowledged once its log record is durable, and the B-tree takes it up to a batch
   * interval later (shard-worker.ts), so the B-tree alone would lag; every record up to the
   * version the caches have applied is held here. Only a version beyond that (a commit
   * whose message this thread has not taken yet, which no caller asks for after waiting
   * for the cache) makes the read wait, blocking this thread, until the B-tree holds it.
   */
  records(shardIndex: number, rv = Infinity): RecordSource {
    const shard = this.shards[shardIndex];
    const need = Math.min(rv, this.shared.lastRv(shardIndex));
    if (need > shard.applied && this.shared.appliedRv(shardIndex) < need && !this.shared.waitApplied(shardIndex, need, STORAGE_WAIT_MS)) {
      // a stalled disk: the read cannot be answered consistently in time
      throw errors.timeout(`Timeout: storage has not caught up to resource version ${need} within ${STORAGE_WAIT_MS / 1000}s`);
    }
    const upto = this.dropHeld(shard);
    const src = shard.newer.length === 0 ? treeRecords(shard.env) : overlayRecords(shard.env, upto, shard.newer);
    if (this.enc) src.plain = this.plainRecord;
    return src;
  }

  /**
   * Drops the held records that the B-tree's current read snapshot holds, and returns the
   * snapshot's last version (every B-tree transaction writes it last). Snapshots only move
   * forward, so a record a snapshot holds is never needed from here again.
   */
  private dropHeld(shard: ShardHandle): number {
    const upto: number = shard.env.meta.get('maxRv') ?? 0;
    const newer = shard.newer;
    if (newer.length > 0 && newer[0].key <= upto) {
      let i = 0;
      while (i < newer.length && newer[i].key <= upto) i++;
      // a new array: a read still iterating the old one keeps its view
      shard.newer = newer.slice(i);
    }
    return upto;
  }

  /**
   * One type's revision history, for reads at a version (reader.ts): the shard's environment,
   * once its B-tree holds every record up to both that version and the cache's own, and the
   * type's current state, which is the cache with the objects kept aside as corrupt.
   */
  private history(gr: string, rv: number): History {
    const cur = this.caches.currentState(gr);
    return { src: this.records(this.shardFor(gr), Math.max(rv, cur.at)), gr, cur };
  }

  /**
   * (main thread) Compacts every shard's history older than retentionMs now, rather than at
   * its next interval; resolves once each shard has reported a compaction. For tests (the
   * conformance suite): the shards compact on their own.
   */
  compact(retentionMs = 0): Promise<void> {
    return Promise.all(
      this.shards.map(
        (s) =>
          new Promise<void>((resolve) => {
            if (s.state === 'down') return resolve();
            s.compactWaiters.push(resolve);
            s.worker.postMessage({ t: 'compact-now', retentionMs } satisfies FrontToShard);
          }),
      ),
    ).then(() => undefined);
  }

  compactedRv(gr: string): number {
    return this.shared.compactedRv(this.shardFor(gr));
  }

  /**
   * Reads at rv undo the records after it; below the compacted version some are gone. (A
   * read at a version the current state still is, with nothing of the type's shard after
   * it, needs none of them: answered as before.)
   */
  private readable(gr: string, rv: number, h: History): void {
    const compacted = this.compactedRv(gr);
    if (rv < compacted && rv < h.cur.at) throw new CompactedError(rv, compacted);
  }

  getAt(gr: string, key: string, rv: number): MaybePromise<Stored | undefined> {
    const read = () => {
      const h = this.history(gr, rv);
      this.readable(gr, rv, h);
      return getAt(h, key, rv);
    };
    return this.enc ? this.readDecrypted(read) : read();
  }

  rangeAt(gr: string, rv: number, ns: string, from: string): MaybePromise<Iterable<Stored>> {
    const h = this.history(gr, rv);
    this.readable(gr, rv, h);
    // (a type stored encrypted is read whole here: a decryption that waits for a KMS plugin
    // cannot wait inside the caller's iteration)
    if (this.enc && this.encrypts(gr)) return this.readDecrypted(() => [...objectsAt(this.history(gr, rv), rv, ns, from)]);
    return objectsAt(h, rv, ns, from);
  }

  eventsSince(gr: string, afterRv: number, uptoRv: number, withPrev: boolean): MaybePromise<StoredEvent[]> {
    const compacted = this.compactedRv(gr);
    if (afterRv < compacted) throw new CompactedError(afterRv, compacted);
    const read = () => eventsBetween(this.records(this.shardFor(gr), uptoRv), gr, afterRv, uptoRv, withPrev);
    return this.enc ? this.readDecrypted(read) : read();
  }

  /**
   * Submits one write (Storage.write). Resolves with the committed resourceVersion once the
   * write is durable and its change was given to the feed's subscribers; rejects with
   * WriteRejected on a failed precondition. `obj` is the object the bytes encode: the
   * subscribers use it instead of parsing the bytes.
   */
  write(op: StorageWrite, obj?: any): Promise<Committed> {
    const id = this.nextId++ * FRONT_IDS + this.frontIndex;
    const shard = this.shards[this.shardFor(op.gr)];
    // a shard being started again takes no writes: fail fast (clients retry on Retry-After)
    if (shard.state === 'down') return Promise.reject(storageFailure('unavailable', `shard ${shard.index}`, `is being restarted from its log (${shard.down})`));
    // The caller's op literal is taken over (no copy: a spread costs more than the rest of this call).
    const queued = op as WriteOp;
    queued.id = id;
    return new Promise<Committed>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, obj, op: queued });
      this.trace?.write(id);
      shard.queue.push(queued);
      if (!shard.flushScheduled) {
        shard.flushScheduled = true;
        // Everything submitted in this turn of the event loop travels in one message.
        setImmediate(() => this.flushShard(shard));
      }
    });
  }

  private flushShard(shard: ShardHandle): void {
    shard.flushScheduled = false;
    // (a shard that went down since: onShardExit failed its queue)
    if (shard.queue.length === 0 || shard.state === 'down') return;
    const ops = shard.queue;
    shard.queue = [];
    const msg: FrontToShard = { t: 'write', ops };
    try {
      shard.link.postMessage(msg);
    } catch {
      // An object the structured clone cannot copy (a DataCloneError: nothing of ours builds
      // one, but a batch must not fail for it): those writes travel as JSON text instead.
      const sendable: WriteOp[] = [];
      for (const op of ops) {
        if (op.obj !== undefined) {
          try {
            ({ head: op.head, tail: op.tail } = encodeForCommit(op.obj));
            op.obj = undefined;
          } catch (err) {
            const p = this.pending.get(op.id);
            this.pending.delete(op.id);
            p?.reject(errors.internal(`cannot encode the object: ${err instanceof Error ? err.message : String(err)}`));
            continue;
          }
        }
        sendable.push(op);
      }
      msg.ops = sendable;
      if (sendable.length) shard.link.postMessage(msg);
    }
    this.trace?.post(ops.map((o) => o.id));
  }

  private onShardMessage(shard: ShardHandle, msg: ShardToFront): void {
    switch (msg.t) {
      case 'commit':
        if (this.trace && msg.t0 !== undefined) this.trace.committed([...msg.events.map((e) => e.id), ...msg.refused.map((a) => a.id)], msg.t0, msg.t1!);
        this.applyCommit(shard, msg.refused, msg.events, msg.lastRv);
        // (the shard's encryption metrics: counted by the main thread, which serves them)
        if (msg.xm && !this.opts.front) this.enc?.metrics.add(msg.xm);
        break;
      case 'closed':
        shard.closed?.();
        break;
      case 'held':
        shard.onHeld?.();
        break;
      case 'alarm':
        shard.alarm = msg.reason;
        break;
      case 'compacted': {
        const waiters = shard.compactWaiters;
        shard.compactWaiters = [];
        for (const w of waiters) w();
        break;
      }
      case 'ready':
      case 'fatal':
        break;
    }
  }

  private applyCommit(shard: ShardHandle, refused: Ack[], events: CommittedEvent[], lastRv: number): void {
    // Another thread's commits that this one read from the B-tree already (attachPort): skipped.
    if (events.length > 0 && events[0].rv <= shard.applied) events = events.filter((e) => e.rv > shard.applied || this.pending.has(e.id));
    // 1. the feed's subscribers (caches and watchers) first, so that a client that sees its
    //    write acknowledged can read it back at once;
    const sinks = this.sinks;
    /** the committed writes' stored bytes, in event order */
    const stored: Buffer[] = [];
    for (const e of events) {
      const p = this.pending.get(e.id);
      const rec = Buffer.from(e.rec.buffer, e.rec.byteOffset, e.rec.byteLength);
      // (a write this thread no longer waits for cannot be, but its record names it too)
      const type = p ? p.op.type : recordType(rec);
      const key = p ? p.op.key : recordKey(rec);
      const gr = p ? p.op.gr : recordGr(rec);
      const obj = p?.obj;
      if (obj?.metadata) obj.metadata.resourceVersion = String(e.rv);
      shard.newer.push({ key: e.rv, value: rec });
      // the object's JSON: a view of the record, past its flag byte (or, stored encrypted, the plaintext the shard sent along)
      const json = e.json ? Buffer.from(e.json.buffer, e.json.byteOffset, e.json.byteLength) : recordValue(rec).subarray(1);
      stored.push(json);
      for (let i = 0; i < sinks.length; i++) sinks[i].change(type, gr, key, e.rv, json, obj);
    }
    if (lastRv > shard.applied) shard.applied = lastRv;
    // the B-tree has taken held records since: let them go
    if (shard.newer.length > 0 && this.shared.appliedRv(shard.index) >= shard.newer[0].key) this.dropHeld(shard);
    if (events.length > 0) for (let i = 0; i < sinks.length; i++) sinks[i].end();
    // 2. then the acknowledgements: a committed write's event is its own;
    for (let i = 0; i < events.length; i++) {
      const id = events[i].id;
      const p = this.pending.get(id);
      if (!p) continue;
      this.pending.delete(id);
      p.resolve({ rv: events[i].rv, json: stored[i] });
    }
    for (const a of refused) {
      const p = this.pending.get(a.id);
      if (!p) continue;
      this.pending.delete(a.id);
      const where = `shard ${shard.index}`;
      // a storage failure is the server's fault, not a precondition: a 500, never retried as a conflict
      if (a.err === 'storage') p.reject(storageFailure('storage', where, a.message ?? 'unknown error'));
      // too large is final: a Status of its own for every writer, never retried as a conflict
      else if (a.err === 'toolarge') p.reject(storageFailure('toolarge', where, a.message ?? '0'));
      else if (a.err === 'nospace') p.reject(storageFailure('nospace', where, a.message ?? 'database space exceeded'));
      else p.reject(new WriteRejected(a.err));
    }
    // 3. then whoever waits for the cache to catch up.
    this.wakeFreshWaiters(shard);
  }

  /**
   * The version up to which the shard's caches are known to be complete. Everything the
   * shard committed is applied (its published last version equals ours), so the only
   * changes still to come are those of a batch in flight, whose versions are all at or
   * above its pendingFrom mark; when there is none, above the counter itself. The reads
   * happen in the order counter, mark, last version; the shard writes them in the reverse
   * order, so a batch that slips in between is always seen.
   */
  freshRv(gr: string): number {
    return this.freshRvOf(this.shardFor(gr));
  }

  private freshRvOf(shardIndex: number): number {
    const shard = this.shards[shardIndex];
    // (a cache made before start-up: nothing is known yet)
    if (shard === undefined) return 0;
    const global = this.shared.currentRv();
    const pending = this.shared.pendingFrom(shardIndex);
    if (this.shared.lastRv(shardIndex) !== shard.applied) return shard.applied;
    const settled = pending === 0 ? global : Math.min(global, pending - 1);
    return Math.max(settled, shard.applied);
  }

  /**
   * (main thread) Every shard at one point of the global version order, for a snapshot
   * (src/storage/lmdb/snapshot.ts): each worker is asked to hold its commits, and once all
   * hold (none has a batch in flight, and this thread has applied every commit they made,
   * for a commit's message comes before 'held'), no version up to the counter can still be
   * written: that is the snapshot's version. Each shard's B-tree is then read in a read
   * transaction of its own, and what it lacks is in the records this thread holds. The
   * commits are released at once: writes wait for the hold's round trip only.
   */
  snapshotView(timeoutMs = 5000): Promise<{ rv: number; shards: ShardSnapshotView[] }> {
    // one hold at a time: a release of one must not end another's
    const view = this.snapshotting.then(() => this.holdAndView(timeoutMs));
    this.snapshotting = view.catch(() => {});
    return view;
  }

  private snapshotting: Promise<unknown> = Promise.resolve();

  private async holdAndView(timeoutMs: number): Promise<{ rv: number; shards: ShardSnapshotView[] }> {
    if (this.opts.front) throw new Error('a snapshot is taken on the main thread');
    const down = this.shards.find((s) => s.state === 'down');
    if (down) throw errors.storageUnavailable(`shard ${down.index}`, down.down);
    let timer: NodeJS.Timeout | undefined;
    try {
      const held = Promise.all(this.shards.map((s) => new Promise<void>((resolve) => {
        s.onHeld = resolve;
        s.worker.postMessage({ t: 'hold' } satisfies FrontToShard);
      })));
      await Promise.race([held, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`the shards did not hold their commits within ${timeoutMs / 1000}s`)), timeoutMs)))]);
      // Every shard idle, this is the counter itself. Taken as the shards' fresh versions all
      // the same, so that it holds even for a shard whose hold ran out (it lets its writes go
      // after a while): every version up to it is applied here, or was never written.
      const rv = Math.min(...this.shards.map((s) => this.freshRvOf(s.index)));
      const shards: ShardSnapshotView[] = [];
      for (const s of this.shards) {
        // (a read transaction of the newest B-tree: no older than the one that let held records go)
        s.env.root.resetReadTxn();
        const txn = s.env.root.useReadTransaction();
        const treeRv = Math.min(rv, s.env.meta.get('maxRv', { transaction: txn }) ?? 0);
        const compactedRv: number = s.env.meta.get('compactedRv', { transaction: txn }) ?? 0;
        shards.push({ env: s.env, txn, treeRv, compactedRv, newer: s.newer.filter((e) => e.key > treeRv && e.key <= rv) });
        if (compactedRv > rv) {
          for (const v of shards) v.txn.done();
          throw new Error(`shard ${s.index} compacted past the snapshot's version while it was taken; try again`);
        }
      }
      return { rv, shards };
    } finally {
      clearTimeout(timer);
      for (const s of this.shards) {
        s.onHeld = undefined;
        if (s.state === 'up') s.worker.postMessage({ t: 'release' } satisfies FrontToShard);
      }
    }
  }

  /** The last version the shard has committed: a "most recent" read must see at least this. */
  committedRv(gr: string): number {
    return this.shared.lastRv(this.shardFor(gr));
  }

  /** The global counter: the newest version any shard has handed out. */
  currentRv(_gr: string): number {
    return this.shared.currentRv();
  }

  /** Waits until the shard's caches hold every change up to rv. False on timeout. */
  async waitFresh(gr: string, rv: number, timeoutMs: number): Promise<boolean> {
    const shardIndex = this.shardFor(gr);
    if (this.freshRvOf(shardIndex) >= rv) return true;
    const shard = this.shards[shardIndex];
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(50, Math.max(1, deadline - Date.now())));
        shard.freshWaiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
      if (this.freshRvOf(shardIndex) >= rv) return true;
    }
    return false;
  }

  async close(): Promise<void> {
    this.closing = true;
    if (this.opts.front) {
      // another front thread: its writes in flight are answered by the workers; the main
      // thread closes them, after this thread's listener has stopped
      for (const s of this.shards) {
        this.flushShard(s);
        (s.link as MessagePort | null)?.close();
      }
      return;
    }
    const closedInTime = new Set<number>();
    await Promise.all(
      this.shards.map(
        (s) =>
          new Promise<void>((resolve) => {
            if (s.state === 'down') return resolve();
            this.flushShard(s);
            s.closed = () => {
              closedInTime.add(s.index);
              resolve();
            };
            s.worker.postMessage({ t: 'close' } satisfies FrontToShard);
            setTimeout(resolve, 5000).unref();
          }),
      ),
    );
    this.writeIndexes(closedInTime);
    for (const s of this.shards) {
      // (a worker stuck in native code, such as a restart waiting on a lock its predecessor
      // held, cannot be terminated: shutdown goes on without it)
      await Promise.race([s.worker.terminate(), new Promise((r) => setTimeout(r, 5000).unref())]);
      try {
        await s.env?.root.close();
      } catch {
        /* already closed */
      }
    }
  }
}
