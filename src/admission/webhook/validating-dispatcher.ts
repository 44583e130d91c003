// Validating webhooks, all called at once (kube's webhook/validating/dispatcher.go): the hooks
// that apply are found first (synchronously, so that a request none applies to costs no
// promise), then called in parallel; the first failure to arrive is the request's, as kube
// returns the first error off its channel. A failure is judged by each hook's failurePolicy.
//
// Thread ownership: the front thread.
import { childSpan, endSpan, tracingOn } from '../../tracing/request-tracing.js';
import { performance } from 'node:perf_hooks';
import { errors } from '../../errors.js';
import type { Attributes, ObjectSource } from '../plugin.js';
import { callWebhook } from './call.js';
import type { EquivalentResourceMapper } from './equivalents.js';
import { CallingWebhookError, WebhookRejection } from './errors.js';
import { addAuditAnnotation, addWarning, requestKind, requestResource, shouldCallHook, VersionedObjects } from './generic.js';
import { admissionMetrics } from './metrics.js';
import type { Invocation } from './request/admissionreview.js';
import type { Hook } from './source.js';

export const VALIDATING_FAILED_OPEN_PREFIX = 'failed-open.validating.webhook.admission.k8s.io/';

export class ValidatingDispatcher {
  constructor(
    private readonly objects: ObjectSource,
    private readonly mapper: EquivalentResourceMapper,
  ) {}

  dispatch(a: Attributes, hooks: Hook[]): void | Promise<void> {
    const v = new VersionedObjects(a, this.mapper);
    const relevant: Array<[Hook, Invocation]> = [];
    for (const hook of hooks) {
      const inv = shouldCallHook(hook, a, this.objects, this.mapper, (k, r) => v.get(k, r));
      if (inv) relevant.push([hook, inv]);
    }
    if (relevant.length === 0) return;
    return new Promise<void>((resolve, reject) => {
      let pending = relevant.length;
      let first: unknown;
      relevant.forEach(([hook, inv], idx) => {
        this.invoke(hook, idx, inv, a, v)
          .catch((e) => {
            first ??= e;
          })
          .finally(() => {
            if (--pending === 0) {
              if (first !== undefined) reject(first);
              else resolve();
            }
          });
      });
    });
  }

  private async invoke(hook: Hook, idx: number, inv: Invocation, a: Attributes, v: VersionedObjects): Promise<void> {
    const ignore = hook.failurePolicy === 'Ignore';
    const t0 = performance.now();
    // (kube's span for each webhook call; nothing made with tracing off)
    const span = tracingOn() ? childSpan('Call validating webhook', spanAttributes(hook, a)) : undefined;
    let err: unknown;
    try {
      const objs = v.get(inv.kind, inv.resource);
      const res = await callWebhook(hook, a, inv, { requestKind: requestKind(a), requestResource: requestResource(a), object: objs.object, oldObject: objs.oldObject }, false);
      for (const [k, val] of Object.entries(res.auditAnnotations ?? {})) addAuditAnnotation(a, `${hook.name}/${k}`, String(val));
      for (const w of res.warnings ?? []) addWarning(a, w);
      if (!res.allowed) throw new WebhookRejection(errors.webhookDenied(hook.name, res.result));
    } catch (e) {
      err = e;
    }
    endSpan(span, err);
    const seconds = (performance.now() - t0) / 1000;
    excludeFromSli(a, seconds);
    if (err === undefined) {
      admissionMetrics.observeWebhook(hook.name, seconds, false, a.operation, 'validating', 200);
      return;
    }
    if (err instanceof CallingWebhookError) {
      if (!ignore) admissionMetrics.observeRejection(hook.name, 'validating', a.operation, 'calling_webhook_error', err.status.code);
      admissionMetrics.observeWebhook(hook.name, seconds, !ignore, a.operation, 'validating', err.status.code);
      if (ignore) {
        admissionMetrics.observeFailOpen(hook.name, 'validating');
        addAuditAnnotation(a, `${VALIDATING_FAILED_OPEN_PREFIX}round_0_index_${idx}`, hook.name);
        console.warn(`W Failed calling webhook, failing open ${hook.name}: ${err.message}`);
        return;
      }
      throw errors.internal(err.message);
    }
    if (err instanceof WebhookRejection) {
      admissionMetrics.observeRejection(hook.name, 'validating', a.operation, 'no_error', err.status.code);
      admissionMetrics.observeWebhook(hook.name, seconds, true, a.operation, 'validating', err.status.code);
      throw err.status;
    }
    admissionMetrics.observeRejection(hook.name, 'validating', a.operation, 'apiserver_internal_error', 0);
    admissionMetrics.observeWebhook(hook.name, seconds, true, a.operation, 'validating', 0);
    throw err;
  }
}

/** The attributes of kube's webhook call span. */
function spanAttributes(hook: Hook, a: Attributes): Record<string, string> {
  return { configuration: hook.configurationName, webhook: hook.name, resource: a.groupResource.group ? `${a.groupResource.resource}.${a.groupResource.group}` : a.groupResource.resource, subresource: a.subresource, operation: a.operation };
}

/** The validating webhooks of a request run in parallel: the longest call is what it waited (kube's max latency tracker). */
const longestValidating = new WeakMap<object, number>();
function excludeFromSli(a: Attributes, seconds: number): void {
  const l = a.latency;
  if (!l) return;
  const before = longestValidating.get(a) ?? 0;
  if (seconds <= before) return;
  longestValidating.set(a, seconds);
  l.sliExcludedSeconds = (l.sliExcludedSeconds ?? 0) + (seconds - before);
}
