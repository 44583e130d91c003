// The audit filter (spec 6.2): after authentication, so events name the user. It gives
// each request its audit ID (the client's Audit-ID header, or a new UUID) and answers it in
// the Audit-Id response header, asks the policy for the request's level, and records the
// request's stages as kube-apiserver does:
//
//   RequestReceived   here, before the rest of the chain runs;
//   ResponseStarted   long-running requests (watch, proxy, exec, attach, log, portforward)
//                     only, when the response head goes out;
//   ResponseComplete  when the response is sent (for a stream, when it ends);
//   Panic             instead of ResponseComplete, when the handler failed with an unexpected error.
//
// It learns the response by wrapping the request's ResponseSink (its own methods shadow
// the transport's, for this request only). The filter is in the chain only when auditing is
// on, and a request whose level is None gets its ID header and nothing else, so requests
// that are not audited pay nothing beyond the policy's answer.
//
// Thread ownership: the front thread; the record belongs to its request.
import { apiserverMetrics } from '../../metrics/apiserver-metrics.js';
import { randomUUID } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import type { Filter } from '../filter-chain.js';
import type { ApiRequest, AuditHook, HeaderList, ResponseSink } from '../types.js';
import { StatusError } from '../../errors.js';
import type { UserInfo } from '../../auth/user.js';
import type { Auditor } from '../../audit/auditor.js';
import { AUDIT_API_VERSION, microNow, withoutManagedFields, type AuditEvent, type ObjectReference, type ResponseStatus } from '../../audit/event.js';
import { mediaTypeOf, parseBody } from '../../codec/decode.js';
import { evaluate, levelRank, type Decision, type Stage } from '../../audit/policy.js';

/** kube-apiserver's long-running requests: these get a ResponseStarted event. */
const LONG_RUNNING_VERBS = new Set(['watch', 'proxy']);
const LONG_RUNNING_SUBRESOURCES = new Set(['attach', 'exec', 'proxy', 'log', 'portforward']);

const METADATA = levelRank('Metadata');
const REQUEST = levelRank('Request');
const REQUEST_RESPONSE = levelRank('RequestResponse');

/** Verbs whose body is the object itself, which completes the objectRef (name, namespace, uid, resourceVersion). */
const OBJECT_BODY_VERBS = new Set(['create', 'update']);

function contentTypeOf(headers: HeaderList | Record<string, string>): string {
  if (Array.isArray(headers)) {
    for (const [k, v] of headers) if (k.length === 12 && k.toLowerCase() === 'content-type') return v;
    return '';
  }
  return headers['content-type'] ?? '';
}

/**
 * A body as an object: through the server's own decoding (JSON, YAML, protobuf, CBOR) when
 * it takes the media type, else as JSON or YAML text (the patch types). A body that does not
 * decode is recorded without its object.
 */
function decodeBody(body: Uint8Array | string, contentType: string): unknown {
  try {
    const mt = mediaTypeOf(contentType);
    if (mt !== '' && !mt.includes('patch')) return parseBody(typeof body === 'string' ? Buffer.from(body) : Buffer.from(body.buffer, body.byteOffset, body.byteLength), contentType);
  } catch {
    // not one of the object media types: try text
  }
  try {
    if (contentType === '' || contentType.includes('json')) return JSON.parse(typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString());
    if (contentType.includes('yaml')) return parseYaml(typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString());
  } catch {
    // a body that does not parse is recorded without its object
  }
  return undefined;
}

function joinParts(parts: Array<Uint8Array | string>): Uint8Array | string {
  if (parts.length === 1) return parts[0];
  return Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
}

/** The source IPs as kube lists them: X-Forwarded-For, then X-Real-Ip, then the peer. */
function sourceIPs(req: ApiRequest): string[] {
  const out: string[] = [];
  const xff = req.headers['x-forwarded-for'];
  if (xff) for (const ip of xff.split(',')) if (ip.trim()) out.push(ip.trim());
  const real = req.headers['x-real-ip']?.trim();
  if (real && !out.includes(real)) out.push(real);
  const peer = req.remoteAddress;
  if (peer && !out.includes(peer)) out.push(peer);
  return out;
}

const REF_KEYS = ['resource', 'namespace', 'name', 'uid', 'apiGroup', 'apiVersion', 'resourceVersion', 'subresource'] as const;

/** A copy of the objectRef in kube's field order (uid and resourceVersion may have been added last). */
function orderedRef(r: ObjectReference): ObjectReference {
  const out: ObjectReference = {};
  for (const k of REF_KEYS) if (r[k]) out[k] = r[k];
  return out;
}

/** A user as the event names one. */
function auditUser(u: UserInfo): AuditEvent['user'] {
  const user: AuditEvent['user'] = { username: u.name };
  if (u.uid) user.uid = u.uid;
  if (u.groups.length) user.groups = u.groups;
  if (u.extra && Object.keys(u.extra).length) user.extra = u.extra;
  return user;
}

/** One request's record: the event as it grows, and the stages sent so far. */
class AuditRecord implements AuditHook {
  readonly ev: AuditEvent;
  private readonly rank: number;
  private readonly omit: readonly Stage[];
  private started = false;
  private finished = false;
  private panic: unknown = undefined;
  private annotations: Record<string, string> | undefined;

  constructor(
    private a: Auditor,
    private req: ApiRequest,
    id: string,
    private d: Decision,
    private longRunning: boolean,
  ) {
    this.rank = levelRank(d.level);
    this.omit = d.omitStages;
    const info = req.requestInfo!;
    const user: AuditEvent['user'] = req.user ? auditUser(req.user) : {};
    const ev: AuditEvent = {
      kind: 'Event',
      apiVersion: AUDIT_API_VERSION,
      level: d.level,
      auditID: id,
      stage: 'RequestReceived',
      requestURI: req.rawQuery ? `${req.path}?${req.rawQuery}` : req.path,
      verb: info.verb,
      user,
      sourceIPs: sourceIPs(req),
      requestReceivedTimestamp: microNow(),
      stageTimestamp: '',
    };
    const ua = req.headers['user-agent'];
    if (ua) ev.userAgent = ua;
    if (info.isResourceRequest) {
      const ref: ObjectReference = {};
      if (info.resource) ref.resource = info.resource;
      if (info.namespace) ref.namespace = info.namespace;
      if (info.name) ref.name = info.name;
      if (info.apiGroup) ref.apiGroup = info.apiGroup;
      if (info.apiVersion) ref.apiVersion = info.apiVersion;
      if (info.subresource) ref.subresource = info.subresource;
      ev.objectRef = ref;
    }
    this.ev = ev;
  }

  annotate(key: string, value: string): void {
    (this.annotations ??= {})[key] = value;
  }

  panicked(err: unknown): void {
    this.panic = err;
  }

  impersonated(u: UserInfo): void {
    this.ev.impersonatedUser = auditUser(u);
  }

  /** A copy of the event at a stage, its fields in kube's order (what the backends keep). */
  private snapshot(stage: Stage): AuditEvent {
    const e = this.ev;
    const out: AuditEvent = {
      kind: 'Event',
      apiVersion: e.apiVersion,
      level: e.level,
      auditID: e.auditID,
      stage,
      requestURI: e.requestURI,
      verb: e.verb,
      user: e.user,
    } as AuditEvent;
    if (e.impersonatedUser) out.impersonatedUser = e.impersonatedUser;
    if (e.sourceIPs?.length) out.sourceIPs = e.sourceIPs;
    if (e.userAgent) out.userAgent = e.userAgent;
    if (e.objectRef) out.objectRef = orderedRef(e.objectRef);
    if (e.responseStatus) out.responseStatus = e.responseStatus;
    if (e.requestObject !== undefined) out.requestObject = e.requestObject;
    if (e.responseObject !== undefined) out.responseObject = e.responseObject;
    out.requestReceivedTimestamp = e.requestReceivedTimestamp;
    out.stageTimestamp = microNow();
    if (this.annotations) out.annotations = { ...this.annotations };
    return out;
  }

  /** Sends a stage's event unless the policy omits it; what the backend answers (blocking modes). */
  emit(stage: Stage): boolean | Promise<boolean> {
    if (this.omit.includes(stage)) return true;
    return this.a.backend.process([this.snapshot(stage)]);
  }

  /** The request body, decoded into the event: the objectRef's missing parts, and the object at Request and above. */
  private recordRequest(): void {
    const body = this.req.body;
    if (!body || body.length === 0) return;
    const info = this.req.requestInfo!;
    const wantObject = this.rank >= REQUEST;
    if (!wantObject && !OBJECT_BODY_VERBS.has(info.verb)) return;
    const obj = decodeBody(body, contentTypeOf(this.req.headers));
    if (obj === undefined) return;
    const ref = this.ev.objectRef;
    const md = OBJECT_BODY_VERBS.has(info.verb) && obj && typeof obj === 'object' ? (obj as any).metadata : undefined;
    if (ref && md && typeof md === 'object') {
      if (!ref.namespace && typeof md.namespace === 'string' && md.namespace) ref.namespace = md.namespace;
      if (!ref.name && typeof md.name === 'string' && md.name) ref.name = md.name;
      if (!ref.uid && typeof md.uid === 'string' && md.uid) ref.uid = md.uid;
      if (!ref.resourceVersion && typeof md.resourceVersion === 'string' && md.resourceVersion) ref.resourceVersion = md.resourceVersion;
    }
    if (wantObject) this.ev.requestObject = this.d.omitManagedFields ? withoutManagedFields(obj) : obj;
  }

  /**
   * The response's status, and its object at RequestResponse. A Status body (an error, a
   * delete's Success) gives responseStatus its status, message, reason and details.
   */
  private recordResponse(code: number, headers: HeaderList, parts: Array<Uint8Array | string> | null): void {
    if (this.panic !== undefined) {
      this.ev.responseStatus = { metadata: {}, status: 'Failure', message: `APIServer panic'd: ${this.panic instanceof Error ? this.panic.message : String(this.panic)}`, reason: 'InternalError', code: 500 };
      return;
    }
    const rs: ResponseStatus = { metadata: {}, code };
    this.ev.responseStatus = rs;
    if (!parts || this.rank < METADATA) return;
    const ct = contentTypeOf(headers);
    let maybeStatus: boolean;
    if (ct.includes('json')) {
      // A JSON Status is written kind first: found without parsing the body.
      const first = parts[0];
      const head = typeof first === 'string' ? first.slice(0, 20) : Buffer.from(first.buffer, first.byteOffset, Math.min(20, first.byteLength)).toString();
      maybeStatus = head.startsWith('{"kind":"Status"');
    } else {
      // protobuf, CBOR: only errors and deletes answer with a Status
      maybeStatus = code >= 300 || this.req.requestInfo!.verb.startsWith('delete');
    }
    if (!maybeStatus && this.rank < REQUEST_RESPONSE) return;
    const obj = decodeBody(joinParts(parts), ct) as any;
    if (obj === undefined || obj === null) return;
    if (maybeStatus && typeof obj === 'object' && obj.kind === 'Status') {
      if (obj.status) rs.status = obj.status;
      if (obj.message) rs.message = obj.message;
      if (obj.reason) rs.reason = obj.reason;
      if (obj.details) rs.details = obj.details;
    }
    if (this.rank >= REQUEST_RESPONSE) this.ev.responseObject = this.d.omitManagedFields ? withoutManagedFields(obj) : obj;
  }

  /** A whole response is about to go out: its events first, then (after a blocking backend took them) the response. */
  complete(code: number, headers: HeaderList, parts: Array<Uint8Array | string> | null, forward: () => void): void {
    if (this.finished) return forward();
    this.finished = true;
    this.recordRequest();
    this.recordResponse(code, headers, parts);
    const pending: Promise<boolean>[] = [];
    if (this.longRunning && !this.started) {
      this.started = true;
      const r = this.emit('ResponseStarted');
      if (typeof r !== 'boolean') pending.push(r);
    }
    const r = this.emit(this.panic !== undefined ? 'Panic' : 'ResponseComplete');
    if (typeof r !== 'boolean') pending.push(r);
    if (pending.length === 0) return forward();
    Promise.all(pending).then(forward, forward);
  }

  /** A stream's head goes out (a watch): ResponseStarted now, ResponseComplete at its end. */
  streamStarted(code: number): void {
    if (this.started || this.finished) return;
    this.started = true;
    this.recordRequest();
    this.ev.responseStatus = { metadata: {}, code };
    void this.emit('ResponseStarted');
  }

  /** kube's record of a request that failed authentication: one ResponseStarted event, no user. */
  failedAuthentication(code: number, message: string): void {
    this.finished = true;
    this.ev.responseStatus = { metadata: {}, message, code };
    void this.emit('ResponseStarted');
  }

  /**
   * The response ended without a send this record saw (the client went away first): the
   * record still ends, as kube's does when its handler returns, with code 200 when no
   * status was set.
   */
  ended(): void {
    if (this.finished) return;
    this.finished = true;
    this.ev.responseStatus ??= { metadata: {}, code: 200 };
    void this.emit(this.panic !== undefined ? 'Panic' : 'ResponseComplete');
  }

}

/** Shadows the sink's sending methods with ones that record the response first. */
function wrapSink(rec: AuditRecord, res: ResponseSink): void {
  const send = res.send;
  const sendParts = res.sendParts;
  const startStream = res.startStream;
  res.send = function (status, headers, body) {
    rec.complete(status, headers, [body], () => send.call(res, status, headers, body));
  };
  res.sendParts = function (status, headers, parts) {
    rec.complete(status, headers, parts, () => sendParts.call(res, status, headers, parts));
  };
  res.startStream = function (status, headers) {
    rec.streamStarted(status);
    startStream.call(res, status, headers);
  };
  // The end of a stream (a watch), or of a request whose client left before its answer.
  res.onDone(() => rec.ended());
}

const FAILED_TO_STORE = 'failed to store audit event';

export function auditFilter(a: Auditor): Filter {
  return {
    name: 'audit',
    run(req, res) {
      const info = req.requestInfo!;
      const id = req.headers['audit-id'] || randomUUID();
      // The flow-control filter, later, adds its headers to this list.
      req.responseHeaders = [['Audit-Id', id]];
      const d = evaluate(a.policy, req.user, info);
      if (d.level === 'None') return;
      const longRunning = LONG_RUNNING_VERBS.has(info.verb) || (info.isResourceRequest && LONG_RUNNING_SUBRESOURCES.has(info.subresource));
      const rec = new AuditRecord(a, req, id, d, longRunning);
      req.audit = rec;
      wrapSink(rec, res);
      const r = rec.emit('RequestReceived');
      if (r === true) return;
      const fail = () => {
        apiserverMetrics.auditRequestRejected();
        const se = new StatusError(500, 'InternalError', FAILED_TO_STORE);
        se.plainText = `Internal Server Error: ${JSON.stringify(req.path)}: ${FAILED_TO_STORE}\n`;
        return se;
      };
      if (r === false) {
        if (a.strict) throw fail();
        return;
      }
      // A blocking webhook: the request goes on once the backend has the event.
      return r.then((ok) => {
        if (!ok && a.strict) throw fail();
      });
    },
  };
}

/** What kube says a failed authentication attempted: the kinds of credential the request carried. */
function authMethodsMessage(req: ApiRequest): string {
  const methods: string[] = [];
  const auth = (req.headers['authorization'] ?? '').trim();
  if (/^basic\s+\S/i.test(auth)) methods.push('basic');
  const parts = auth.split(' ');
  if (parts.length > 1 && parts[0].toLowerCase() === 'bearer') methods.push('bearer');
  if (req.rawQuery.includes('access_token=') && req.query.get('access_token')?.trim()) methods.push('access_token');
  if (req.clientCert || req.clientCertError !== undefined) methods.push('x509');
  return methods.length ? `Authentication failed, attempted: ${methods.join(', ')}` : 'Authentication failed, no credentials provided';
}

function isUnauthorized(err: unknown): boolean {
  return err instanceof StatusError && err.code === 401;
}

/**
 * The authentication filter, with kube's record of a failed authentication: the audit
 * filter comes after authentication and never sees such a request, so this one records it
 * (as the policy decides for a request without a user) when the filter rejects it with a 401.
 */
export function withFailedAuthenticationAudit(inner: Filter, a: Auditor): Filter {
  const record = (req: ApiRequest, res: ResponseSink) => {
    const id = req.headers['audit-id'] || randomUUID();
    req.responseHeaders = [['Audit-Id', id]];
    const d = evaluate(a.policy, undefined, req.requestInfo!);
    if (d.level === 'None') return;
    const rec = new AuditRecord(a, req, id, d, false);
    const send = res.send;
    res.send = function (status, headers, body) {
      rec.failedAuthentication(status, authMethodsMessage(req));
      send.call(res, status, headers, body);
    };
  };
  return {
    name: inner.name,
    run(req, res) {
      let r;
      try {
        r = inner.run(req, res);
      } catch (e) {
        if (isUnauthorized(e)) record(req, res);
        throw e;
      }
      if (r && typeof (r as Promise<unknown>).then === 'function') {
        return (r as Promise<void | boolean>).catch((e) => {
          if (isUnauthorized(e)) record(req, res);
          throw e;
        });
      }
      return r;
    },
  };
}
