// Fuzz targets for the body decoders, in process: JSON (duplicate keys, deep nesting, huge
// numbers, lone surrogates), YAML (aliases and billion laughs, tags, merge keys, deep
// nesting), protobuf (the k8s\0 envelope, wrong wire types, lying lengths) and CBOR
// (indefinite lengths, tags, huge declared lengths). Each body goes the way a create's
// does: decoded, checked as an object of its kind, field-validated (Strict, so duplicate and
// unknown fields are looked for), and encoded back to JSON as the server would store it.
// Every input must give an object or a 4xx StatusError, within the per-input bound.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { decodeObject, parseBody } from '../../src/codec/decode.js';
import { decodeCbor } from '../../src/codec/cbor.js';
import { PROTOBUF_MEDIA_TYPE } from '../../src/codec/protobuf.js';
import { validateBody, type FieldValidationMode } from '../../src/registry/field-validation.js';
import { cborBody, jsonBody, protobufBody, yamlBody } from './arbitraries.js';
import { fuzz } from './harness.js';

const KINDS: [string, string][] = [
  ['v1', 'ConfigMap'],
  ['v1', 'Pod'],
  ['apps/v1', 'Deployment'],
  ['apiextensions.k8s.io/v1', 'CustomResourceDefinition'],
];

/** What a create does with a decoded body: check it as an object of its kind, validate its fields, encode it. */
function asCreate(raw: unknown, apiVersion: string, kind: string, text: Buffer | null, mode: FieldValidationMode = 'Strict'): void {
  const obj = decodeObject(raw, apiVersion, kind);
  const slash = apiVersion.indexOf('/');
  const gvk = { group: slash < 0 ? '' : apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1), kind };
  validateBody(obj, gvk, mode, text, []);
  JSON.stringify(obj);
}

describe('fuzz: decoders', () => {
  it('JSON bodies (duplicate keys, deep nesting, huge numbers, surrogates)', () => {
    const modes = fc.constantFrom<FieldValidationMode>('Strict', 'Warn', 'Ignore');
    const arb = fc.tuple(fc.constantFrom(...KINDS), modes).chain(([[av, k], mode]) => jsonBody(av, k).map((t) => [av, k, Buffer.from(t), mode] as const));
    const n = fuzz('json', arb, ([av, k, body, mode]) => asCreate(parseBody(body, 'application/json'), av, k, body, mode));
    expect(n).toBeGreaterThan(0);
  });

  it('YAML bodies (aliases, billion laughs, tags, merge keys, deep nesting)', () => {
    const n = fuzz('yaml', yamlBody.map((t) => Buffer.from(t)), (body) => asCreate(parseBody(body, 'application/yaml'), 'v1', 'ConfigMap', null));
    expect(n).toBeGreaterThan(0);
  });

  it('protobuf bodies (envelope, wire types, lengths, deep messages)', () => {
    const n = fuzz('protobuf', protobufBody, (body) => {
      const raw = parseBody(body, PROTOBUF_MEDIA_TYPE) as Record<string, any>;
      asCreate(raw, raw.apiVersion, raw.kind, null);
    });
    expect(n).toBeGreaterThan(0);
  });

  it('CBOR bodies (indefinite lengths, tags, declared lengths, deep nesting)', () => {
    const n = fuzz('cbor', cborBody, (body) => asCreate(decodeCbor(body), 'v1', 'ConfigMap', null));
    expect(n).toBeGreaterThan(0);
  });
});
