// The shard's space reserve: etcd's NOSPACE alarm, measured as free space on the file
// system rather than as a database quota.
//
// Why: a shard that runs out of space half-way through its work is the dangerous case. The
// log's fill, the B-tree's transaction (copy-on-write pages, the map file growing) and
// compaction each need new blocks, and a B-tree that cannot take records the log already
// acknowledged leaves the shard unable to go on. So a batch is logged only while the file
// system keeps, after it, enough for the log's fill, for the B-tree to take every record
// logged and not yet in it (the shards' "tree debt", summed across shards in shared memory:
// they usually share the file system) and a fixed reserve for what cannot be estimated
// (branch pages, LMDB's free list while readers hold old pages, compaction, the lock
// file). Below it, the batch is refused with the reason (the front answers 500
// InternalError, "database space exceeded", as kube does for etcd's NOSPACE), reads go on,
// and writes resume by themselves once space is freed: every batch measures again.
//
// Thread ownership: one SpaceGuard per shard worker thread.
import { statfsSync } from 'node:fs';
import type { SharedState } from '../../src/storage/lmdb/shared-state.js';

/** Free space kept below every admitted batch, for what the estimates do not cover: at most this... */
export const RESERVE_BYTES = 8 * 1024 * 1024;

/**
 * ... or a 16th of a small file system (at least 1 MiB): on a 30 MB disk 8 MiB would keep
 * a quarter of it unused. What the reserve covers grows with the database, which a small
 * disk keeps small.
 */
export function reserveFor(total: number): number {
  return Math.min(RESERVE_BYTES, Math.max(1024 * 1024, Math.floor(total / 16)));
}

/** The size of the file system `dir` is on, in bytes (0 when it cannot be measured). */
export function fileSystemBytes(dir: string): number {
  try {
    const s = statfsSync(dir);
    return s.blocks * s.bsize;
  } catch {
    return 0;
  }
}

const PAGE = 4096;
/** LMDB stores a value above about half a page in overflow pages of its own */
const OVERFLOW_FROM = 2000;

/**
 * What the B-tree is estimated to take for a record of `n` bytes: overflow pages rounded up,
 * plus a page of leaf and branch copies; a small record, twice its size (leaves split half
 * full, and every transaction copies the path to them).
 */
export function treeCost(n: number): number {
  return n > OVERFLOW_FROM ? Math.ceil((n + 64) / PAGE) * PAGE + PAGE : 2 * (n + 64);
}

const mib = (n: number) => `${(n / (1024 * 1024)).toFixed(1)} MiB`;

export class SpaceGuard {
  constructor(
    private readonly dir: string,
    private readonly shared: SharedState,
    private readonly shard: number,
    readonly reserve = RESERVE_BYTES,
    private readonly free: () => number = () => {
      const s = statfsSync(dir);
      return s.bavail * s.bsize;
    },
  ) {}

  /** Records logged by this shard and not yet committed to its B-tree, as estimated bytes. */
  get debt(): number {
    return this.shared.treeDebt(this.shard);
  }

  addDebt(bytes: number): void {
    this.shared.setTreeDebt(this.shard, Math.max(0, this.debt + bytes));
  }

  /**
   * '' when a batch may be logged that takes `logBytes` of new blocks in the log and will
   * cost the B-tree `treeBytes`; otherwise why not (the Status message's detail). A file
   * system that cannot even be asked counts as full: nothing is logged that may not fit.
   */
  admit(logBytes: number, treeBytes: number): string {
    let free: number;
    try {
      free = this.free();
    } catch (err) {
      return `database space exceeded: cannot measure free space on ${this.dir}: ${err instanceof Error ? err.message : String(err)}`;
    }
    let debt = 0;
    for (let i = 0; i < this.shared.shardCount; i++) debt += this.shared.treeDebt(i);
    const need = logBytes + treeBytes + debt + this.reserve;
    if (free >= need) return '';
    return `database space exceeded: ${mib(free)} free on the data directory's file system, ${mib(need)} needed to take this write and keep the ${mib(this.reserve)} reserve; writes resume once space is freed`;
  }
}
