import { describe, it, expect } from 'vitest';
import { jsonPatch, mergePatch } from './patch.js';

describe('merge patch', () => {
  it('merges, replaces arrays and deletes with null', () => {
    expect(mergePatch({ a: { b: 1, c: 2 }, l: [1, 2] }, { a: { b: null, d: 3 }, l: [3] })).toEqual({ a: { c: 2, d: 3 }, l: [3] });
  });
});

describe('json patch', () => {
  const doc = { metadata: { labels: { a: 'b' } }, data: { k: 'v' }, list: [1, 2, 3] };
  it('applies add/replace/remove/move/copy', () => {
    const out = jsonPatch(doc, [
      { op: 'add', path: '/data/x', value: 'y' },
      { op: 'replace', path: '/data/k', value: 'w' },
      { op: 'remove', path: '/list/0' },
      { op: 'add', path: '/list/-', value: 9 },
      { op: 'copy', from: '/data/x', path: '/data/z' },
      { op: 'move', from: '/data/z', path: '/metadata/labels/z' },
      { op: 'test', path: '/data/k', value: 'w' },
    ]);
    expect(out).toEqual({ metadata: { labels: { a: 'b', z: 'y' } }, data: { k: 'w', x: 'y' }, list: [2, 3, 9] });
    expect(doc.data).toEqual({ k: 'v' });
  });
  it('fails a test op with 422', () => {
    try {
      jsonPatch(doc, [{ op: 'test', path: '/data/k', value: 'nope' }]);
      expect.unreachable();
    } catch (e: any) {
      expect(e.code).toBe(422);
    }
  });
  it('rejects a non-array document with 400', () => {
    expect(() => jsonPatch(doc, { op: 'add' })).toThrowError();
  });
});
