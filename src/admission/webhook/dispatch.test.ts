import { describe, it, expect } from 'vitest';
import { catalogData } from '../../api/catalog-data.js';
import { errors, StatusError } from '../../errors.js';
import type { Attributes, ObjectSource } from '../plugin.js';
import { AdmissionChain } from '../plugin.js';
import { compileRule } from './predicates/rules.js';
import { EquivalentResourceMapper } from './equivalents.js';
import { MutatingDispatcher } from './mutating-dispatcher.js';
import { ValidatingDispatcher } from './validating-dispatcher.js';
import { addWarning } from './generic.js';
import { responseError, TransportError } from './client.js';
import type { Hook } from './source.js';

const podInfo = catalogData.find((g) => g.group === '' && g.version === 'v1')!.resources.find((r) => r.resource === 'pods')!;
const objects: ObjectSource = { get: () => undefined, list: () => [] };
const mapper = new EquivalentResourceMapper(objects);

function attrs(over: Partial<Attributes> = {}): Attributes {
  return { operation: 'CREATE', info: podInfo, groupResource: { group: '', resource: 'pods' }, subresource: '', namespace: 'default', name: 'p', obj: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default' }, spec: {} }, old: null, dryRun: false, ...over };
}

/** A hook whose client answers with `answer(request)` (the review's request), or throws it. */
function hook(name: string, answer: (req: any, review: any) => any, over: Partial<Hook> = {}): Hook {
  return {
    uid: `cfg/${name}/0`,
    name,
    configurationName: 'cfg',
    type: 'admit',
    rules: [compileRule({ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] })],
    matchPolicy: 'Equivalent',
    namespaceSelector: {},
    objectSelector: {},
    failurePolicy: 'Fail',
    sideEffects: 'None',
    timeoutSeconds: 10,
    admissionReviewVersions: ['v1'],
    reinvocationPolicy: 'Never',
    client: {
      post: async (body: string) => {
        const review = JSON.parse(body);
        const r = answer(review.request, review);
        if (r instanceof Error) throw r;
        return r.kind ? r : { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: review.request.uid, ...r } };
      },
    } as any,
    ...over,
  };
}

const patch = (ops: any[]) => Buffer.from(JSON.stringify(ops)).toString('base64');
const failure = async (p: void | Promise<void>) => {
  try {
    await p;
  } catch (e) {
    return e as StatusError;
  }
  throw new Error('expected a failure');
};

describe('dry run and sideEffects', () => {
  it('Some or Unknown: kube 400 without calling; nil: a calling error under the failure policy', async () => {
    let called = 0;
    const d = new MutatingDispatcher(objects, mapper);
    for (const se of ['Some', 'Unknown']) {
      const e = await failure(d.dispatch(attrs({ dryRun: true }), [hook('se.example.com', () => (called++, { allowed: true }), { sideEffects: se })]));
      expect(e.code).toBe(400);
      expect(e.reason).toBe('BadRequest');
      expect(e.message).toBe('admission webhook "se.example.com" does not support dry run');
    }
    expect(called).toBe(0);
    const nil = await failure(new ValidatingDispatcher(objects, mapper).dispatch(attrs({ dryRun: true }), [hook('nil.example.com', () => ({ allowed: true }), { sideEffects: undefined })]));
    expect(nil.message).toBe('Internal error occurred: failed calling webhook "nil.example.com": Webhook SideEffects is nil');
    // NoneOnDryRun is called, with dryRun true
    let seen: any;
    await new ValidatingDispatcher(objects, mapper).dispatch(attrs({ dryRun: true }), [hook('ok.example.com', (r) => ((seen = r), { allowed: true }), { sideEffects: 'NoneOnDryRun' })]);
    expect(seen.dryRun).toBe(true);
  });
});

describe('answers', () => {
  it('denial: the webhook code (400 below 400), reason and message; "without explanation"', async () => {
    const v = new ValidatingDispatcher(objects, mapper);
    let e = await failure(v.dispatch(attrs(), [hook('d.example.com', () => ({ allowed: false, status: { code: 422, reason: 'Invalid', message: 'nope' } }))]));
    expect([e.code, e.reason, e.message]).toEqual([422, 'Invalid', 'admission webhook "d.example.com" denied the request: nope']);
    e = await failure(v.dispatch(attrs(), [hook('d.example.com', () => ({ allowed: false }))]));
    expect([e.code, e.message]).toEqual([400, 'admission webhook "d.example.com" denied the request without explanation']);
    e = await failure(v.dispatch(attrs(), [hook('d.example.com', () => ({ allowed: false, status: { reason: 'SomeReason' } }))]));
    expect(e.message).toBe('admission webhook "d.example.com" denied the request: SomeReason');
  });

  it('invalid answers are calling errors (Fail: 500; Ignore: admitted)', async () => {
    const v = new ValidatingDispatcher(objects, mapper);
    let e = await failure(v.dispatch(attrs(), [hook('u.example.com', () => ({ allowed: true, uid: 'other' }))]));
    expect(e.message).toMatch(/^Internal error occurred: failed calling webhook "u.example.com": received invalid webhook response: expected response.uid="[0-9a-f-]+", got "other"$/);
    e = await failure(v.dispatch(attrs(), [hook('p.example.com', () => ({ allowed: true, patchType: 'JSONPatch', patch: patch([]) }))]));
    expect(e.message).toBe('Internal error occurred: failed calling webhook "p.example.com": received invalid webhook response: validating webhook may not return response.patch');
    e = await failure(v.dispatch(attrs(), [hook('k.example.com', (req) => ({ apiVersion: 'admission.k8s.io/v1beta1', kind: 'AdmissionReview', response: { uid: req.uid, allowed: true } }))]));
    expect(e.message).toBe('Internal error occurred: failed calling webhook "k.example.com": received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview');
    const m = new MutatingDispatcher(objects, mapper);
    e = await failure(m.dispatch(attrs(), [hook('t.example.com', () => ({ allowed: true, patch: patch([{ op: 'add', path: '/x', value: 1 }]) }))]));
    expect(e.message).toBe('Internal error occurred: failed calling webhook "t.example.com": received invalid webhook response: webhook returned response.patch but not response.patchType');
    e = await failure(m.dispatch(attrs(), [hook('t.example.com', () => new TransportError('Post "https://x/?timeout=10s": EOF'))]));
    expect(e.message).toBe('Internal error occurred: failed calling webhook "t.example.com": failed to call webhook: Post "https://x/?timeout=10s": EOF');
    await m.dispatch(attrs(), [hook('i.example.com', () => new TransportError('EOF'), { failurePolicy: 'Ignore' })]);
    const none = await failure(v.dispatch(attrs(), [hook('v.example.com', () => ({ allowed: true }), { admissionReviewVersions: ['v2'] })]));
    expect(none.message).toBe('Internal error occurred: failed calling webhook "v.example.com": could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)');
  });

  it('a patch on a DELETE (no object) is refused; a failing patch is an internal error', async () => {
    const m = new MutatingDispatcher(objects, mapper);
    let e = await failure(m.dispatch(attrs({ operation: 'DELETE', obj: null, old: { metadata: { name: 'p' } } }), [hook('del.example.com', () => ({ allowed: true, patchType: 'JSONPatch', patch: patch([{ op: 'add', path: '/x', value: 1 }]) }))]));
    expect(e.message).toBe('Internal error occurred: admission webhook "del.example.com" attempted to modify the object, which is not supported for this operation');
    e = await failure(m.dispatch(attrs(), [hook('bad.example.com', () => ({ allowed: true, patchType: 'JSONPatch', patch: patch([{ op: 'remove', path: '/nothing/here' }]) }))]));
    expect(e.code).toBe(500);
    expect(e.message.startsWith('Internal error occurred: ')).toBe(true);
  });

  it('mutations apply in order, keep the object identity, and record audit annotations and warnings', async () => {
    const a = attrs();
    const obj = a.obj;
    const meta = a.obj.metadata;
    const m = new MutatingDispatcher(objects, mapper);
    await m.dispatch(a, [
      hook('one.example.com', () => ({ allowed: true, patchType: 'JSONPatch', patch: patch([{ op: 'add', path: '/metadata/labels', value: { one: '1' } }]), warnings: ['w1'], auditAnnotations: { k: 'v' } })),
      hook('two.example.com', (req) => ({ allowed: true, patchType: 'JSONPatch', patch: patch([{ op: 'add', path: '/metadata/labels/two', value: req.object.metadata.labels.one }]), warnings: ['w1'] })),
    ]);
    expect(a.obj).toBe(obj);
    expect(a.obj.metadata).toBe(meta);
    expect(a.obj.metadata.labels).toEqual({ one: '1', two: '1' });
    expect(a.warnings).toEqual(['w1']);
    expect(a.auditAnnotations!['one.example.com/k']).toBe('v');
    expect(JSON.parse(a.auditAnnotations!['mutation.webhook.admission.k8s.io/round_0_index_1'])).toEqual({ configuration: 'cfg', webhook: 'two.example.com', mutated: true });
    expect(JSON.parse(a.auditAnnotations!['patch.webhook.admission.k8s.io/round_0_index_0']).patchType).toBe('JSONPatch');
    expect(a.reinvoke).toBe(true);
  });

  it('validating hooks run in parallel and the first failure wins', async () => {
    const order: string[] = [];
    const slow = hook('slow.example.com', () => ({ allowed: true }));
    const inner = slow.client.post.bind(slow.client);
    slow.client = { post: async (b: string) => (await new Promise((r) => setTimeout(r, 30)), order.push('slow'), inner(b, 10)) } as any;
    const deny = hook('deny.example.com', () => (order.push('deny'), { allowed: false, status: { code: 403, message: 'no' } }));
    const e = await failure(new ValidatingDispatcher(objects, mapper).dispatch(attrs(), [slow, deny]));
    expect(e.code).toBe(403);
    expect(order).toEqual(['deny', 'slow']);
  });

  it('no matching hook: no promise', () => {
    const h = hook('x.example.com', () => ({ allowed: true }), { rules: [compileRule({ operations: ['UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] })] });
    expect(new ValidatingDispatcher(objects, mapper).dispatch(attrs(), [h])).toBeUndefined();
    expect(new MutatingDispatcher(objects, mapper).dispatch(attrs(), [h])).toBeUndefined();
  });
});

describe('reinvocation through the chain', () => {
  it('the chain runs its mutators again, and only IfNeeded hooks called before are called again', async () => {
    const calls: string[] = [];
    const d = new MutatingDispatcher(objects, mapper);
    const a1 = hook('a.example.com', (req) => (calls.push('a'), req.object.metadata.labels?.b && !req.object.metadata.labels['a-saw-b'] ? { allowed: true, patchType: 'JSONPatch', patch: patch([{ op: 'add', path: '/metadata/labels/a-saw-b', value: 'y' }]) } : { allowed: true }), { reinvocationPolicy: 'IfNeeded' });
    const b1 = hook('b.example.com', (req) => (calls.push('b'), req.object.metadata.labels?.b ? { allowed: true } : { allowed: true, patchType: 'JSONPatch', patch: patch([{ op: 'add', path: '/metadata/labels', value: { b: '1' } }]) }));
    let builtin = 0;
    const plugin = { name: 'hooks', handles: () => true, admit: (a: Attributes) => d.dispatch(a, [a1, b1]), mutates: true, validates: false } as any;
    const counter = { name: 'builtin', handles: () => true, admit: () => void builtin++, mutates: true, validates: false } as any;
    const chain = new AdmissionChain([counter, plugin]);
    const a = attrs();
    await chain.admit(a);
    expect(calls).toEqual(['a', 'b', 'a']);
    expect(builtin).toBe(2);
    expect(a.obj.metadata.labels).toEqual({ b: '1', 'a-saw-b': 'y' });
  });
});

describe('warnings and client errors', () => {
  it('kube recorder limits: duplicates dropped, truncation past 4 KiB', () => {
    const a = attrs();
    addWarning(a, 'x');
    addWarning(a, 'x');
    addWarning(a, 'bad\nline');
    expect(a.warnings).toEqual(['x']);
    for (let i = 0; i < 20; i++) addWarning(a, `${i}`.padEnd(300, '.'));
    expect(a.warnings!.every((w) => [...w].length <= 300)).toBe(true);
    expect(a.warnings!.slice(1).every((w) => w.length === 256)).toBe(true);
    expect(a.warnings!.reduce((n, w) => n + w.length, 0)).toBeLessThanOrEqual(4096);
  });

  it('non-2xx answers as client-go words them', () => {
    expect(responseError(500, 'text/plain', Buffer.from('boom\n'), 0).message).toBe('an error on the server ("boom") has prevented the request from succeeding');
    expect(responseError(500, 'application/json', Buffer.from('{}'), 0).message).toBe('an error on the server ("unknown") has prevented the request from succeeding');
    expect(responseError(404, 'text/plain', Buffer.from(''), 0).message).toBe('the server could not find the requested resource');
    const st = responseError(429, 'application/json', Buffer.from(JSON.stringify({ kind: 'Status', code: 429, reason: 'TooManyRequests', message: 'slow down' })), 0);
    expect([st.code, st.message]).toEqual([429, 'slow down']);
    expect(errors.webhookDenied('x', { code: 200, message: 'm' }).code).toBe(400);
  });
});
