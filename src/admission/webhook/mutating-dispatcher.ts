// Mutating webhooks, one after another in configuration order (kube's
// webhook/mutating/dispatcher.go): each sees the object as the ones before left it, its JSON
// patch is applied (in the hook's version, then back to the request's), and a failure is
// judged by the hook's failurePolicy. Reinvocation (reinvocationPolicy: IfNeeded, kube's
// reinvocationcontext.go): when a later step changed the object, the chain runs its mutating
// steps once more (AdmissionChain) and hooks that asked for it, and were called before the
// change, are called again; a hook is never called for the first time in that second round.
//
// Thread ownership: the front thread; per-request state lives in a WeakMap keyed by the
// request's Attributes.
import { childSpan, endSpan, tracingOn } from '../../tracing/request-tracing.js';
import { performance } from 'node:perf_hooks';
import { errors, goQuote } from '../../errors.js';
import { deepEqual } from '../../registry/managed-fields.js';
import { jsonPatch } from '../../registry/patch.js';
import type { ResourceInfo } from '../../api/catalog-types.js';
import type { Attributes, ObjectSource } from '../plugin.js';
import { callWebhook } from './call.js';
import { convertObject, type EquivalentResourceMapper } from './equivalents.js';
import { CallingWebhookError, WebhookRejection } from './errors.js';
import { addAuditAnnotation, addWarning, replaceObject, requestKind, requestResource, shouldCallHook, VersionedObjects } from './generic.js';
import { admissionMetrics } from './metrics.js';
import type { Invocation } from './request/admissionreview.js';
import { newReinvokeState, requireReinvoking, type ReinvokeState } from '../reinvocation.js';
import type { Hook } from './source.js';

export const PATCH_AUDIT_ANNOTATION_PREFIX = 'patch.webhook.admission.k8s.io/';
export const MUTATION_AUDIT_ANNOTATION_PREFIX = 'mutation.webhook.admission.k8s.io/';
export const MUTATION_FAILED_OPEN_PREFIX = 'failed-open.' + MUTATION_AUDIT_ANNOTATION_PREFIX;

const states = new WeakMap<Attributes, ReinvokeState>();

export class MutatingDispatcher {
  constructor(
    private readonly objects: ObjectSource,
    private readonly mapper: EquivalentResourceMapper,
    private readonly defaulter?: (obj: any, info: ResourceInfo) => void,
  ) {}

  /** Calls the hooks that apply; no promise when none does. */
  dispatch(a: Attributes, hooks: Hook[]): void | Promise<void> {
    const round = a.reinvocationRound ? 1 : 0;
    const st = states.get(a);
    if (round === 1) {
      // nothing was called in the first round: nothing to call again
      if (!st) return;
      if (st.lastOutput !== undefined && !deepEqual(st.lastOutput, a.obj)) requireReinvoking(st);
      if (st.reinvoke.size === 0) return;
    }
    return this.from(0, a, hooks, new VersionedObjects(a, this.mapper), round);
  }

  private from(start: number, a: Attributes, hooks: Hook[], v: VersionedObjects, round: number): void | Promise<void> {
    for (let i = start; i < hooks.length; i++) {
      const hook = hooks[i];
      const inv = shouldCallHook(hook, a, this.objects, this.mapper, (k, r) => v.get(k, r));
      if (!inv) continue;
      let st = states.get(a);
      if (round === 1 && !st?.reinvoke.has(hook.uid)) continue;
      if (!st) states.set(a, (st = newReinvokeState()));
      return this.invoke(hook, i, inv, a, v, st, round).then(() => this.from(i + 1, a, hooks, v, round));
    }
    const st = states.get(a);
    // what the next round compares against: needed only while a hook may be called again
    if (st && st.previouslyInvoked.size > 0) st.lastOutput = a.obj === null || a.obj === undefined ? a.obj : structuredClone(a.obj);
    else if (st) st.lastOutput = undefined;
  }

  private async invoke(hook: Hook, index: number, inv: Invocation, a: Attributes, v: VersionedObjects, st: ReinvokeState, round: number): Promise<void> {
    const t0 = performance.now();
    // (kube's span for each webhook call; nothing made with tracing off)
    const span = tracingOn() ? childSpan('Call mutating webhook', spanAttributes(hook, a)) : undefined;
    let changed = false;
    let err: unknown;
    try {
      changed = await this.callAndPatch(hook, index, inv, a, v, round);
    } catch (e) {
      err = e;
    }
    endSpan(span, err);
    addAuditAnnotation(a, `${MUTATION_AUDIT_ANNOTATION_PREFIX}round_${round}_index_${index}`, JSON.stringify({ configuration: hook.configurationName, webhook: hook.name, mutated: changed }));
    const ignore = hook.failurePolicy === 'Ignore';
    const seconds = (performance.now() - t0) / 1000;
    // mutating webhooks run one after another: their times add up (kube's sum latency tracker)
    if (a.latency) a.latency.sliExcludedSeconds = (a.latency.sliExcludedSeconds ?? 0) + seconds;
    if (err === undefined) admissionMetrics.observeWebhook(hook.name, seconds, false, a.operation, 'admit', 200);
    else if (err instanceof CallingWebhookError) {
      if (!ignore) admissionMetrics.observeRejection(hook.name, 'admit', a.operation, 'calling_webhook_error', err.status.code);
      admissionMetrics.observeWebhook(hook.name, seconds, !ignore, a.operation, 'admit', err.status.code);
    } else if (err instanceof WebhookRejection) {
      admissionMetrics.observeRejection(hook.name, 'admit', a.operation, 'no_error', err.status.code);
      admissionMetrics.observeWebhook(hook.name, seconds, true, a.operation, 'admit', err.status.code);
    } else {
      admissionMetrics.observeRejection(hook.name, 'admit', a.operation, 'apiserver_internal_error', 0);
      admissionMetrics.observeWebhook(hook.name, seconds, true, a.operation, 'admit', 0);
    }
    if (changed) {
      // the object changed: hooks called before may want to see it again (kube's SetShouldReinvoke)
      requireReinvoking(st);
      a.reinvoke = true;
    }
    if (hook.reinvocationPolicy === 'IfNeeded') st.previouslyInvoked.add(hook.uid);
    if (err === undefined) return;
    if (err instanceof CallingWebhookError) {
      if (ignore) {
        admissionMetrics.observeFailOpen(hook.name, 'admit');
        addAuditAnnotation(a, `${MUTATION_FAILED_OPEN_PREFIX}round_${round}_index_${index}`, hook.name);
        console.warn(`W Failed calling webhook, failing open ${hook.name}: ${err.message}`);
        return;
      }
      throw errors.internal(err.message);
    }
    if (err instanceof WebhookRejection) throw err.status;
    throw err;
  }

  /** One call and its patch; whether the object changed (kube's callAttrMutatingHook). */
  private async callAndPatch(hook: Hook, index: number, inv: Invocation, a: Attributes, v: VersionedObjects, round: number): Promise<boolean> {
    const objs = v.get(inv.kind, inv.resource);
    const res = await callWebhook(hook, a, inv, { requestKind: requestKind(a), requestResource: requestResource(a), object: objs.object, oldObject: objs.oldObject }, true);
    for (const [k, val] of Object.entries(res.auditAnnotations ?? {})) addAuditAnnotation(a, `${hook.name}/${k}`, String(val));
    for (const w of res.warnings ?? []) addWarning(a, w);
    if (!res.allowed) throw new WebhookRejection(errors.webhookDenied(hook.name, res.result));
    if (!res.patch || res.patch.length === 0) return false;
    let ops: unknown;
    try {
      ops = JSON.parse(res.patch.toString('utf8'));
      if (!Array.isArray(ops)) throw new Error('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
    } catch (e) {
      throw new CallingWebhookError(hook.name, `received undecodable patch in webhook response: ${(e as Error).message}`, errors.serviceUnavailable('error decoding patch in webhook response'));
    }
    if (ops.length === 0) return false;
    if (objs.object === null || objs.object === undefined) {
      throw errors.internal(`admission webhook ${goQuote(hook.name)} attempted to modify the object, which is not supported for this operation`);
    }
    if (res.patchType !== 'JSONPatch') {
      throw new CallingWebhookError(hook.name, `unsupported patch type ${goQuote(res.patchType ?? '')}`, errors.webhookDenied(hook.name, res.result));
    }
    let patched: any;
    try {
      // copied only along the patched paths: objs.object is the request's object (or its
      // conversion), which the result replaces below, so sharing its other subtrees is safe
      patched = jsonPatch(objs.object, ops, undefined, undefined, true);
    } catch (e) {
      const why = (e as { cause?: unknown }).cause;
      throw errors.internal(typeof why === 'string' ? why : (e as Error).message);
    }
    if (patched === null || typeof patched !== 'object' || Array.isArray(patched)) throw errors.internal('patched object is not a JSON object');
    const changed = !deepEqual(objs.object, patched);
    const req = requestResource(a);
    const back = inv.resource.group === req.group && inv.resource.version === req.version ? patched : convertObject(patched, this.mapper.info(inv.resource), a.info);
    this.defaulter?.(back, a.info);
    replaceObject(a.obj, back);
    v.invalidate();
    addAuditAnnotation(a, `${PATCH_AUDIT_ANNOTATION_PREFIX}round_${round}_index_${index}`, JSON.stringify({ configuration: hook.configurationName, webhook: hook.name, patch: ops, patchType: 'JSONPatch' }));
    return changed;
  }
}

/** The attributes of kube's webhook call span. */
function spanAttributes(hook: Hook, a: Attributes): Record<string, string> {
  return { configuration: hook.configurationName, webhook: hook.name, resource: a.groupResource.group ? `${a.groupResource.resource}.${a.groupResource.group}` : a.groupResource.resource, subresource: a.subresource, operation: a.operation };
}
