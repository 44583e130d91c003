import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SnapshotEncoder, SnapshotError, SNAPSHOT_FORMAT, readSnapshotFile, readSnapshotHeader, type SnapshotHeader } from './snapshot-format.js';
import { encodePayload, recordKey } from '../../../workers/shard/record.js';

const rec = (rv: number, key: string, json = `{"v":${rv}}`) => encodePayload({ rv, prev: 0, ts: 1000 + rv, type: 'ADDED', gr: 'configmaps', key, value: Buffer.concat([Buffer.from([0]), Buffer.from(json)]) });

function header(rv: number, shardCount = 2): SnapshotHeader {
  return { format: SNAPSHOT_FORMAT, resourceVersion: rv, shardCount, shardMap: { configmaps: 1 }, created: '2026-01-01T00:00:00.000Z', source: 'server', shards: Array.from({ length: shardCount }, (_, i) => ({ compactedRv: i })) };
}

function write(dir: string, name: string, shards: Buffer[][], rv: number): string {
  const enc = new SnapshotEncoder(header(rv, shards.length));
  const out: Buffer[] = [];
  for (const s of shards) {
    for (const r of s) enc.record(r);
    out.push(...enc.take());
    enc.endShard();
  }
  out.push(...enc.finish());
  const path = join(dir, name);
  writeFileSync(path, Buffer.concat(out));
  return path;
}

describe('snapshot file format', () => {
  const dir = mkdtempSync(join(tmpdir(), 'snapshot-format-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads back the header and every record of every shard, in order', () => {
    const big = 'x'.repeat(3 << 20); // a record larger than the reader's and the writer's chunk
    const path = write(dir, 'a.snap', [[rec(1, 'default/a'), rec(4, 'default/b', `{"big":"${big}"}`)], [], [rec(2, 'default/c'), rec(9, 'default/d')]], 10);
    const seen: Array<[number, number, string]> = [];
    const s = readSnapshotFile(path, (shard, rv, r) => seen.push([shard, rv, recordKey(r)]));
    expect(s.header).toMatchObject({ format: 1, resourceVersion: 10, shardCount: 3, shardMap: { configmaps: 1 } });
    expect(s.header.shards.map((x) => x.compactedRv)).toEqual([0, 1, 2]);
    expect(s.records).toEqual([2, 0, 2]);
    expect(seen).toEqual([
      [0, 1, 'default/a'],
      [0, 4, 'default/b'],
      [2, 2, 'default/c'],
      [2, 9, 'default/d'],
    ]);
    expect(s.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(readSnapshotHeader(path).resourceVersion).toBe(10);
  });

  it('refuses a record out of version order or above the snapshot version when writing', () => {
    const enc = new SnapshotEncoder(header(5));
    enc.record(rec(3, 'a'));
    expect(() => enc.record(rec(3, 'b'))).toThrow(/out of order/);
    expect(() => enc.record(rec(6, 'b'))).toThrow(/out of order/);
  });

  it('refuses a damaged byte anywhere with a checksum message', () => {
    const path = write(dir, 'b.snap', [[rec(1, 'default/a'), rec(2, 'default/b')], [rec(3, 'default/c')]], 3);
    const good = readFileSync(path);
    // in a record's JSON: the structure holds, only the checksum tells
    const flipped = Buffer.from(good);
    const at = good.indexOf('"v":2');
    flipped[at + 4] ^= 0x01;
    writeFileSync(join(dir, 'c.snap'), flipped);
    expect(() => readSnapshotFile(join(dir, 'c.snap'))).toThrow(/SHA-256 checksum does not match/);
    // in the stored checksum itself
    const tail = Buffer.from(good);
    tail[tail.length - 1] ^= 0xff;
    writeFileSync(join(dir, 'd.snap'), tail);
    expect(() => readSnapshotFile(join(dir, 'd.snap'))).toThrow(SnapshotError);
  });

  it('refuses a truncated file and one that is not a snapshot', () => {
    const path = write(dir, 'e.snap', [[rec(1, 'default/a')], [rec(2, 'default/b')]], 2);
    const good = readFileSync(path);
    for (const cut of [good.length - 1, good.length - 40, 20, 5]) {
      writeFileSync(join(dir, 'f.snap'), good.subarray(0, cut));
      expect(() => readSnapshotFile(join(dir, 'f.snap'))).toThrow(SnapshotError);
    }
    writeFileSync(join(dir, 'g.snap'), Buffer.concat([Buffer.from('SQLite format 3\0'), Buffer.alloc(100)]));
    expect(() => readSnapshotFile(join(dir, 'g.snap'))).toThrow(/not a kubeshard snapshot/);
  });

  it('refuses an unknown format version', () => {
    const h = { ...header(1, 1), format: 99 };
    const enc = new SnapshotEncoder(h);
    enc.endShard();
    writeFileSync(join(dir, 'h.snap'), Buffer.concat(enc.finish()));
    expect(() => readSnapshotFile(join(dir, 'h.snap'))).toThrow(/format 99 is not supported/);
  });
});
