import { describe, it, expect } from 'vitest';
import { LeaseManager } from './lease-manager.js';

describe('LeaseManager', () => {
  function setup(maxObjects = 1000) {
    let t = 1_000_000;
    const grants: number[] = [];
    const m = new LeaseManager({ leaseGrant: async (ttl) => (grants.push(ttl), { id: String(grants.length), ttl }) }, 60, 0.05, maxObjects, () => t);
    return { m, grants, advance: (ms: number) => (t += ms) };
  }

  it('grants TTL plus 5% (at most 60 s) and reuses the lease within that margin', async () => {
    const { m, grants, advance } = setup();
    expect(await m.leaseFor(600)).toBe('1');
    expect(grants).toEqual([630]);
    advance(20_000);
    expect(await m.leaseFor(600)).toBe('1');
    // past the margin the old lease would expire before the TTL: a new one
    advance(10_001);
    expect(await m.leaseFor(600)).toBe('2');
    expect(grants).toEqual([630, 630]);
  });

  it('caps the margin at 60 s, and a short TTL gets its own lease per second', async () => {
    const { m, grants, advance } = setup();
    await m.leaseFor(7200);
    expect(grants).toEqual([7260]);
    await m.leaseFor(2);
    expect(grants).toEqual([7260, 2]);
    advance(10);
    // a 2 s lease granted 10 ms ago does not outlive a new 2 s TTL
    await m.leaseFor(2);
    expect(grants.length).toBe(3);
  });

  it('shares one grant among concurrent callers, up to the object limit', async () => {
    const { m, grants } = setup(3);
    const ids = await Promise.all([1, 2, 3, 4, 5].map(() => m.leaseFor(3600)));
    expect(ids).toEqual(['1', '1', '1', '2', '2']);
    expect(grants.length).toBe(2);
  });
});
