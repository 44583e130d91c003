import { describe, it, expect } from 'vitest';
import { KeyIndex } from './key-index.js';

describe('KeyIndex', () => {
  it('keeps the newest version of each key from a scan in version order, deletions dropped', () => {
    const ix = new KeyIndex();
    // (version order: b, a, b again, c, then c deleted)
    ix.load('cm', ['ns/b', 'ns/a', 'ns/b', 'ns/c', 'ns/c'], [1, 2, 3, 4, 0]);
    expect(ix.get('cm\nns/a')).toBe(2);
    expect(ix.get('cm\nns/b')).toBe(3);
    expect(ix.get('cm\nns/c')).toBeUndefined();
    expect(ix.get('pods\nns/a')).toBeUndefined();
  });
  it('takes sorted keys as they are, and changes on top of them', () => {
    const ix = new KeyIndex();
    ix.load('cm', ['a/1', 'a/2', 'b/1'], [5, 6, 7]);
    ix.set('cm\na/3', 8);
    ix.delete('cm\na/1');
    ix.set('cm\nb/1', 9);
    expect([ix.get('cm\na/1'), ix.get('cm\na/2'), ix.get('cm\na/3'), ix.get('cm\nb/1')]).toEqual([undefined, 6, 8, 9]);
    ix.set('cm\na/1', 10);
    expect(ix.get('cm\na/1')).toBe(10);
  });
});
