// How many seats a request holds while it executes, and for how long after (kube's
// flowcontrol/request work estimator: width.go, list_work_estimator.go,
// mutating_work_estimator.go):
//
//   - a LIST (and a WATCH that asked for its initial events) costs a seat per 100 objects
//     it will go through: the resource's object count (all namespaces, as kube's
//     ObjectCountTracker counts it; here the cache's live count) when served from the cache,
//     count + limit when storage is read with a label or field selector, 2 × limit when it
//     is read without; one object when a metadata.name field selector names it. Served from
//     storage, as kube's ShouldDelegateListMeta decides it: an exact resourceVersion (Exact
//     match, or a limit with a version other than "0"), a continue token, or a match kube
//     does not know. A consistent read (no resourceVersion) is served from the cache, as
//     1.33's ConsistentListFromCache does. An unknown resource costs the minimum (kube: it
//     may be an aggregated one, served elsewhere); options that do not parse, the maximum.
//   - a create, update, patch or delete holds one seat, then, when ten or more watchers will
//     be told of it, ceil(watchers / 10) seats for 5 ms more (its events' fan-out).
//   - anything else, and any WATCH that did not ask for initial events: one seat.
//
// Seats are bounded by 1 and the level's maximum (levelMaxSeats: at most 10).
//
// Thread ownership: none of its own (pure functions of the request and the counts given).
import type { RequestInfo } from '../request/request-info.js';
import { groupResourceKey } from '../api/targets.js';

export interface WorkEstimate {
  /** seats held while the request executes */
  readonly initialSeats: number;
  /** seats held for latencyMs after its response (0: none) */
  readonly finalSeats: number;
  readonly latencyMs: number;
}

/** What the estimator reads of the server. */
export interface WorkSources {
  /** objects of a group-resource ("pods", "deployments.apps"), undefined when unknown */
  objectCount(gr: string): number | undefined;
  /** watchers told of a change of gr in namespace ns (cluster-wide watches and that namespace's) */
  watchCount(gr: string, ns: string): number;
}

export const MIN_SEATS = 1;
export const MAX_SEATS = 10;
const OBJECTS_PER_SEAT = 100;
const WATCHES_PER_SEAT = 10;
/** kube's eventAdditionalDuration */
const EVENT_ADDITIONAL_MS = 5;

/** the common answer, shared */
export const ONE_SEAT: WorkEstimate = Object.freeze({ initialSeats: 1, finalSeats: 0, latencyMs: 0 });

const seatsOnly = (n: number): WorkEstimate => (n === 1 ? ONE_SEAT : { initialSeats: n, finalSeats: 0, latencyMs: 0 });

/** `req.query` is read only for lists and watches (most requests never parse theirs). */
export function estimateWork(info: RequestInfo, req: { readonly query: URLSearchParams }, src: WorkSources, levelMaxSeats: number): WorkEstimate {
  if (!info.isResourceRequest) return ONE_SEAT;
  switch (info.verb) {
    case 'list':
    case 'watch':
      return estimateList(info, req.query, src, levelMaxSeats);
    case 'create':
    case 'update':
    case 'patch':
    case 'delete': {
      const watchers = src.watchCount(groupResourceKey(info.apiGroup, info.resource), info.namespace);
      if (watchers < WATCHES_PER_SEAT) return ONE_SEAT;
      return { initialSeats: 1, finalSeats: Math.min(levelMaxSeats, Math.ceil(watchers / WATCHES_PER_SEAT)), latencyMs: EVENT_ADDITIONAL_MS };
    }
    default:
      return ONE_SEAT;
  }
}

function estimateList(info: RequestInfo, q: URLSearchParams, src: WorkSources, levelMax: number): WorkEstimate {
  const max = Math.max(MIN_SEATS, Math.min(levelMax, MAX_SEATS));
  const watch = info.verb === 'watch';
  if (watch && q.get('sendInitialEvents') !== 'true') return ONE_SEAT;
  const limitText = q.get('limit');
  let limit = 0;
  if (limitText !== null && limitText !== '') {
    limit = Number(limitText);
    // options that will not parse: the request fails later; kube charges the most meanwhile
    if (!Number.isInteger(limit)) return seatsOnly(max);
  }
  const rv = q.get('resourceVersion') ?? '';
  const match = q.get('resourceVersionMatch') ?? '';
  const cont = q.get('continue') ?? '';
  let fromStorage: boolean;
  if (match === 'Exact') fromStorage = true;
  else if (match === 'NotOlderThan') fromStorage = false;
  else if (match !== '') fromStorage = true;
  else fromStorage = (limit > 0 && rv !== '' && rv !== '0') || cont !== '';
  const fromCache = watch || !fromStorage;
  const stored = src.objectCount(groupResourceKey(info.apiGroup, info.resource));
  if (stored === undefined) return ONE_SEAT;
  const limited = limit > 0 && limit < stored ? limit : stored;
  let objects: number;
  if (info.name !== '') objects = 1;
  else if (fromCache) objects = stored;
  else if ((q.get('labelSelector') ?? '') !== '' || (q.get('fieldSelector') ?? '') !== '') objects = stored + limited;
  else objects = 2 * limited;
  return seatsOnly(Math.max(MIN_SEATS, Math.min(max, Math.ceil(objects / OBJECTS_PER_SEAT))));
}
