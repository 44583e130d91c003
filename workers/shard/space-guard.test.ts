import { describe, it, expect } from 'vitest';
import { SpaceGuard, treeCost, reserveFor, RESERVE_BYTES } from './space-guard.js';
import { fillStepFor, ZERO_STEP } from './wal.js';
import { SharedState } from '../../src/storage/lmdb/shared-state.js';

const MiB = 1024 * 1024;

describe('space guard', () => {
  it('admits a batch only while the file system keeps its log fill, every shard\'s tree debt and the reserve', () => {
    const shared = SharedState.create(2);
    let free = 20 * MiB;
    const g0 = new SpaceGuard('/data/shard-0', shared, 0, RESERVE_BYTES, () => free);
    const g1 = new SpaceGuard('/data/shard-1', shared, 1, RESERVE_BYTES, () => free);
    expect(g0.admit(4 * MiB, 1 * MiB)).toBe('');
    // the other shard's records not yet in its B-tree count against this one's batch
    g1.addDebt(8 * MiB);
    const why = g0.admit(4 * MiB, 1 * MiB);
    expect(why).toMatch(/^database space exceeded: 20\.0 MiB free on the data directory's file system, 21\.0 MiB needed/);
    expect(g0.admit(0, 1 * MiB)).toBe('');
    g1.addDebt(-8 * MiB);
    expect(shared.treeDebt(1)).toBe(0);
    free = RESERVE_BYTES - 1;
    expect(g0.admit(0, 0)).not.toBe('');
  });

  it('counts a file system it cannot measure as full', () => {
    const g = new SpaceGuard('/gone', SharedState.create(1), 0, RESERVE_BYTES, () => {
      throw new Error('ENOENT');
    });
    expect(g.admit(0, 0)).toMatch(/^database space exceeded: cannot measure free space on \/gone: ENOENT/);
  });

  it('estimates a large record as its pages and a small one at twice its size', () => {
    expect(treeCost(100_000)).toBe(Math.ceil(100_064 / 4096) * 4096 + 4096);
    expect(treeCost(100)).toBe(328);
  });

  it('scales the reserve and the log\'s fill step down on a small file system', () => {
    expect(reserveFor(500 * 1024 * MiB)).toBe(RESERVE_BYTES);
    expect(reserveFor(30 * MiB)).toBe(30 * MiB / 16);
    expect(reserveFor(4 * MiB)).toBe(1 * MiB);
    expect(fillStepFor(500 * 1024 * MiB)).toBe(ZERO_STEP);
    expect(fillStepFor(30 * MiB)).toBe(960 * 1024);
    expect(fillStepFor(1 * MiB)).toBe(256 * 1024);
  });
});
