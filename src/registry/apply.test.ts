import { describe, expect, it } from 'vitest';
import { finishApply, planApply, recordUpdate, recordUpdateGeneral, isReset, type WriteIdentity } from './apply.js';
import { FieldSet, compare, fieldsOf, pathString } from './managed-fields.js';
import { ANY, rootNode } from './schema-walk.js';
import { StatusError } from '../errors.js';

const root = rootNode('apps', 'v1', 'Deployment')!;
const ctx = { root, hasStatus: true };
const id = (manager: string): WriteIdentity => ({ manager, apiVersion: 'apps/v1', subresource: '' });

function deploy(spec: any, extra: any = {}): any {
  return { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd', namespace: 'ns', ...extra }, spec };
}

const base = {
  selector: { matchLabels: { app: 'd' } },
  template: { metadata: { labels: { app: 'd' } }, spec: { containers: [{ name: 'c', image: 'i:1' }] } },
};

/** Runs one apply the way the store does: plan, then finish on the result. */
function apply(live: any | null, config: any, manager: string, force = false): any {
  const { obj, plan } = planApply(live ? structuredClone(live) : null, structuredClone(config), id(manager), ctx);
  finishApply(live, obj, plan, id(manager), { force }, ctx);
  return obj;
}

function owners(obj: any): Record<string, any> {
  return Object.fromEntries((obj.metadata.managedFields ?? []).map((e: any) => [`${e.manager}/${e.operation}`, e.fieldsV1]));
}

describe('field sets', () => {
  it('round-trips FieldsV1 with members, list-map keys and sets', () => {
    const v1 = { 'f:metadata': { 'f:labels': { '.': {}, 'f:a': {} } }, 'f:spec': { 'f:x': { 'k:{"name":"n"}': { '.': {}, 'f:name': {} } } } };
    const s = FieldSet.fromFieldsV1(v1);
    expect(s.has(['f:metadata', 'f:labels'])).toBe(true);
    expect(s.has(['f:metadata'])).toBe(false);
    expect(s.toFieldsV1()).toEqual(v1);
  });

  it('fieldsOf keys container ports by containerPort and the protocol default', () => {
    const s = fieldsOf(deploy({ template: { spec: { containers: [{ name: 'c', ports: [{ containerPort: 80 }] }] } } }), root);
    const paths = s.paths().map(pathString);
    expect(paths).toContain('.spec.template.spec.containers[name="c"].ports[containerPort=80,protocol="TCP"].containerPort');
    expect(paths).toContain('.spec.template.spec.containers[name="c"]');
  });

  it('compare sees added, modified and removed fields', () => {
    const c = compare(deploy({ replicas: 1, paused: true }), deploy({ replicas: 2, minReadySeconds: 3 }), root);
    expect(c.modified.paths().map(pathString)).toEqual(['.spec.replicas']);
    expect(c.added.paths().map(pathString)).toEqual(['.spec.minReadySeconds']);
    expect(c.removed.paths().map(pathString)).toEqual(['.spec.paused']);
  });

  it('untyped data: every key a member, lists atomic', () => {
    const s = fieldsOf({ spec: { a: [1, 2], b: { c: 1 } } }, ANY);
    expect(s.paths().map(pathString).sort()).toEqual(['.spec', '.spec.a', '.spec.b', '.spec.b.c']);
  });
});

describe('server-side apply', () => {
  it('creates with the applier owning its fields, not identity or status', () => {
    const obj = apply(null, deploy({ ...base, replicas: 2 }), 'alice');
    const o = owners(obj);
    expect(Object.keys(o)).toEqual(['alice/Apply']);
    expect(o['alice/Apply']['f:spec']['f:replicas']).toEqual({});
    expect(o['alice/Apply']['f:metadata']).toBeUndefined();
    expect(obj.metadata.managedFields[0]).toMatchObject({ apiVersion: 'apps/v1', fieldsType: 'FieldsV1', operation: 'Apply' });
  });

  it('a different value from another applier conflicts, naming the field and the manager', () => {
    const live = apply(null, deploy({ ...base, replicas: 2 }), 'alice');
    try {
      apply(live, deploy({ ...base, replicas: 5 }), 'bob');
      expect.unreachable();
    } catch (e) {
      const se = e as StatusError;
      expect(se.code).toBe(409);
      expect(se.reason).toBe('Conflict');
      expect(se.message).toBe('Apply failed with 1 conflict: conflict with "alice": .spec.replicas');
      expect(se.details?.causes).toEqual([{ reason: 'FieldManagerConflict', message: 'conflict with "alice"', field: '.spec.replicas' }]);
    }
  });

  it('force takes ownership; the same value is shared', () => {
    const live = apply(null, deploy({ ...base, replicas: 2 }), 'alice');
    const forced = apply(live, deploy({ ...base, replicas: 5 }), 'bob', true);
    expect(forced.spec.replicas).toBe(5);
    const o = owners(forced);
    expect(o['alice/Apply']['f:spec']['f:replicas']).toBeUndefined();
    expect(o['bob/Apply']['f:spec']['f:replicas']).toEqual({});
    // shared: same value, no conflict, both own the image
    const shared = apply(forced, deploy({ ...base }), 'carol');
    const o2 = owners(shared);
    expect(o2['carol/Apply']['f:spec']['f:template']).toBeDefined();
    expect(o2['alice/Apply']['f:spec']['f:template']).toBeDefined();
  });

  it('a sole owner that omits a field removes it; a shared one only drops its ownership', () => {
    const live = apply(null, deploy({ ...base, replicas: 2, minReadySeconds: 5 }), 'alice');
    const out = apply(live, deploy({ ...base, replicas: 2 }), 'alice');
    expect(out.spec.minReadySeconds).toBeUndefined();
    const both = apply(out, deploy({ ...base, replicas: 2 }), 'bob');
    const out2 = apply(both, deploy({ ...base }), 'alice');
    expect(out2.spec.replicas).toBe(2);
    expect(owners(out2)['alice/Apply']['f:spec']['f:replicas']).toBeUndefined();
  });

  it('removes a container it no longer applies, keeps one another manager added', () => {
    const two = deploy({ ...base, template: { ...base.template, spec: { containers: [{ name: 'c', image: 'i' }, { name: 'x', image: 'x' }] } } });
    let live = apply(null, two, 'alice');
    const updated = structuredClone(live);
    updated.spec.template.spec.containers.push({ name: 'y', image: 'y' });
    recordUpdate(live, updated, id('kubectl-edit'), ctx);
    live = updated;
    const out = apply(live, deploy({ ...base }), 'alice');
    expect(out.spec.template.spec.containers.map((c: any) => c.name)).toEqual(['c', 'y']);
  });

  it('updates never conflict and take the fields they change', () => {
    const live = apply(null, deploy({ ...base, replicas: 2 }), 'alice');
    const next = structuredClone(live);
    next.spec.replicas = 7;
    recordUpdate(live, next, id('kubectl'), ctx);
    const o = owners(next);
    expect(o['kubectl/Update']['f:spec']['f:replicas']).toEqual({});
    expect(o['alice/Apply']['f:spec']['f:replicas']).toBeUndefined();
    // and alice now conflicts with the updater, named with its version
    try {
      apply(next, deploy({ ...base, replicas: 2 }), 'alice');
      expect.unreachable();
    } catch (e) {
      expect((e as StatusError).message).toBe('Apply failed with 1 conflict: conflict with "kubectl" using apps/v1: .spec.replicas');
    }
  });

  it('the reset rule: [{}] strips managedFields, and the writer then owns what it changed', () => {
    const live = apply(null, deploy({ ...base, replicas: 2 }), 'alice');
    const next = structuredClone(live);
    next.metadata.managedFields = [{}];
    next.spec.replicas = 3;
    expect(isReset(next.metadata.managedFields)).toBe(true);
    recordUpdate(live, next, id('resetter'), ctx);
    expect(next.metadata.managedFields.map((e: any) => e.manager)).toEqual(['resetter']);
    expect(owners(next)['resetter/Update']['f:spec']).toEqual({ 'f:replicas': {} });
    const plain = structuredClone(live);
    plain.metadata.managedFields = [];
    plain.spec.paused = true;
    recordUpdate(live, plain, id('x'), ctx);
    expect(plain.metadata.managedFields.map((e: any) => e.manager).sort()).toEqual(['alice', 'x']);
  });

  it('merges Update entries per manager and caps them at ten', () => {
    let live = apply(null, deploy({ ...base, replicas: 1 }), 'alice');
    for (let i = 0; i < 12; i++) {
      const next = structuredClone(live);
      next.metadata.labels = { ...(next.metadata.labels ?? {}), ['l' + i]: 'v' };
      recordUpdate(live, next, id('m' + i), ctx);
      live = next;
    }
    const updaters = live.metadata.managedFields.filter((e: any) => e.operation === 'Update');
    expect(updaters.length).toBe(10);
    expect(updaters.some((e: any) => e.manager === 'ancient-changes')).toBe(true);
  });

  it('listType set: items are v: elements, merged with the live items', () => {
    const podRoot = rootNode('', 'v1', 'Pod')!;
    const pctx = { root: podRoot, hasStatus: true };
    const pid = (m: string): WriteIdentity => ({ manager: m, apiVersion: 'v1', subresource: '' });
    const cfg = (fin: string[]) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', finalizers: fin }, spec: { containers: [{ name: 'c', image: 'i' }] } });
    const a = planApply(null, cfg(['a/x']), pid('a'), pctx);
    finishApply(null, a.obj, a.plan, pid('a'), { force: false }, pctx);
    const b = planApply(a.obj, cfg(['b/y']), pid('b'), pctx);
    finishApply(a.obj, b.obj, b.plan, pid('b'), { force: false }, pctx);
    expect(b.obj.metadata.finalizers).toEqual(['a/x', 'b/y']);
    const bSet = b.obj.metadata.managedFields.find((e: any) => e.manager === 'b').fieldsV1;
    expect(bSet['f:metadata']['f:finalizers']).toEqual({ 'v:"b/y"': {} });
  });

  it('atomic maps and structs are owned whole and replaced whole', () => {
    const live = apply(null, deploy({ ...base, selector: { matchLabels: { app: 'd', tier: 'x' } } }), 'alice');
    const set = owners(live)['alice/Apply']['f:spec'];
    expect(set['f:selector']).toEqual({});
    const out = apply(live, deploy({ ...base }), 'alice');
    expect(out.spec.selector).toEqual({ matchLabels: { app: 'd' } });
  });

  it('a status write records its ownership with the subresource', () => {
    const live = apply(null, deploy({ ...base, replicas: 1 }), 'alice');
    const next = structuredClone(live);
    next.status = { replicas: 1 };
    recordUpdate(live, next, { manager: 'ctrl', apiVersion: 'apps/v1', subresource: 'status' }, ctx);
    const e = next.metadata.managedFields.find((x: any) => x.manager === 'ctrl');
    expect(e).toMatchObject({ operation: 'Update', subresource: 'status', fieldsV1: { 'f:status': { 'f:replicas': {} } } });
    // and a main-resource apply never owns status
    const withStatus = apply(next, { ...deploy({ ...base, replicas: 1 }), status: { replicas: 9 } }, 'alice');
    expect(owners(withStatus)['alice/Apply']['f:status']).toBeUndefined();
  });
});

describe('the create fast path of recordUpdate', () => {
  // recordUpdate(null, ...) builds a create's entry straight as FieldsV1; it must give,
  // byte for byte (key order included), what the general path (compare, field sets,
  // withoutIgnored, encodeManaged) gives.
  const kinds: Array<[string, string, string, boolean]> = [
    ['', 'v1', 'ConfigMap', false],
    ['', 'v1', 'Pod', true],
    ['', 'v1', 'Service', true],
    ['apps', 'v1', 'Deployment', true],
    ['batch', 'v1', 'Job', true],
  ];
  const objects: any[] = [
    { metadata: { generateName: 'cm-', name: 'cm-x', namespace: 'ns', uid: 'u', creationTimestamp: 't' }, data: { payload: 'x', b: '' } },
    { metadata: { name: 'a', namespace: 'ns', labels: { a: 'b' }, annotations: {}, finalizers: ['x', 'y', 'x'], ownerReferences: [{ apiVersion: 'v1', kind: 'K', name: 'o', uid: 'u1' }, { uid: 'u1' }, { name: 'nouid' }] }, data: {} },
    { metadata: { name: 'only-ignored', namespace: 'ns', uid: 'u', resourceVersion: '5', generation: 1, selfLink: 's' } },
    { metadata: {} },
    { metadata: { name: 'x', undefinedValue: undefined, unknownMeta: { deep: [1, 2] } }, data: null, binaryData: { k: 'AAAA' }, immutable: false, extra: { nested: { list: [1, { a: 1 }], empty: {} }, nothing: null } },
    {
      metadata: { name: 'p', namespace: 'ns' },
      spec: {
        containers: [
          { name: 'c', image: 'i', ports: [{ containerPort: 80 }, { containerPort: 80, protocol: 'UDP' }, { containerPort: 80 }], env: [{ name: 'A', value: '1' }, { name: 'A', value: '2' }, { value: 'nameless' }], resources: {} },
          { name: 'd', image: 'j', command: ['a', 'b'], volumeMounts: [] },
          null,
        ],
        volumes: [{ name: 'v', emptyDir: {} }, { name: 'w', configMap: { name: 'c', items: [{ key: 'k', path: 'p' }] } }],
        securityContext: {},
        nodeSelector: { a: 'b' },
        tolerations: [{ key: 'k', operator: 'Exists' }],
        unknownSpecField: [{ a: 1 }],
      },
      status: { phase: 'Pending', conditions: [{ type: 'Ready', status: 'True' }] },
    },
    {
      metadata: { name: 's', namespace: 'ns' },
      spec: { ports: [{ port: 80, targetPort: 8080 }, { port: 80, protocol: 'UDP' }, { name: 'x', port: 443, protocol: 'TCP' }], selector: { app: 'a' }, clusterIPs: ['10.0.0.1'], type: 'ClusterIP' },
      status: { loadBalancer: {} },
    },
    {
      metadata: { name: 'd', namespace: 'ns', labels: { app: 'd' } },
      spec: { replicas: 3, selector: { matchLabels: { app: 'd' }, matchExpressions: [{ key: 'a', operator: 'In', values: ['x'] }] }, template: { metadata: { labels: { app: 'd' } }, spec: { containers: [{ name: 'c', image: 'i:1' }] } }, strategy: {} },
      status: { replicas: 1 },
    },
    { metadata: { name: 'j', namespace: 'ns' }, spec: { template: { spec: { containers: [], restartPolicy: 'Never' } }, backoffLimit: 0 } },
    // values a strategy may leave undefined: a struct Go keeps by value adds nothing then
    { metadata: { name: 'u', namespace: 'ns', labels: { a: undefined } }, spec: { template: { metadata: undefined }, strategy: { type: undefined }, selector: { matchLabels: undefined } }, data: { a: undefined } },
  ];
  it('gives what the general path gives, for every kind and shape', () => {
    const me: WriteIdentity = { manager: 'm', apiVersion: 'v1', subresource: '' };
    let compared = 0;
    for (const [group, version, kind, hasStatus] of kinds) {
      const r = rootNode(group, version, kind) ?? ANY;
      for (const roots of [r, ANY]) {
        for (const o of objects) {
          const c = { root: roots, hasStatus };
          const a = structuredClone({ apiVersion: group ? `${group}/${version}` : version, kind, ...o });
          const b = structuredClone(a);
          recordUpdate(null, a, me, c);
          recordUpdateGeneral(null, b, me, c);
          for (const e of [...(a.metadata.managedFields ?? []), ...(b.metadata.managedFields ?? [])]) e.time = 'T';
          expect(JSON.stringify(a)).toBe(JSON.stringify(b));
          compared++;
        }
      }
    }
    expect(compared).toBe(kinds.length * 2 * objects.length);
  });

  it('records the create of a ConfigMap as kube does', () => {
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'cm-', name: 'cm-x', namespace: 'ns', uid: 'u' }, data: { payload: 'x' } };
    recordUpdate(null, cm, { manager: 'kubectl', apiVersion: 'v1', subresource: '' }, { root: rootNode('', 'v1', 'ConfigMap')!, hasStatus: false });
    expect((cm.metadata as any).managedFields).toEqual([
      { manager: 'kubectl', operation: 'Update', apiVersion: 'v1', time: expect.any(String), fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { '.': {}, 'f:payload': {} }, 'f:metadata': { 'f:generateName': {} } } },
    ]);
  });
});

describe('client keys are own fields (issue 17)', () => {
  it('an apply configuration with __proto__ keys merges them as fields and pollutes nothing', () => {
    const config = JSON.parse('{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"ns","__proto__":{"polluted":"yes"}},"spec":{"replicas":1,"__proto__":{"polluted":"yes"}}}');
    const out = apply(null, config, 'm');
    expect(({} as any).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(out.spec)).toBe(Object.prototype);
    expect(Object.hasOwn(out.spec, '__proto__')).toBe(true);
    expect(out.spec.replicas).toBe(1);
    // and applied again without them, they are pruned as the applier's own fields
    delete config.spec['__proto__'];
    const again = apply(out, config, 'm');
    expect(Object.hasOwn(again.spec, '__proto__')).toBe(false);
    expect(({} as any).polluted).toBeUndefined();
  });

  it('a configuration field named like an inherited member is a field the live object lacks', () => {
    const out = apply(deploy(base), { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd', namespace: 'ns' }, spec: { toString: { a: 1 }, constructor: 'x' } }, 'm');
    expect(out.spec.toString).toEqual({ a: 1 });
    expect(out.spec.constructor).toBe('x');
  });
});
