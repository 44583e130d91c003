import { describe, it, expect } from 'vitest';
import { PartedMap } from './parted-map.js';

describe('PartedMap', () => {
  it('behaves as a Map for get, has, set, delete, size and values, whatever the keys', () => {
    const m = new PartedMap<number>();
    const ref = new Map<string, number>();
    const keys = ['', 'a', '/x', 'ns/a', 'default/cm-000001', 'default/cm-000002', 'kube-system/wrk-7f9xq', 'ü/ñ', '/node-1'];
    for (let i = 0; i < 2000; i++) keys.push(`ns${i % 7}/obj-${i.toString(36)}`);
    for (const [i, k] of keys.entries()) {
      m.set(k, i);
      ref.set(k, i);
    }
    m.set('ns/a', 99);
    ref.set('ns/a', 99);
    for (const k of keys.filter((_, i) => i % 3 === 0)) expect(m.delete(k)).toBe(ref.delete(k));
    expect(m.delete('absent')).toBe(false);
    expect(m.size).toBe(ref.size);
    for (const k of keys) {
      expect(m.get(k)).toBe(ref.get(k));
      expect(m.has(k)).toBe(ref.has(k));
    }
    expect([...m.values()].sort((a, b) => a - b)).toEqual([...ref.values()].sort((a, b) => a - b));
  });
});
