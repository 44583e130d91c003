// The one errors module. Every failure a client can see is a StatusError carrying a
// metav1.Status, with the HTTP code and the `reason` that kube-apiserver uses for the
// same condition. Handlers throw these; the filter chain turns them into responses.

export const StatusReason = {
  BadRequest: 'BadRequest',
  Unauthorized: 'Unauthorized',
  Forbidden: 'Forbidden',
  NotFound: 'NotFound',
  AlreadyExists: 'AlreadyExists',
  Conflict: 'Conflict',
  Gone: 'Gone',
  Expired: 'Expired',
  Invalid: 'Invalid',
  ServerTimeout: 'ServerTimeout',
  Timeout: 'Timeout',
  TooManyRequests: 'TooManyRequests',
  MethodNotAllowed: 'MethodNotAllowed',
  NotAcceptable: 'NotAcceptable',
  RequestEntityTooLarge: 'RequestEntityTooLarge',
  UnsupportedMediaType: 'UnsupportedMediaType',
  InternalError: 'InternalError',
  ServiceUnavailable: 'ServiceUnavailable',
  /** objects in storage that cannot be read back (KEP-3926); Go's name is StatusReasonStoreReadError */
  StoreReadError: 'StorageReadError',
} as const;
export type StatusReason = (typeof StatusReason)[keyof typeof StatusReason];

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: { continue?: string };
  status: 'Failure' | 'Success';
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

/** A group-qualified resource, as kube-apiserver names it in messages ("deployments.apps"). */
export interface GroupResource {
  group: string;
  resource: string;
}

export function qualifiedResource(gr: GroupResource): string {
  return gr.group ? `${gr.resource}.${gr.group}` : gr.resource;
}

export class StatusError extends Error {
  readonly code: number;
  readonly reason: StatusReason | '';
  readonly details?: StatusDetails;
  /** Extra response headers, e.g. Retry-After. */
  readonly headers?: Record<string, string>;
  /** The Status's metadata.continue: the token an expired list may go on with, inconsistently. */
  continueToken?: string;
  /**
   * When set, the response body is this plain text instead of the encoded Status: the few
   * answers kube-apiserver writes with Go's http.Error (the inflight and priority-and-fairness 429s).
   */
  plainText?: string;

  constructor(code: number, reason: StatusReason | '', message: string, details?: StatusDetails, headers?: Record<string, string>) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.details = details;
    this.headers = headers;
  }

  toStatus(): Status {
    const s: Status = { kind: 'Status', apiVersion: 'v1', metadata: this.continueToken ? { continue: this.continueToken } : {}, status: 'Failure', message: this.message, code: this.code };
    if (this.reason) s.reason = this.reason;
    if (this.details) s.details = this.details;
    return s;
  }
}

function grDetails(gr: GroupResource, name?: string): StatusDetails {
  const d: StatusDetails = {};
  if (name !== undefined) d.name = name;
  if (gr.group) d.group = gr.group;
  d.kind = gr.resource;
  return d;
}

export const errors = {
  badRequest: (message: string, details?: StatusDetails) => new StatusError(400, StatusReason.BadRequest, message, details),
  unauthorized: (message = 'Unauthorized') => new StatusError(401, StatusReason.Unauthorized, message),
  forbidden: (gr: GroupResource, name: string | undefined, message: string) =>
    new StatusError(403, StatusReason.Forbidden, message, grDetails(gr, name)),
  /**
   * A write that would create the object (server-side apply of a missing object) by a user
   * not allowed to create it: kube's withAuthorization, NewForbidden with the authorizers' reason.
   */
  createForbidden: (gr: GroupResource, name: string, reason: string) =>
    new StatusError(403, StatusReason.Forbidden, `${qualifiedResource(gr)} "${name}" is forbidden: ${reason}`, grDetails(gr, name)),
  /** A CEL expression of an admission configuration that does not compile (the matchConditions contract's 422). */
  celCompilation: (message: string) => new StatusError(422, StatusReason.Invalid, message, {}),
  /**
   * A ValidatingAdmissionPolicy's denial (kube's policy dispatcher): admission.NewForbidden's
   * message and details, then the validation's reason (Invalid when none) with its code
   * (reasonToCode: Forbidden 403, Unauthorized 401, RequestEntityTooLarge 413, else 422), and
   * the message again as a cause.
   */
  policyDenied: (gr: GroupResource, name: string, why: string, reason: string) => {
    const r = (reason || StatusReason.Invalid) as StatusReason;
    const code = r === StatusReason.Forbidden ? 403 : r === StatusReason.Unauthorized ? 401 : r === StatusReason.RequestEntityTooLarge ? 413 : 422;
    const details = { ...grDetails(gr, name), causes: [{ message: why }] } as StatusDetails;
    return new StatusError(code, r, `${qualifiedResource(gr)} "${name}" is forbidden: ${why}`, details);
  },
  /**
   * kube's generic policy dispatcher refusing a request for the errors of policies that fail
   * closed (a MutatingAdmissionPolicy's failed mutation, a binding it could not configure):
   * admission.NewForbidden's code and details, its message replaced by the first error's
   * ("policy 'P' with binding 'B' denied request: ..."), that error's reason, and every error as a cause.
   */
  policyErrors: (gr: GroupResource, name: string, errs: Array<{ message: string; reason?: string }>) => {
    const first = errs[0];
    const details = { ...grDetails(gr, name), causes: errs.map((e) => ({ message: e.message })) } as StatusDetails;
    return new StatusError(403, (first.reason || StatusReason.Forbidden) as StatusReason, first.message, details);
  },
  notFound: (gr: GroupResource, name: string) =>
    new StatusError(404, StatusReason.NotFound, `${qualifiedResource(gr)} "${name}" not found`, grDetails(gr, name)),
  /** An unknown path below /api or /apis: kube-apiserver answers with an empty-details NotFound. */
  resourceNotFound: () => new StatusError(404, StatusReason.NotFound, 'the server could not find the requested resource', {}),
  alreadyExists: (gr: GroupResource, name: string) =>
    new StatusError(409, StatusReason.AlreadyExists, `${qualifiedResource(gr)} "${name}" already exists`, grDetails(gr, name)),
  conflict: (gr: GroupResource, name: string, why: string) =>
    new StatusError(409, StatusReason.Conflict, `Operation cannot be fulfilled on ${qualifiedResource(gr)} "${name}": ${why}`, grDetails(gr, name)),
  /** The optimistic-concurrency conflict of a stale resourceVersion. */
  staleConflict: (gr: GroupResource, name: string) =>
    errors.conflict(gr, name, 'the object has been modified; please apply your changes to the latest version and try again'),
  gone: (message: string) => new StatusError(410, StatusReason.Gone, message),
  expired: (message: string) => new StatusError(410, StatusReason.Expired, message),
  /** An expired continue token: 410, offering a token that goes on at the latest version. */
  continueExpired: (inconsistentToken?: string) => {
    const base = 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter';
    if (!inconsistentToken) return new StatusError(410, StatusReason.Expired, base + '.');
    const e = new StatusError(410, StatusReason.Expired,
      base + ', or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.');
    e.continueToken = inconsistentToken;
    return e;
  },
  invalid: (kind: string, group: string, name: string, causes: Array<{ field: string; type: CauseType; value?: unknown; detail?: string }>) => {
    const rendered = causes.map((c) => ({ reason: c.type, message: causeMessage(c), field: c.field }));
    // As apimachinery's ToAggregate: identical messages are listed once; causes keep them all.
    const list = [...new Set(rendered.map((c) => `${c.field}: ${c.message}`))];
    const joined = list.length === 0 ? '' : list.length === 1 ? `: ${list[0]}` : `: [${list.join(', ')}]`;
    const details: StatusDetails = { name, ...(group ? { group } : {}), kind, causes: rendered };
    return new StatusError(422, StatusReason.Invalid, `${kind}${group ? '.' + group : ''} "${name}" is invalid${joined}`, details);
  },
  methodNotAllowed: () =>
    new StatusError(405, StatusReason.MethodNotAllowed, 'the server does not allow this method on the requested resource', {}),
  notAcceptable: (supported: string[]) =>
    new StatusError(406, StatusReason.NotAcceptable, `only the following media types are accepted: ${supported.join(', ')}`),
  unsupportedMediaType: (supported: string[]) =>
    new StatusError(415, StatusReason.UnsupportedMediaType,
      `the body of the request was in an unknown format - accepted media types include: ${supported.join(', ')}`),
  tooLarge: (limit: number) => new StatusError(413, StatusReason.RequestEntityTooLarge, `Request entity too large: limit is ${limit}`),
  /** The request bodies being read already hold the server's budget for them (src/http/body-budget.ts). */
  bodiesInFlight: (retryAfterSeconds = 1) =>
    new StatusError(429, StatusReason.TooManyRequests, 'Too many request bodies in flight, please try again later.', { retryAfterSeconds }, { 'Retry-After': String(retryAfterSeconds) }),
  /** storage.NewTooLargeResourceVersionError: a NewTimeoutError, so its message starts "Timeout: " (clients match on it). */
  // retryAfter 0 (etcd's validateMinimumResourceVersion, a resource without a watch cache):
  // neither retryAfterSeconds nor a Retry-After header.
  tooLargeResourceVersion: (requested: number, current: number, retryAfter = 1) =>
    new StatusError(504, StatusReason.Timeout, `Timeout: Too large resource version: ${requested}, current: ${current}`,
      retryAfter > 0
        ? { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: retryAfter }
        : { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }] },
      retryAfter > 0 ? { 'Retry-After': String(retryAfter) } : undefined),
  /**
   * A resourceVersion that is not a uint64. kube's versioner returns a storage InvalidError,
   * which no handler converts to a Status: ErrorToAPIStatus makes it a 500 with no reason and
   * no details (kubernetes/kubernetes#101350, still so in 1.33), and clients see exactly that.
   */
  invalidResourceVersion: (rv: string) => {
    const why = /^[0-9]+$/.test(rv) ? 'value out of range' : 'invalid syntax';
    return new StatusError(500, '', `resourceVersion: Invalid value: ${goQuote(rv)}: strconv.ParseUint: parsing ${goQuote(rv)}: ${why}`);
  },
  timeout: (message: string) => new StatusError(504, StatusReason.Timeout, message),
  /**
   * A CRD conversion webhook failed: kube's converter returns a plain Go error, which
   * ErrorToAPIStatus makes a 500 with no reason and the error's text as the message.
   */
  conversionFailed: (message: string) => new StatusError(500, '', message),
  internal: (message: string) =>
    new StatusError(500, StatusReason.InternalError, `Internal error occurred: ${message}`, { causes: [{ message }] }),
  serviceUnavailable: (message: string) => new StatusError(503, StatusReason.ServiceUnavailable, message),
  /**
   * A connection to a backend (a node's agent, a proxied pod or service) that could not be
   * made: kube's UpgradeAwareHandler answers "error dialing backend: ..." as an unknown 500.
   */
  dialingBackend: (why: string) => new StatusError(500, '', `error dialing backend: ${why}`),
  /** A Node without an address of the preferred types (kube's GetPreferredNodeAddress). */
  noPreferredAddress: (known: string) => new StatusError(500, '', `no preferred addresses found; known addresses: [${known}]`),
  /** A request to a backend that failed before any answer (kube's LocationStreamer: the client's error text as a 500). */
  backendRequest: (message: string) => new StatusError(500, '', message),
  /**
   * A backend's answer that is not 2xx, as kube's NewGenericServerResponse words it for the
   * resource and name (GenericHttpResponseChecker of pods/log: verb "", the body as the server's message).
   */
  genericServerResponse: (code: number, verb: string, gr: GroupResource, name: string, serverMessage: string) => {
    const known: Record<number, [StatusReason, string]> = {
      400: [StatusReason.BadRequest, 'the server rejected our request for an unknown reason'],
      401: [StatusReason.Unauthorized, 'the server has asked for the client to provide credentials'],
      403: [StatusReason.Forbidden, serverMessage],
      404: [StatusReason.NotFound, 'the server could not find the requested resource'],
      405: [StatusReason.MethodNotAllowed, 'the server does not allow this method on the requested resource'],
      406: [StatusReason.NotAcceptable, 'the server was unable to respond with a content type that the client supports'],
      409: [verb === 'POST' ? StatusReason.AlreadyExists : StatusReason.Conflict, 'the server reported a conflict'],
      415: [StatusReason.UnsupportedMediaType, 'the server was unable to respond with a content type that the client supports'],
      422: [StatusReason.Invalid, 'the server rejected our request due to an error in our request'],
      429: [StatusReason.TooManyRequests, 'the server has received too many requests and has asked us to try again later'],
      503: [StatusReason.ServiceUnavailable, 'the server is currently unable to handle the request'],
      504: [StatusReason.Timeout, 'the server was unable to return a response in the time allotted, but may still be processing the request'],
    };
    let [reason, message]: [StatusReason | '', string] = known[code] ?? ['', `the server responded with the status code ${code} but did not return more information`];
    if (!known[code] && code >= 500) [reason, message] = [StatusReason.InternalError, `an error on the server (${JSON.stringify(serverMessage)}) has prevented the request from succeeding`];
    const res = gr.group ? `${gr.resource}.${gr.group}` : gr.resource;
    message = name ? `${message} (${verb.toLowerCase()} ${res} ${name})` : `${message} (${verb.toLowerCase()} ${res})`;
    return new StatusError(code, reason, message, grDetails(gr, name));
  },
  /**
   * A request carried to another thread's pipeline (src/front/forward.ts) whose thread
   * stopped, or closed its port, before it sent the status. The request may have been
   * applied there, so no Retry-After: client-go would then resend a write by itself.
   */
  servingThreadStopped: () =>
    new StatusError(503, StatusReason.ServiceUnavailable, 'the thread serving this request stopped before it answered; the request may or may not have been applied'),

  // Issue 17, items 2 and 8: bounded patches and objects larger than storage holds.
  /** kube's patch handler caps a JSON patch at maxJSONPatchOperations (NewRequestEntityTooLargeError). */
  jsonPatchTooManyOperations: (max: number, got: number) =>
    new StatusError(413, StatusReason.RequestEntityTooLarge, `Request entity too large: The allowed maximum operations in a JSON patch is ${max}, got ${got}`),
  /**
   * A JSON patch that cannot be applied: kube wraps json-patch's error in
   * NewGenericServerResponse(422), which keeps none of its text (empty details).
   */
  patchNotApplicable: () => new StatusError(422, StatusReason.Invalid, 'the server rejected our request due to an error in our request', {}),
  /**
   * An object larger than storage takes. kube-apiserver passes etcd's refusal through
   * unconverted (no storage error matches it), so ErrorToAPIStatus answers a 500 with no
   * reason and etcd's own text (kubernetes/kubernetes#112152, still so in 1.33). Past 2 MiB
   * the etcd client's gRPC send limit refuses it first, with its own text (kube's
   * isTooLargeError knows both); bytes is the stored size, where kube names its protobuf
   * request's.
   */
  storageRequestTooLarge: (bytes = 0) =>
    Object.assign(
      new StatusError(500, '', bytes > GRPC_MAX_SEND_BYTES ? `rpc error: code = ResourceExhausted desc = trying to send message larger than max (${bytes} vs. ${GRPC_MAX_SEND_BYTES})` : 'etcdserver: request is too large'),
      { objectTooLarge: true as const },
    ),
  /** A patch that ran past its time budget: the Status kube's finisher gives a request past its deadline. */
  patchTimeout: () => new StatusError(504, StatusReason.Timeout, 'Timeout: request did not complete within requested timeout - context deadline exceeded', {}),
  // Issue 17, item 4 (a full disk, a shard worker that ends):
  /**
   * A write a shard refused under its space reserve (workers/shard/space-guard.ts). For etcd's
   * NOSPACE alarm kube answers exactly so: the etcd error is not an API status, so
   * ErrorToAPIStatus makes it a 500 with no reason and etcd's text as the message ("Error
   * from server: etcdserver: mvcc: database space exceeded" in kubectl). Ours says "database
   * space exceeded" too, then our measure of the file system instead of etcd's quota.
   */
  databaseSpaceExceeded: (reason: string) => new StatusError(500, '', reason),
  /**
   * A write for storage that cannot take it now (a shard being started again: where "shard 0",
   * why "is being restarted from its log (...)"): not applied, and worth retrying in a
   * moment. 503 with Retry-After, which client-go and kubectl retry by themselves (kube,
   * with etcd unreachable, would hold the write until its timeout instead).
   */
  storageUnavailable: (where: string, why: string) =>
    new StatusError(503, StatusReason.ServiceUnavailable, `storage is unavailable: ${where} ${why}; retry shortly`, { retryAfterSeconds: 1 }, { 'Retry-After': '1' }),
  /**
   * A write a shard held when its worker ended: it may have been made durable just before
   * (a restart then replays it), so it is answered as kube answers an etcd request that
   * failed with its outcome unknown ("etcdserver: request timed out"): a 500 with no reason,
   * which clients do not retry by themselves.
   */
  storageOutcomeUnknown: (where: string, why: string) =>
    new StatusError(500, '', `storage ${where} stopped before it answered this write (${why}): the write may or may not have been committed`),
  /**
   * A JSON patch that does not apply (a missing path, a failed test, an operation of the wrong
   * shape). kube wraps json-patch's error in NewGenericServerResponse(422, ...), whose Status
   * drops the text: it is kept as the error's cause (for logs and tests), never sent.
   */
  jsonPatchNotApplicable: (why: string) => Object.assign(new StatusError(422, StatusReason.Invalid, 'the server rejected our request due to an error in our request', {}), { cause: why }),
  /**
   * An admission webhook's denial (kube 1.33's webhook/errors ToStatusErr): the webhook's own
   * Status, its message prefixed with who denied, a code below 400 raised to 400, and its
   * reason and details kept as the webhook sent them.
   */
  webhookDenied: (webhook: string, result: { code?: unknown; reason?: unknown; message?: unknown; details?: unknown } | null | undefined) => {
    const by = `admission webhook ${goQuote(webhook)} denied the request`;
    const r = result ?? {};
    const message = typeof r.message === 'string' && r.message ? `${by}: ${r.message}` : typeof r.reason === 'string' && r.reason ? `${by}: ${r.reason}` : `${by} without explanation`;
    const code = typeof r.code === 'number' && Number.isInteger(r.code) && r.code >= 400 ? r.code : 400;
    const reason = typeof r.reason === 'string' ? (r.reason as StatusReason) : '';
    const details = r.details !== null && typeof r.details === 'object' && !Array.isArray(r.details) ? (r.details as StatusDetails) : undefined;
    return new StatusError(code, reason, message, details);
  },
  /** webhook/errors NewDryRunUnsupportedErr: a dry run reaching a webhook that declares side effects. */
  webhookDryRunUnsupported: (webhook: string) => new StatusError(400, StatusReason.BadRequest, `admission webhook ${goQuote(webhook)} does not support dry run`),
};

/** The etcd client's default gRPC MaxCallSendMsgSize, which kube-apiserver keeps. */
const GRPC_MAX_SEND_BYTES = 2 * 1024 * 1024;

/** Whether err is storage's refusal of an object too large to hold (errors.storageRequestTooLarge). */
export function isObjectTooLarge(err: unknown): boolean {
  return err instanceof StatusError && (err as { objectTooLarge?: boolean }).objectTooLarge === true;
}

/** The field-error types of k8s.io/apimachinery/pkg/util/validation/field, as they appear in causes[].reason. */
export type CauseType =
  | 'FieldValueNotFound'
  | 'FieldValueRequired'
  | 'FieldValueDuplicate'
  | 'FieldValueInvalid'
  | 'FieldValueNotSupported'
  | 'FieldValueForbidden'
  | 'FieldValueTooLong'
  | 'FieldValueTooMany'
  | 'InternalError'
  | 'FieldValueTypeInvalid';

/**
 * A field value as Go's %#v prints it (e.g. `[]string{"10.96.0.10"}`), for the few messages
 * where kube-apiserver shows a Go value rather than a scalar.
 */
export class GoValue {
  constructor(readonly text: string) {}
}

/** field.OmitValueType: the error prints no value ("Invalid value: <detail>"). */
export const OMIT_VALUE = new GoValue('');

/** A value in a field error: apimachinery prints a string quoted, a number or bool plainly, anything else as JSON. */
export function renderBadValue(v: unknown): string {
  if (v instanceof GoValue) return v.text;
  if (v === undefined || v === null) return 'null';
  if (typeof v === 'string') return goQuote(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  // Go's encoding/json escapes <, > and & (HTML-safe output).
  return (JSON.stringify(v) ?? 'null').replace(/[<>&\u2028\u2029]/g, (ch) => '\\u' + ch.charCodeAt(0).toString(16).padStart(4, '0'));
}

/** Go's %q for a string. */
export function goQuote(s: string): string {
  return JSON.stringify(s).replace(/\\u00([0-1][0-9a-f])/g, (_m, h: string) => {
    const n = parseInt(h, 16);
    return n === 0x7f ? '\\x7f' : '\\x' + h;
  });
}

export function causeMessage(c: { type: CauseType; value?: unknown; detail?: string }): string {
  let s: string;
  switch (c.type) {
    case 'FieldValueRequired':
      s = 'Required value';
      break;
    case 'FieldValueForbidden':
      s = 'Forbidden';
      break;
    case 'FieldValueTooLong':
      s = 'Too long';
      break;
    case 'InternalError':
      s = 'Internal error';
      break;
    default: {
      const label: Record<string, string> = {
        FieldValueNotFound: 'Not found',
        FieldValueDuplicate: 'Duplicate value',
        FieldValueNotSupported: 'Unsupported value',
        FieldValueTooMany: 'Too many',
        FieldValueInvalid: 'Invalid value',
        FieldValueTypeInvalid: 'Invalid value',
      };
      s = c.value === OMIT_VALUE ? (label[c.type] ?? 'Invalid value') : `${label[c.type] ?? 'Invalid value'}: ${renderBadValue(c.value)}`;
    }
  }
  return c.detail ? `${s}: ${c.detail}` : s;
}

/** Why flow control turned a request away (apiserver_flowcontrol_rejected_requests_total's reason label). */
export type RejectReason = 'queue-full' | 'concurrency-limit' | 'time-out' | 'cancelled';

/**
 * A 429 from flow control (the inflight limits or priority and fairness): kube answers it
 * with http.Error, so the body is plain text, with Retry-After. The Status it carries says
 * the same for anything that logs or inspects it.
 */
export class TooManyRequestsError extends StatusError {
  constructor(
    readonly rejectReason: RejectReason,
    retryAfterSeconds = 1,
  ) {
    super(429, StatusReason.TooManyRequests, 'Too many requests, please try again later.', { retryAfterSeconds }, { 'Retry-After': String(retryAfterSeconds) });
    this.plainText = 'Too many requests, please try again later.\n';
  }
}

/** Wraps anything thrown into a StatusError; unknown errors become 500 InternalError. */
export function toStatusError(err: unknown): StatusError {
  if (err instanceof StatusError) return err;
  const msg = err instanceof Error ? err.message : String(err);
  return errors.internal(msg);
}
