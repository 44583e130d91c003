// The cheap paths of the metadata, ConfigMap and Secret checks answer as the full walks do.
import { describe, it, expect } from 'vitest';
import { validateConfigMap, validateSecret } from './core.js';
import { validateAnnotations, validateLabels, validateName } from '../validation.js';

const MiB = 1024 * 1024;
const b64 = (n: number) => Buffer.alloc(n, 7).toString('base64');

describe('ConfigMap and Secret sizes and keys', () => {
  it('1 MiB in total is the limit, data and binaryData together, binary counted decoded', () => {
    expect(validateConfigMap({ data: { a: 'x'.repeat(MiB) } })).toEqual([]);
    expect(validateConfigMap({ data: { a: 'x'.repeat(MiB - 10) }, binaryData: { b: b64(10) } })).toEqual([]);
    expect(validateConfigMap({ data: { a: 'x'.repeat(MiB - 10) }, binaryData: { b: b64(11) } }).map((e) => e.type)).toEqual(['FieldValueTooLong']);
    // multi-byte characters count as their UTF-8 bytes
    expect(validateConfigMap({ data: { a: 'é'.repeat(MiB / 2 + 1) } })).toHaveLength(1);
    for (const n of [MiB, MiB - 1, MiB - 2]) expect(validateSecret({ data: { a: b64(n) } })).toEqual([]);
    expect(validateSecret({ data: { a: b64(MiB + 1) } })).toEqual([{ field: 'data', type: 'FieldValueTooLong', detail: `may not be more than ${MiB} bytes` }]);
  });

  it('a bad key or a key in both maps is reported once per rule, in key order', () => {
    const errs = validateConfigMap({ data: { 'b b': '1', a: '1', '..x': '1' }, binaryData: { a: '' } });
    expect(errs.map((e) => `${e.field}: ${e.detail}`)).toEqual([
      "data[..x]: must not start with '..'",
      'data[a]: duplicate of key present in binaryData',
      expect.stringMatching(/^data\[b b\]: a valid config key must consist/),
      'binaryData[a]: duplicate of key present in data',
    ]);
  });
});

describe('metadata', () => {
  it('valid names, labels and annotations yield nothing; bad ones their messages', () => {
    expect(validateName('my-name.example', 'subdomain')).toEqual([]);
    expect(validateName('a'.repeat(64), 'label').map((e) => e.detail)).toEqual(['must be no more than 63 characters']);
    expect(validateName('gen-', 'subdomain', 'metadata.generateName', true)).toEqual([]);
    expect(validateLabels({ 'app.kubernetes.io/name': 'x', tier: '' })).toEqual([]);
    expect(validateLabels({ 'a/b/c': 'x' })).toHaveLength(1);
    expect(validateLabels({ ok: 'x'.repeat(64) }).map((e) => e.detail)).toEqual(['must be no more than 63 characters']);
    expect(validateAnnotations({ 'Example.com/Key': 'v' })).toEqual([]);
    expect(validateAnnotations({ a: 'x'.repeat(256 * 1024) }).map((e) => e.type)).toEqual(['FieldValueTooLong']);
    expect(validateAnnotations({ a: 'x'.repeat(256 * 1024 - 1) })).toEqual([]);
  });
});
