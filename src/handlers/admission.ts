// The handlers' side of admission: the request's attributes (user after impersonation,
// options, kind, resource, subresource, dry run) made into the callbacks the store calls, as
// kube's handlers (apiserver/pkg/endpoints/handlers create.go, update.go, patch.go,
// delete.go, rest.go's ConnectResource) build admission.NewAttributesRecord from the request.
import type { HandlerContext } from './context.js';
import type { GroupVersionKind, Operation } from '../admission/plugin.js';
import { kindOf, RequestAdmission, resourceOf, metaOptions, writeOptionsOf } from '../admission/request.js';
import type { DeleteOptions } from '../registry/deletion.js';
import type { ResourceTarget } from '../registry/store.js';

export interface AdmissionRequestOpts {
  /** the resource written, when not the request's own (pods/binding through /bindings) */
  target?: ResourceTarget;
  /** the subresource, when not the request's */
  subresource?: string;
  /** the object's name, when not the URL's ('' on create: the object's own) */
  name?: string;
  /** the kind of the object the request sends, when not the resource's (Scale, Eviction, TokenRequest, Binding) */
  kind?: GroupVersionKind;
  dryRun?: boolean;
}

/** The admission of a handler's write, or undefined when the server runs no admission chain. */
export function requestAdmission(c: HandlerContext, operation: Operation, options: any, o: AdmissionRequestOpts = {}): RequestAdmission | undefined {
  const chain = c.store.admission;
  if (!chain) return undefined;
  const t = o.target ?? c.target;
  const info = t.info;
  return new RequestAdmission(chain, {
    operation,
    info,
    groupResource: t.groupResource,
    subresource: o.subresource ?? c.info.subresource,
    namespace: c.info.namespace,
    name: o.name ?? (operation === 'CREATE' && !c.info.subresource ? '' : c.info.name),
    dryRun: o.dryRun ?? (options?.dryRun?.length > 0),
    user: c.req.user,
    options,
    kind: o.kind ?? kindOf(info),
    resource: resourceOf(info),
    warnings: (c.req.warnings ??= []),
    audit: c.req.audit,
    latency: c.req,
  });
}

/** A write's admission, its options from the query (CreateOptions, UpdateOptions, PatchOptions). */
export function writeAdmission(c: HandlerContext, operation: 'CREATE' | 'UPDATE', optionsKind: 'CreateOptions' | 'UpdateOptions' | 'PatchOptions', o: AdmissionRequestOpts = {}): RequestAdmission | undefined {
  if (!c.store.admission) return undefined;
  // kube's patch handler hands admission the patch's options as UpdateOptions (patchToUpdateOptions; `force` is apply's alone)
  return requestAdmission(c, operation, writeOptionsOf(optionsKind === 'PatchOptions' ? 'UpdateOptions' : optionsKind, c.req.query), o);
}

/** kube's DeleteOptions object (meta.k8s.io/v1) of a delete, as admission sees it. */
export function deleteOptionsObject(d: DeleteOptions): any {
  return metaOptions('DeleteOptions', {
    gracePeriodSeconds: d.gracePeriodSeconds,
    preconditions: d.preconditions,
    orphanDependents: d.orphanDependents,
    propagationPolicy: d.propagationPolicy,
    dryRun: d.dryRun ? ['All'] : undefined,
    ignoreStoreReadErrorWithClusterBreakingPotential: d.ignoreStoreReadErrorWithClusterBreakingPotential,
  });
}

/** A DELETE's admission (kube runs mutating and validating admission with old = the stored object, obj null). */
export function deleteAdmission(c: HandlerContext, d: DeleteOptions, name?: string): RequestAdmission | undefined {
  if (!c.store.admission) return undefined;
  return requestAdmission(c, 'DELETE', deleteOptionsObject(d), { name: name ?? c.info.name, dryRun: d.dryRun });
}

/**
 * A CONNECT's admission (exec, attach, portforward, proxy): the connect options object
 * (PodExecOptions, ...) as kube's ConnectResource passes it, no object; mutating then
 * validating admission, as kube runs both on the Connect attributes. Resolves (or returns,
 * when no step waits) once admitted; throws its refusal. (No connect handler exists yet:
 * those subresources answer 404; pods/log is a GET, which kube does not admit.)
 */
export function connectAdmission(c: HandlerContext, optionsKind: string, options: Record<string, unknown>): void | Promise<void> {
  const opts = { kind: optionsKind, apiVersion: 'v1', ...options };
  const a = requestAdmission(c, 'CONNECT', opts, { kind: { group: '', version: 'v1', kind: optionsKind } });
  if (!a) return;
  const admitted = a.admit(null, null);
  if (admitted) return admitted.then(() => a.validate(null, null));
  return a.validate(null, null);
}

/**
 * Admission of a create on a subresource that is no stored object of its own (pods/binding,
 * pods/eviction, serviceaccounts/token): mutating then validating admission of the body, as
 * kube's create handler admits it and the subresource's REST calls createValidation first.
 */
export async function admitSubresourceCreate(c: HandlerContext, body: any, kind: GroupVersionKind, name = c.info.name): Promise<void> {
  const a = writeAdmission(c, 'CREATE', 'CreateOptions', { kind, name });
  if (!a) return;
  const admitted = a.admit(body, null);
  if (admitted) await admitted;
  const validated = a.validate(body, null);
  if (validated) await validated;
}
