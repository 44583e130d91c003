// A shard worker: the only writer of one LMDB environment.
//
// Thread ownership: everything in this file (the key index, the pending batch, the
// write side of the environment) belongs to this worker thread alone. The front thread
// reads the same environment through its own read transactions and never writes.
//
// Writes arrive in batches. Every batch that is waiting when the worker gets the CPU is
// one group commit: its records are appended to the write-ahead log (wal.ts) with one
// fdatasync, so the busier the server, the bigger the batch. A write is acknowledged only
// after its log record is durable. The B-tree (hist, meta) is brought up to date behind
// the log, by asynchronous LMDB transactions of many group commits each (at most one per
// treeIntervalMs), committed on lmdb-js's write thread with overlappingSync (crash-safe;
// its flush runs behind later commits). The front keeps each committed record until the
// B-tree holds it, so reads never wait for the B-tree; the last version it holds is
// published (appliedRv). Once the B-tree has flushed a version, the log segments up to it
// are removed; at start-up the records it had not flushed are applied again.
//
// A full or failing disk (issue 17, item 4): before a batch is logged, the space guard
// (space-guard.ts) checks that the file system keeps room for it, for the B-tree to take
// everything logged, and a reserve; else the batch is refused ('nospace') and the storage
// alarm is raised (posted to the front, which fails its health check) until space returns.
// A log append that fails refuses its batch and leaves the log as it was. A B-tree
// transaction that fails puts its records back and is retried (with the alarm raised and
// writes refused meanwhile); one that keeps failing while space is there ends this thread,
// and the coordinator starts the shard again from its log. Nothing unlogged is acknowledged.
//
// Encryption at rest (--encryption-provider-config): this thread encrypts the value of every
// record of a configured resource before the log takes it, so that neither the log nor the
// B-tree ever holds its plaintext. Here, because this thread makes the bytes: the version is
// part of the stored JSON and is only known here, and encrypting on the front thread would
// mean encoding there again. So each shard worker has transformers of its own (loaded from
// the same file; a KMS v2 provider here makes its own data key, as each kube-apiserver of a
// cluster does). Their reloads follow the main thread's ('encryption-reload', sent after the
// readers have the new keys), and their metrics travel to it with each commit. The plaintext
// JSON goes to the fronts beside the record (CommittedEvent.json): the caches serve it as
// before, and nothing decrypts on the commit path. Unconfigured resources cost one Map lookup.
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { SharedState } from '../../src/storage/lmdb/shared-state.js';
import { FLAG_LIVE, FLAG_TOMBSTONE, openShardEnv } from './layout.js';
import { WriteAheadLog, encodeEntry, fillStepFor, payload } from './wal.js';
import { SpaceGuard, fileSystemBytes, reserveFor, RESERVE_BYTES, treeCost } from './space-guard.js';
import { forEachIndexed, lastTxnId, openCacheIndex } from './cache-index.js';
import { scanRecords } from './scan.js';
import { KeyIndex } from './key-index.js';
import { TtlIndex, type DueKey } from './ttl-index.js';
import { DELETED_TYPE, FIXED, encodePayload, recordKey, recordPrev, recordTs, recordType, recordValue } from './record.js';
import { encodeForCommit } from '../../src/codec/json.js';
import { EncryptionTransformers } from '../../src/storage/encryption/encryption-transformers.js';
import { ForwardedMetrics } from '../../src/storage/encryption/metrics.js';
import { Expect, type Ack, type CommittedEvent, type FrontToShard, type ShardToFront, type ShardWorkerData, type WriteOp } from './protocol.js';

const data = workerData as ShardWorkerData;
let storageKeyOf: (gr: string, key: string) => string = () => '';
/** this shard's encryption transformers; null without a configuration (nothing is looked up then) */
const encryption = data.encryption ? await startEncryption(data.encryption) : null;

async function startEncryption(cfg: NonNullable<ShardWorkerData['encryption']>): Promise<{ t: EncryptionTransformers; metrics: ForwardedMetrics }> {
  const metrics = new ForwardedMetrics();
  // (the catalog behind kube's key layout is loaded only when something may be encrypted)
  ({ storageKeyOf } = await import('../../src/storage/encryption/storage-key.js'));
  const t = await EncryptionTransformers.start({ configFile: cfg.configFile, automaticReload: cfg.automaticReload, reloadTimer: false, metrics, onReloadError: (e) => console.error(`shard ${data.index}: ${e.message}`) });
  return { t, metrics };
}

const port = parentPort!;
const shared = new SharedState(data.shared);
const env = openShardEnv(data.path);
/** the data's file system, sized once: the log's fill step and the space reserve scale down on a small one */
const fsBytes = fileSystemBytes(data.path);
const wal = new WriteAheadLog(data.path, fsBytes ? fillStepFor(fsBytes) : undefined);
const guard = new SpaceGuard(data.path, shared, data.index, fsBytes ? reserveFor(fsBytes) : RESERVE_BYTES);

/** "gr\nkey" -> resourceVersion of the live object. Absent means no live object. */
let index = new KeyIndex();
let maxRv = env.meta.get('maxRv') ?? 0;
/** (--event-ttl) when each expiring object's TTL runs out; swept by sweepExpired */
const ttl = new TtlIndex(new Map(Object.entries(data.ttlMs ?? {}).filter(([, ms]) => ms > 0)));
/** the live keys of expiring group-resources found while the key index loads: their TTL entries are made after it */
const ttlLoaded = new Map<string, [gr: string, key: string, rv: number]>();
let compactedRv = env.meta.get('compactedRv') ?? 0;

/**
 * The other front threads' ports (issue 18): each sends writes on its own port and hears
 * every commit, alarm and compaction, as the main thread does on parentPort. Their writes'
 * ids carry the front's number in their low bits (protocol.ts FRONT_ID_BITS), so a commit
 * is one message for all: each front knows its own writes by id and applies the others'
 * from their records.
 */
const fronts: MessagePort[] = [];

function post(msg: ShardToFront): void {
  port.postMessage(msg);
  for (let i = 0; i < fronts.length; i++) fronts[i].postMessage(msg);
}

function attachFront(p: MessagePort): void {
  fronts.push(p);
  p.on('message', onFrontMessage);
  // a front thread that ends closes its port: it hears no more
  p.on('close', () => {
    const i = fronts.indexOf(p);
    if (i >= 0) fronts.splice(i, 1);
  });
  // the new front loads its caches from the B-tree: it waits until the B-tree holds this mark
  // (and the storage alarm raised before it came: later changes reach it like the others)
  p.postMessage({ t: 'attached', lastRv: shared.lastRv(data.index), alarm: postedAlarm } satisfies ShardToFront);
}

/**
 * The key index: from the persisted cache index (cache-index.ts) when it is at this
 * store's version (its live keys and versions, one file read), else from one scan of hist
 * (scan.ts: no copy of any record). Returns where it came from.
 */
function loadIndex(): string {
  const persisted = openCacheIndex(data.path, maxRv, lastTxnId(env.root));
  if (typeof persisted !== 'string') {
    try {
      let count = 0;
      forEachIndexed(persisted, () => count++);
      index.reserve(count, Math.ceil(persisted.body.length / Math.max(1, count)) + 16);
      forEachIndexed(persisted, (gr, grBytes, rv, _hints, keyStart, keyEnd) => {
        index.load(grBytes, persisted.body, keyStart, keyEnd, rv);
        if (ttl.expires(gr)) {
          const key = persisted.body.toString('utf8', keyStart, keyEnd);
          ttlLoaded.set(gr + '\n' + key, [gr, key, rv]);
        }
      });
      return 'index';
    } catch (err) {
      // (a body whose checksum matched and whose lengths do not add up: the store decides)
      console.error(`shard ${data.index}: cache index not used (${err instanceof Error ? err.message : String(err)})`);
      index = new KeyIndex();
      ttlLoaded.clear();
    }
  }
  // hist is in version order: each key's last record decides (a deletion: no live object)
  index.reserve((env.hist.getStats() as { entryCount: number }).entryCount);
  let grBytes = Buffer.alloc(0);
  /** the run's group-resource when its objects expire, else '' */
  let grExpiring = '';
  scanRecords(env, (rv, rec, size) => {
    const grLen = rec[25] | (rec[26] << 8);
    const keyLen = rec[27] | (rec[28] << 8);
    if (FIXED + grLen + keyLen > size) throw new Error(`record ${rv} is torn`);
    // consecutive records are mostly of one type: its name is copied once per run
    if (grLen !== grBytes.length || rec.compare(grBytes, 0, grLen, FIXED, FIXED + grLen) !== 0) {
      grBytes = Buffer.from(rec.subarray(FIXED, FIXED + grLen));
      grExpiring = ttl.expires(grBytes.toString('utf8')) ? grBytes.toString('utf8') : '';
    }
    index.load(grBytes, rec, FIXED + grLen, FIXED + grLen + keyLen, rec[24] === DELETED_TYPE ? 0 : rv);
    if (rv > maxRv) maxRv = rv;
    if (grExpiring) {
      const gr = grExpiring;
      const key = rec.toString('utf8', FIXED + grLen, FIXED + grLen + keyLen);
      if (rec[24] === DELETED_TYPE) ttlLoaded.delete(gr + '\n' + key);
      else ttlLoaded.set(gr + '\n' + key, [gr, key, rv]);
    }
  });
  return 'store';
}

/** Set while the B-tree cannot take the records the log holds: writes are refused meanwhile. */
let treeAlarm = '';
/** Set while the file system is below the space reserve: writes are refused meanwhile. */
let spaceAlarm = '';
/**
 * Set once log appends have failed LOG_FAILURES_FOR_ALARM times in a row for another cause
 * than space (a failing disk): writes are still tried, and the first that succeeds clears it.
 * One failure alone is not an alarm: the batch was refused and the next may go through.
 */
let logAlarm = '';
let logFailures = 0;
const LOG_FAILURES_FOR_ALARM = 3;
/** the alarm the front last heard of, and its kind */
let postedAlarm = '';
let postedKind = '';
const HOLD_TREE = process.env.KUBESHARD_FAULT_HOLD_TREE === '1';
/** Fault injection: a log append with a write of this key fails, as on a full or failing disk. */
const FAIL_LOG = process.env.KUBESHARD_FAULT_FAIL_LOG_KEY ?? '';
/**
 * Fault injection for the shard-death tests: a batch with a write of this key ends the
 * thread with an uncaught error, before its log append (..._KEY) or after it, durable but
 * unanswered (..._AFTER_LOG_KEY). Environment only: no API client can reach it.
 */
const EXIT_KEY = process.env.KUBESHARD_FAULT_SHARD_EXIT_KEY ?? '';
const EXIT_AFTER_LOG_KEY = process.env.KUBESHARD_FAULT_SHARD_EXIT_AFTER_LOG_KEY ?? '';
/**
 * Fault injection for the history checker (test/fault/history.test.ts): each group commit
 * that logged something kills the whole process (SIGKILL) with this probability, after its
 * log append and before any of its writes is answered. Environment only, as the others
 * (etcd-storage.ts reads it too: there, after a write's txn succeeded).
 */
const KILL_AFTER_LOG = Number(process.env.KUBESHARD_FAULT_KILL_AFTER_COMMIT ?? 0);
/** ... and with this key, in the middle of the B-tree transaction that takes it (its puts made, not committed) */
const EXIT_IN_TREE = process.env.KUBESHARD_FAULT_SHARD_EXIT_IN_TREE_KEY ?? '';
/** records durable in the log and not yet handed to the B-tree: [rv, record bytes] */
let treeQueue: Array<[number, Buffer]> = [];
/** the B-tree cost (space-guard.ts) of the records in treeQueue */
let treeQueueCost = 0;
/** delay before the next try of a failed B-tree transaction; doubles while it keeps failing */
let treeRetryMs = 250;
let treeFailures = 0;
const TREE_RETRY_MAX_MS = 5000;
/** failed tries, with space to spare, after which this thread ends to be started again from its log */
const TREE_FAILURES_BEFORE_RESTART = 6;

/** Tells the front when the alarm (the B-tree's first: it is the graver) changes. */
function updateAlarm(): void {
  const reason = treeAlarm || spaceAlarm || logAlarm;
  if (reason === postedAlarm) return;
  // logged when it is raised, changes kind or clears; its figures change with every refusal
  const kind = treeAlarm ? 'tree' : spaceAlarm ? 'space' : logAlarm ? 'log' : '';
  if (kind !== postedKind) console.error(reason ? `shard ${data.index}: storage alarm: ${reason}` : `shard ${data.index}: storage alarm cleared`);
  postedKind = kind;
  postedAlarm = reason;
  post({ t: 'alarm', reason });
  if (spaceAlarm && !spaceTimer) {
    spaceTimer = setInterval(recheckSpace, SPACE_RECHECK_MS);
    spaceTimer.unref();
  }
}

const SPACE_RECHECK_MS = 1000;
/**
 * Once raised, the space alarm clears (and writes are taken) only with room for a whole log
 * fill step and this much more above the reserve (half of it). Without the margin, the alarm
 * would clear with room for some small write, and be raised again by the next write that
 * needs a fill step: health checks would flap with it.
 */
const CLEAR_MARGIN = guard.reserve / 2;
let spaceTimer: NodeJS.Timeout | null = null;

/**
 * While the space alarm is raised: gives back the log's space the B-tree no longer needs
 * (wal.reclaim) and clears the alarm once a small batch would be admitted again, so that
 * health checks recover without waiting for a write to try.
 */
function recheckSpace(): void {
  if (!treeBusy && treeQueue.length === 0) {
    try {
      const removed = wal.reclaim(treeFlushedRv, maxRv + 1);
      if (removed) console.error(`shard ${data.index}: removed ${removed} log segment(s) the B-tree holds, to give their space back`);
    } catch (err) {
      console.error(`shard ${data.index}: log reclaim failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  spaceAlarm = guard.admit(wal.fillStep, CLEAR_MARGIN);
  if (!spaceAlarm && spaceTimer) {
    clearInterval(spaceTimer);
    spaceTimer = null;
  }
  updateAlarm();
}
let treeLast = 0;
/** a B-tree transaction is committing or flushing */
let treeBusy = false;
/** resolves when the B-tree holds everything queued so far (close waits for it) */
let treeIdle: Promise<void> = Promise.resolve();
let treeIdleResolve: (() => void) | null = null;
/** the last version the B-tree has flushed (durable there): the log before it may go */
let treeFlushedRv = 0;

/**
 * Brings the B-tree up to the durable log: one transaction at a time, and at most one per
 * treeIntervalMs (etcd's backend batch interval). Every group commit made meanwhile goes
 * into the next transaction. Why: with overlappingSync each B-tree commit is followed by a
 * flush of its dirty pages, and every fdatasync (the log's included) waits for the
 * device's cache flush. A flush per group commit (hundreds a second) made the log's
 * fdatasync, which every writer waits for, half as slow again; ten a second hardly touch
 * it, and a transaction of a thousand appends costs lmdb-js less per record. Nothing
 * waits for the B-tree: the front keeps each committed record until the B-tree holds it
 * and reads them from there (LmdbStorage.records).
 */
function applyToTree(batch: Array<[number, Buffer]>, last: number, cost: number): void {
  // Fault injection for the recovery test: the process "dies" between the log's fdatasync
  // and the B-tree's commit, for every batch.
  if (HOLD_TREE) return;
  for (const r of batch) treeQueue.push(r);
  treeQueueCost += cost;
  treeLast = last;
  if (!treeBusy) {
    treeBusy = true;
    treeIdle = new Promise((r) => (treeIdleResolve = r));
    nextTree();
  }
}

/** when the B-tree's last transaction began (performance.now()) */
let treeStarted = -Infinity;
let treeTimer: NodeJS.Timeout | null = null;

/** The next transaction: now, or when the interval since the last one has passed. */
function nextTree(): void {
  const wait = treeStarted + data.treeIntervalMs - performance.now();
  if (wait > 0 && treeQueue.length > 0 && !closing) treeTimer = setTimeout(drainTree, wait);
  else drainTree();
}

const noop = () => {};

/**
 * lmdb-js (3.5) opens each transaction of a turn's writes with an internal write whose
 * promise it gives to no one; when the commit fails, that promise is rejected unhandled, and
 * an unhandled rejection ends this thread, in the middle of lmdb-js's work (the next start
 * of the shard could then wait on its write lock). The commit's failure reaches drainTree
 * through the promises it holds; this one alone is let go. Anything else still ends the thread.
 */
process.on('unhandledRejection', (reason) => {
  const commitError = (reason as { commitError?: Promise<unknown> } | null)?.commitError;
  if (reason instanceof Error && commitError && reason.message.startsWith('Commit failed')) {
    commitError.catch(noop);
    return;
  }
  throw reason;
});

function drainTree(): void {
  treeTimer = null;
  if (treeQueue.length === 0) {
    treeBusy = false;
    treeIdleResolve?.();
    return;
  }
  treeStarted = performance.now();
  const batch = treeQueue;
  const last = treeLast;
  const cost = treeQueueCost;
  treeQueue = [];
  treeQueueCost = 0;
  stats.trees++;
  stats.treeOps += batch.length;
  // Puts made in one turn are one lmdb-js transaction, committed on its write thread. They
  // share a promise, but lmdb-js may start a new transaction within the turn: every distinct
  // promise gets a handler, for an unhandled rejection would end this thread.
  let seen: unknown;
  for (const [rv, rec] of batch) {
    const p = env.hist.put(rv, rec);
    if (p !== seen) {
      seen = p;
      (p as Promise<unknown>)?.catch?.(noop);
    }
  }
  let committed = false;
  if (EXIT_IN_TREE && batch.some(([, rec]) => recordKey(rec) === EXIT_IN_TREE)) throw new Error('injected shard failure inside a B-tree transaction');
  env.meta
    .put('maxRv', last)
    .then(() => {
      // committed: readable by the front's read transactions, and the space it took is taken
      committed = true;
      guard.addDebt(-cost);
      shared.setAppliedRv(data.index, last);
      if (treeAlarm) {
        console.error(`shard ${data.index}: the B-tree takes the log's records again`);
        treeAlarm = '';
        updateAlarm();
      }
      treeFailures = 0;
      treeRetryMs = 250;
      return env.root.flushed;
    })
    .then(
      () => {
        // flushed: the log segments up to here are no longer needed
        treeFlushedRv = last;
        wal.release(last);
        nextTree();
      },
      (err: unknown) => {
        // lmdb-js rejects a second promise with the cause: handled here, not left to end the thread
        (err as { commitError?: Promise<unknown> } | null)?.commitError?.catch(noop);
        const message = err instanceof Error ? err.message : String(err);
        if (committed) {
          // the transaction is readable but its flush failed: the log keeps the segments, and
          // the next transaction's flush covers these pages too
          console.error(`shard ${data.index}: storage flush failed: ${message}`);
          nextTree();
          return;
        }
        // The log holds the batch (it is acknowledged and will be applied again at start-up):
        // its records go back in front of the queue and are tried again, while writes are
        // refused so that the queue (and the log the B-tree cannot release) stop growing.
        treeQueue = batch.concat(treeQueue);
        treeQueueCost += cost;
        treeFailures++;
        treeAlarm = `storage apply failed: ${message}`;
        updateAlarm();
        if (closing) {
          treeBusy = false;
          treeIdleResolve?.();
          return;
        }
        if (treeFailures >= TREE_FAILURES_BEFORE_RESTART && !guard.admit(0, 0)) {
          // space is there and the environment still refuses: start afresh from the log
          // (the environment closed first: its write lock must not outlive this thread)
          const why = `the B-tree failed ${treeFailures} times with space to spare (${message}); restarting from the log`;
          console.error(`shard ${data.index}: ${why}`);
          post({ t: 'fatal', message: why });
          wal.close();
          Promise.race([env.root.close(), new Promise((r) => setTimeout(r, 2000))]).finally(() => process.exit(1));
          return;
        }
        treeTimer = setTimeout(drainTree, treeRetryMs);
        treeRetryMs = Math.min(treeRetryMs * 2, TREE_RETRY_MAX_MS);
      },
    );
}

/**
 * Start-up: the records of the log that the B-tree does not hold (those after its maxRv,
 * the version every batch's transaction writes last) are applied again, in one transaction.
 */
function recover(): void {
  const treeRv = env.meta.get('maxRv') ?? 0;
  let top = treeRv;
  env.root.transactionSync(() => {
    for (const r of wal.replay()) {
      if (r.rv <= treeRv) continue;
      env.hist.putSync(r.rv, encodePayload(r));
      if (r.rv > top) top = r.rv;
    }
    if (top > treeRv) env.meta.putSync('maxRv', top);
  });
  maxRv = Math.max(maxRv, top);
  wal.open(maxRv + 1);
}

let pending: WriteOp[] = [];
let scheduled = false;

/**
 * KUBESHARD_COMMIT_STATS=1: once a second, the number of group commits and of writes per
 * commit (stderr). Group commit only pays if the batch grows with the load; this shows it.
 */
const stats = { commits: 0, ops: 0, maxBatch: 0, logMs: 0, logMax: 0, trees: 0, treeOps: 0 };
const STATS = !!process.env.KUBESHARD_COMMIT_STATS;
if (STATS) {
  setInterval(() => {
    if (stats.commits) console.error(`shard ${data.index}: ${stats.commits} commits/s, ${(stats.ops / stats.commits).toFixed(1)} writes/commit (max ${stats.maxBatch}), log append+fdatasync ${(stats.logMs / stats.commits).toFixed(2)} ms/commit (max ${stats.logMax.toFixed(1)}); B-tree ${stats.trees} commits/s of ${(stats.treeOps / Math.max(1, stats.trees)).toFixed(0)}`);
    stats.commits = stats.ops = stats.maxBatch = stats.logMs = stats.logMax = stats.trees = stats.treeOps = 0;
  }, 1000).unref();
}
let closing = false;

function schedule(): void {
  if (!scheduled) {
    scheduled = true;
    // setImmediate runs after the port has delivered every message already queued,
    // so a burst of messages becomes one transaction.
    setImmediate(flush);
  }
}

/**
 * Whether an object's JSON (head + version + tail) is over maxObjectBytes. A UTF-16 unit is
 * one to three UTF-8 bytes, so the exact byte count is taken only between those bounds.
 */
function tooLarge(head: string, tail: string): boolean {
  const units = head.length + tail.length + 20;
  const max = data.maxObjectBytes;
  if (units * 3 <= max) return false;
  if (units - 20 > max) return true;
  return Buffer.byteLength(head) + Buffer.byteLength(tail) + 20 > max;
}

/**
 * Set while a snapshot holds this shard's commits (src/storage/lmdb/snapshot.ts): writes wait
 * in `pending` and take no version. The timer lets them go by itself should the release
 * never come: a snapshot must never stop writes for longer than a moment.
 */
let held: NodeJS.Timeout | null = null;
const HOLD_MAX_MS = 2000;

function hold(): void {
  if (held) clearTimeout(held);
  held = setTimeout(releaseHold, HOLD_MAX_MS);
  // (between two group commits, this thread's only kind of turn that takes versions: every
  // version it took is logged or refused, and its commit message is already posted)
  port.postMessage({ t: 'held', lastRv: shared.lastRv(data.index) } satisfies ShardToFront);
}

function releaseHold(): void {
  if (!held) return;
  clearTimeout(held);
  held = null;
  if (pending.length) schedule();
}

function flush(): void {
  scheduled = false;
  if (pending.length === 0 || held) return;
  const ops = pending;
  pending = [];
  const t0 = STATS ? performance.timeOrigin + performance.now() : 0;
  stats.commits++;
  stats.ops += ops.length;
  if (ops.length > stats.maxBatch) stats.maxBatch = ops.length;
  /** the writes refused (a committed write's event is its acknowledgement) */
  const refused: Ack[] = [];
  const events: CommittedEvent[] = [];
  const undo: Array<[string, number | undefined]> = [];
  /** the batch's durable records, in version order, for the B-tree */
  const batch: Array<[number, Buffer]> = [];
  const records: Buffer[] = [];
  let first = 0;
  let last = 0;
  /** bytes of the batch's log entries, and what the B-tree will take for them */
  let size = 0;
  let cost = 0;
  /** refused before logging: the space reserve, not a failure of the disk */
  let nospace = false;
  if (EXIT_KEY && ops.some((o) => o.key === EXIT_KEY)) throw new Error('injected shard failure before the log append');
  // Every version this batch takes is above the counter now: readers may treat versions up to here as settled.
  shared.setPendingFrom(data.index, shared.currentRv() + 1);
  const now = Date.now();
  /** the batch's writes of expiring objects: their TTL starts once the batch is durable */
  const expiring: DueKey[] = [];
  try {
    if (treeAlarm) throw new Error(treeAlarm);
    for (const op of ops) {
      const ik = op.gr + '\n' + op.key;
      const cur = index.get(ik);
      if (op.expect === Expect.Absent) {
        if (cur !== undefined) {
          refused.push({ id: op.id, err: 'exists' });
          continue;
        }
      } else if (cur === undefined) {
        refused.push({ id: op.id, err: 'notfound' });
        continue;
      } else if (op.expect > 0 && cur !== op.expect) {
        refused.push({ id: op.id, err: 'conflict' });
        continue;
      }
      let head = op.head;
      let tail = op.tail;
      if (op.obj !== undefined) {
        try {
          ({ head, tail } = encodeForCommit(op.obj));
        } catch (err) {
          refused.push({ id: op.id, err: 'storage', message: err instanceof Error ? err.message : String(err) });
          continue;
        }
      }
      const deleted = op.type === 'DELETED';
      // Storage's size limit, weighed on the bytes just encoded (etcd's --max-request-bytes).
      // A deletion's tombstone carries the last state, which was stored already: never refused.
      if (!deleted && tooLarge(head!, tail!)) {
        // (the size travels in message: the front names it past the gRPC send limit)
        refused.push({ id: op.id, err: 'toolarge', message: String(Buffer.byteLength(head!) + Buffer.byteLength(tail!) + String(shared.currentRv() + 1).length) });
        continue;
      }
      const rv = shared.nextRv();
      let value: string | Buffer = head! + rv + tail!;
      let plain: Buffer | undefined;
      if (encryption) {
        const t = encryption.t.transformerFor(op.gr);
        if (!t.identity) {
          // (a deletion's tombstone too: it carries the object's last state)
          plain = Buffer.from(value);
          try {
            value = t.toStorage(plain, storageKeyOf(op.gr, op.key));
          } catch (err) {
            // kube's etcd3 store fails the write (an internal error); the version is left unused
            refused.push({ id: op.id, err: 'storage', message: `unable to transform key "${storageKeyOf(op.gr, op.key)}": ${err instanceof Error ? err.message : String(err)}` });
            continue;
          }
        }
      }
      // The record is written once, straight from the text: the log appends the entry, the
      // B-tree stores its payload, and the front keeps that same payload (its JSON is what
      // the cache serves) until the B-tree holds it.
      const entry = encodeEntry({ rv, prev: cur ?? 0, ts: now, type: op.type, gr: op.gr, key: op.key }, deleted ? FLAG_TOMBSTONE : FLAG_LIVE, value);
      const rec = payload(entry);
      records.push(entry);
      size += entry.length;
      cost += treeCost(rec.length);
      batch.push([rv, rec]);
      undo.push([ik, cur]);
      if (deleted) index.delete(ik);
      else index.set(ik, rv);
      events.push(plain ? { id: op.id, rv, rec, json: plain } : { id: op.id, rv, rec });
      if (!deleted && ttl.expires(op.gr)) expiring.push({ gr: op.gr, key: op.key, rv });
      if (!first) first = rv;
      last = rv;
    }
    // One ArrayBuffer for the batch's records: the log writes it in one piece, and the commit
    // message carries views of it, which the structured clone copies as one buffer. A front
    // thread's cache then keeps its objects' bytes in that one buffer (RecordSlab in
    // workers/watch/watch-cache.ts) instead of an ArrayBuffer each: fewer objects for its GC.
    if (records.length > 1) {
      const chunk = Buffer.allocUnsafeSlow(size);
      let o = 0;
      for (let i = 0; i < records.length; i++) {
        const r = records[i];
        chunk.set(r, o);
        const rec = payload(chunk.subarray(o, o + r.length));
        events[i].rec = rec;
        batch[i][1] = rec;
        o += r.length;
      }
      records.splice(0, records.length, chunk);
    }
    if (records.length) {
      const logStart = performance.now();
      if (FAIL_LOG && ops.some((o) => o.key === FAIL_LOG)) throw new Error('write-ahead log: injected failure');
      spaceAlarm = guard.admit(wal.allocationFor(size), cost + (spaceAlarm ? CLEAR_MARGIN : 0));
      if (spaceAlarm) {
        nospace = true;
        throw new Error(spaceAlarm);
      }
      wal.append(records, first, last);
      logFailures = 0;
      logAlarm = '';
      guard.addDebt(cost);
      const took = performance.now() - logStart;
      stats.logMs += took;
      if (took > stats.logMax) stats.logMax = took;
    }
  } catch (err) {
    // Nothing of the batch is durable: restore the index and fail every write of it.
    for (let i = undo.length - 1; i >= 0; i--) {
      const [ik, prev] = undo[i];
      if (prev === undefined) index.delete(ik);
      else index.set(ik, prev);
    }
    let message = err instanceof Error ? err.message : String(err);
    if ((err as NodeJS.ErrnoException).code === 'ENOSPC' || (err as NodeJS.ErrnoException).code === 'EDQUOT') {
      // the file system filled up between the guard's measure and the append (another writer)
      nospace = true;
      message = spaceAlarm = `database space exceeded: ${message}`;
    }
    const failure = nospace ? ('nospace' as const) : ('storage' as const);
    // the sweep's deletions of this batch are tried again later (nobody else would)
    for (const op of ops) if (op.id < 0) ttl.retry({ gr: op.gr, key: op.key, rv: op.expect }, now + 1000);
    if (!nospace && !treeAlarm) {
      console.error(`shard ${data.index}: log append failed: ${message}`);
      if (++logFailures >= LOG_FAILURES_FOR_ALARM) logAlarm = `log append failed ${logFailures} times in a row: ${message}`;
    }
    post({ t: 'commit', refused: ops.map((o) => ({ id: o.id, err: failure, message })), events: [], lastRv: shared.lastRv(data.index) });
    shared.setPendingFrom(data.index, 0);
    updateAlarm();
    return;
  }
  if (EXIT_AFTER_LOG_KEY && ops.some((o) => o.key === EXIT_AFTER_LOG_KEY)) throw new Error('injected shard failure after the log append');
  // (the history checker, test/fault/): the whole process dies here, the batch durable and unanswered
  if (KILL_AFTER_LOG > 0 && records.length && Math.random() < KILL_AFTER_LOG) process.kill(process.pid, 'SIGKILL');
  for (let i = 0; i < expiring.length; i++) ttl.written(expiring[i].gr, expiring[i].key, expiring[i].rv, now);
  updateAlarm();
  if (last) {
    maxRv = last;
    shared.setLastRv(data.index, last);
  }
  const msg: ShardToFront = { t: 'commit', refused, events, lastRv: last || shared.lastRv(data.index) };
  if (STATS) {
    msg.t0 = t0;
    msg.t1 = performance.timeOrigin + performance.now();
  }
  // the encryption metrics measured here: the main thread counts them (the others ignore them)
  if (encryption) {
    const xm = encryption.metrics.take();
    if (xm) msg.xm = xm;
  }
  post(msg);
  shared.setPendingFrom(data.index, 0);
  // The answer goes first: the writers wait for it, and only storage reads wait for the B-tree.
  if (last) applyToTree(batch, last, cost);
}

/**
 * Drops history older than the retention window: for every record at or below the new
 * compacted revision, the revision it superseded is deleted, and a tombstone itself. The
 * newest revision of a live key stays: it is the object. Works in slices so that a large
 * compaction never holds up writes for long.
 */
function compact(retentionMs = data.retentionMs): void {
  try {
    compactNow(retentionMs);
  } catch (err) {
    // (a full disk: the transaction needs pages too) nothing was removed; the next interval tries again
    console.error(`shard ${data.index}: compaction failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  post({ t: 'compacted', compactedRv });
}

function compactNow(retentionMs: number): void {
  const cutoff = Date.now() - retentionMs;
  const SLICE = 5000;
  for (;;) {
    const slice: Array<[number, number, boolean]> = [];
    for (const { key, value } of env.hist.getRange({ start: compactedRv + 1, limit: SLICE })) {
      if (recordTs(value) >= cutoff) break;
      slice.push([key, recordPrev(value), recordType(value) === 'DELETED']);
    }
    if (slice.length === 0) break;
    const to = slice[slice.length - 1][0];
    env.root.transactionSync(() => {
      for (const [rv, prev, deleted] of slice) {
        if (prev) env.hist.removeSync(prev);
        if (deleted) env.hist.removeSync(rv);
      }
      env.meta.putSync('compactedRv', to);
    });
    compactedRv = to;
    shared.setCompactedRv(data.index, to);
    if (slice.length < SLICE) break;
  }
}

/** at most this many expired objects are deleted by one sweep; the rest go in the next, at once */
const SWEEP_LIMIT = 1000;
/** the sweeps' deletions have ids of their own (negative): no front waits for them, each applies them from their records */
let sweepSeq = 0;

/**
 * Deletes the objects whose TTL ran out (--event-ttl; ttl-index.ts), as ordinary deletions
 * guarded on the version the TTL started from: a write that came in between wins, and its
 * own TTL entry decides later. Their DELETED changes reach the fronts like any other (kube
 * on etcd: the lease runs out, etcd deletes the key, and the watch reports a DELETE).
 */
function sweepExpired(): void {
  if (closing || ttl.size === 0) return;
  const now = Date.now();
  if (ttl.nextAt() > now) return;
  const due = ttl.due(now, (gr, key) => index.get(gr + '\n' + key), SWEEP_LIMIT);
  for (const d of due) {
    const rec = recordAt(d.rv);
    // (the B-tree is taking it right now: a moment later it reads back)
    if (!rec) {
      ttl.retry(d, now + 100);
      continue;
    }
    const stored = recordValue(rec).subarray(1);
    const t = encryption?.t.transformerFor(d.gr);
    if (t && !t.identity) {
      let plain;
      try {
        plain = t.fromStorage(stored, storageKeyOf(d.gr, d.key));
      } catch (err) {
        console.error(`shard ${data.index}: expired ${d.gr} ${d.key} not deleted: ${err instanceof Error ? err.message : String(err)}`);
        continue;
      }
      if (plain instanceof Promise) plain.then((p) => deleteExpired(d, p.data), (err) => console.error(`shard ${data.index}: expired ${d.gr} ${d.key} not deleted: ${err instanceof Error ? err.message : String(err)}`));
      else deleteExpired(d, plain.data);
    } else deleteExpired(d, stored);
  }
  if (due.length === SWEEP_LIMIT) setImmediate(sweepExpired);
}

function deleteExpired(d: DueKey, json: Buffer): void {
  let obj: Record<string, unknown>;
  try {
    obj = JSON.parse(json.toString('utf8'));
  } catch {
    // (bytes that are not JSON: deleted with them as its last state, as kube's unsafe delete keeps them)
    const text = json.toString('utf8');
    pending.push({ id: -++sweepSeq, type: 'DELETED', gr: d.gr, key: d.key, expect: d.rv, head: text, tail: '' });
    schedule();
    return;
  }
  pending.push({ id: -++sweepSeq, type: 'DELETED', gr: d.gr, key: d.key, expect: d.rv, obj });
  schedule();
}

/** The record at version rv: from the records the B-tree has not taken yet, else from the B-tree (undefined while in between). */
function recordAt(rv: number): Buffer | undefined {
  for (let i = treeQueue.length - 1; i >= 0; i--) if (treeQueue[i][0] === rv) return treeQueue[i][1];
  return env.hist.get(rv) ?? undefined;
}

function onFrontMessage(msg: FrontToShard): void {
  switch (msg.t) {
    case 'attach':
      attachFront(msg.port);
      // The new front thread loads its caches from the B-tree once it holds every version up
      // to this shard's mark: the records waiting for the batch interval go in now, or a long
      // --storage-batch-interval would hold that thread's start for as long.
      if (treeTimer) {
        clearTimeout(treeTimer);
        drainTree();
      }
      break;
    case 'write':
      if (closing) {
        post({ t: 'commit', refused: msg.ops.map((o) => ({ id: o.id, err: 'conflict' as const })), events: [], lastRv: shared.lastRv(data.index) });
        return;
      }
      for (const op of msg.ops) pending.push(op);
      schedule();
      break;
    case 'compact-now':
      compact(msg.retentionMs);
      break;
    case 'hold':
      hold();
      break;
    case 'release':
      releaseHold();
      break;
    case 'encryption-reload':
      // (a file that fails here keeps this thread's last configuration, as kube's reload does)
      encryption?.t.reloadOnce().catch(noop);
      break;
    case 'close':
      closing = true;
      encryption?.t.close();
      releaseHold();
      clearInterval(compactTimer);
      flush();
      // a transaction waiting out its interval goes now
      if (treeTimer) {
        clearTimeout(treeTimer);
        drainTree();
      }
      treeIdle
        .then(() => env.root.flushed)
        // only what the B-tree has flushed: after a failed transaction (a full disk) the log
        // holds records the B-tree does not, and the next start applies them from there
        .then(() => wal.release(treeFlushedRv))
        .finally(() => wal.close())
        .then(() => env.root.close())
        .then(() => post({ t: 'closed' }), () => post({ t: 'closed' }));
      break;
  }
}

port.on('message', onFrontMessage);

let compactTimer: NodeJS.Timeout;
/** Fault injection for the shard-death tests: a restarted worker takes this long to recover (environment only). */
const RESTART_DELAY_MS = Number(process.env.KUBESHARD_FAULT_SHARD_RESTART_DELAY_MS ?? 0);
try {
  if (data.restart > 0 && RESTART_DELAY_MS > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, RESTART_DELAY_MS);
  // Ready first, with the high-water mark every commit writes into meta: the front then
  // loads its cache from the same environment while this thread builds its key index, the
  // two scans on two cores. No write is taken before the index is whole: loadIndex runs in
  // this same turn, so the front's first write messages wait in the port until it is done.
  recover();
  // (a restart after this thread died: what the last one left in flight is void)
  shared.setPendingFrom(data.index, 0);
  shared.setTreeDebt(data.index, 0);
  shared.setLastRv(data.index, maxRv);
  shared.setAppliedRv(data.index, maxRv);
  shared.setCompactedRv(data.index, compactedRv);
  post({ t: 'ready', maxRv, compactedRv });
  const metaMax = maxRv;
  loadIndex();
  if (maxRv > metaMax) {
    // (a store written without the meta mark): never hand out a stored version again
    shared.raiseRv(maxRv);
    shared.setLastRv(data.index, maxRv);
    shared.setAppliedRv(data.index, maxRv);
  }
  compactTimer = setInterval(() => compact(), data.compactIntervalMs);
  compactTimer.unref();
  // the expiring objects' TTLs, from their last writes' commit times (a TTL that ran out
  // while the server was down is swept at once)
  for (const [gr, key, rv] of ttlLoaded.values()) {
    const rec = env.hist.get(rv);
    ttl.written(gr, key, rv, rec ? recordTs(rec) : Date.now());
  }
  ttlLoaded.clear();
  if (data.ttlMs && Object.keys(data.ttlMs).length) {
    const least = Math.min(...Object.values(data.ttlMs).filter((ms) => ms > 0));
    if (least < Infinity) setInterval(sweepExpired, Math.max(50, Math.min(1000, least / 4))).unref();
  }
  // a start on a full disk raises the alarm at once, not at the first refused write: health
  // checks tell the truth from the start
  spaceAlarm = guard.admit(wal.fillStep, CLEAR_MARGIN);
  updateAlarm();
} catch (err) {
  post({ t: 'fatal', message: err instanceof Error ? err.message : String(err) });
  // nothing more this thread can do: the coordinator starts another one (or stops start-up)
  wal.close();
  process.exit(1);
}
