// DeleteOptions (spec 2.8): from the body when there is one, else from the query string,
// as kube-apiserver reads them; then checked as kube's ValidateDeleteOptions (422 Invalid
// on DeleteOptions.meta.k8s.io).
import type { ApiRequest } from '../http/types.js';
import { errors } from '../errors.js';
import { decodeProtobufObject, isProtobufBody } from '../codec/protobuf.js';
import { boolParam, dryRunParam, gracePeriodParam } from '../request/query.js';
import type { DeleteOptions } from '../registry/store.js';
import type { FieldError } from '../registry/strategy.js';
import { features } from '../features.js';

const POLICIES = new Set(['Orphan', 'Background', 'Foreground']);

export function deleteOptions(req: ApiRequest): DeleteOptions {
  let body: any = {};
  if (req.body && req.body.length > 0 && isProtobufBody(req.body)) {
    body = decodeProtobufObject(req.body);
  } else if (req.body && req.body.length > 0) {
    try {
      body = JSON.parse(req.body.toString('utf8'));
    } catch (e) {
      throw errors.badRequest(`couldn't get version/kind; json parse error: ${(e as Error).message}`);
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw errors.badRequest('DeleteOptions must be a JSON object');
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
