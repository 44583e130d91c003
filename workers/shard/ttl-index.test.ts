import { describe, it, expect } from 'vitest';
import { TtlIndex } from './ttl-index.js';

describe('TtlIndex', () => {
  it('gives the keys due in expiry order, and only those still at the version their TTL started from', () => {
    const t = new TtlIndex(new Map([['events', 1000]]));
    const live = new Map<string, number>();
    const write = (key: string, rv: number, ts: number) => {
      live.set(key, rv);
      t.written('events', key, rv, ts);
    };
    write('ns/a', 1, 100);
    write('ns/b', 2, 50);
    write('ns/c', 3, 200);
    // a written again: its TTL starts again; c deleted: nothing is due for it
    write('ns/a', 4, 900);
    live.delete('ns/c');
    t.written('configmaps', 'ns/x', 5, 0);
    const cur = (_gr: string, key: string) => live.get(key);
    expect(t.due(1049, cur, 10)).toEqual([]);
    expect(t.due(1300, cur, 10)).toEqual([{ gr: 'events', key: 'ns/b', rv: 2 }]);
    expect(t.nextAt()).toBe(1900);
    expect(t.due(1899, cur, 10)).toEqual([]);
    expect(t.due(5000, cur, 10)).toEqual([{ gr: 'events', key: 'ns/a', rv: 4 }]);
    expect(t.size).toBe(0);
  });

  it('keeps a heap order over many entries and honours the limit', () => {
    const t = new TtlIndex(new Map([['events', 10]]));
    const ts = Array.from({ length: 500 }, (_, i) => (i * 7919) % 1000);
    ts.forEach((x, i) => t.written('events', `k${i}`, i + 1, x));
    const cur = (_gr: string, key: string) => Number(key.slice(1)) + 1;
    const got: number[] = [];
    for (;;) {
      const d = t.due(2000, cur, 37);
      if (!d.length) break;
      expect(d.length).toBeLessThanOrEqual(37);
      for (const k of d) got.push(ts[k.rv - 1]);
    }
    expect(got).toEqual([...ts].sort((a, b) => a - b));
  });
});
