// Fuzz targets for the patch engines, in process: JSON patch (every op, bad paths, `-`,
// ~0/~1 escapes, big indexes), JSON merge patch (nulls, deep nesting), strategic merge
// patch (its directives: $patch, $retainKeys, $setElementOrder, $deleteFromPrimitiveList),
// and server-side apply (configurations against a live object with other managers). Each
// patch is applied to a live object as the store does; the result must be an object that
// encodes, or a 4xx StatusError (strategic merge's kube-mirroring 500 for a missing merge
// key aside), within the per-input bound. The live object itself must not change.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { jsonPatch, mergePatch } from '../../src/registry/patch.js';
import { strategicMergePatch } from '../../src/registry/strategic-merge.js';
import { finishApply, planApply, recordUpdate, type ManagedContext } from '../../src/registry/apply.js';
import { rootNode } from '../../src/registry/schema-walk.js';
import { checkFields, enforceFieldCheck } from '../../src/registry/field-validation.js';
import { decodeApplyBody } from '../../src/handlers/patch.js';
import { applyConfig, asJson, jsonPatchDoc, jsonValue, managedFieldsList, mergePatchDoc, nested, objectOf, pointer, strategicPatchDoc } from './arbitraries.js';
import { depthOf, fuzz, hasToStringKey, outcome as outcomeOf } from './harness.js';
import { DEEP, INHERITED, applyNameToString, directiveToString, fromInherited, fromMissing, opToString, pointerProto, proto } from './known.js';

const DEPLOYMENT = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'fz', namespace: 'default', labels: { a: '1' }, finalizers: ['x', 'y'], resourceVersion: '5', uid: 'u' },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: 'fz' } },
    template: {
      metadata: { labels: { app: 'fz' } },
      spec: {
        containers: [
          { name: 'c', image: 'nginx', args: ['a', 'b'], env: [{ name: 'E', value: '1' }], ports: [{ containerPort: 80, protocol: 'TCP' }] },
          { name: 'd', image: 'busybox' },
        ],
        volumes: [{ name: 'v', emptyDir: {} }],
      },
    },
  },
};

const ROOT = rootNode('apps', 'v1', 'Deployment')!;

/** A live object: the Deployment above, sometimes with fuzzed managedFields (other owners to conflict with). */
const live = fc.oneof({ weight: 3, arbitrary: fc.constant(DEPLOYMENT) }, { weight: 1, arbitrary: managedFieldsList.map((mf) => ({ ...DEPLOYMENT, metadata: { ...DEPLOYMENT.metadata, managedFields: mf } })) });

/** The store's rule after a patch: the result must be an object; then it is encoded. */
function stored(out: unknown): void {
  if (out === null || typeof out !== 'object' || Array.isArray(out)) return;
  JSON.stringify(out);
}

function unchanged(before: string, obj: unknown): void {
  if (JSON.stringify(obj) !== before) throw new Error('the engine changed the live object it was given');
}

describe('fuzz: patch engines', () => {
  it('JSON patch (all ops, bad paths, -, ~0/~1, big indexes)', () => {
    const n = fuzz('jsonPatch', fc.tuple(live, jsonPatchDoc), ([obj, p]) => {
      const before = JSON.stringify(obj);
      try {
        stored(jsonPatch(obj, p));
      } finally {
        unchanged(before, obj);
      }
    }, { known: ([, p]) => pointerProto(p) || fromMissing(p) || fromInherited(p) || opToString(p) || depthOf(p) > DEEP });
    expect(n).toBeGreaterThan(0);
  });

  it('JSON merge patch (nulls, deep nesting)', () => {
    const n = fuzz('mergePatch', fc.tuple(live, mergePatchDoc), ([obj, p]) => {
      const before = JSON.stringify(obj);
      try {
        stored(mergePatch(obj, p));
      } finally {
        unchanged(before, obj);
      }
    }, { known: ([, p]) => depthOf(p) > 5 * DEEP });
    expect(n).toBeGreaterThan(0);
  });

  it('strategic merge patch ($patch, $retainKeys, $setElementOrder, $deleteFromPrimitiveList)', () => {
    const n = fuzz('strategicMergePatch', fc.tuple(live, strategicPatchDoc), ([obj, p]) => {
      const before = JSON.stringify(obj);
      try {
        stored(strategicMergePatch(obj, p as any, ROOT));
      } finally {
        unchanged(before, obj);
      }
    }, { known: ([, p]) => proto(p) || directiveToString(p) || depthOf(p) > DEEP });
    expect(n).toBeGreaterThan(0);
  });

  it('server-side apply (configurations against a live object with other managers; force or not)', () => {
    const config = fc.oneof(
      { weight: 4, arbitrary: applyConfig },
      { weight: 2, arbitrary: fc.tuple(objectOf('apps/v1', 'Deployment'), strategicPatchDoc).map(([o, p]) => asJson({ ...o, ...(typeof p === 'object' && p && !Array.isArray(p) ? p : {}), apiVersion: 'apps/v1', kind: 'Deployment' })) },
      { weight: 1, arbitrary: jsonValue },
    );
    const ctx: ManagedContext = { root: ROOT, hasStatus: true };
    const target = { info: { group: 'apps', version: 'v1', kind: 'Deployment', namespaced: true } };
    const known = ([, cfg]: [unknown, unknown, ...unknown[]]) => proto(cfg) || applyNameToString(cfg) || depthOf(cfg) > DEEP;
    const n = fuzz('apply', fc.tuple(fc.option(live, { nil: null }), config, fc.boolean(), fc.constantFrom('m', 'kubectl', 'before-first-apply')), ([obj, cfg0, force, manager]) => {
      // what the handler does first: decode the YAML (or JSON) configuration, check its fields
      const c = { req: { headers: { 'content-type': 'application/apply-patch+yaml' }, body: Buffer.from(JSON.stringify(cfg0)) }, target, info: { name: 'fz', namespace: 'default' } };
      const cfg = decodeApplyBody(c as any);
      enforceFieldCheck(checkFields(cfg, target.info, 'Warn', { required: false }), 'Deployment', 'apps/v1', 'apps', 'fz', []);
      const before = JSON.stringify(obj);
      const id = { manager, apiVersion: 'apps/v1', subresource: '' };
      try {
        const { obj: out, plan } = planApply(obj === null ? null : structuredClone(obj), structuredClone(cfg), id, ctx);
        finishApply(obj, out, plan, id, { force }, ctx);
        stored(out);
        // an Update after it (managedFields recorded as a non-apply write would)
        recordUpdate(out, structuredClone(out), { manager: 'other', apiVersion: 'apps/v1', subresource: '' }, ctx);
      } finally {
        unchanged(before, obj);
      }
    }, { known });
    expect(n).toBeGreaterThan(0);
  });

  // known: [{"op":"move","path":"/"}] and [{"op":"copy","path":""}] (no from) → TypeError (500);
  // [{"op":"copy","from":"/toString","path":"/x"}] → DOMException (500)
  it('fixed: JSON patch move/copy without a string from, or from an inherited property', () => {
    const from = fc.oneof(fc.constantFrom(undefined, null, 1, {}, []), fc.constantFrom(...INHERITED).map((t) => `/${t}`), fc.constantFrom(...INHERITED).map((t) => `/metadata/${t}`));
    fuzz('jsonPatchFrom', fc.tuple(fc.constantFrom('move', 'copy'), pointer, from), ([op, path, f]) => jsonPatch(DEPLOYMENT, asJson([{ op, path, from: f }])));
  });

  // known: [{"op":{"toString":1},"path":"/x"}] → TypeError (500); {"spec":{"$patch":{"toString":1}}} and
  // {"metadata":{"$retainKeys":[[{"toString":1}]]}} → TypeError (500)
  it('fixed: String() of a decoded object with a toString key (JSON patch op, strategic $patch)', () => {
    const odd = fc.dictionary(fc.constantFrom('toString', 'valueOf', 'a'), jsonValue, { minKeys: 1 }).map((o) => ({ ...o, toString: (o as any).toString ?? 1 }));
    fuzz('toStringKey', odd, (o) => {
      expect(outcomeOf(() => jsonPatch(DEPLOYMENT, asJson([{ op: o, path: '/x' }])))).toBeLessThan(500);
      expect(outcomeOf(() => strategicMergePatch(DEPLOYMENT, asJson({ spec: { $patch: o } }), ROOT))).toBeLessThan(500);
      expect(outcomeOf(() => strategicMergePatch(DEPLOYMENT, asJson({ metadata: { $retainKeys: [[o]] } }), ROOT))).toBeLessThan(500);
    });
  });

  // known: {"spec":{"a":{"a":...1...}}} nested 3000 levels, as a strategic merge patch → RangeError (500)
  it('fixed: patches nested thousands of levels deep', () => {
    fuzz('deepPatch', fc.tuple(fc.integer({ min: 1_000, max: 9_999 }), fc.constantFrom<'obj' | 'arr' | 'mixed'>('obj', 'arr', 'mixed')), ([d, k]) => {
      const v = JSON.parse(nested(d - 2, k));
      strategicMergePatch(DEPLOYMENT, { spec: v }, ROOT);
      mergePatch(DEPLOYMENT, { spec: v });
      jsonPatch(DEPLOYMENT, [{ op: 'add', path: '/spec/x', value: v }]);
    });
  });

  // known (security): {"__proto__":{"polluted":"yes"}} as a strategic merge patch, or
  // [{"op":"add","path":"/__proto__/polluted","value":"yes"}] as a JSON patch, sets
  // Object.prototype.polluted in the server process
  it('fixed: patches must not write through __proto__', () => {
    const target = fc.constantFrom('', 'spec', 'metadata/labels');
    fuzz('protoPollution', fc.tuple(target, fc.string({ maxLength: 8 }), jsonValue), ([at, k, v]) => {
      const path = `${at ? `/${at}` : ''}/__proto__/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      outcomeOf(() => jsonPatch(DEPLOYMENT, asJson([{ op: 'add', path, value: v }])));
      const p: any = JSON.parse(`{"__proto__":${JSON.stringify({ [k]: v })}}`);
      outcomeOf(() => strategicMergePatch(DEPLOYMENT, at === 'spec' ? { spec: p } : p, ROOT));
    });
  });
});
