// Backup and restore of the LMDB backend (issue 19): `kubeshard snapshot save | restore |
// status`, as etcdctl snapshot save and etcdutl snapshot restore / status are for etcd.
//
// save: one point of the global resourceVersion order, every shard's records up to it and
// none after (snapshot-format.ts holds the file). Two ways to it:
//   - the running server takes it (serveSnapshots): the CLI asks over a unix socket in the
//     data dir (0700, as the data dir; the socket 0600: only the server's user reaches it),
//     the server holds every shard's commits for one round trip of messages
//     (Coordinator.snapshotView), opens a read transaction per B-tree, lets the commits go,
//     and streams the records from those transactions and the records the B-trees did not
//     hold yet, while writes go on;
//   - no server answers: the CLI reads the data dir itself (the environments read-only, the
//     write-ahead logs' records the B-trees lack, as a start-up would apply them), and
//     checks that nothing in it changed meanwhile (a server started, or one that answers no
//     socket): the read is then one consistent state.
// Either way the file is written 0600 under a temporary name, checked whole, and renamed:
// a failed save leaves no file.
//
// restore: rebuilds a data dir from the file, as etcdutl does: every shard's environment
// with the records as they were (versions, previous versions, commit times), its compacted
// revision, and the snapshot's version as every shard's high-water mark, so the next write
// gets a higher version than anything in the snapshot. The target must be empty or new;
// the file's checksum is verified before the data dir appears (it is built beside it and
// renamed into place).
//
// Thread ownership: serveSnapshots runs on the server's main thread (the coordinator's);
// the save, restore and status functions run in the CLI process, on its one thread.
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { once } from 'node:events';
import { chmodSync, closeSync, existsSync, fchmodSync, ftruncateSync, fsyncSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { LmdbStorage as Coordinator } from './lmdb-storage.js';
import { LAYOUT, openShardEnv, type ShardEnv } from '../../../workers/shard/layout.js';
import { WriteAheadLog, fsyncDir } from '../../../workers/shard/wal.js';
import { encodePayload, recordGr, recordKey, recordType } from '../../../workers/shard/record.js';
import { lastTxnId } from '../../../workers/shard/cache-index.js';
import { SnapshotEncoder, SnapshotError, SNAPSHOT_FORMAT, readSnapshotFile, readSnapshotHeader, type SnapshotHeader, type SnapshotSummary } from './snapshot-format.js';

/** The server's snapshot socket, in the data dir. */
export const SNAPSHOT_SOCKET = 'snapshot.sock';
/** records read from a B-tree per turn of the server's event loop, at most, and bytes */
const RANGE = 2000;
const SLICE_BYTES = 256 * 1024;
/** a unix socket's path is at most this long (sun_path, with its terminating zero) */
const MAX_SOCKET_PATH = 107;

export interface Layout {
  shardCount: number;
  shardMap: Record<string, number>;
}

// ---------------------------------------------------------------------------------------
// The server's side.

export interface SnapshotService {
  close(): Promise<void>;
}

/**
 * Serves snapshots on <dataDir>/snapshot.sock. A client sends "save\n"; the answer is "OK\n"
 * and the file's bytes, or "ERR <why>\n". null when the socket cannot be made (a path too
 * long, another live server on the data dir): the CLI then reads the data dir itself.
 */
export async function serveSnapshots(coord: Coordinator, dataDir: string, layout: Layout, warn: (m: string) => void): Promise<SnapshotService | null> {
  const path = join(dataDir, SNAPSHOT_SOCKET);
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH) {
    warn(`snapshot socket not served: ${path} is longer than a unix socket path may be; "kubeshard snapshot save" reads this data dir only while the server is stopped`);
    return null;
  }
  if (existsSync(path)) {
    if (await answers(path)) {
      warn(`snapshot socket not served: ${path} answers, another server runs on this data dir`);
      return null;
    }
    unlinkSync(path); // left by a server that did not stop cleanly
  }
  const sockets = new Set<Socket>();
  const server: Server = createServer((sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => {});
    // (a client that never says what it wants does not keep its socket)
    sock.setTimeout(10_000, () => sock.destroy());
    let line = '';
    const onData = (d: Buffer) => {
      line += d.toString('latin1');
      if (!line.includes('\n') && line.length < 256) return;
      sock.off('data', onData);
      sock.setTimeout(0);
      const op = line.slice(0, line.indexOf('\n')).trim();
      if (op !== 'save') {
        sock.end(`ERR unknown request ${JSON.stringify(op.slice(0, 64))}\n`);
        return;
      }
      streamSnapshot(coord, layout, sock).catch((err) => {
        warn(`snapshot: ${err instanceof Error ? err.message : String(err)}`);
        sock.destroy();
      });
    };
    sock.on('data', onData);
  });
  server.listen(path);
  await once(server, 'listening');
  chmodSync(path, 0o600);
  return {
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      rmSync(path, { force: true });
    },
  };
}

async function streamSnapshot(coord: Coordinator, layout: Layout, sock: Socket): Promise<void> {
  let view;
  try {
    view = await coord.snapshotView();
  } catch (err) {
    sock.end(`ERR ${(err instanceof Error ? err.message : String(err)).replace(/\n/g, ' ')}\n`);
    return;
  }
  try {
    const enc = new SnapshotEncoder(header(view.rv, layout, 'server', view.shards.map((s) => ({ compactedRv: s.compactedRv }))));
    await send(sock, [Buffer.from('OK\n')]);
    for (const s of view.shards) {
      // the B-tree's records up to the version its meta names (a record past it, of a
      // transaction lmdb-js split, is among the newer ones too), a slice per turn: the
      // transaction keeps them as they were
      let from = 1;
      for (;;) {
        let n = 0;
        let bytes = 0;
        let more = false;
        for (const { key, value } of s.env.hist.getRange({ start: from, end: s.treeRv + 1, limit: RANGE, transaction: s.txn })) {
          enc.record(value);
          from = key + 1;
          n++;
          // (a slice of the main thread's time stays short whatever the objects' sizes)
          if ((bytes += value.length) >= SLICE_BYTES) {
            more = true;
            break;
          }
        }
        await send(sock, enc.take());
        if (!more && n < RANGE) break;
      }
      for (const e of s.newer) enc.record(e.value);
      enc.endShard();
    }
    await send(sock, enc.finish());
    sock.end();
  } finally {
    for (const s of view.shards) s.txn.done();
  }
}

/** Writes the chunks, waiting whenever the socket's buffer is full (a slow reader holds only its own copy). */
async function send(sock: Socket, chunks: Buffer[]): Promise<void> {
  for (const c of chunks) {
    if (sock.destroyed) throw new Error('the client went away');
    if (!sock.write(c)) {
      await new Promise<void>((resolve, reject) => {
        const done = () => {
          sock.off('drain', done);
          sock.off('close', gone);
          resolve();
        };
        const gone = () => {
          sock.off('drain', done);
          reject(new Error('the client went away'));
        };
        sock.once('drain', done);
        sock.once('close', gone);
      });
    }
  }
}

function header(rv: number, layout: Layout, source: SnapshotHeader['source'], shards: SnapshotHeader['shards']): SnapshotHeader {
  return { format: SNAPSHOT_FORMAT, resourceVersion: rv, shardCount: layout.shardCount, shardMap: layout.shardMap, created: new Date().toISOString(), source, shards };
}

/** Whether a server answers on the socket. */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const c = createConnection(path);
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
}

// ---------------------------------------------------------------------------------------
// save (the CLI)

export interface SaveResult {
  summary: SnapshotSummary;
  /** 'server': the running server took it; 'data-dir': read from the data dir */
  via: SnapshotHeader['source'];
}

/**
 * Saves a snapshot of the data dir's storage to `file`: from the server running on it, or
 * from the data dir itself when none answers.
 */
export async function saveSnapshot(dataDir: string, file: string): Promise<SaveResult> {
  dataDir = resolve(dataDir);
  file = resolve(file);
  const layout = readLayout(dataDir);
  if (!existsSync(dirname(file))) throw new SnapshotError(`cannot save to ${file}: the directory ${dirname(file)} does not exist`);
  if (existsSync(file) && statSync(file).isDirectory()) throw new SnapshotError(`cannot save to ${file}: it is a directory`);
  const tmp = join(dirname(file), `.${basename(file)}.part-${process.pid}`);
  const fd = openSync(tmp, 'wx', 0o600);
  let ok = false;
  try {
    fchmodSync(fd, 0o600);
    const sock = join(dataDir, SNAPSHOT_SOCKET);
    let via: SnapshotHeader['source'] = 'server';
    if (!(Buffer.byteLength(sock) <= MAX_SOCKET_PATH && existsSync(sock) && (await fromServer(sock, fd)))) {
      via = 'data-dir';
      await fromDataDir(dataDir, layout, fd);
    }
    fsyncSync(fd);
    closeSync(fd);
    // the file as written, read back whole: a save that reports success has a good file
    const summary = readSnapshotFile(tmp);
    renameSync(tmp, file);
    fsyncDir(dirname(file));
    ok = true;
    return { summary, via };
  } finally {
    if (!ok) {
      try {
        closeSync(fd);
      } catch {
        /* closed already */
      }
      rmSync(tmp, { force: true });
    }
  }
}

/**
 * Asks the server on the socket for a snapshot and writes it to fd. False when no server
 * answers there (a socket a crashed server left); throws when one answers and fails.
 */
function fromServer(path: string, fd: number): Promise<boolean> {
  return new Promise((resolvePromise, reject) => {
    const c = createConnection(path);
    let connected = false;
    let head: Buffer | null = Buffer.alloc(0);
    let pos = 0;
    let failed = false;
    c.once('connect', () => {
      connected = true;
      c.write('save\n');
    });
    c.on('data', (d: Buffer) => {
      if (failed) return;
      try {
        if (head) {
          head = Buffer.concat([head, d]);
          const nl = head.indexOf(0x0a);
          if (nl < 0) {
            if (head.length > 4096) throw new Error('the server answered something else than a snapshot');
            return;
          }
          const status = head.subarray(0, nl).toString('utf8');
          if (status !== 'OK') throw new SnapshotError(`the server could not take a snapshot: ${status.replace(/^ERR /, '')}`);
          d = head.subarray(nl + 1);
          head = null;
        }
        // (a synchronous write: the socket is read no faster than the file is written)
        let off = 0;
        while (off < d.length) off += writeSync(fd, d, off, d.length - off, pos + off);
        pos += d.length;
      } catch (err) {
        failed = true;
        c.destroy();
        reject(err);
      }
    });
    c.once('error', (err: NodeJS.ErrnoException) => {
      if (failed) return;
      failed = true;
      if (!connected && (err.code === 'ECONNREFUSED' || err.code === 'ENOENT')) resolvePromise(false);
      else reject(new Error(`reading the snapshot from the server failed: ${err.message}`));
    });
    c.once('close', () => {
      if (failed) return;
      if (head) reject(new Error('the server closed the connection without a snapshot'));
      else resolvePromise(true);
    });
  });
}

/** The data dir's shard count and placement (shards.json, written at its first start). */
export function readLayout(dataDir: string): Layout {
  const file = join(dataDir, 'shards.json');
  if (!existsSync(file)) throw new SnapshotError(`${dataDir} is not a kubeshard data dir (no shards.json): nothing to save`);
  const l = JSON.parse(readFileSync(file, 'utf8'));
  return { shardCount: l.shardCount, shardMap: l.shardMap ?? {} };
}

/** What changes in a shard's directory when anything writes to it. */
function fingerprint(dataDir: string, envs: ShardEnv[]): string {
  const parts: string[] = [];
  envs.forEach((env, i) => {
    const dir = join(dataDir, `shard-${i}`);
    parts.push(`${i}:${lastTxnId(env.root)}`);
    for (const n of readdirSync(dir).sort()) {
      if (n !== 'data.mdb' && !/^wal-\d{16}\.log$/.test(n)) continue;
      const st = statSync(join(dir, n), { bigint: true });
      parts.push(`${n}:${st.size}:${st.mtimeNs}`);
    }
  });
  return parts.join(' ');
}

const DATA_DIR_TRIES = 3;

/**
 * The snapshot read from the data dir: for each shard, its write-ahead log first, then its
 * B-tree in one read transaction (a log segment removed in between was in the B-tree
 * before it went). The snapshot's version is the highest one stored anywhere, as a start
 * would raise its counter to. Taken again when anything changed during the read.
 */
async function fromDataDir(dataDir: string, layout: Layout, fd: number): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const envs: ShardEnv[] = [];
    // (what an earlier attempt wrote goes)
    ftruncateSync(fd, 0);
    try {
      for (let i = 0; i < layout.shardCount; i++) {
        const dir = join(dataDir, `shard-${i}`);
        if (!existsSync(join(dir, 'data.mdb'))) throw new SnapshotError(`${dir} holds no LMDB environment: the data dir is incomplete`);
        const env = openShardEnv(dir, true);
        envs.push(env);
        if (env.meta.get('layout') !== LAYOUT) throw new SnapshotError(`${dir} is of an older storage layout: start the server on it once (it upgrades the layout), then save`);
      }
      const before = fingerprint(dataDir, envs);
      const shards = envs.map((env, i) => {
        const logged = [...new WriteAheadLog(join(dataDir, `shard-${i}`)).replay()];
        env.root.resetReadTxn();
        const txn = env.root.useReadTransaction();
        const treeRv: number = env.meta.get('maxRv', { transaction: txn }) ?? 0;
        const compactedRv: number = env.meta.get('compactedRv', { transaction: txn }) ?? 0;
        const newer = logged.filter((r) => r.rv > treeRv);
        return { env, txn, treeRv, compactedRv, newer };
      });
      try {
        let rv = 0;
        for (const s of shards) rv = Math.max(rv, s.treeRv, s.newer.length ? s.newer[s.newer.length - 1].rv : 0);
        const enc = new SnapshotEncoder(header(rv, layout, 'data-dir', shards.map((s) => ({ compactedRv: s.compactedRv }))));
        let pos = 0;
        const write = (chunks: Buffer[]) => {
          for (const c of chunks) {
            let off = 0;
            while (off < c.length) off += writeSync(fd, c, off, c.length - off, pos + off);
            pos += c.length;
          }
        };
        for (const s of shards) {
          let last = 0;
          let n = 0;
          for (const { key, value } of s.env.hist.getRange({ start: 1, end: s.treeRv + 1, transaction: s.txn })) {
            enc.record(value);
            last = key;
            if (++n % RANGE === 0) write(enc.take());
          }
          // (the log's records in version order, each once: a replayed segment may repeat none, but a torn one ends early)
          for (const r of s.newer) {
            if (r.rv <= last) continue;
            enc.record(encodePayload(r));
            last = r.rv;
          }
          enc.endShard();
          write(enc.take());
        }
        write(enc.finish());
      } finally {
        for (const s of shards) s.txn.done();
      }
      const after = fingerprint(dataDir, envs);
      const sock = join(dataDir, SNAPSHOT_SOCKET);
      const serverNow = Buffer.byteLength(sock) <= MAX_SOCKET_PATH && existsSync(sock) && (await answers(sock));
      if (before === after && !serverNow) return;
      if (attempt >= DATA_DIR_TRIES) throw new SnapshotError(`the data dir ${dataDir} changed while it was read, ${attempt} times: a server is writing to it without answering on ${SNAPSHOT_SOCKET}; stop it, or save through it`);
      ftruncateSync(fd, 0);
      if (serverNow && (await fromServer(sock, fd))) return;
    } finally {
      for (const env of envs) await env.root.close();
    }
  }
}

// ---------------------------------------------------------------------------------------
// restore (the CLI)

export interface RestoreFlags {
  /** --shards, when given: must be the snapshot's */
  shards?: number;
  /** --shard-map, when given: must be the snapshot's */
  shardMap?: Record<string, number>;
  /**
   * --bump-revision, as etcdutl's: the restored store goes on this far above the snapshot's
   * version, so that no version a client saw on the old store after the snapshot is handed
   * out again for another change. Needs markCompacted.
   */
  bumpRevision?: number;
  /**
   * --mark-compacted, as etcdutl's: the restored store's history ends at its new version
   * (only the objects live at the snapshot are kept), so a watch from an older version is
   * answered 410 Expired and its informer lists afresh rather than missing changes.
   */
  markCompacted?: boolean;
}

const sameMap = (a: Record<string, number>, b: Record<string, number>) => JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());

/** records put per LMDB transaction */
const RESTORE_BATCH = 5000;

/**
 * Builds a data dir from a snapshot file (beside the target, renamed into place once the
 * file's checksum matched). The target must not exist or be empty.
 */
export async function restoreSnapshot(file: string, dataDir: string, flags: RestoreFlags = {}): Promise<SnapshotSummary> {
  file = resolve(file);
  dataDir = resolve(dataDir);
  const h = readSnapshotHeader(file);
  if ((flags.shards !== undefined && flags.shards !== h.shardCount) || (flags.shardMap !== undefined && !sameMap(flags.shardMap, h.shardMap))) {
    throw new SnapshotError(
      `the snapshot was taken with ${h.shardCount} shards and shard map ${JSON.stringify(h.shardMap)}, not --shards ${flags.shards ?? h.shardCount} --shard-map ${JSON.stringify(flags.shardMap ?? h.shardMap)}: objects are placed by these settings, so a restore keeps them (drop the flags, or give the snapshot's)`,
    );
  }
  const bump = flags.bumpRevision ?? 0;
  if (!Number.isSafeInteger(bump) || bump < 0) throw new SnapshotError(`--bump-revision ${bump}: want a whole number of versions`);
  if (bump > 0 && !flags.markCompacted) throw new SnapshotError('--bump-revision needs --mark-compacted: clients that saw versions above the snapshot must list afresh, not watch on from them');
  if (flags.markCompacted && bump === 0) throw new SnapshotError('--mark-compacted needs --bump-revision: the versions after the snapshot are handed out again, so the compaction point must be above them');
  const exists = existsSync(dataDir);
  if (exists) {
    if (!statSync(dataDir).isDirectory()) throw new SnapshotError(`${dataDir} is not a directory`);
    if (readdirSync(dataDir).length > 0) throw new SnapshotError(`the data dir ${dataDir} is not empty: restore into a new or empty directory`);
  }
  mkdirSync(dirname(dataDir), { recursive: true });
  // A new data dir is built beside its place and renamed there whole. An empty one that is
  // there already (perhaps a mount point) is built inside, in a hidden directory whose
  // entries move up at the end, shards.json last: without it no server takes the dir for
  // a restored one.
  const tmp = exists ? mkdtempSync(join(dataDir, '.restore-')) : mkdtempSync(join(dirname(dataDir), `.${basename(dataDir)}.restore-`));
  chmodSync(tmp, 0o700);
  const envs: ShardEnv[] = [];
  let done = false;
  try {
    for (let i = 0; i < h.shardCount; i++) {
      const dir = join(tmp, `shard-${i}`);
      mkdirSync(dir, { mode: 0o700 });
      envs.push(openShardEnv(dir));
    }
    let batch: Array<[number, Buffer]> = [];
    let batchShard = 0;
    const put = () => {
      if (batch.length === 0) return;
      const env = envs[batchShard];
      const puts = batch;
      batch = [];
      env.root.transactionSync(() => {
        for (const [rv, rec] of puts) env.hist.putSync(rv, rec);
      });
    };
    /** (--mark-compacted) the current shard's objects live at the snapshot: key -> version and record */
    let live = new Map<string, [number, Buffer]>();
    const putLive = () => {
      for (const r of [...live.values()].sort((x, y) => x[0] - y[0])) {
        batch.push(r);
        if (batch.length >= RESTORE_BATCH) put();
      }
      live = new Map();
      put();
    };
    const summary = readSnapshotFile(file, (shard, rv, rec) => {
      if (shard !== batchShard) flags.markCompacted ? putLive() : put();
      batchShard = shard;
      if (flags.markCompacted) {
        // the newest record of a key is its state at the snapshot; a deletion, none
        const k = recordGr(rec) + '\n' + recordKey(rec);
        if (recordType(rec) === 'DELETED') live.delete(k);
        else live.set(k, [rv, Buffer.from(rec)]);
        return;
      }
      batch.push([rv, Buffer.from(rec)]);
      if (batch.length >= RESTORE_BATCH) put();
    });
    if (flags.markCompacted) putLive();
    put();
    const top = summary.header.resourceVersion + bump;
    envs.forEach((env, i) =>
      env.root.transactionSync(() => {
        // the snapshot's version (bumped) is every shard's mark: a start raises the counter to it
        env.meta.putSync('maxRv', top);
        env.meta.putSync('compactedRv', flags.markCompacted ? top : summary.header.shards[i].compactedRv);
      }),
    );
    for (const env of envs.splice(0)) {
      await env.root.flushed;
      await env.root.close();
    }
    writeFileSync(join(tmp, 'shards.json'), JSON.stringify({ shardCount: h.shardCount, shardMap: h.shardMap }) + '\n', { mode: 0o600 });
    if (exists) {
      for (const n of readdirSync(tmp).sort((x, y) => (x === 'shards.json' ? 1 : y === 'shards.json' ? -1 : 0))) renameSync(join(tmp, n), join(dataDir, n));
      rmSync(tmp, { recursive: true });
      fsyncDir(dataDir);
    } else {
      renameSync(tmp, dataDir);
      fsyncDir(dirname(dataDir));
    }
    done = true;
    return summary;
  } finally {
    if (!done) {
      for (const env of envs) await env.root.close().catch(() => {});
      rmSync(tmp, { recursive: true, force: true });
    }
  }
}

// ---------------------------------------------------------------------------------------
// status (the CLI)

export interface SnapshotStatus extends SnapshotSummary {
  /** objects live at the snapshot's version */
  objects: number;
}

/** Reads and checks the whole file, as etcdutl snapshot status does. */
export function snapshotStatus(file: string): SnapshotStatus {
  const live = new Set<string>();
  const summary = readSnapshotFile(resolve(file), (_shard, _rv, rec) => {
    const k = recordGr(rec) + '\n' + recordKey(rec);
    if (recordType(rec) === 'DELETED') live.delete(k);
    else live.add(k);
  });
  return { ...summary, objects: live.size };
}
