// One request's admission: the Attributes built from the request's context (who asks, with
// which options, on which kind and resource), and the two callbacks the store calls at
// kube's points of a write: `admit` (mutating admission, after field management) and
// `validate` (validating admission, after the kind's own validation). The store never
// builds attributes itself: it only calls these (kube's handlers likewise hand
// admission.MutationInterface / rest.ValidateObjectFunc closures to the registry).
//
// Thread ownership: the front thread; a RequestAdmission belongs to one request.
import type { AdmissionChain, Attributes, GroupVersionKind, GroupVersionResource, Operation, WebhookLatency } from './plugin.js';
import type { GroupResource } from '../errors.js';
import type { ResourceInfo } from '../api/catalog-types.js';
import type { UserInfo } from '../auth/user.js';
import type { AuditHook } from '../http/types.js';

/** What the store calls; both synchronous (no promise) while every step of the chain is. */
export interface AdmissionHooks {
  /** mutating admission of obj (changed in place); old is the stored object (null on create) */
  admit(obj: any, old: any | null): void | Promise<void>;
  /** validating admission of obj */
  validate(obj: any, old: any | null): void | Promise<void>;
  /**
   * The hooks for a create that an update or patch turns into (PUT or apply of a missing
   * object): kube admits it as a CREATE with the options converted to CreateOptions.
   */
  asCreate?(): AdmissionHooks;
}

/** Everything of the Attributes that is known before the object is (the request's part). */
export interface RequestFacts {
  operation: Operation;
  info: ResourceInfo;
  groupResource: GroupResource;
  subresource: string;
  namespace: string;
  /** the name from the URL ('' for a create: the object's, once generated) */
  name: string;
  dryRun: boolean;
  user?: UserInfo;
  options?: any;
  kind: GroupVersionKind;
  resource: GroupVersionResource;
  /** the request's Warning list (shared: what admission adds reaches the client) */
  warnings?: string[];
  /** the request's audit record: admission's audit annotations land in its event */
  audit?: AuditHook;
  /** the request, whose SLI duration leaves out the webhooks' time (Attributes.latency) */
  latency?: WebhookLatency;
}

/** kube's metav1 options objects as admission and webhooks see them. */
export function metaOptions(kind: 'CreateOptions' | 'UpdateOptions' | 'PatchOptions' | 'DeleteOptions', fields: Record<string, unknown>): any {
  const o: any = { kind, apiVersion: 'meta.k8s.io/v1' };
  for (const k of Object.keys(fields)) if (fields[k] !== undefined) o[k] = fields[k];
  return o;
}

const BARE_OPTIONS = {
  CreateOptions: Object.freeze({ kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1' }),
  UpdateOptions: Object.freeze({ kind: 'UpdateOptions', apiVersion: 'meta.k8s.io/v1' }),
  PatchOptions: Object.freeze({ kind: 'PatchOptions', apiVersion: 'meta.k8s.io/v1' }),
};

/** CreateOptions / UpdateOptions / PatchOptions from the query of a write (dryRun, fieldManager, fieldValidation, force). */
export function writeOptionsOf(kind: 'CreateOptions' | 'UpdateOptions' | 'PatchOptions', q: URLSearchParams): any {
  // the usual write has no query: one shared, frozen options object per kind
  if (q.size === 0) return BARE_OPTIONS[kind];
  const dry = q.getAll('dryRun').filter((v) => v !== '');
  const fields: Record<string, unknown> = {
    dryRun: q.has('dryRun') ? (dry.length ? dry : ['All']) : undefined,
    fieldManager: q.get('fieldManager') || undefined,
    fieldValidation: q.get('fieldValidation') || undefined,
  };
  if (kind === 'PatchOptions' && q.has('force')) fields.force = q.get('force') === 'true' || q.get('force') === '';
  return metaOptions(kind, fields);
}

/** kube's updateToCreateOptions / patchToCreateOptions: the options of a write that creates. */
export function toCreateOptions(o: any): any {
  if (!o) return o;
  const { force: _force, ...rest } = o;
  return { ...rest, kind: 'CreateOptions' };
}

/**
 * The admission of one request: attributes made once (on the first call, when the object's
 * name is known) and updated with each object the store hands in (a retried update hands a
 * new one). Audit annotations that steps add are copied into the request's audit event after
 * each phase, whether it passed or refused.
 */
export class RequestAdmission implements AdmissionHooks {
  private attrs: Attributes | undefined;

  constructor(
    private readonly chain: AdmissionChain,
    private readonly facts: RequestFacts,
  ) {}

  /** The attributes for obj and old (made on the first call). */
  attributes(obj: any, old: any | null): Attributes {
    let a = this.attrs;
    if (a === undefined) {
      const f = this.facts;
      a = this.attrs = {
        operation: f.operation,
        info: f.info,
        groupResource: f.groupResource,
        subresource: f.subresource,
        namespace: f.namespace,
        name: f.name || obj?.metadata?.name || '',
        obj,
        old,
        dryRun: f.dryRun,
        warnings: f.warnings,
        user: f.user,
        options: f.options,
        kind: f.kind,
        resource: f.resource,
        latency: f.latency,
      };
    } else {
      a.obj = obj;
      a.old = old;
      if (!this.facts.name) a.name = obj?.metadata?.name ?? a.name;
    }
    return a;
  }

  admit(obj: any, old: any | null): void | Promise<void> {
    const a = this.attributes(obj, old);
    return this.finish(a, () => this.chain.admit(a));
  }

  validate(obj: any, old: any | null): void | Promise<void> {
    const a = this.attributes(obj, old);
    return this.finish(a, () => this.chain.validate(a));
  }

  asCreate(): AdmissionHooks {
    const f = this.facts;
    return new RequestAdmission(this.chain, { ...f, operation: 'CREATE', options: toCreateOptions(f.options) });
  }

  /** Runs a phase, then copies its audit annotations (also when it refused). */
  private finish(a: Attributes, run: () => void | Promise<void>): void | Promise<void> {
    let r: void | Promise<void>;
    try {
      r = run();
    } catch (e) {
      this.flushAudit(a);
      throw e;
    }
    if (r) {
      return r.then(
        () => this.flushAudit(a),
        (e) => {
          this.flushAudit(a);
          throw e;
        },
      );
    }
    if (a.auditAnnotations !== undefined) this.flushAudit(a);
  }

  private flushAudit(a: Attributes): void {
    const ann = a.auditAnnotations;
    if (ann === undefined) return;
    const audit = this.facts.audit;
    if (audit) for (const k of Object.keys(ann)) audit.annotate(k, ann[k]);
    // kept on the record: a later phase adds to it, and re-annotating a key is idempotent
  }
}

// (made once per resource: frozen, shared by every request to it)
const kinds = new WeakMap<ResourceInfo, GroupVersionKind>();
const resources = new WeakMap<ResourceInfo, GroupVersionResource>();

/** The GVK and GVR of a request to the resource `info` (its own version: no conversion here). */
export function kindOf(info: ResourceInfo): GroupVersionKind {
  let k = kinds.get(info);
  if (k === undefined) kinds.set(info, (k = Object.freeze({ group: info.group, version: info.version, kind: info.kind })));
  return k;
}
export function resourceOf(info: ResourceInfo): GroupVersionResource {
  let r = resources.get(info);
  if (r === undefined) resources.set(info, (r = Object.freeze({ group: info.group, version: info.version, resource: info.resource })));
  return r;
}
