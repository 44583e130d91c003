// (The time bounds below are generous guards against the quadratic and exponential
// behaviours they replaced, which took seconds to minutes: a loaded CI host must not trip them.)
import { describe, it, expect } from 'vitest';
import { JSON_PATCH_MAX_COPY_BYTES, PatchClock, getMaxObjectBytes, jsonSizeUpTo, nestsDeeperThan, refuseOversized, setMaxObjectBytes } from './patch-limits.js';
import { jsonPatch, type JsonPatchStats } from './patch.js';
import { strategicMergePatch } from './strategic-merge.js';
import { rootNode } from './schema-walk.js';

describe('jsonSizeUpTo', () => {
  it('is the compact JSON length for ASCII values', () => {
    for (const v of [null, true, false, 0, -12.5, 'abc', [], {}, [1, 'a', null], { a: 1, b: { c: [true, 'x'] } }, { k: undefined, j: 2 }]) {
      expect(jsonSizeUpTo(v, Infinity)).toBe(JSON.stringify(v).length);
    }
  });
  it('stops soon after passing the cap', () => {
    const big = Array.from({ length: 100_000 }, (_, i) => ({ i }));
    // (the array's commas alone pass the cap: nothing of it is pushed)
    expect(jsonSizeUpTo(big, 1000)).toBeGreaterThan(1000);
    const obj = Object.fromEntries(big.map((x) => ['key' + x.i, x]));
    const n = jsonSizeUpTo(obj, 1000);
    expect(n).toBeGreaterThan(1000);
    expect(n).toBeLessThan(1000 + 100);
  });
  it('can leave out metadata.managedFields', () => {
    const o = { metadata: { name: 'a', managedFields: [{ manager: 'x'.repeat(100) }] }, data: { a: 'b' } };
    expect(jsonSizeUpTo(o, Infinity, true)).toBe(JSON.stringify({ metadata: { name: 'a' }, data: { a: 'b' } }).length);
  });
});

describe('nestsDeeperThan', () => {
  it('counts objects and arrays alike, without recursion', () => {
    expect(nestsDeeperThan({ a: [{ b: 1 }] }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: [{ b: {} }] }, 3)).toBe(true);
    expect(nestsDeeperThan(JSON.parse('['.repeat(200_000) + ']'.repeat(200_000)), 1000)).toBe(true);
    expect(nestsDeeperThan('scalar', 0)).toBe(false);
  });
});

describe('refuseOversized', () => {
  it('weighs only when the bound passes the limit, and answers as storage', () => {
    const was = getMaxObjectBytes();
    setMaxObjectBytes(1000);
    try {
      const big = { data: { a: 'x'.repeat(2000) } };
      expect(() => refuseOversized(big, 500)).not.toThrow();
      expect(() => refuseOversized(big, 5000)).toThrow(expect.objectContaining({ code: 500, message: 'etcdserver: request is too large' }));
      expect(() => refuseOversized({ data: { a: 'x' } }, 5000)).not.toThrow();
    } finally {
      setMaxObjectBytes(was);
    }
  });
});

describe('JSON patch bounds', () => {
  it('30 self-doubling copies stop at the copy allowance (422) in milliseconds', () => {
    const doc = { metadata: { finalizers: ['x'.repeat(100)] } };
    const ops = Array.from({ length: 30 }, () => ({ op: 'copy', from: '/metadata/finalizers', path: '/metadata/finalizers/-' }));
    const t0 = performance.now();
    expect(() => jsonPatch(doc, ops)).toThrow(expect.objectContaining({ code: 422, reason: 'Invalid', message: 'the server rejected our request due to an error in our request' }));
    expect(performance.now() - t0).toBeLessThan(5000);
  });
  it('reports what copies added', () => {
    const stats: JsonPatchStats = { copied: 0 };
    jsonPatch({ a: 'xyz' }, [{ op: 'copy', from: '/a', path: '/b' }, { op: 'copy', from: '/a', path: '/c' }], stats);
    expect(stats.copied).toBe(10);
    expect(stats.copied).toBeLessThan(JSON_PATCH_MAX_COPY_BYTES);
  });
  it('more than 10,000 operations are 413 before any is applied', () => {
    const ops = Array.from({ length: 10_001 }, () => ({ op: 'bogus' }));
    expect(() => jsonPatch({}, ops)).toThrow(expect.objectContaining({ code: 413, message: 'Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001' }));
  });
  it('a move hands its value over instead of copying it', () => {
    const inner = { deep: { x: 1 } };
    const out = jsonPatch({ a: inner }, [{ op: 'move', from: '/a', path: '/b' }]);
    expect(out).toEqual({ b: { deep: { x: 1 } } });
  });
  it('a test of a small value against a huge object fails at the first differing key', () => {
    const huge: Record<string, number> = {};
    for (let i = 0; i < 200_000; i++) huge['k' + i] = i;
    // (a differing value: found at the first key; only equal ones count the object's keys)
    const ops = Array.from({ length: 10_000 }, () => ({ op: 'test', path: '/h', value: { k0: 1 } }));
    const t0 = performance.now();
    expect(() => jsonPatch({ h: huge }, ops)).toThrow(expect.objectContaining({ code: 422 }));
    expect(performance.now() - t0).toBeLessThan(5000);
  });
  it('stops on the clock (504) when operations are slow', () => {
    const arr = Array.from({ length: 300_000 }, (_, i) => i);
    const ops = Array.from({ length: 10_000 }, () => ({ op: 'add', path: '/a/0', value: 1 }));
    const t0 = performance.now();
    expect(() => jsonPatch({ a: arr }, ops, undefined, new PatchClock(20))).toThrow(expect.objectContaining({ code: 504, reason: 'Timeout' }));
    expect(performance.now() - t0).toBeLessThan(5000);
  });
});

describe('strategic merge bounds', () => {
  it('merges 20,000 keyed items into 20,000 in linear time, as before', () => {
    const node = rootNode('apps', 'v1', 'Deployment')!;
    const env = (tag: string) => Array.from({ length: 20_000 }, (_, i) => ({ name: `${tag}${i}`, value: String(i) }));
    const orig = { spec: { template: { spec: { containers: [{ name: 'c', env: env('A') }] } } } };
    const patch = { spec: { template: { spec: { containers: [{ name: 'c', env: [...env('B'), { name: 'A5', value: 'five' }, { name: 'A7', $patch: 'delete' }] }] } } } };
    const t0 = performance.now();
    // (the quadratic engine took minutes over these lists)
    const out: any = strategicMergePatch(orig, patch, node, new PatchClock(10_000));
    expect(performance.now() - t0).toBeLessThan(15000);
    const e = out.spec.template.spec.containers[0].env;
    expect(e).toHaveLength(39_999);
    expect(e.find((x: any) => x.name === 'A5').value).toBe('five');
    expect(e.some((x: any) => x.name === 'A7')).toBe(false);
  });
  it('stops on the clock (504)', () => {
    const node = rootNode('apps', 'v1', 'Deployment')!;
    const env = Array.from({ length: 50_000 }, (_, i) => ({ name: `n${i}`, value: String(i) }));
    const orig = { spec: { template: { spec: { containers: [{ name: 'c', env }] } } } };
    const patch = { spec: { template: { spec: { containers: [{ name: 'c', env: env.map((x) => ({ ...x, value: 'v' })) }] } } } };
    expect(() => strategicMergePatch(orig, patch, node, new PatchClock(0))).toThrow(expect.objectContaining({ code: 504 }));
  });
});
