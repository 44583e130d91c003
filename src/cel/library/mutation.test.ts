import { describe, it, expect } from 'vitest';
import { rewriteObjectConstruction, OBJECT_FN, OPTIONAL_FIELD_FN, typeNameMismatches, constructedType } from './mutation.js';
import { compile } from '../environment.js';

describe('object constructions for MutatingAdmissionPolicy', () => {
  it('rewrites Object and JSONPatch constructions, leaving strings, maps and keywords alone', () => {
    expect(rewriteObjectConstruction('Object{spec: Object.spec{replicas: 3}}')).toBe(`${OBJECT_FN}("Object", {"spec": dyn( ${OBJECT_FN}("Object.spec", {"replicas": dyn( 3)}))})`);
    expect(rewriteObjectConstruction('[JSONPatch{op: "add", path: "/a{b}", value: {"k": [1, 2]}}]')).toBe(
      `[${OBJECT_FN}("JSONPatch", {"op": dyn( "add"), "path": dyn( "/a{b}"), "value": dyn( {"k": [1, 2]})})]`,
    );
    expect(rewriteObjectConstruction('"x" in {"x": 1}')).toBe('"x" in {"x": 1}');
    expect(rewriteObjectConstruction("'Object{a: 1}' + r'''Object{'''")).toBe("'Object{a: 1}' + r'''Object{'''");
    // kube's type provider knows no other message types: left for the engine to refuse
    expect(rewriteObjectConstruction('Foo{a: 1}')).toBe('Foo{a: 1}');
    expect(rewriteObjectConstruction('JSONPatch{nope: 1}')).toBe('JSONPatch{nope: 1}');
  });

  it('evaluates to maps that remember their type name; nested names must follow the field path', () => {
    const c = compile(rewriteObjectConstruction('Object{metadata: Object.metadata{labels: {"a": object.x}}}'), { object: 'dyn' });
    expect(c.error).toBeUndefined();
    const v = c.program!.eval({ object: { x: 'y' } }).value;
    expect(v).toEqual({ metadata: { labels: { a: 'y' } } });
    expect(constructedType(v)).toBe('Object');
    expect(typeNameMismatches(v)).toEqual([]);
    const bad = compile(rewriteObjectConstruction('Object{spec: Object.spec{selector: Object.spec.wrong{}}}'), {}).program!.eval({}).value;
    expect(typeNameMismatches(bad)).toEqual(['unexpected type name "Object.spec.wrong", expected "Object.spec.selector", which matches field name path from root Object type']);
  });

  it('supports optional field initializers: an empty optional leaves the field out', () => {
    expect(rewriteObjectConstruction('Object{? spec: optional.none(), x: 1}')).toBe(`${OBJECT_FN}("Object", {"spec": ${OPTIONAL_FIELD_FN}("spec",  optional.none()), "x": dyn( 1)})`);
    const run = (e: string, object: unknown) => {
      const c = compile(rewriteObjectConstruction(e), { object: 'dyn' });
      expect(c.error).toBeUndefined();
      return c.program!.eval({ object }).value;
    };
    const e = 'Object{metadata: Object.metadata{?labels: object.?l, ?annotations: optional.of({"a": "b"})}, ?spec: has(object.spec) ? optional.of(Object.spec{replicas: object.spec.replicas}) : optional.none()}';
    const absent = run(e, {});
    expect(absent).toEqual({ metadata: { annotations: { a: 'b' } } });
    expect(constructedType(absent)).toBe('Object');
    expect(typeNameMismatches(absent)).toEqual([]);
    const present = run(e, { l: { x: 'y' }, spec: { replicas: 2n } });
    expect(present).toEqual({ metadata: { labels: { x: 'y' }, annotations: { a: 'b' } }, spec: { replicas: 2n } });
    expect(typeNameMismatches(present)).toEqual([]);
    expect(run('[JSONPatch{op: "add", path: "/a", ?value: optional.none()}]', {})).toEqual([{ op: 'add', path: '/a' }]);
    // only an optional may initialize an optional field (refused when evaluated, in cel-go's words)
    expect(() => compile(rewriteObjectConstruction('Object{?spec: object.x}'), { object: 'dyn' }).program!.eval({ object: { x: 1n } })).toThrow(
      "cannot initialize optional entry 'spec' from non-optional value 1",
    );
    expect(() => compile(rewriteObjectConstruction('JSONPatch{op: "add", path: "/a", ?value: "v"}'), {}).program!.eval({})).toThrow(
      "cannot initialize optional entry 'value' from non-optional value v",
    );
  });

  it('has jsonpatch.escapeKey', () => {
    expect(compile('jsonpatch.escapeKey("a/b~c")', {}).program!.eval({}).value).toBe('a~1b~0c');
  });
});

describe('rewriteObjectConstruction bounds', () => {
  it('leaves constructions nested past 250 levels to the parser instead of overflowing the stack', () => {
    const deep = 'Object{a: '.repeat(100_000) + '1' + '}'.repeat(100_000);
    expect(rewriteObjectConstruction(deep)).toBe(deep);
    const shallow = 'Object{a: '.repeat(10) + '1' + '}'.repeat(10);
    expect(rewriteObjectConstruction(shallow)).not.toBe(shallow);
  });
});
