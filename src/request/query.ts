// Query parameters of the verbs (spec 4.4), checked the way kube-apiserver checks them:
// a value it cannot read is 400 BadRequest.
import { errors } from '../errors.js';
import type { ApiRequest } from '../http/types.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';
import type { ListOptions } from '../registry/store.js';

function intParam(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  if (!/^-?[0-9]+$/.test(v)) throw errors.badRequest(`invalid value for ${name}: ${JSON.stringify(v)}: must be an integer`);
  return Number(v);
}

export function boolParam(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  if (v === null) return false;
  if (v === '' || v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  throw errors.badRequest(`invalid value for ${name}: ${JSON.stringify(v)}: must be a boolean`);
}

/** dryRun: only a bare `?dryRun` or `dryRun=All` (spec 4.7). */
export function dryRunParam(q: URLSearchParams): boolean {
  const vals = q.getAll('dryRun');
  if (vals.length === 0) return false;
  for (const v of vals) {
    if (v !== '' && v !== 'All') throw errors.badRequest(`Invalid dry run value: ${JSON.stringify(v)}, supported values: "All"`);
  }
  return true;
}

export function listOptions(req: ApiRequest): ListOptions {
  const q = req.query;
  const limit = intParam(q, 'limit') ?? 0;
  return {
    resourceVersion: q.get('resourceVersion') ?? '',
    resourceVersionMatch: q.get('resourceVersionMatch') ?? '',
    limit: limit < 0 ? 0 : limit,
    continueToken: q.get('continue') ?? '',
    labels: parseLabelSelector(q.get('labelSelector')),
    fields: parseFieldSelector(q.get('fieldSelector')),
    // absent and false differ: ListOptions validation rules on whether it was given at all
    sendInitialEvents: q.has('sendInitialEvents') ? boolParam(q, 'sendInitialEvents') : undefined,
    allowWatchBookmarks: boolParam(q, 'allowWatchBookmarks'),
  };
}

export function timeoutSecondsParam(q: URLSearchParams): number | undefined {
  return intParam(q, 'timeoutSeconds');
}

export function gracePeriodParam(q: URLSearchParams): number | undefined {
  return intParam(q, 'gracePeriodSeconds');
}
