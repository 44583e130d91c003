// The create-only review kinds: virtual resources that store nothing and need no name; the
// server answers the posted object with its status filled in (kube's authorization and
// authentication REST of SelfSubjectAccessReview, SubjectAccessReview,
// LocalSubjectAccessReview, SelfSubjectRulesReview, TokenReview and SelfSubjectReview).
//
// Access reviews answer from the authorizer the server runs with (--authorization-mode), the
// same decision function the authorization filter uses; TokenReview from the same bearer-token
// authenticators as requests.
import { errors } from '../errors.js';
import { decodeObject, mediaTypeOf, parseBody } from '../codec/decode.js';
import { fieldValidationMode, isJsonMediaType, validateBody } from '../registry/field-validation.js';
import type { Authorizer, AuthorizationAttributes } from '../http/filters/authorization.js';
import type { FieldError } from '../registry/strategy.js';
import { responseRepresentation, sendObject } from './representation.js';
import { apiVersionOf, type HandlerContext } from './context.js';
import { ANONYMOUS, type UserInfo } from '../auth/user.js';
import { nowTimestamp } from '../registry/store.js';
import { dryRunParam } from '../request/query.js';
import { validateFieldManager } from './field-manager.js';
import { setOwn } from '../registry/own-keys.js';
import { admitSubresourceCreate } from './admission.js';
import { kindOf } from '../admission/request.js';

export const REVIEW_KINDS = new Set([
  'selfsubjectaccessreviews.authorization.k8s.io',
  'subjectaccessreviews.authorization.k8s.io',
  'localsubjectaccessreviews.authorization.k8s.io',
  'selfsubjectrulesreviews.authorization.k8s.io',
  'tokenreviews.authentication.k8s.io',
  'selfsubjectreviews.authentication.k8s.io',
]);

/** The posted review, decoded and field-validated like any create body. */
function decodeReview(c: HandlerContext): any {
  const mode = fieldValidationMode(c.req.query, 'create');
  const obj = decodeObject(parseBody(c.req.body, c.req.headers['content-type']), apiVersionOf(c.target), c.target.info.kind);
  const raw = isJsonMediaType(mediaTypeOf(c.req.headers['content-type'])) ? c.req.body : null;
  validateBody(obj, c.target.info, mode, raw, (c.req.warnings ??= []), { required: false });
  return obj;
}

/** Metadata is empty on a review: a zero ObjectMeta (managedFields and, for the local kind, namespace aside). */
function metadataIsEmpty(m: any, allowNamespace: boolean): boolean {
  for (const [k, v] of Object.entries(m ?? {})) {
    if (v === null || v === undefined || v === '' || k === 'managedFields') continue;
    if (k === 'namespace' && allowNamespace) continue;
    if (typeof v === 'object' && Object.keys(v as object).length === 0) continue;
    if (k === 'generation' && v === 0) continue;
    return false;
  }
  return true;
}

/** Drops what Go's omitempty would not print (the echoed spec of a review). */
function compact(v: any): any {
  if (Array.isArray(v)) return v.map(compact);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if (x === '' || x === null || x === undefined || x === false) continue;
    if (Array.isArray(x) && x.length === 0) continue;
    setOwn(out, k, compact(x));
  }
  return out;
}

function specErrors(spec: any, self: boolean): FieldError[] {
  const errs: FieldError[] = [];
  const ra = spec?.resourceAttributes ?? null;
  const nra = spec?.nonResourceAttributes ?? null;
  if (ra !== null && nra !== null) errs.push({ field: 'spec.nonResourceAttributes', type: 'FieldValueInvalid', value: nra, detail: 'cannot be specified in combination with resourceAttributes' });
  if (ra === null && nra === null) errs.push({ field: 'spec.resourceAttributes', type: 'FieldValueInvalid', value: null, detail: 'exactly one of nonResourceAttributes or resourceAttributes must be specified' });
  if (!self && !spec?.user && !(spec?.groups ?? []).length) errs.push({ field: 'spec.user', type: 'FieldValueInvalid', value: spec?.user ?? '', detail: 'at least one of user or group must be specified' });
  return errs;
}

function attributesOf(spec: any, user: UserInfo): AuthorizationAttributes {
  const ra = spec.resourceAttributes;
  if (ra) {
    return {
      user,
      verb: ra.verb ?? '',
      resourceRequest: true,
      apiGroup: ra.group ?? '',
      resource: ra.resource ?? '',
      subresource: ra.subresource ?? '',
      namespace: ra.namespace ?? '',
      name: ra.name ?? '',
      path: '',
    };
  }
  const nra = spec.nonResourceAttributes ?? {};
  return { user, verb: nra.verb ?? '', resourceRequest: false, apiGroup: '', resource: '', subresource: '', namespace: '', name: '', path: nra.path ?? '' };
}

async function accessStatus(authorizer: Authorizer, attrs: AuthorizationAttributes): Promise<Record<string, unknown>> {
  const d = await authorizer.decide(attrs);
  // kube's SubjectAccessReview REST: allowed, denied (a mode's explicit Deny), reason, evaluationError
  return { allowed: d.allowed, ...(d.denied ? { denied: true } : {}), ...(d.reason ? { reason: d.reason } : {}), ...(d.error ? { evaluationError: d.error } : {}) };
}

function reply(c: HandlerContext, obj: Record<string, unknown>): void {
  const repr = responseRepresentation(c);
  sendObject(c, repr, 201, Buffer.from(JSON.stringify(obj)));
}

function userInfoJson(u: UserInfo): Record<string, unknown> {
  return {
    username: u.name,
    ...(u.uid ? { uid: u.uid } : {}),
    ...(u.groups.length ? { groups: u.groups } : {}),
    ...(u.extra && Object.keys(u.extra).length ? { extra: u.extra } : {}),
  };
}

export async function handleReview(c: HandlerContext): Promise<void> {
  const auth = c.auth;
  if (!auth) throw errors.internal('the review kinds need the authenticator and authorizer');
  const kind = c.target.info.kind;
  const group = c.target.info.group;
  // kube's create handler checks CreateOptions (dryRun, fieldManager) before any REST create, reviews included.
  dryRunParam(c.req.query);
  validateFieldManager('CreateOptions', c.req.query.get('fieldManager') ?? '');
  const body = decodeReview(c);
  // admitted as any create (kube's create handler runs admission on the review kinds too)
  await admitSubresourceCreate(c, body, kindOf(c.target.info), '');
  const user = c.req.user ?? ANONYMOUS;
  const base = { kind, apiVersion: apiVersionOf(c.target), metadata: { creationTimestamp: null } as Record<string, unknown> };
  switch (kind) {
    case 'SelfSubjectAccessReview':
    case 'SubjectAccessReview':
    case 'LocalSubjectAccessReview': {
      const self = kind === 'SelfSubjectAccessReview';
      const local = kind === 'LocalSubjectAccessReview';
      const ns = c.info.namespace;
      if (local) {
        // The request's namespace fills an empty metadata.namespace (kube's create handler); a different one is refused.
        if (body.metadata.namespace && body.metadata.namespace !== ns) throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
        body.metadata.namespace = ns;
      }
      const spec = body.spec ?? {};
      const errs = specErrors(spec, self);
      if (!metadataIsEmpty(body.metadata, local)) {
        errs.push({ field: 'metadata', type: 'FieldValueInvalid', value: body.metadata, detail: local ? 'must be empty except for namespace' : 'must be empty' });
      }
      if (local) {
        if (spec.resourceAttributes && (spec.resourceAttributes.namespace ?? '') !== ns) {
          errs.push({ field: 'spec.resourceAttributes.namespace', type: 'FieldValueInvalid', value: spec.resourceAttributes.namespace ?? '', detail: 'must match metadata.namespace' });
        }
        if (spec.nonResourceAttributes) errs.push({ field: 'spec.nonResourceAttributes', type: 'FieldValueInvalid', value: spec.nonResourceAttributes, detail: 'disallowed on this kind of request' });
      }
      if (errs.length) throw errors.invalid(kind, group, '', errs);
      // A SubjectAccessReview asks about the user, groups and extra it names, as given (no
      // system:authenticated added); the self kinds about the requesting user.
      const subject: UserInfo = self
        ? user
        : { name: spec.user ?? '', uid: spec.uid ?? '', groups: Array.isArray(spec.groups) ? spec.groups : [], ...(spec.extra ? { extra: spec.extra } : {}) };
      if (local) base.metadata = { namespace: ns, creationTimestamp: null };
      reply(c, { ...base, spec: compact(spec), status: await accessStatus(auth.authorizer, attributesOf(spec, subject)) });
      return;
    }
    case 'SelfSubjectRulesReview': {
      const ns: string = body.spec?.namespace ?? '';
      if (!ns) throw errors.badRequest('no namespace on request');
      const rules = auth.authorizer.rulesFor(user, ns);
      reply(c, { ...base, spec: {}, status: rules });
      return;
    }
    case 'TokenReview': {
      const token: string = body.spec?.token ?? '';
      if (!token) throw errors.badRequest('token is required for TokenReview in authentication');
      const wanted: string[] = Array.isArray(body.spec?.audiences) ? body.spec.audiences : [];
      const r = await auth.tokens.authenticate(token, wanted.length ? wanted : undefined);
      const status: Record<string, unknown> = {};
      if (r.ok) status.authenticated = true;
      status.user = r.ok ? userInfoJson(r.response.user) : {};
      if (r.ok && r.response.audiences?.length) status.audiences = r.response.audiences;
      if (!r.ok && r.error) status.error = r.error;
      reply(c, { ...base, spec: compact(body.spec ?? {}), status });
      return;
    }
    case 'SelfSubjectReview': {
      base.metadata = { creationTimestamp: nowTimestamp() };
      reply(c, { ...base, status: { userInfo: userInfoJson(user) } });
      return;
    }
  }
  throw errors.methodNotAllowed();
}
