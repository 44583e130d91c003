import { describe, it, expect } from 'vitest';
import { jsonPatch, mergePatch, strictJsonPatchTypeError } from './patch.js';

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

/** The StatusError f throws. */
function thrown(f: () => unknown): { code: number; message: string; cause?: unknown } {
  try {
    f();
  } catch (e: any) {
    expect(e.constructor.name).toBe('StatusError');
    // kube sends json-patch's error as the generic 422, without its text (kept as the cause)
    if (e.code === 422) expect(e.toStatus()).toEqual({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'the server rejected our request due to an error in our request', reason: 'Invalid', details: {}, code: 422 });
    return e;
  }
  throw new Error('no error');
}

describe('client keys are own fields (issue 17)', () => {
  const clean = () => delete (Object.prototype as any).polluted;

  it('a JSON patch through /__proto__/ finds no such path and pollutes nothing', () => {
    for (const path of ['/__proto__/polluted', '/a/__proto__/polluted', '/constructor/prototype/polluted']) {
      const e = thrown(() => jsonPatch({ a: {} }, JSON.parse(`[{"op":"add","path":${JSON.stringify(path)},"value":"yes"}]`)));
      expect(e.code).toBe(422);
      expect(e.cause).toBe(`doc is missing path: "${path}": missing value`);
      expect(({} as any).polluted).toBeUndefined();
      clean();
    }
  });

  it('a JSON patch adds, replaces and removes __proto__ as an ordinary field', () => {
    const out = jsonPatch({ a: 1 }, JSON.parse('[{"op":"add","path":"/__proto__","value":{"polluted":"yes"}},{"op":"add","path":"/__proto__/x","value":1}]'));
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(JSON.stringify(out)).toBe('{"a":1,"__proto__":{"polluted":"yes","x":1}}');
    expect(out.polluted).toBeUndefined();
    expect(JSON.stringify(jsonPatch(out, [{ op: 'remove', path: '/__proto__' }]))).toBe('{"a":1}');
    expect(thrown(() => jsonPatch({ a: 1 }, [{ op: 'remove', path: '/__proto__' }])).cause).toBe('Unable to remove nonexistent key: __proto__: missing value');
    clean();
  });

  it('inherited members read as missing: copy, move, test, replace and remove of toString/constructor', () => {
    expect(thrown(() => jsonPatch({}, [{ op: 'copy', from: '/toString', path: '/x' }])).cause).toBe('copy from missing path: "/toString"');
    expect(thrown(() => jsonPatch({}, [{ op: 'move', from: '/constructor', path: '/x' }])).cause).toBe('Unable to remove nonexistent key: constructor: missing value');
    expect(thrown(() => jsonPatch({}, [{ op: 'replace', path: '/valueOf', value: 1 }])).cause).toBe('replace operation does not apply: doc is missing key: /valueOf: missing value');
    expect(thrown(() => jsonPatch({}, [{ op: 'test', path: '/hasOwnProperty', value: 1 }])).code).toBe(422);
    expect(thrown(() => jsonPatch({ l: [1] }, [{ op: 'copy', from: '/l/length', path: '/x' }])).cause).toBe('copy from missing path: "/l/length"');
  });

  it('a merge patch sets and deletes __proto__ as a field, keeping the prototype', () => {
    const out = mergePatch({ a: { b: 1 } }, JSON.parse('{"__proto__":{"polluted":"yes"},"a":{"__proto__":{"x":1}}}'));
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.getPrototypeOf(out.a)).toBe(Object.prototype);
    expect(JSON.stringify(out)).toBe('{"a":{"b":1,"__proto__":{"x":1}},"__proto__":{"polluted":"yes"}}');
    expect(JSON.stringify(mergePatch(out, JSON.parse('{"__proto__":null}')))).toBe('{"a":{"b":1,"__proto__":{"x":1}}}');
    // a key naming an inherited member merges into nothing, not into the member
    expect(mergePatch({}, { toString: { a: 1 }, constructor: { b: 2 } })).toEqual({ toString: { a: 1 }, constructor: { b: 2 } });
    expect(({} as any).polluted).toBeUndefined();
  });
});

describe('JSON patch operations of the wrong shape (json-patch\'s errors, 422)', () => {
  const cases: Array<[unknown, string]> = [
    [{ op: 'move', path: '/' }, 'move operation failed to decode from: operation, missing from field: missing value'],
    [{ op: 'copy', path: '/x', from: null }, 'copy operation failed to decode from: operation, missing from field: missing value'],
    [{ op: 'move', path: '/x', from: 7 }, 'move operation failed to decode from: json: cannot unmarshal number into Go value of type string'],
    [{ op: 'copy', path: '/x', from: { toString: 1 } }, 'copy operation failed to decode from: json: cannot unmarshal object into Go value of type string'],
    [{ op: 'copy', path: 1, from: '/a' }, 'copy operation failed to decode path: missing value'],
    [{ op: 'move', path: true, from: '/a' }, 'move operation failed to decode path: json: cannot unmarshal bool into Go value of type string'],
    [{ op: { toString: 1 }, path: '/x' }, 'Unexpected kind: unknown'],
    [{ op: ['add'], path: '/x' }, 'Unexpected kind: unknown'],
    [{ path: '/x' }, 'Unexpected kind: unknown'],
    [{ op: 'frob', path: '/x' }, 'Unexpected kind: frob'],
    [{ op: 'add', value: 1 }, 'add operation failed to decode path: missing value'],
    [{ op: 'remove', path: { toString: 1 } }, 'remove operation failed to decode path: missing value'],
    [{ op: 'replace', path: ['/a'], value: 1 }, 'replace operation failed to decode path: json: cannot unmarshal array into Go value of type string'],
    [{ op: 'test', value: 1 }, 'test operation failed to decode path: operation missing path field: missing value'],
  ];
  it.each(cases)('%j', (op, message) => {
    const e = thrown(() => jsonPatch({ a: 1 }, [op]));
    expect(e.code).toBe(422);
    expect(e.cause).toBe(message);
  });

  it('an operation that is not an object is the decoder\'s 400 (null is an empty one: kind unknown)', () => {
    expect(thrown(() => jsonPatch({}, [1])).message).toBe('json: cannot unmarshal number into Go value of type jsonpatch.Operation');
    expect(thrown(() => jsonPatch({}, ['add'])).message).toBe('json: cannot unmarshal string into Go value of type jsonpatch.Operation');
    expect(thrown(() => jsonPatch({}, [['add']])).message).toBe('json: cannot unmarshal array into Go value of type jsonpatch.Operation');
    expect(thrown(() => jsonPatch({}, [null])).cause).toBe('Unexpected kind: unknown');
  });

  it('kube\'s strict decoding (fieldValidation Warn or Strict) names the first field of the wrong type', () => {
    expect(strictJsonPatchTypeError([{ op: 'add', path: '/x', value: { op: 1 } }, null])).toBeUndefined();
    expect(strictJsonPatchTypeError([{ op: 'add', path: null, from: null }])).toBeUndefined();
    expect(strictJsonPatchTypeError(null)).toBeUndefined();
    expect(strictJsonPatchTypeError({ op: 'add' })).toBe('json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp');
    expect(strictJsonPatchTypeError([{ op: 'add', path: '/x' }, 7])).toBe('json: cannot unmarshal number into Go value of type handlers.jsonPatchOp');
    expect(strictJsonPatchTypeError([{ path: ['/x'], op: { toString: 1 } }])).toBe('json: cannot unmarshal array into Go struct field jsonPatchOp.path of type string');
    expect(strictJsonPatchTypeError([{ op: 'move', from: true }])).toBe('json: cannot unmarshal bool into Go struct field jsonPatchOp.from of type string');
    expect(strictJsonPatchTypeError([{ OP: 1, Path: 2 }])).toBeUndefined(); // (field names match case-sensitively)
  });

  it('an add without a value adds null', () => {
    expect(jsonPatch({}, [{ op: 'add', path: '/x' }])).toEqual({ x: null });
  });
});

describe('JSON patch results nested past the limit', () => {
  it('a value added at the end of a deep path, or moves that nest a subtree, are a 422', () => {
    const deep = (d: number): any => {
      let x: any = 1;
      for (let i = 0; i < d; i++) x = { a: x };
      return x;
    };
    expect(thrown(() => jsonPatch({}, [{ op: 'add', path: '/x', value: deep(600) }, { op: 'add', path: '/x' + '/a'.repeat(599), value: deep(600) }])).code).toBe(422);
    const moves: any[] = [{ op: 'add', path: '/r', value: {} }];
    for (let i = 0; i < 1000; i++) moves.push({ op: 'add', path: '/w', value: {} }, { op: 'move', from: '/r', path: '/w/r' }, { op: 'move', from: '/w', path: '/r' });
    expect(thrown(() => jsonPatch({}, moves)).code).toBe(422);
    // (999 levels below the document's own is fine)
    expect(jsonPatch({}, [{ op: 'add', path: '/x', value: deep(998) }]).x).toBeTypeOf('object');
  });
});

describe('jsonPatch with shared subtrees (copy-on-write)', () => {
  const base = () => ({
    metadata: { name: 'a', labels: { x: '1' }, annotations: { y: '2' } },
    spec: { list: [{ n: 1 }, { n: 2 }], deep: { a: { b: { c: 1 } } } },
  });
  const patches: any[] = [
    [{ op: 'add', path: '/metadata/labels/z', value: '3' }],
    [{ op: 'remove', path: '/spec/list/0' }, { op: 'add', path: '/spec/list/-', value: { n: 9 } }],
    [{ op: 'move', from: '/spec/deep/a', path: '/metadata/moved' }, { op: 'replace', path: '/metadata/moved/b/c', value: 5 }],
    [{ op: 'copy', from: '/spec/deep', path: '/spec/copy' }, { op: 'replace', path: '/spec/copy/a/b/c', value: 7 }],
    [{ op: 'move', from: '/spec', path: '' }, { op: 'replace', path: '/deep/a/b/c', value: 8 }],
    [{ op: 'replace', path: '', value: { k: { v: 1 } } }, { op: 'add', path: '/k/w', value: 2 }],
    [{ op: 'test', path: '/metadata/name', value: 'a' }, { op: 'replace', path: '/spec/list/1/n', value: 3 }],
  ];
  it('gives what the whole copy gives and never changes the document', () => {
    for (const p of patches) {
      const doc = base();
      const want = jsonPatch(base(), p);
      const got = jsonPatch(doc, p, undefined, undefined, true);
      expect(got).toEqual(want);
      expect(doc).toEqual(base());
    }
  });
  it('shares the subtrees the patch does not touch', () => {
    const doc = base();
    const got = jsonPatch(doc, [{ op: 'add', path: '/metadata/labels/z', value: '3' }], undefined, undefined, true);
    expect(got.spec).toBe(doc.spec);
    expect(got.metadata.annotations).toBe(doc.metadata.annotations);
    expect(got.metadata.labels).not.toBe(doc.metadata.labels);
  });
});
