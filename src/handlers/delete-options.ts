// DeleteOptions from the body (JSON) and the query string (spec 2.8).
import type { ApiRequest } from '../http/types.js';
import { errors } from '../errors.js';
import { decodeProtobufObject, isProtobufBody } from '../codec/protobuf.js';
import { dryRunParam, gracePeriodParam } from '../request/query.js';
import type { DeleteOptions } from '../registry/store.js';

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
  const o: DeleteOptions = { dryRun: dryRunParam(req.query) };
  if (Array.isArray(body.dryRun) && body.dryRun.length > 0) {
    if (body.dryRun.some((v: unknown) => v !== 'All')) throw errors.badRequest(`Invalid dry run value: ${JSON.stringify(body.dryRun)}, supported values: "All"`);
    o.dryRun = true;
  }
  const grace = gracePeriodParam(req.query) ?? body.gracePeriodSeconds;
  if (grace !== undefined && grace !== null) o.gracePeriodSeconds = Number(grace);
  const policy = req.query.get('propagationPolicy') ?? body.propagationPolicy;
  if (policy !== undefined && policy !== null) {
    if (!POLICIES.has(policy)) {
      throw errors.invalid('DeleteOptions', 'meta.k8s.io', '', [
        { field: 'propagationPolicy', type: 'FieldValueNotSupported', value: policy, detail: 'supported values: "Foreground", "Background", "Orphan", "nil"' },
      ]);
    }
    o.propagationPolicy = policy;
  }
  if (body.preconditions && typeof body.preconditions === 'object') o.preconditions = body.preconditions;
  return o;
}
