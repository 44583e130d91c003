// One webhook call, up to a checked answer (the part of kube's callHook and
// callAttrMutatingHook that both dispatchers share): the dry-run check of sideEffects, the
// review in the first version the hook speaks, the POST, and the answer's checks. Failures
// are CallingWebhookErrors carrying the Status kube attaches to each (the metrics count its
// code); a dry run refused is the plain 400 kube returns.
//
// Thread ownership: none.
import { errors, StatusError } from '../../errors.js';
import type { Attributes } from '../plugin.js';
import { ClientConfigError, ResponseStatusError, TransportError } from './client.js';
import { CallingWebhookError } from './errors.js';
import { createAdmissionReview, reviewVersion, verifyAdmissionResponse, type AdmissionResponse, type Invocation, type RequestParts } from './request/admissionreview.js';
import type { Hook } from './source.js';

export async function callWebhook(hook: Hook, a: Attributes, inv: Invocation, parts: RequestParts, mutating: boolean): Promise<AdmissionResponse> {
  if (a.dryRun) {
    if (hook.sideEffects === undefined) throw new CallingWebhookError(hook.name, 'Webhook SideEffects is nil', errors.badRequest('Webhook SideEffects is nil'));
    if (hook.sideEffects !== 'None' && hook.sideEffects !== 'NoneOnDryRun') throw errors.webhookDryRunUnsupported(hook.name);
  }
  const version = reviewVersion(hook.admissionReviewVersions);
  if (!version) {
    throw new CallingWebhookError(hook.name, 'could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)', errors.badRequest('error creating admission objects'));
  }
  const { uid, body } = createAdmissionReview(version, a, inv, parts);
  let review: any;
  try {
    review = await hook.client.post(body, hook.timeoutSeconds);
  } catch (e) {
    if (e instanceof ResponseStatusError) throw new CallingWebhookError(hook.name, `failed to call webhook: ${e.status.message}`, e.status);
    if (e instanceof ClientConfigError) {
      throw new CallingWebhookError(hook.name, `could not get REST client: ${e.message}`, mutating ? errors.internal(e.message) : errors.badRequest('error getting REST client'));
    }
    const msg = e instanceof TransportError ? e.message : String((e as Error)?.message ?? e);
    // (kube: the mutating dispatcher counts a transport failure as 503, the validating one as 400)
    throw new CallingWebhookError(hook.name, `failed to call webhook: ${msg}`, mutating ? errors.serviceUnavailable('error calling webhook') : errors.badRequest('error calling webhook'));
  }
  try {
    return verifyAdmissionResponse(version, uid, mutating, review);
  } catch (e) {
    throw new CallingWebhookError(hook.name, `received invalid webhook response: ${(e as Error).message}`, errors.serviceUnavailable('error validating webhook response'));
  }
}

/** The HTTP code a failure is counted with (kube's err.Status.ErrStatus.Code). */
export function codeOf(e: unknown): number {
  if (e instanceof CallingWebhookError) return e.status.code;
  if (e instanceof StatusError) return e.code;
  return 0;
}
