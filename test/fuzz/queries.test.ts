// Fuzz targets for what a request names rather than sends: label and field selectors (and
// the list options around them), continue tokens, quantities, and field paths (the
// FieldsV1 sets of metadata.managedFields and the paths printed from them, field-selector
// paths into objects). Each input must give a value or a 4xx StatusError, within the
// per-input bound.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { matchFieldMap, matchLabels, parseFieldSelector, parseLabelSelector, fieldValue } from '../../src/request/selectors.js';
import { convertFieldSelector } from '../../src/request/field-labels.js';
import { listOptionsOfQuery } from '../../src/request/query.js';
import { validateListOptions } from '../../src/request/list-options.js';
import { decodeContinue } from '../../src/registry/continue-token.js';
import { canonicalQuantity, compareQuantity, parseQuantity } from '../../src/registry/quantity.js';
import { decodeManaged, encodeManaged } from '../../src/registry/apply.js';
import { FieldSet, pathString } from '../../src/registry/managed-fields.js';
import { continueToken, fieldSelectorText, jsonValue, key, labelSelectorText, managedFieldsList, nested, quantityText } from './arbitraries.js';
import { fuzz } from './harness.js';

const labels = fc.dictionary(fc.oneof(fc.constantFrom('a', 'app', 'k0', 'example.com/a'), key), fc.oneof(fc.constantFrom('v', '1', '-5', '99999999999999999999'), fc.string({ maxLength: 6 })), { maxKeys: 4 });

describe('fuzz: selectors, list options, continue tokens, quantities, field paths', () => {
  it('label selectors (operators, in (...) with many values, long keys, odd characters)', () => {
    const n = fuzz('labelSelector', fc.tuple(labelSelectorText, labels), ([s, l]) => matchLabels(parseLabelSelector(s), l));
    expect(n).toBeGreaterThan(0);
  });

  it('field selectors (escapes, operators, many terms), converted for a kind and matched', () => {
    const gr = fc.constantFrom('pods', 'events', 'secrets', 'namespaces', 'nodes', 'configmaps', 'replicasets.apps', 'jobs.batch', 'certificatesigningrequests.certificates.k8s.io');
    const n = fuzz('fieldSelector', fc.tuple(fieldSelectorText, gr, fc.dictionary(fc.constantFrom('metadata.name', 'metadata.namespace', 'spec.nodeName', 'status.phase'), fc.string({ maxLength: 5 }))), ([s, g, f]) => matchFieldMap(convertFieldSelector(g, parseFieldSelector(s)), f));
    expect(n).toBeGreaterThan(0);
  });

  it('list query parameters (limit, timeoutSeconds, resourceVersion(Match), selectors, continue, sendInitialEvents)', () => {
    const param = fc.oneof(
      fc.tuple(fc.constantFrom('limit', 'timeoutSeconds'), fc.oneof(fc.constantFrom('', '0', '-1', '+5', '9223372036854775807', '9223372036854775808', '1e3', ' 1', '0x10', '١'), fc.string({ maxLength: 6 }), fc.integer({ min: 20, max: 5000 }).map((d) => '9'.repeat(d)))),
      fc.tuple(fc.constantFrom('resourceVersion'), fc.constantFrom('', '0', '1', 'x', '18446744073709551616')),
      fc.tuple(fc.constantFrom('resourceVersionMatch'), fc.constantFrom('', 'Exact', 'NotOlderThan', 'exact', 'x')),
      fc.tuple(fc.constantFrom('labelSelector'), labelSelectorText),
      fc.tuple(fc.constantFrom('fieldSelector'), fieldSelectorText),
      fc.tuple(fc.constantFrom('continue'), continueToken),
      fc.tuple(fc.constantFrom('sendInitialEvents', 'allowWatchBookmarks', 'watch'), fc.constantFrom('', 'true', 'false', '0', 'x')),
    );
    const n = fuzz('listQuery', fc.tuple(fc.array(param, { maxLength: 6 }), fc.boolean()), ([ps, watch]) => {
      const q = new URLSearchParams(ps);
      const o = listOptionsOfQuery(q);
      validateListOptions(o, watch);
      if (o.continueToken) decodeContinue(o.continueToken);
    });
    expect(n).toBeGreaterThan(0);
  });

  it('continue tokens (base64 of random JSON, near-valid tokens, not base64 at all)', () => {
    const n = fuzz('continue', continueToken, (t) => {
      const tok = decodeContinue(t);
      // what the store then does with it: compares rv, subtracts t from now, seeks to start
      if (!Number.isSafeInteger(tok.rv) || typeof tok.start !== 'string' || (tok.t !== undefined && !Number.isFinite(Date.now() - tok.t))) throw new Error(`a token the store cannot use: ${JSON.stringify(tok)}`);
    });
    expect(n).toBeGreaterThan(0);
  });

  it('quantities (long digit runs, exponents, suffixes), parsed, canonicalised and compared', () => {
    const n = fuzz('quantity', fc.tuple(quantityText, fc.oneof(quantityText, fc.constant('1'))), ([a, b]) => {
      const qa = parseQuantity(a);
      const qb = parseQuantity(b);
      if (qa) canonicalQuantity(qa);
      if (qa && qb) compareQuantity(qa, qb);
    });
    expect(n).toBeGreaterThan(0);
  });

  // known: parseQuantity('1e-99999999') takes 9 s and parseQuantity('1e-999999999') 25 s
  // then throws RangeError (Maximum BigInt size exceeded): 10n ** BigInt(-9 - scale) in the
  // nano rounding; compareQuantity(parseQuantity('1e999999999')!, parseQuantity('1')!) the
  // same in align(). A 12-character resources.limits value blocks the front thread. The
  // quantity code is being made linear on another branch: re-enable once merged.
  it('quantities with huge exponents (fixed: see above)', () => {
    const huge = fc.tuple(fc.constantFrom('1', '-1', '0.5'), fc.constantFrom('e', 'E'), fc.constantFrom('', '-', '+'), fc.integer({ min: 1, max: 999_999_999 })).map(([m, e, s, x]) => `${m}${e}${s}${x}`);
    fuzz('quantityExponent', fc.tuple(huge, huge), ([a, b]) => {
      const qa = parseQuantity(a);
      const qb = parseQuantity(b);
      if (qa) canonicalQuantity(qa);
      if (qa && qb) compareQuantity(qa, qb);
    });
  });

  it('field paths: managedFields entries (FieldsV1 sets), their paths as kube prints them, set algebra', () => {
    const deep = fc.integer({ min: 1, max: 8000 }).map((d) => [{ manager: 'm', operation: 'Apply', fieldsType: 'FieldsV1', fieldsV1: JSON.parse(nested(d, 'obj', '{}').replaceAll('"a"', '"f:a"')) }]);
    const entries = fc.oneof({ weight: 6, arbitrary: managedFieldsList }, { weight: 1, arbitrary: deep });
    const n = fuzz('fieldPaths', fc.tuple(entries, entries), ([mf, other]) => {
      const managed = decodeManaged(mf);
      const others = decodeManaged(other);
      if (!managed) return;
      const o = others?.values().next().value?.set ?? new FieldSet();
      for (const m of managed.values()) {
        for (const p of m.set.paths()) pathString(p);
        m.set.union(o).difference(o).intersection(m.set).toFieldsV1();
      }
      encodeManaged(managed);
    });
    expect(n).toBeGreaterThan(0);
  });

  it('field paths: selector fields read from any object', () => {
    const path = fc.oneof(fc.constantFrom('metadata.name', 'spec.nodeName', '__proto__.x', 'constructor.name', 'a..b', '', '.', 'spec.containers.0.name', 'length'), fc.array(key, { maxLength: 5 }).map((k) => k.join('.')));
    const n = fuzz('fieldValue', fc.tuple(jsonValue, path), ([o, p]) => fieldValue(o, p));
    expect(n).toBeGreaterThan(0);
  });
});
