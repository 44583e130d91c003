import { describe, expect, it } from 'vitest';
import { strategicMergePatch } from './strategic-merge.js';
import { rootNode } from './schema-walk.js';
import { StatusError } from '../errors.js';

const deploy = rootNode('apps', 'v1', 'Deployment')!;
const pod = rootNode('', 'v1', 'Pod')!;
const svc = rootNode('', 'v1', 'Service')!;

function podWith(spec: any): any {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec };
}

describe('strategic merge patch', () => {
  it('merges containers by name and keeps the ones the patch does not name', () => {
    const orig = podWith({ containers: [{ name: 'a', image: 'a:1' }, { name: 'b', image: 'b:1' }] });
    const out = strategicMergePatch(orig, { spec: { containers: [{ name: 'b', image: 'b:2' }, { name: 'c', image: 'c:1' }] } }, pod);
    expect(out.spec.containers).toEqual([
      { name: 'a', image: 'a:1' },
      { name: 'b', image: 'b:2' },
      { name: 'c', image: 'c:1' },
    ]);
    // the original is not touched
    expect(orig.spec.containers).toHaveLength(2);
  });

  it('replaces lists without a merge strategy (command, args)', () => {
    const orig = podWith({ containers: [{ name: 'a', command: ['x', 'y'] }] });
    const out = strategicMergePatch(orig, { spec: { containers: [{ name: 'a', command: ['z'] }] } }, pod);
    expect(out.spec.containers[0].command).toEqual(['z']);
  });

  it('null deletes a field, and deletes map keys', () => {
    const orig = { ...podWith({ containers: [] }), metadata: { name: 'p', labels: { a: '1', b: '2' } } };
    const out = strategicMergePatch(orig, { metadata: { labels: { a: null } }, spec: { containers: null } }, pod);
    expect(out.metadata.labels).toEqual({ b: '2' });
    expect(out.spec.containers).toBeUndefined();
  });

  it('$patch: delete removes a list item by merge key', () => {
    const orig = podWith({ containers: [{ name: 'a' }, { name: 'b' }] });
    const out = strategicMergePatch(orig, { spec: { containers: [{ name: 'a', $patch: 'delete' }] } }, pod);
    expect(out.spec.containers).toEqual([{ name: 'b' }]);
  });

  it('$patch: replace in a list replaces the whole list', () => {
    const orig = podWith({ containers: [{ name: 'a', image: 'x' }, { name: 'b' }] });
    const out = strategicMergePatch(orig, { spec: { containers: [{ name: 'c' }, { $patch: 'replace' }] } }, pod);
    expect(out.spec.containers).toEqual([{ name: 'c' }]);
  });

  it('$patch: replace in a map replaces the map; $patch: delete empties it', () => {
    const orig = { metadata: { name: 'p', labels: { a: '1', b: '2' }, annotations: { x: 'y' } } };
    const out = strategicMergePatch(orig, { metadata: { labels: { c: '3', $patch: 'replace' }, annotations: { $patch: 'delete' } } }, pod);
    expect(out.metadata.labels).toEqual({ c: '3' });
    expect(out.metadata.annotations).toEqual({});
  });

  it('$patch: merge is the default and is removed', () => {
    const out = strategicMergePatch({ metadata: { labels: { a: '1' } } }, { metadata: { labels: { b: '2', $patch: 'merge' } } }, pod);
    expect(out.metadata.labels).toEqual({ a: '1', b: '2' });
  });

  it('an unknown $patch value is a 400', () => {
    try {
      strategicMergePatch({}, { metadata: { $patch: 'bogus' } }, pod);
      expect.unreachable();
    } catch (e) {
      expect((e as StatusError).code).toBe(400);
    }
  });

  it('merges finalizers as a set of scalars and $deleteFromPrimitiveList removes', () => {
    const orig = { metadata: { name: 'p', finalizers: ['a', 'b'] } };
    const out = strategicMergePatch(orig, { metadata: { finalizers: ['c', 'a'], '$deleteFromPrimitiveList/finalizers': ['b'] } }, pod);
    expect(out.metadata.finalizers.sort()).toEqual(['a', 'c']);
  });

  it('$setElementOrder orders the merged list, server-only items keep their place', () => {
    const orig = podWith({ containers: [{ name: 'a' }, { name: 's' }, { name: 'b' }] });
    const out = strategicMergePatch(
      orig,
      { spec: { '$setElementOrder/containers': [{ name: 'b' }, { name: 'a' }, { name: 'n' }], containers: [{ name: 'n', image: 'n' }] } },
      pod,
    );
    const names = out.spec.containers.map((c: any) => c.name);
    expect(names.filter((n: string) => n !== 's')).toEqual(['b', 'a', 'n']);
    expect(names).toContain('s');
  });

  it('$retainKeys drops the keys of the original the patch does not retain (volume source switch)', () => {
    const orig = podWith({ containers: [], volumes: [{ name: 'v', emptyDir: {} }] });
    const out = strategicMergePatch(orig, { spec: { volumes: [{ name: 'v', $retainKeys: ['configMap', 'name'], configMap: { name: 'cm' } }] } }, pod);
    expect(out.spec.volumes).toEqual([{ name: 'v', configMap: { name: 'cm' } }]);
  });

  it('$retainKeys on the deployment strategy (Recreate drops rollingUpdate)', () => {
    const orig = { spec: { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%' } } } };
    const out = strategicMergePatch(orig, { spec: { strategy: { $retainKeys: ['type'], type: 'Recreate', rollingUpdate: null } } }, deploy);
    expect(out.spec.strategy).toEqual({ type: 'Recreate' });
  });

  it('merges env by name and service ports by port', () => {
    const orig = podWith({ containers: [{ name: 'a', env: [{ name: 'X', value: '1' }, { name: 'Y', value: '2' }] }] });
    const out = strategicMergePatch(orig, { spec: { containers: [{ name: 'a', env: [{ name: 'Y', value: '3' }] }] } }, pod);
    expect(out.spec.containers[0].env).toEqual([
      { name: 'X', value: '1' },
      { name: 'Y', value: '3' },
    ]);
    const s = strategicMergePatch({ spec: { ports: [{ port: 80, name: 'http' }] } }, { spec: { ports: [{ port: 443, name: 'https' }] } }, svc);
    expect(s.spec.ports.map((p: any) => p.port)).toEqual([80, 443]);
  });

  it('an item without its merge key is the plain error of kube: a 500 without a reason, the map in Go form', () => {
    try {
      strategicMergePatch(podWith({ containers: [{ name: 'a' }] }), { spec: { containers: [{ image: 'x', ports: [{ containerPort: 80 }] }] } }, pod);
      expect.unreachable();
    } catch (e) {
      expect((e as StatusError).code).toBe(500);
      expect((e as StatusError).toStatus()).toEqual({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'map: map[image:x ports:[map[containerPort:80]]] does not contain declared merge key: name',
        code: 500,
      });
    }
    // a delete directive without the key too
    expect(() => strategicMergePatch(podWith({ containers: [{ name: 'a' }] }), { spec: { containers: [{ $patch: 'delete', image: 'x' }] } }, pod)).toThrow(
      'map: map[$patch:delete image:x] does not contain declared merge key: name',
    );
  });

  it('$retainKeys that leave out a field the patch sets: 400 invalid patch format of retainKeys', () => {
    const dep = rootNode('apps', 'v1', 'Deployment')!;
    const orig = { spec: { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1 } } } };
    try {
      strategicMergePatch(orig, { spec: { strategy: { $retainKeys: ['type'], type: 'Recreate', rollingUpdate: { maxSurge: 2 } } } }, dep);
      expect.unreachable();
    } catch (e) {
      expect((e as StatusError).toStatus()).toMatchObject({ code: 400, reason: 'BadRequest', message: 'invalid patch format of retainKeys' });
    }
    const ok = strategicMergePatch(orig, { spec: { strategy: { $retainKeys: ['type'], type: 'Recreate', rollingUpdate: null } } }, dep);
    expect(ok.spec.strategy).toEqual({ type: 'Recreate' });
  });

  it('lists of lists: the generic 422 (its text dropped)', () => {
    try {
      strategicMergePatch({ metadata: { finalizers: ['a'] } }, { metadata: { finalizers: [['b']] } }, pod);
      expect.unreachable();
    } catch (e) {
      expect((e as StatusError).toStatus()).toMatchObject({ code: 422, reason: 'Invalid', message: 'the server rejected our request due to an error in our request', details: {} });
    }
  });

  it('new fields carrying directives land clean', () => {
    const out = strategicMergePatch(podWith({}), { spec: { containers: [{ name: 'a', env: [{ name: 'X', value: '1' }], '$setElementOrder/env': [{ name: 'X' }] }] } }, pod);
    expect(out.spec.containers).toEqual([{ name: 'a', env: [{ name: 'X', value: '1' }] }]);
  });
});

describe('client keys are own fields (issue 17)', () => {
  it('a __proto__ key merges as an ordinary field, at the top and nested, and pollutes nothing', () => {
    for (const body of ['{"__proto__":{"polluted":"yes"}}', '{"spec":{"__proto__":{"polluted":"yes"}}}', '{"spec":{"template":{"spec":{"containers":[{"name":"c","__proto__":{"polluted":"yes"}}]}}}}']) {
      const out = strategicMergePatch({ spec: { template: { spec: { containers: [{ name: 'c', image: 'i' }] } } } }, JSON.parse(body), deploy);
      expect(({} as any).polluted, body).toBeUndefined();
      expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
      expect(JSON.stringify(out)).toContain('"__proto__":{"polluted":"yes"}');
      delete (Object.prototype as any).polluted;
    }
  });

  it('a key naming an inherited member (toString, constructor) is a field the original lacks', () => {
    expect(strategicMergePatch({ spec: {} }, { spec: { toString: { a: 1 }, constructor: 'x' } }, deploy)).toEqual({ spec: { toString: { a: 1 }, constructor: 'x' } });
    // $setElementOrder and $deleteFromPrimitiveList of such a field
    expect(strategicMergePatch({}, JSON.parse('{"$setElementOrder/__proto__":[1],"__proto__":[1]}'), pod)).toEqual(JSON.parse('{"__proto__":[1]}'));
    expect(strategicMergePatch({ metadata: {} }, { metadata: { '$deleteFromPrimitiveList/toString': ['a'] } }, pod)).toEqual({ metadata: {} });
  });
});

describe('directives holding values of the wrong type are a 400, not a TypeError', () => {
  it('a $retainKeys scalar that is no string names no field (kube keeps it in its set)', () => {
    expect(strategicMergePatch({ metadata: { name: 'd', labels: { a: 'b' } } }, { metadata: { $retainKeys: ['name', 1, true, null] } }, deploy)).toEqual({ metadata: { name: 'd' } });
  });

  const cases: Array<[any, string]> = [
    [{ spec: { $patch: { toString: 1 } } }, 'Unknown patch type: map[toString:1]'],
    [{ spec: { $patch: ['replace'] } }, 'Unknown patch type: [replace]'],
    [{ spec: { $patch: 7 } }, 'Unknown patch type: 7'],
    [{ spec: { template: { spec: { containers: [{ name: 'c', $patch: { toString: 1 } }] } } } }, 'Unknown patch type: map[toString:1]'],
    [{ metadata: { $retainKeys: [[{ toString: 1 }]] } }, 'invalid patch format of retainKeys'],
    [{ metadata: { $retainKeys: [{ toString: 1 }] } }, 'invalid patch format of retainKeys'],
    [{ metadata: { $retainKeys: { toString: 1 } } }, 'invalid patch format of retainKeys'],
    [{ spec: { template: { spec: { '$setElementOrder/containers': { toString: 1 } } } } }, 'invalid patch format of setElementOrder list'],
    [{ metadata: { '$deleteFromPrimitiveList/finalizers': { toString: 1 } } }, 'invalid patch format of primitive list'],
  ];
  it.each(cases)('%j', (patch, message) => {
    const original = { metadata: { name: 'd', finalizers: ['a'] }, spec: { template: { spec: { containers: [{ name: 'c', image: 'i' }] } } } };
    let err: unknown;
    try {
      strategicMergePatch(original, patch, deploy);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StatusError);
    expect((err as StatusError).code).toBe(400);
    expect((err as StatusError).message).toBe(message);
  });
});
