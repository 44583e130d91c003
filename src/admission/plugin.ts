// The built-in admission chain, as kube-apiserver 1.33 runs its default plugins: every
// mutating step of every plugin in order, then every validating step in order. The store
// calls admit() after field management has recorded what the request set (so what a plugin
// fills belongs to no manager) and validate() after the kind's own validation (kube's
// createValidation / updateValidation), for creates and updates of the main resource and
// its subresources (plugins skip what they do not handle).
//
// Thread ownership: the front thread. Plugins read other objects from the front thread's
// caches (kube's informers), synchronously; a plugin may wait (e.g. for a namespace's
// default ServiceAccount that its controller is about to create), so the steps are async.
import { errors, qualifiedResource, StatusError, type GroupResource } from '../errors.js';
import type { ResourceInfo } from '../api/catalog-types.js';
import type { UserInfo } from '../auth/user.js';
import { performance } from 'node:perf_hooks';

/** kube's admission.Operation. */
export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

/** kube's GroupVersionKind / GroupVersionResource as admission sees them. */
export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}
export interface GroupVersionResource {
  group: string;
  version: string;
  resource: string;
}

/**
 * kube's admission.Attributes (apiserver/pkg/admission/attributes.go). Built once per request
 * by the handler, which knows the user; plugins, policies and webhooks all read this one record.
 * Fields marked "filled by the seam" are optional until every handler sets them.
 */
export interface Attributes {
  operation: Operation;
  info: ResourceInfo;
  groupResource: GroupResource;
  subresource: string;
  namespace: string;
  name: string;
  /** the object being written; mutating steps change it in place (null for DELETE and CONNECT without a body) */
  obj: any;
  /** the stored object (updates, deletes) */
  old: any | null;
  dryRun: boolean;
  /** warnings for the client (Warning headers) */
  warnings?: string[];
  /** the requesting user (after impersonation); filled by the seam */
  user?: UserInfo;
  /** the operation's options object (CreateOptions, UpdateOptions, PatchOptions, DeleteOptions, or the connect options); filled by the seam */
  options?: any;
  /** the kind of obj and the resource as stored (the request's own version); filled by the seam */
  kind?: GroupVersionKind;
  resource?: GroupVersionResource;
  /** audit annotations that admission adds (key → value), copied into the request's audit event */
  auditAnnotations?: Record<string, string>;
  /**
   * The request's latency tracker (kube's LatencyTrackers): webhook calls add their time,
   * which apiserver_request_sli_duration_seconds leaves out. Filled by the seam; absent for
   * the server's own writes.
   */
  latency?: WebhookLatency;
  /**
   * Set by a mutating step that changed the object in a way earlier steps may want to see
   * (kube's ReinvocationContext.SetShouldReinvoke, set by MutatingAdmissionWebhook): the chain
   * then runs its mutating steps once more.
   */
  reinvoke?: boolean;
  /** true during that second mutating pass (kube's IsReinvoke) */
  reinvocationRound?: boolean;
}

/** Where a request's webhook time is told (src/metrics/request-metrics.ts reads the total on the request). */
export interface WebhookLatency {
  sliExcludedSeconds?: number;
}

/** Observes one plugin's step (kube's apiserver_admission_controller_admission_duration_seconds). */
export type PluginObserver = (name: string, seconds: number, rejected: boolean, operation: Operation, type: 'admit' | 'validate') => void;

/** Observes one whole admission pass (kube's apiserver_admission_step_admission_duration_seconds). */
export type StepObserver = (seconds: number, rejected: boolean, operation: Operation, type: 'admit' | 'validate') => void;

/** What plugins may read: other objects, from the caches, by group-resource key ("pods", "storageclasses.storage.k8s.io"). */
export interface ObjectSource {
  get(gr: string, ns: string, name: string): any | undefined;
  list(gr: string, ns: string): any[];
}

export abstract class AdmissionPlugin {
  abstract readonly name: string;
  constructor(protected readonly objects: ObjectSource) {}
  /** Whether the plugin looks at this request at all. */
  abstract handles(a: Attributes): boolean;
  /** The mutating step (kube's MutationInterface.Admit). */
  admit(_a: Attributes): void | Promise<void> {}
  /** The validating step (kube's ValidationInterface.Validate). */
  validate(_a: Attributes): void | Promise<void> {}
  /** Whether the plugin has a validating step (a cheap check to skip the others). */
  get validates(): boolean {
    return this.validate !== AdmissionPlugin.prototype.validate;
  }
  get mutates(): boolean {
    return this.admit !== AdmissionPlugin.prototype.admit;
  }
}

/** kube's admission.NewForbidden: `<resource> "<name>" is forbidden: <why>` (a 403 already shaped is passed through). */
export function forbidden(a: Attributes, why: string | Error): StatusError {
  if (why instanceof StatusError && why.code === 403) return why;
  const msg = typeof why === 'string' ? why : why.message;
  // (before kube's BeforeCreate a generateName create has no name yet: its generateName stands in)
  const name = a.name || a.obj?.metadata?.name || a.obj?.metadata?.generateName || 'Unknown';
  const gr = a.groupResource;
  const q = qualifiedResource(gr);
  return errors.forbidden(gr, name, `${q} "${name}" is forbidden: ${msg}`);
}

/** utilerrors.NewAggregate(...).Error(): one message alone, several in brackets. */
export function aggregate(msgs: string[]): string {
  return msgs.length === 1 ? msgs[0] : `[${msgs.join(', ')}]`;
}

export class AdmissionChain {
  /** the plugins with a mutating step, and those with a validating step, in chain order */
  private readonly mutators: AdmissionPlugin[];
  private readonly validators: AdmissionPlugin[];

  constructor(readonly plugins: AdmissionPlugin[]) {
    this.mutators = plugins.filter((p) => p.mutates);
    this.validators = plugins.filter((p) => p.validates);
  }

  /**
   * Every mutating step, in order. Synchronous (no promise, and a failure thrown at once)
   * while the steps are: only a step that waits makes the rest of the chain asynchronous,
   * so the usual write costs no promise here. Callers await a returned promise.
   */
  admit(a: Attributes): void | Promise<void> {
    const obs = this.observeStep;
    const t0 = obs ? performance.now() : 0;
    let r: void | Promise<void>;
    try {
      r = runSteps(this.mutators, 0, a, true, this.observePlugin);
      if (!r) r = this.reinvoke(a);
      else r = r.then(() => this.reinvoke(a));
    } catch (e) {
      obs?.((performance.now() - t0) / 1000, true, a.operation, 'admit');
      throw e;
    }
    if (!obs) return r;
    if (!r) {
      obs((performance.now() - t0) / 1000, false, a.operation, 'admit');
      return;
    }
    return r.then(
      () => obs((performance.now() - t0) / 1000, false, a.operation, 'admit'),
      (e) => {
        obs((performance.now() - t0) / 1000, true, a.operation, 'admit');
        throw e;
      },
    );
  }

  /**
   * kube's reinvoker: when a step asked for it (a webhook's patch changed the object), every
   * mutating step runs once more, the built-in ones being idempotent and webhooks calling
   * again only the hooks that asked to be (reinvocationPolicy: IfNeeded).
   */
  private reinvoke(a: Attributes): void | Promise<void> {
    if (!a.reinvoke || a.reinvocationRound) return;
    a.reinvocationRound = true;
    return runSteps(this.mutators, 0, a, true, this.observePlugin);
  }

  /** Every validating step, in order; synchronous while the steps are (as admit). */
  validate(a: Attributes): void | Promise<void> {
    const obs = this.observeStep;
    if (!obs) return runSteps(this.validators, 0, a, false, this.observePlugin);
    const t0 = performance.now();
    let r: void | Promise<void>;
    try {
      r = runSteps(this.validators, 0, a, false, this.observePlugin);
    } catch (e) {
      obs((performance.now() - t0) / 1000, true, a.operation, 'validate');
      throw e;
    }
    if (!r) {
      obs((performance.now() - t0) / 1000, false, a.operation, 'validate');
      return;
    }
    return r.then(
      () => obs((performance.now() - t0) / 1000, false, a.operation, 'validate'),
      (e) => {
        obs((performance.now() - t0) / 1000, true, a.operation, 'validate');
        throw e;
      },
    );
  }

  /** Set to count each pass' latency (the admission step metric); unset, a pass costs no clock read. */
  observeStep?: StepObserver;
  /** Set to count each plugin's latency (the admission controller metric); unset, a step costs no clock read. */
  observePlugin?: PluginObserver;
}

function runSteps(plugins: AdmissionPlugin[], from: number, a: Attributes, mutating: boolean, obs: PluginObserver | undefined): void | Promise<void> {
  for (let i = from; i < plugins.length; i++) {
    const p = plugins[i];
    if (!p.handles(a)) continue;
    const r = obs ? timedStep(p, a, mutating, obs) : mutating ? p.admit(a) : p.validate(a);
    if (r) return r.then(() => runSteps(plugins, i + 1, a, mutating, obs));
  }
}

/** One plugin's step, timed to its end (a promise's settling). */
function timedStep(p: AdmissionPlugin, a: Attributes, mutating: boolean, obs: PluginObserver): void | Promise<void> {
  const type = mutating ? 'admit' : 'validate';
  const t0 = performance.now();
  let r: void | Promise<void>;
  try {
    r = mutating ? p.admit(a) : p.validate(a);
  } catch (e) {
    obs(p.name, (performance.now() - t0) / 1000, true, a.operation, type);
    throw e;
  }
  if (!r) {
    obs(p.name, (performance.now() - t0) / 1000, false, a.operation, type);
    return;
  }
  return r.then(
    () => obs(p.name, (performance.now() - t0) / 1000, false, a.operation, type),
    (e) => {
      obs(p.name, (performance.now() - t0) / 1000, true, a.operation, type);
      throw e;
    },
  );
}

export const isObj = (v: unknown): v is Record<string, any> => v !== null && typeof v === 'object' && !Array.isArray(v);
export const arr = (v: unknown): any[] => (Array.isArray(v) ? v : []);
