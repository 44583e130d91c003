// Query parameters of the verbs (spec 4.4), checked the way kube-apiserver checks them:
// a value it cannot read is 400 BadRequest with the conversion's own error text
// (runtime.Convert_Slice_string_To_int64 is strconv.ParseInt), and a boolean is never
// unreadable: only "false" (any case) and "0" are false, anything else, even "", is true.
import { errors, goQuote } from '../errors.js';
import type { ApiRequest } from '../http/types.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';
import type { ListOptions } from '../registry/store.js';

// A parameter given empty (`limit=`) is still converted, and strconv.ParseInt("") fails:
// kube-apiserver answers 400 for it, as for any other unreadable number.
export function intParam(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null) return undefined;
  if (!/^[-+]?[0-9]+$/.test(v)) throw errors.badRequest(`strconv.ParseInt: parsing ${goQuote(v)}: invalid syntax`);
  const n = BigInt(v);
  if (n > 0x7fffffffffffffffn || n < -0x8000000000000000n) throw errors.badRequest(`strconv.ParseInt: parsing ${goQuote(v)}: value out of range`);
  return Number(n);
}

/** runtime.Convert_Slice_string_To_bool on the first value (null: absent). */
export function isTrueParam(v: string | null): boolean {
  return v !== null && v !== '0' && v.toLowerCase() !== 'false';
}

export function boolParam(q: URLSearchParams, name: string): boolean {
  return isTrueParam(q.get(name));
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
  return listOptionsOfQuery(req.query);
}

/** ListOptions from a query; throws the 400 of the first parameter that cannot be read. */
export function listOptionsOfQuery(q: URLSearchParams): ListOptions {
  // In the order kube's generated url.Values conversion reads them: the numbers first
  // (timeoutSeconds, then limit), then the label and field selectors. timeoutSeconds is part
  // of ListOptions for every list-shaped verb, so an unreadable one fails those too.
  intParam(q, 'timeoutSeconds');
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
