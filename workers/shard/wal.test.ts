import { describe, it, expect } from 'vitest';
import { mkdtempSync, readdirSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WriteAheadLog, decodeRecords, encodeEntry, encodeRecord, payload, type WalRecord } from './wal.js';

const rec = (rv: number, type: WalRecord['type'] = 'ADDED'): WalRecord => ({
  rv,
  prev: rv - 1,
  ts: 1_700_000_000_000 + rv,
  type,
  gr: 'deployments.apps',
  key: `ns/név-${rv}`,
  value: Buffer.from(`\u0000{"n":${rv}}`),
});

describe('write-ahead log', () => {
  it('decodes what it encodes, stopping at zeros, a torn record or a bad checksum', () => {
    const a = encodeRecord(rec(7));
    const b = encodeRecord(rec(8, 'DELETED'));
    const all = Buffer.concat([a, b, Buffer.alloc(64)]);
    const got = [...decodeRecords(all)];
    expect(got.map((r) => [r.rv, r.type, r.key, r.gr, r.prev, r.ts])).toEqual([
      [7, 'ADDED', 'ns/név-7', 'deployments.apps', 6, 1_700_000_000_007],
      [8, 'DELETED', 'ns/név-8', 'deployments.apps', 7, 1_700_000_000_008],
    ]);
    expect(Buffer.from(got[1].value).toString()).toBe('\u0000{"n":8}');
    // torn: the second record cut short
    expect([...decodeRecords(Buffer.concat([a, b.subarray(0, b.length - 3)]))].map((r) => r.rv)).toEqual([7]);
    // corrupt: one payload byte flipped
    const bad = Buffer.from(b);
    bad[bad.length - 2] ^= 0xff;
    expect([...decodeRecords(Buffer.concat([a, bad, a]))].map((r) => r.rv)).toEqual([7]);
  });

  it('makes the same entry from an object\'s JSON text as from its value, in a buffer of its own', () => {
    const { value: _, ...head } = rec(9);
    const e = encodeEntry(head, 1, '{"n":"név"}');
    expect(e.equals(encodeRecord({ ...head, value: Buffer.from('\u0001{"n":"név"}') }))).toBe(true);
    expect(e.buffer.byteLength).toBe(e.length);
    expect(payload(e).byteOffset).toBe(8);
  });

  it('replays appended records after a restart, and removes segments once flushed', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kubeshard-wal-'));
    try {
      const w = new WriteAheadLog(dir);
      expect([...w.replay()]).toEqual([]);
      w.open(1);
      w.append([encodeRecord(rec(1)), encodeRecord(rec(2))], 1, 2);
      w.append([encodeRecord(rec(5))], 5, 5);
      w.close();
      // a torn tail in the segment: whatever follows the last whole record is ignored
      const seg = join(dir, readdirSync(dir).find((n) => n.startsWith('wal-'))!);
      const bytes = readFileSync(seg);
      const end = [encodeRecord(rec(1)), encodeRecord(rec(2)), encodeRecord(rec(5))].reduce((n, b) => n + b.length, 0);
      bytes.fill(0x41, end, end + 5);
      writeFileSync(seg, bytes);

      const w2 = new WriteAheadLog(dir);
      expect([...w2.replay()].map((r) => r.rv)).toEqual([1, 2, 5]);
      w2.open(6);
      w2.append([encodeRecord(rec(6))], 6, 6);
      expect(readdirSync(dir).filter((n) => n.startsWith('wal-')).length).toBe(2);
      w2.release(4); // the old segment still holds 5
      expect(readdirSync(dir).filter((n) => n.startsWith('wal-')).length).toBe(2);
      w2.release(6); // the newest segment always stays
      expect(readdirSync(dir).filter((n) => n.startsWith('wal-'))).toEqual(['wal-0000000000000006.log']);
      w2.close();
      const w3 = new WriteAheadLog(dir);
      expect([...w3.replay()].map((r) => r.rv)).toEqual([6]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
