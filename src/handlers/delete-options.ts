// DeleteOptions (spec 2.8): from the body when there is one, else from the query string,
// as kube-apiserver reads them; then checked as kube's ValidateDeleteOptions (422 Invalid
// on DeleteOptions.meta.k8s.io).
import type { ApiRequest } from '../http/types.js';
import { errors, StatusError } from '../errors.js';
import { decodeProtobufObject, isProtobufBody } from '../codec/protobuf.js';
import { boolParam, dryRunParam, gracePeriodParam } from '../request/query.js';
import type { DeleteOptions } from '../registry/store.js';
import type { FieldError } from '../registry/strategy.js';
import { features } from '../features.js';
import { parseJson } from '../codec/decode.js';

const POLICIES = new Set(['Orphan', 'Background', 'Foreground']);

/** Go's name for a JSON value's type, as encoding/json words an unmarshal error. */
function goJsonType(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'boolean') return 'bool';
  return typeof v; // 'string' | 'number' | 'object'
}

const FIELD_TYPES: Record<string, [string, (v: unknown) => boolean]> = {
  apiVersion: ['string', (v) => typeof v === 'string'],
  kind: ['string', (v) => typeof v === 'string'],
  gracePeriodSeconds: ['int64', (v) => typeof v === 'number' && Number.isInteger(v)],
  propagationPolicy: ['v1.DeletionPropagation', (v) => typeof v === 'string'],
  orphanDependents: ['bool', (v) => typeof v === 'boolean'],
  ignoreStoreReadErrorWithClusterBreakingPotential: ['bool', (v) => typeof v === 'boolean'],
  dryRun: ['[]string', (v) => Array.isArray(v) && v.every((x) => typeof x === 'string' || x === null)],
  preconditions: ['v1.Preconditions', (v) => typeof v === 'object' && !Array.isArray(v)],
};

/**
 * kube-apiserver decodes a DELETE body into DeleteOptions before it deletes anything; a body
 * that does not decode (a wrong field type, another kind) fails the request instead of being
 * ignored. kube answers these with the decoder's own error, which is not a Status error, so
 * it goes out as a 500 without a reason (delete.go passes it to scope.err unwrapped).
 */
function checkBodyTypes(body: Record<string, unknown>): void {
  for (const [k, [goType, ok]] of Object.entries(FIELD_TYPES)) {
    const v = body[k];
    if (v === undefined || v === null || ok(v)) continue;
    throw new StatusError(500, '', `json: cannot unmarshal ${goJsonType(v)} into Go struct field DeleteOptions.${k} of type ${goType}`);
  }
  const pre = body.preconditions as Record<string, unknown> | null | undefined;
  for (const k of ['uid', 'resourceVersion']) {
    const v = pre?.[k];
    if (v !== undefined && v !== null && typeof v !== 'string')
      throw new StatusError(500, '', `json: cannot unmarshal ${goJsonType(v)} into Go struct field Preconditions.preconditions.${k} of type ${k === 'uid' ? 'types.UID' : 'string'}`);
  }
  // A body naming another kind decodes to that kind (or to nothing), never to DeleteOptions.
  if (body.kind !== undefined && body.kind !== '' && body.kind !== 'DeleteOptions')
    throw new StatusError(500, '', 'decoded object cannot be converted to DeleteOptions');
}

export function deleteOptions(req: ApiRequest): DeleteOptions {
  let body: any = {};
  if (req.body && req.body.length > 0 && isProtobufBody(req.body)) {
    body = decodeProtobufObject(req.body);
  } else if (req.body && req.body.length > 0) {
    try {
      body = parseJson(req.body.toString('utf8'));
    } catch (e) {
      throw errors.badRequest(`couldn't get version/kind; json parse error: ${(e as Error).message}`);
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw errors.badRequest('DeleteOptions must be a JSON object');
    checkBodyTypes(body);
  }
  const q = req.query;
  const o: DeleteOptions = { dryRun: dryRunParam(q) };
  if (Array.isArray(body.dryRun) && body.dryRun.length > 0) {
    if (body.dryRun.some((v: unknown) => v !== 'All')) throw errors.badRequest(`Invalid dry run value: ${JSON.stringify(body.dryRun)}, supported values: "All"`);
    o.dryRun = true;
  }
  const grace = gracePeriodParam(q) ?? body.gracePeriodSeconds;
  if (grace !== undefined && grace !== null) o.gracePeriodSeconds = Number(grace);
  const policy = q.get('propagationPolicy') ?? body.propagationPolicy;
  if (policy !== undefined && policy !== null) o.propagationPolicy = policy;
  const orphan = q.has('orphanDependents') ? boolParam(q, 'orphanDependents') : body.orphanDependents;
  if (typeof orphan === 'boolean') o.orphanDependents = orphan;
  if (body.preconditions && typeof body.preconditions === 'object') o.preconditions = body.preconditions;
  const unsafe = q.has('ignoreStoreReadErrorWithClusterBreakingPotential')
    ? boolParam(q, 'ignoreStoreReadErrorWithClusterBreakingPotential')
    : body.ignoreStoreReadErrorWithClusterBreakingPotential;
  // Without the gate the option is dropped, as kube-apiserver drops it.
  if (unsafe === true && features.enabled('AllowUnsafeMalformedObjectDeletion')) o.ignoreStoreReadErrorWithClusterBreakingPotential = true;

  const errs: FieldError[] = [];
  if (o.orphanDependents !== undefined && o.propagationPolicy !== undefined) {
    errs.push({ field: 'propagationPolicy', type: 'FieldValueInvalid', value: o.propagationPolicy, detail: 'orphanDependents and deletionPropagation cannot be both set' });
  }
  if (o.propagationPolicy !== undefined && !POLICIES.has(o.propagationPolicy)) {
    errs.push({ field: 'propagationPolicy', type: 'FieldValueNotSupported', value: o.propagationPolicy, detail: 'supported values: "Foreground", "Background", "Orphan", "nil"' });
  }
  if (o.ignoreStoreReadErrorWithClusterBreakingPotential) {
    // kube's ValidateIgnoreStoreReadError: the unsafe delete takes no other option.
    const unsafe = (other: string) => errs.push({ field: 'ignoreStoreReadErrorWithClusterBreakingPotential', type: 'FieldValueInvalid', value: true, detail: `cannot be set together with .${other}` });
    if (o.dryRun) unsafe('dryRun');
    if (o.propagationPolicy !== undefined) unsafe('propagationPolicy');
    if (o.orphanDependents !== undefined) unsafe('orphanDependents');
    if (o.gracePeriodSeconds !== undefined) unsafe('gracePeriodSeconds');
    if (o.preconditions !== undefined) unsafe('preconditions');
  }
  if (errs.length) throw errors.invalid('DeleteOptions', 'meta.k8s.io', '', errs);
  return o;
}
