import { describe, it, expect } from 'vitest';
import { KeyIndex } from './key-index.js';

const load = (ix: KeyIndex, gr: string, key: string, rv: number) => {
  const b = Buffer.from(`..${key}..`);
  ix.load(Buffer.from(gr), b, 2, b.length - 2, rv);
};

describe('KeyIndex', () => {
  it('keeps the newest version of each key from a scan in version order, deletions dropped', () => {
    const ix = new KeyIndex();
    // (version order: b, a, b again, c, then c deleted)
    load(ix, 'cm', 'ns/b', 1);
    load(ix, 'cm', 'ns/a', 2);
    load(ix, 'cm', 'ns/b', 3);
    load(ix, 'cm', 'ns/c', 4);
    load(ix, 'cm', 'ns/c', 0);
    load(ix, 'pods', 'ns/ü', 5);
    expect(ix.get('cm\nns/a')).toBe(2);
    expect(ix.get('cm\nns/b')).toBe(3);
    expect(ix.get('cm\nns/c')).toBeUndefined();
    expect(ix.get('pods\nns/a')).toBeUndefined();
    expect(ix.get('pods\nns/ü')).toBe(5);
  });
  it('holds many keys (growth and rehash), with changes on top of them', () => {
    const ix = new KeyIndex();
    for (let i = 0; i < 50_000; i++) load(ix, 'configmaps', `ns-${i % 7}/name-${i}`, i + 1);
    for (let i = 0; i < 50_000; i += 997) expect(ix.get(`configmaps\nns-${i % 7}/name-${i}`)).toBe(i + 1);
    expect(ix.get('configmaps\nns-0/name-1')).toBeUndefined();
    ix.set('configmaps\nns-0/new', 60_000);
    ix.delete('configmaps\nns-0/name-0');
    ix.set('configmaps\nns-1/name-1', 60_001);
    expect([ix.get('configmaps\nns-0/new'), ix.get('configmaps\nns-0/name-0'), ix.get('configmaps\nns-1/name-1')]).toEqual([60_000, undefined, 60_001]);
    ix.set('configmaps\nns-0/name-0', 60_002);
    expect(ix.get('configmaps\nns-0/name-0')).toBe(60_002);
  });
});
