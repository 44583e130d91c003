import { describe, it, expect } from 'vitest';
import { applyDefaults, prune, typeNode, validateSchema, type JSONSchemaProps } from './structural.js';
import { childNode, itemNode } from '../schema-walk.js';

const schema: JSONSchemaProps = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      properties: {
        replicas: { type: 'integer', minimum: 0, maximum: 10, default: 1 },
        name: { type: 'string', minLength: 2, maxLength: 5, pattern: '^[a-z]+$' },
        color: { type: 'string', enum: ['red', 'blue'] },
        tags: { type: 'array', maxItems: 2, items: { type: 'string' } },
        ports: { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'], items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, port: { type: 'integer' } } } },
        free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        labels: { type: 'object', additionalProperties: { type: 'string' } },
        size: { 'x-kubernetes-int-or-string': true },
      },
      required: ['name'],
    },
  },
};

describe('structural schemas of custom resources', () => {
  it('prunes what the schema does not name, keeping apiVersion, kind, metadata and preserved subtrees', () => {
    const obj: any = { apiVersion: 'x/v1', kind: 'X', metadata: { name: 'a' }, spec: { name: 'ab', bogus: 1, free: { any: { thing: 1 } }, labels: { a: 'b' }, ports: [{ name: 'p', extra: true }] }, top: 1 };
    expect(prune(obj, schema)).toEqual(['spec.bogus', 'spec.ports[0].extra', 'top']);
    expect(obj).toEqual({ apiVersion: 'x/v1', kind: 'X', metadata: { name: 'a' }, spec: { name: 'ab', free: { any: { thing: 1 } }, labels: { a: 'b' }, ports: [{ name: 'p' }] } });
  });

  it('applies defaults of missing fields', () => {
    const obj: any = { spec: { name: 'ab' } };
    applyDefaults(obj, schema);
    expect(obj.spec.replicas).toBe(1);
  });

  it('validates with kube-apiserver wording', () => {
    const errs = validateSchema({ spec: { replicas: 11, name: 'ABCDEFG', color: 'pink', tags: ['a', 'b', 'c'], size: 1.5, ports: [{ port: 1 }] } }, schema);
    const text = errs.map((e) => `${e.field} ${e.type} ${e.detail ?? ''}`);
    expect(text).toContain('spec.replicas FieldValueInvalid spec.replicas in body should be less than or equal to 10');
    expect(text).toContain('spec.name FieldValueTooLong may not be more than 5 bytes');
    expect(text).toContain("spec.name FieldValueInvalid spec.name in body should match '^[a-z]+$'");
    expect(text).toContain('spec.color FieldValueNotSupported supported values: "red", "blue"');
    expect(text).toContain('spec.tags FieldValueTooMany must have at most 2 items');
    expect(text).toContain('spec.ports[0].name FieldValueRequired ');
    expect(errs.some((e) => e.field === 'spec.size' && e.type === 'FieldValueTypeInvalid')).toBe(true);
    expect(validateSchema({ spec: {} }, schema).map((e) => e.field)).toEqual(['spec.name']);
    expect(validateSchema({ spec: { name: 'ab', replicas: 'x' } }, schema)[0]).toMatchObject({ field: 'spec.replicas', type: 'FieldValueTypeInvalid', detail: 'spec.replicas in body must be of type integer: "string"' });
  });

  it("gives server-side apply the schema's list types, atomic when undeclared", () => {
    const root = typeNode(schema);
    const spec = childNode(root, 'spec');
    expect(childNode(spec, 'tags')).toMatchObject({ kind: 'list', listType: 'atomic' });
    expect(childNode(spec, 'ports')).toMatchObject({ kind: 'list', listType: 'map', listKeys: ['name'] });
    expect(itemNode(childNode(spec, 'ports')).kind).toBe('struct');
    expect(childNode(spec, 'labels')).toMatchObject({ kind: 'map' });
  });
});

describe('field names that are inherited members (issue 17)', () => {
  it('prune drops __proto__ and toString as unknown; defaults and validation see own fields only', () => {
    const obj = JSON.parse('{"spec":{"__proto__":{"polluted":"yes"},"toString":1,"replicas":2}}');
    expect(prune(obj, schema).sort()).toEqual(['spec.__proto__', 'spec.toString']);
    expect(Object.hasOwn(obj.spec, '__proto__')).toBe(false);
    expect(({} as any).polluted).toBeUndefined();
    const n = typeNode(schema);
    expect(childNode(childNode(n, 'spec'), '__proto__').kind).toBe('any');
  });
});
