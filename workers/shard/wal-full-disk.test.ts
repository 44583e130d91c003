// The write-ahead log on a file system that fills up (issue 17, item 4): an append that
// cannot take its blocks throws and leaves the log as it was, later appends that fit go on,
// and a replay sees exactly the appends that returned. Needs root for the tmpfs mount.
import { describe, it, expect, afterEach } from 'vitest';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WriteAheadLog, encodeRecord, type WalRecord } from './wal.js';

const root = process.getuid?.() === 0;
let mnt = '';

afterEach(() => {
  if (!mnt) return;
  execFileSync('umount', [mnt]);
  rmSync(mnt, { recursive: true, force: true });
  mnt = '';
});

const rec = (rv: number, bytes = 100): WalRecord => ({ rv, prev: 0, ts: 1, type: 'ADDED', gr: 'configmaps', key: `ns/c${rv}`, value: Buffer.from('\u0000' + JSON.stringify({ v: 'x'.repeat(bytes) })) });

describe.skipIf(!root)('write-ahead log on a full file system', () => {
  it('refuses an append it has no blocks for, keeps what it took, and replays only that', () => {
    mnt = mkdtempSync(join(tmpdir(), 'kubeshard-wal-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=6m', 'tmpfs', mnt]);
    const wal = new WriteAheadLog(mnt);
    [...wal.replay()];
    wal.open(1);
    expect(wal.allocationFor(100)).toBe(4 * 1024 * 1024);
    wal.append([encodeRecord(rec(1))], 1, 1);
    // the fill took a step: small appends need nothing more
    expect(wal.allocationFor(1000)).toBe(0);
    // someone else takes the rest of the file system
    const fd = openSync(join(mnt, 'filler'), 'w');
    try {
      for (;;) writeSync(fd, Buffer.alloc(64 * 1024));
    } catch (err) {
      expect((err as NodeJS.ErrnoException).code).toBe('ENOSPC');
    }
    closeSync(fd);
    // a batch past the fill: ENOSPC, nothing of it kept
    const big = [2, 3, 4, 5, 6].map((rv) => encodeRecord(rec(rv, 1024 * 1024)));
    expect(wal.allocationFor(big.reduce((n, b) => n + b.length, 0))).toBe(4 * 1024 * 1024);
    expect(() => wal.append(big, 2, 6)).toThrow(/ENOSPC/);
    // one that fits in the fill still goes in, after the refused versions
    wal.append([encodeRecord(rec(7)), encodeRecord(rec(8))], 7, 8);
    wal.close();
    const again = new WriteAheadLog(mnt);
    expect([...again.replay()].map((r) => r.rv)).toEqual([1, 7, 8]);
  });
});
