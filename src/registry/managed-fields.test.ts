// FieldsV1 sets from clients (metadata.managedFields in a request body), found by the fuzz
// suite (test/fuzz): what structured-merge-diff cannot decode is dropped, as kube drops it,
// instead of failing later (a SyntaxError printing a conflict's path) or overflowing the stack.
import { describe, expect, it } from 'vitest';
import { decodeManaged } from './apply.js';
import { MAX_FIELDS_V1_DEPTH, fieldsV1Problem, pathString } from './managed-fields.js';

const entry = (fieldsV1: unknown) => [{ manager: 'm', operation: 'Apply', fieldsType: 'FieldsV1', fieldsV1 }];

describe('FieldsV1 from a client', () => {
  it('accepts every kind of path element', () => {
    expect(fieldsV1Problem({ 'f:spec': { 'f:containers': { 'k:{"name":"c"}': { '.': {}, 'f:image': {} } }, 'f:args': { 'v:"x"': {} }, 'f:l': { 'i:0': {} } } })).toBeUndefined();
    expect(decodeManaged(entry({ 'f:metadata': { 'f:labels': { 'f:a': {} } } }))?.size).toBe(1);
  });

  it('drops sets with keys that are not path elements, or values that are not objects', () => {
    for (const bad of [{ k: {} }, { 'k:': {} }, { 'k:[1]': {} }, { 'v:{': {} }, { 'i:x': {} }, { x: {} }, { 'f:a': null }, { 'f:a': [] }, { 'f:a': 1 }]) {
      expect(fieldsV1Problem(bad)).toBeDefined();
      expect(decodeManaged(entry(bad))).toBeUndefined();
    }
  });

  it('drops sets nested deeper than MAX_FIELDS_V1_DEPTH, without recursion', () => {
    let deep: any = {};
    for (let i = 0; i < 20_000; i++) deep = { 'f:a': deep };
    expect(fieldsV1Problem(deep)).toBe('nested too deeply');
    let ok: any = {};
    for (let i = 1; i < MAX_FIELDS_V1_DEPTH; i++) ok = { 'f:a': ok };
    expect(fieldsV1Problem(ok)).toBeUndefined();
  });

  it('prints a path whose key element is not JSON as it is, without throwing', () => {
    expect(pathString(['f:spec', 'k:{', 'f:image'])).toBe('.spec[{].image');
  });
});
