// A shard worker: the only writer of one LMDB environment.
//
// Thread ownership: everything in this file (the key index, the pending batch, the
// write side of the environment) belongs to this worker thread alone. The front thread
// reads the same environment through its own read transactions and never writes.
//
// Writes arrive in batches. Every batch that is waiting when the worker gets the CPU is
// committed in one synchronous LMDB transaction, so one fdatasync covers many writes
// (group commit): the busier the server, the bigger the batch. A write is acknowledged
// only after its transaction is durable.
import { parentPort, workerData } from 'node:worker_threads';
import { SharedState } from '../../src/coordinator/shared-state.js';
import { FLAG_LIVE, FLAG_TOMBSTONE, openShardEnv, type LogEntry } from './layout.js';
import { Expect, type Ack, type CommittedEvent, type FrontToShard, type ShardToFront, type ShardWorkerData, type WriteOp } from './protocol.js';

const data = workerData as ShardWorkerData;
const port = parentPort!;
const shared = new SharedState(data.shared);
const env = openShardEnv(data.path);

/** "gr\nkey" -> resourceVersion of the live object. Absent means no live object. */
const index = new Map<string, number>();
let maxRv = env.meta.get('maxRv') ?? 0;
let compactedRv = env.meta.get('compactedRv') ?? 0;

function post(msg: ShardToFront): void {
  port.postMessage(msg);
}

function loadIndex(): void {
  // revs are ordered by [gr, key, rv]: the last entry of each key is its newest revision.
  for (const { key, value } of env.revs.getRange({})) {
    const [gr, k, rv] = key;
    const ik = gr + '\n' + k;
    if (value[0] === FLAG_LIVE) index.set(ik, rv);
    else index.delete(ik);
    if (rv > maxRv) maxRv = rv;
  }
}

let pending: WriteOp[] = [];
let scheduled = false;

/**
 * KUBESHARD_COMMIT_STATS=1: once a second, the number of group commits and of writes per
 * commit (stderr). Group commit only pays if the batch grows with the load; this shows it.
 */
const stats = { commits: 0, ops: 0, maxBatch: 0 };
if (process.env.KUBESHARD_COMMIT_STATS) {
  setInterval(() => {
    if (stats.commits) console.error(`shard ${data.index}: ${stats.commits} commits/s, ${(stats.ops / stats.commits).toFixed(1)} writes/commit (max ${stats.maxBatch})`);
    stats.commits = stats.ops = stats.maxBatch = 0;
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

function flush(): void {
  scheduled = false;
  if (pending.length === 0) return;
  const ops = pending;
  pending = [];
  stats.commits++;
  stats.ops += ops.length;
  if (ops.length > stats.maxBatch) stats.maxBatch = ops.length;
  const acks: Ack[] = [];
  const events: CommittedEvent[] = [];
  const undo: Array<[string, number | undefined]> = [];
  let last = 0;
  // Every version this batch takes is above the counter now: readers may treat versions up to here as settled.
  shared.setPendingFrom(data.index, shared.currentRv() + 1);
  try {
    const now = Date.now();
    env.root.transactionSync(() => {
      for (const op of ops) {
        const ik = op.gr + '\n' + op.key;
        const cur = index.get(ik);
        if (op.expect === Expect.Absent) {
          if (cur !== undefined) {
            acks.push({ id: op.id, err: 'exists' });
            continue;
          }
        } else if (cur === undefined) {
          acks.push({ id: op.id, err: 'notfound' });
          continue;
        } else if (op.expect > 0 && cur !== op.expect) {
          acks.push({ id: op.id, err: 'conflict' });
          continue;
        }
        const rv = shared.nextRv();
        const deleted = op.type === 'DELETED';
        // The stored value (flag byte + JSON) gets an ArrayBuffer of its own, written once:
        // the JSON the front keeps is a view of it, and posting it copies exactly these bytes
        // (a pooled Buffer would drag its whole 8 KiB slab along into the front's cache).
        const text = op.head + rv + op.tail;
        const value = Buffer.allocUnsafeSlow(Buffer.byteLength(text) + 1);
        value[0] = deleted ? FLAG_TOMBSTONE : FLAG_LIVE;
        value.write(text, 1);
        const json = value.subarray(1);
        env.revs.putSync([op.gr, op.key, rv], value);
        const entry: LogEntry = { g: op.gr, k: op.key, t: op.type, p: cur ?? 0, ts: now };
        env.log.putSync(rv, entry);
        undo.push([ik, cur]);
        if (deleted) index.delete(ik);
        else index.set(ik, rv);
        acks.push({ id: op.id, rv });
        events.push({ id: op.id, type: op.type, gr: op.gr, key: op.key, rv, json });
        last = rv;
      }
      if (last) env.meta.putSync('maxRv', last);
    });
  } catch (err) {
    // The transaction rolled back: restore the index and fail every write of the batch.
    for (let i = undo.length - 1; i >= 0; i--) {
      const [ik, prev] = undo[i];
      if (prev === undefined) index.delete(ik);
      else index.set(ik, prev);
    }
    const message = err instanceof Error ? err.message : String(err);
    post({ t: 'commit', acks: ops.map((o) => ({ id: o.id, err: 'conflict' as const, message })), events: [], lastRv: shared.lastRv(data.index) });
    shared.setPendingFrom(data.index, 0);
    return;
  }
  if (last) {
    maxRv = last;
    shared.setLastRv(data.index, last);
  }
  post({ t: 'commit', acks, events, lastRv: last || shared.lastRv(data.index) });
  shared.setPendingFrom(data.index, 0);
}

/**
 * Drops history older than the retention window: for every log entry at or below the
 * new compacted revision, the revision it superseded is deleted (and a tombstone itself).
 * Works in slices so that a large compaction never holds up writes for long.
 */
function compact(retentionMs = data.retentionMs): void {
  const cutoff = Date.now() - retentionMs;
  const SLICE = 5000;
  for (;;) {
    const slice: Array<[number, LogEntry]> = [];
    for (const { key, value } of env.log.getRange({ start: compactedRv + 1, limit: SLICE })) {
      if (value.ts >= cutoff) break;
      slice.push([key, value]);
    }
    if (slice.length === 0) break;
    const to = slice[slice.length - 1][0];
    env.root.transactionSync(() => {
      for (const [rv, e] of slice) {
        if (e.p) env.revs.removeSync([e.g, e.k, e.p]);
        if (e.t === 'DELETED') env.revs.removeSync([e.g, e.k, rv]);
        env.log.removeSync(rv);
      }
      env.meta.putSync('compactedRv', to);
    });
    compactedRv = to;
    shared.setCompactedRv(data.index, to);
    if (slice.length < SLICE) break;
  }
  post({ t: 'compacted', compactedRv });
}

port.on('message', (msg: FrontToShard) => {
  switch (msg.t) {
    case 'write':
      if (closing) {
        post({ t: 'commit', acks: msg.ops.map((o) => ({ id: o.id, err: 'conflict' as const })), events: [], lastRv: shared.lastRv(data.index) });
        return;
      }
      for (const op of msg.ops) pending.push(op);
      schedule();
      break;
    case 'compact-now':
      compact(msg.retentionMs);
      break;
    case 'close':
      closing = true;
      clearInterval(compactTimer);
      flush();
      env.root.close().then(() => post({ t: 'closed' }), () => post({ t: 'closed' }));
      break;
  }
});

let compactTimer: NodeJS.Timeout;
try {
  // Ready first, with the high-water mark every commit writes into meta: the front then
  // loads its cache from the same environment while this thread builds its key index, the
  // two scans on two cores. No write is taken before the index is whole: loadIndex runs in
  // this same turn, so the front's first write messages wait in the port until it is done.
  shared.setLastRv(data.index, maxRv);
  shared.setCompactedRv(data.index, compactedRv);
  post({ t: 'ready', maxRv, compactedRv });
  const metaMax = maxRv;
  loadIndex();
  if (maxRv > metaMax) {
    // (a store written without the meta mark): never hand out a stored version again
    shared.raiseRv(maxRv);
    shared.setLastRv(data.index, maxRv);
  }
  compactTimer = setInterval(() => compact(), data.compactIntervalMs);
  compactTimer.unref();
} catch (err) {
  post({ t: 'fatal', message: err instanceof Error ? err.message : String(err) });
}
