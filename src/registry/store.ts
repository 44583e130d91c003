// The generic store: one implementation of get, list, create, update, patch, delete and
// deletecollection for every resource type, with per-kind Strategy hooks (as
// k8s.io/apiserver's registry/generic/registry.Store).
//
// Reads are answered from the front thread's caches (no thread hop). A write is computed
// here, on the front thread: the current object comes from the cache, the new one is built,
// defaulted and validated here, and the shard is asked only to "put if the version is
// still R" (kube-apiserver's GuaranteedUpdate). A lost race retries with the fresh object;
// a stale version the client itself sent is a 409.
import { apiserverMetrics } from '../metrics/apiserver-metrics.js';
import { podSubresourceView, validatePodSubresourceUpdate } from './pod-subresources.js';
import { randomFillSync, randomUUID } from 'node:crypto';
import { errors, isObjectTooLarge, StatusError, type GroupResource } from '../errors.js';
import type { ResourceInfo } from '../api/catalog-types.js';
import type { Cacher } from '../storage/cacher.js';
import { CompactedError, Expect, WriteRejected, type ChangeType as EventType, type MaybePromise, type Storage, type StoredObject } from '../storage/interface.js';
import { entryObject, firstKeyAtOrAfter, selectable, splitKey, type CacheEntry, type ResourceCache } from '../../workers/watch/watch-cache.js';
import { orderedObject } from '../codec/json.js';
import { itemPrefix } from '../codec/list-item.js';
import { matchFieldMap, matchLabels, type FieldSelector, type LabelSelector } from '../request/selectors.js';
import { convertFieldSelector, selectableFields } from '../request/field-labels.js';
import { validateListOptions } from '../request/list-options.js';
import { listFromCacheSnapshot } from './read-gates.js';
import { Strategy, type FieldError, type StrategyContext } from './strategy.js';
import { validateAnnotations, validateFinalizers, validateLabels, validateName } from './validation.js';
import { jsonPatch, mergePatch, type JsonPatchStats } from './patch.js';
import { PatchClock, refuseOversized } from './patch-limits.js';
import { strategicMergePatch } from './strategic-merge.js';
import { ANY, rootNode } from './schema-walk.js';
import { deepEqual } from './managed-fields.js';
import { decodeContinue, encodeContinue } from './continue-token.js';
import { checkListable, checkStoredBytes, throwIfCorrupt } from './corrupt-objects.js';
import { convertedJson, convertedJsonAsync, hasView, readyViews, toStorageAsync, viewOf, type Conversion } from './conversion.js';

/**
 * Records field ownership on the object about to be stored (metadata.managedFields), or
 * refuses the write (an apply conflict). old is null on create. Runs once per attempt,
 * after the kind's own preparation and validation.
 */
/** How long a create waits for this thread's cache to take a namespace committed elsewhere. */
const NAMESPACE_LOOKUP_MS = 2000;

export type FieldsHook = (old: any | null, obj: any) => void;
import { checkPreconditions, planDelete, type DeleteOptions } from './deletion.js';
import type { AdmissionChain } from '../admission/plugin.js';
import { RequestAdmission, kindOf, resourceOf, type AdmissionHooks } from '../admission/request.js';
import type { UserInfo } from '../auth/user.js';

export interface ResourceTarget {
  info: ResourceInfo;
  /** group-resource key of the storage, e.g. "deployments.apps" */
  gr: string;
  groupResource: GroupResource;
  strategy: Strategy;
  nameRule: 'subdomain' | 'label' | 'dns1035' | 'path';
  hasStatus: boolean;
  /**
   * Set when this version is not the storage version (src/registry/conversion.ts): the
   * store reads and writes objects in this version and converts at its edges; gr is then
   * the storage's key, selectorGr the key of this resource's own field labels.
   */
  conv?: Conversion;
  selectorGr?: string;
}

/** Stored entries as the target's version sees them (the entry itself when it is the storage version). */
export function viewFor<E extends CacheEntry | undefined>(t: ResourceTarget, e: E): E {
  return t.conv && e ? (viewOf(t.conv, e) as E) : e;
}

/** viewFor, once a CRD's conversion webhook has converted the entry (any other conversion is at hand). */
async function viewAfterWebhook<E extends CacheEntry | undefined>(t: ResourceTarget, e: E): Promise<E> {
  if (e && t.conv?.webhook) await readyViews(t.conv, [e]);
  return viewFor(t, e);
}

export interface WriteResult {
  code: number;
  /** the object's JSON, exactly as stored (or as it would be, for a dry run) */
  json: Buffer;
}

export interface ListOptions {
  resourceVersion: string;
  resourceVersionMatch: string;
  limit: number;
  continueToken: string;
  labels: LabelSelector | null;
  fields: FieldSelector | null;
  sendInitialEvents?: boolean;
  allowWatchBookmarks?: boolean;
}

export interface ListResult {
  rv: number;
  items: Buffer[];
  /** the items' bytes already joined by commas, when the cache had them (saves a copy per item) */
  joined?: Buffer;
  /** the items' sources, parallel to items: cache entries (which memoize other encodings) or log reads */
  sources: Array<{ json: Buffer; obj?: any }>;
  continueToken?: string;
  remainingItemCount?: number;
}

export type { DeleteOptions } from './deletion.js';

/** How long a read waits for a version newer than the cache holds: kube-apiserver's 3 s. */
export const TOO_LARGE_RV_WAIT_MS = 3000;
/** Lifetime of a continue token (spec 3.2). */
export const CONTINUE_TTL_MS = 5 * 60 * 1000;
const MAX_CONFLICT_RETRIES = 8;
/**
 * The same on a backend shared with other writers (etcd's replicas): kube's GuaranteedUpdate
 * retries a lost race until its request's deadline; the losers here rebuild from a cache that
 * must first catch up with the winner, so a few writers on one object lose more rounds.
 */
const SHARED_MAX_CONFLICT_RETRIES = 64;

let stampSecond = -1;
let stamp = '';
/** RFC 3339 at second precision, formatted once per second (every write takes one). */
export function nowTimestamp(): string {
  const sec = Math.floor(Date.now() / 1000);
  if (sec !== stampSecond) {
    stampSecond = sec;
    stamp = new Date(sec * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  }
  return stamp;
}

const NAME_SUFFIX_CHARS = 'bcdfghjklmnpqrstvwxz2456789';
/** random bytes for name suffixes, refilled a few KB at a time (one randomInt call per character cost ~1 µs a name) */
const suffixBytes = Buffer.alloc(4096);
let suffixNext = suffixBytes.length;
/** One of NAME_SUFFIX_CHARS, uniformly: bytes at or above the largest multiple of 27 are skipped. */
function suffixChar(): string {
  const n = NAME_SUFFIX_CHARS.length;
  const limit = 256 - (256 % n);
  for (;;) {
    if (suffixNext >= suffixBytes.length) {
      randomFillSync(suffixBytes);
      suffixNext = 0;
    }
    const b = suffixBytes[suffixNext++];
    if (b < limit) return NAME_SUFFIX_CHARS[b % n];
  }
}
function generateName(prefix: string): string {
  let s = prefix.length > 58 ? prefix.slice(0, 58) : prefix;
  for (let i = 0; i < 5; i++) s += suffixChar();
  return s;
}

export function objectKey(ns: string, name: string): string {
  return `${ns}/${name}`;
}

/** A resourceVersion parameter as kube's APIObjectVersioner reads it (a uint64). */
export function parseRv(s: string): number {
  if (!/^[0-9]+$/.test(s) || (s.length >= 20 && BigInt(s) > 0xffffffffffffffffn)) throw errors.invalidResourceVersion(s);
  return Number(s);
}

/**
 * kube's storage refuses to create an object that names a resourceVersion (a parseable,
 * non-zero one: anything else is ignored): a 500 without a reason, from etcd3's Create.
 * Checked where kube's storage checks it: after validation, not on a dry run. POST and an
 * apply that creates ask for it; a PUT that creates does not (its update path clears the
 * version).
 */
function checkNoResourceVersionOnCreate(rv: unknown): void {
  if (typeof rv === 'string' && /^[0-9]{1,20}$/.test(rv) && BigInt(rv) !== 0n && BigInt(rv) <= 0xffffffffffffffffn) {
    throw new StatusError(500, '', 'resourceVersion should not be set on objects to be created');
  }
}

/** Whether a patch names metadata.resourceVersion (a conditional patch). */
function patchPinsVersion(patchType: string, patch: any): boolean {
  if (patchType === 'json') return Array.isArray(patch) && patch.some((op) => op && typeof op === 'object' && op.path === '/metadata/resourceVersion');
  return patch?.metadata?.resourceVersion !== undefined && patch?.metadata?.resourceVersion !== null;
}

/** How long an Exact list may be served from a snapshot rebuilt from the cache (spec 8). */
export const CACHE_SNAPSHOT_MS = 75_000;

/** The API server's own identity on its loopback writes (kube's system:apiserver in system:masters). */
export const LOOPBACK_USER: UserInfo = { name: 'system:apiserver', uid: '', groups: ['system:authenticated', 'system:masters'] };

export class Store {
  /**
   * The admission chain (src/admission), set by the server. Client writes bring their own
   * admission callbacks, made by the handler from the request (src/handlers/admission.ts);
   * the server's own creates (kube's controllers write through the API, so admission sees
   * theirs too) are admitted here as the API server's loopback user. The server's own
   * updates (finishing writes, e.g. finalizer removal) skip admission.
   */
  admission?: AdmissionChain;

  /** --delete-collection-workers: the deletes a deletecollection runs at once */
  deleteCollectionWorkers = 1;

  /** the storage backend under the caches: writes, and reads of the revision history */
  readonly storage: Storage;

  /** lost races a write retries before its 409 */
  private readonly maxConflictRetries: number;

  constructor(readonly cacher: Cacher) {
    this.storage = cacher.storage;
    this.maxConflictRetries = this.storage.latestRv ? SHARED_MAX_CONFLICT_RETRIES : MAX_CONFLICT_RETRIES;
  }

  /** The admission of a create the server makes itself (no request: the loopback user, kube's system:apiserver). */
  private ownCreateAdmission(t: ResourceTarget, ns: string, dryRun: boolean, warnings?: string[]): AdmissionHooks | undefined {
    const chain = this.admission;
    if (!chain) return undefined;
    return new RequestAdmission(chain, {
      operation: 'CREATE',
      info: t.info,
      groupResource: t.groupResource,
      subresource: '',
      namespace: ns,
      name: '',
      dryRun,
      user: LOOPBACK_USER,
      options: { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1' },
      kind: kindOf(t.info),
      resource: resourceOf(t.info),
      warnings,
    });
  }

  ctxOf(t: ResourceTarget): StrategyContext {
    return { info: t.info, hasStatus: t.hasStatus };
  }

  cacheOf(t: ResourceTarget): ResourceCache {
    return this.cacher.cache(t.gr);
  }

  // ---------------------------------------------------------------- reads

  /** Waits until the cache is at least as new as rv, or throws 504 "Too large resource version". */
  async ensureFresh(t: ResourceTarget, rv: number): Promise<number> {
    const cache = this.cacheOf(t);
    const gr = cache.gr;
    // Without a watch cache kube reads etcd, which refuses a version it has not reached at
    // once (validateMinimumResourceVersion), with no retry hint; only the cacher waits.
    // (Versions are global: one not handed out yet by any shard is the one not reached.)
    if (!this.cacheServes(cache) && rv > this.storage.currentRv(gr)) {
      throw errors.tooLargeResourceVersion(rv, this.storage.currentRv(gr), 0);
    }
    if (!(await this.storage.waitFresh(gr, rv, TOO_LARGE_RV_WAIT_MS))) {
      throw errors.tooLargeResourceVersion(rv, this.storage.freshRv(gr));
    }
    return this.storage.freshRv(gr);
  }

  /**
   * "Most recent": every commit that finished before this read began must be visible. That
   * is the shard's last committed version; a batch still in flight is not waited for.
   */
  ensureLatest(t: ResourceTarget): Promise<number> {
    // a backend shared with other writers (etcd's other replicas) is asked for its current
    // version first, as kube's ConsistentListFromCache asks etcd (only then a promise)
    if (this.storage.latestRv) return this.storage.latestRv(t.gr).then((rv) => this.ensureFresh(t, rv));
    return this.ensureFresh(t, this.storage.committedRv(t.gr));
  }

  /**
   * (A backend with latestRv only.) Waits until the cache holds every write committed
   * anywhere before the call: a write that did not find its object in the cache (or found
   * its name taken) looks again after it, as kube's GuaranteedUpdate reads etcd when its
   * cache has no object to start from. A timeout is not an error here: the write goes on
   * with what the cache has, and storage's precondition still decides.
   */
  private async syncLatest(gr: string): Promise<void> {
    const rv = await this.storage.latestRv!(gr);
    await this.storage.waitFresh(gr, rv, TOO_LARGE_RV_WAIT_MS);
  }

  /**
   * get without waiting, for the usual case where the cache is already fresh enough: the
   * entry (or a 404), or null when the caller must take the waiting path of get().
   */
  getNow(t: ResourceTarget, ns: string, name: string, rvParam: string): CacheEntry | null {
    const cache = this.cacheOf(t);
    if (!this.cacheServes(cache)) return null; // its cache is off: get() reads storage
    if (rvParam === '') {
      // a shared backend: "most recent" needs a question to storage (get() asks it)
      if (this.storage.latestRv || this.storage.freshRv(cache.gr) < this.storage.committedRv(cache.gr)) return null;
    } else if (rvParam !== '0' && this.storage.freshRv(cache.gr) < parseRv(rvParam)) return null;
    const e = cache.items.get(objectKey(ns, name));
    if (!e) this.missing(t, ns, name);
    // (a conversion webhook not called yet for this entry: get() waits for it)
    if (t.conv && !hasView(t.conv, e)) return null;
    return viewFor(t, e);
  }

  /** 404 for an object that is not there; 500 for one that is stored but cannot be decoded. */
  private missing(t: ResourceTarget, ns: string, name: string): never {
    throwIfCorrupt(this.cacher, t, ns, name);
    throw errors.notFound(t.groupResource, name);
  }

  /** get: unset = most recent, "0" = any, other = not older than. */
  async get(t: ResourceTarget, ns: string, name: string, rvParam: string): Promise<CacheEntry> {
    const cache = this.cacheOf(t);
    if (rvParam === '') await this.ensureLatest(t);
    else if (rvParam !== '0') await this.ensureFresh(t, parseRv(rvParam));
    const key = objectKey(ns, name);
    let e: CacheEntry | undefined;
    if (this.cacheServes(cache)) e = cache.items.get(key);
    else {
      const rv = this.storage.freshRv(cache.gr);
      const s = await this.storage.getAt(t.gr, key, rv);
      if (s) checkStoredBytes(t, key, s.rv, s.json);
      if (s) e = { key, ns, name, rv: s.rv, json: s.json };
    }
    if (!e) this.missing(t, ns, name);
    return viewAfterWebhook(t, e);
  }

  /**
   * list, by spec 4.6: the version to serve at is chosen first (null = the cache as it is
   * now), then the items come from the cache when it holds that version's state, from a
   * snapshot rebuilt from the cache's ring (gate ListFromCacheSnapshot), or from the shard's
   * revision history in one LMDB read transaction.
   */
  async list(t: ResourceTarget, ns: string, o: ListOptions): Promise<ListResult> {
    validateListOptions(o, false);
    const fields = convertFieldSelector(t.selectorGr ?? t.gr, o.fields);
    checkListable(this.cacher, t, ns);
    const cache = this.cacheOf(t);
    const hasSelector = o.labels !== null || fields !== null;
    let atRv: number | null = null;
    let start = '';
    let listStarted: number | undefined;
    if (o.continueToken) {
      const tok = decodeContinue(o.continueToken);
      if (o.resourceVersion !== '' && o.resourceVersion !== '0') throw errors.badRequest('specifying resource version is not allowed when using continue');
      start = tok.start;
      if (tok.rv < 0) {
        await this.ensureLatest(t);
      } else {
        if ((tok.t !== undefined && Date.now() - tok.t > CONTINUE_TTL_MS) || tok.rv < this.storage.compactedRv(cache.gr)) {
          throw errors.continueExpired(encodeContinue(-1, start));
        }
        atRv = tok.rv;
        listStarted = tok.t;
      }
    } else if (o.resourceVersion === '') {
      await this.ensureLatest(t);
    } else if (o.resourceVersion !== '0') {
      const rv = parseRv(o.resourceVersion);
      const exact = o.resourceVersionMatch === 'Exact' || (o.resourceVersionMatch === '' && o.limit > 0);
      if (exact) {
        if (rv < this.storage.compactedRv(cache.gr)) throw errors.expired('The resourceVersion for the provided list is too old.');
        await this.ensureFresh(t, rv);
        atRv = rv;
      } else {
        await this.ensureFresh(t, rv);
      }
    }

    // The items come from the cache (an array in key order), or else from the shard's
    // revision history (entries null), read lazily from the continue key on, so that a
    // chunk reads only the objects it returns, as etcd's limited range does.
    let entries: CacheEntry[] | null = null;
    let listRv: number;
    // Entries straight from the cache's current state come with their bytes pre-joined.
    let fromCache = false;
    if (atRv === null) {
      listRv = this.storage.freshRv(cache.gr);
      fromCache = this.cacheServes(cache);
      if (fromCache) entries = cache.list(ns);
    } else {
      listRv = atRv;
      if (this.cacheServes(cache)) {
        // The cache is the state at atRv when nothing of this type changed since then.
        if (cache.lastRvOfType() <= atRv) {
          entries = cache.list(ns);
          fromCache = true;
        } else if (listFromCacheSnapshot()) entries = cache.snapshotAt(atRv, ns, CACHE_SNAPSHOT_MS);
      }
    }
    const items: Buffer[] = [];
    const sources: Array<{ json: Buffer; obj?: any }> = [];
    let lastKey = '';
    // A CRD's conversion webhook converts the chunk's items in one call, once they are chosen.
    const webhook = t.conv?.webhook ? t.conv : undefined;
    const chosen: CacheEntry[] = [];
    // A field selector on such a resource reads the fields of the request's version (its
    // selectableFields may name fields the storage version spells otherwise): the objects are
    // converted first, as kube's cacher of that version holds them converted.
    const viewFields = webhook && fields && entries ? t.selectorGr! : undefined;
    if (viewFields) {
      const from = start ? firstKeyAtOrAfter(entries!, start) : 0;
      await readyViews(webhook!, entries!.slice(from).filter((e) => matchLabels(o.labels, selectable(e, t.gr).labels)), true);
    }
    const accept = (e: CacheEntry): void => {
      if (hasSelector) {
        const sel = selectable(e, t.gr);
        if (!matchLabels(o.labels, sel.labels)) return;
        if (!matchFieldMap(fields, viewFields ? selectableFields(viewFields, entryObject(viewFor(t, e))) : sel.fields)) return;
      }
      if (webhook) chosen.push(e);
      else {
        const v = viewFor(t, e);
        items.push(v.json);
        sources.push(v);
      }
      lastKey = e.key;
    };
    const res: ListResult = { rv: listRv, items, sources };
    // More may follow a full chunk (with selectors, the rest may all be filtered out: kube says so too).
    let more = false;
    let remaining = 0;
    if (entries) {
      const base = start ? firstKeyAtOrAfter(entries, start) : 0;
      let i = base;
      for (; i < entries.length; i++) {
        if (o.limit > 0 && items.length + chosen.length >= o.limit) break;
        accept(entries[i]);
      }
      if (fromCache && !hasSelector && !t.conv) res.joined = cache.joined(ns, base, i, itemPrefix(t));
      more = i < entries.length;
      remaining = entries.length - i;
      apiserverMetrics.cacheList(t.gr, i - base, items.length + chosen.length);
    } else {
      // One pass over the history read: the objects of the chunk are checked and taken, the
      // rest of the range only counted (etcd counts it from its keys alone).
      let stored: Iterator<StoredObject>;
      try {
        stored = (await this.storage.rangeAt(t.gr, listRv, ns, start))[Symbol.iterator]();
      } catch (e) {
        // compacted by someone else since compactedRv() was asked (another replica's
        // compactor on etcd): the same 410s as the check above
        if (!(e instanceof CompactedError)) throw e;
        if (o.continueToken) throw errors.continueExpired(encodeContinue(-1, start));
        throw errors.expired('The resourceVersion for the provided list is too old.');
      }
      let evaluated = 0;
      for (let r = stored.next(); !r.done; r = stored.next()) {
        if (o.limit > 0 && items.length + chosen.length >= o.limit) {
          more = true;
          if (!hasSelector) {
            remaining = 1;
            while (!stored.next().done) remaining++;
          }
          break;
        }
        evaluated++;
        accept(this.storedEntry(t, r.value));
      }
      apiserverMetrics.storageList(t.gr, evaluated, evaluated, items.length + chosen.length);
    }
    if (webhook && chosen.length) {
      await readyViews(webhook, chosen, true);
      for (const e of chosen) {
        const v = viewFor(t, e);
        items.push(v.json);
        sources.push(v);
      }
    }
    if (o.limit > 0 && more) {
      res.continueToken = encodeContinue(listRv, lastKey + '\u0000', listStarted);
      if (!hasSelector) res.remainingItemCount = remaining;
    }
    return res;
  }

  /**
   * The current objects of one namespace ("" = all), or the one named, as of the version
   * the cache has caught up to: from the cache, or from storage when its cache is off.
   */
  currentEntries(t: ResourceTarget, ns: string, name = ''): MaybePromise<CacheEntry[]> {
    const cache = this.cacheOf(t);
    if (this.cacheServes(cache)) {
      if (!name) return cache.list(ns);
      const e = cache.items.get(objectKey(ns, name));
      return e ? [e] : [];
    }
    const rv = this.storage.freshRv(cache.gr);
    if (!name) return this.storageList(t, ns, rv);
    const one = (s: StoredObject | undefined): CacheEntry[] => (s ? [{ key: s.key, ns, name, rv: s.rv, json: s.json }] : []);
    const s = this.storage.getAt(t.gr, objectKey(ns, name), rv);
    return s instanceof Promise ? s.then(one) : one(s);
  }

  /** Whether reads of this type come from its watch cache (--watch-cache, --watch-cache-sizes). */
  private cacheServes(cache: ResourceCache): boolean {
    return cache.capacity > 0;
  }

  /** The objects of one namespace ("" = all) at rv, from the shard's revision history. */
  private storageList(t: ResourceTarget, ns: string, rv: number): MaybePromise<CacheEntry[]> {
    const all = (stored: Iterable<StoredObject>): CacheEntry[] => {
      const out: CacheEntry[] = [];
      for (const s of stored) out.push(this.storedEntry(t, s));
      return out;
    };
    const stored = this.storage.rangeAt(t.gr, rv, ns, '');
    return stored instanceof Promise ? stored.then(all) : all(stored);
  }

  private storedEntry(t: ResourceTarget, s: { key: string; rv: number; json: Buffer }): CacheEntry {
    const [ens, name] = splitKey(s.key);
    checkStoredBytes(t, s.key, s.rv, s.json);
    return { key: s.key, ns: ens, name, rv: s.rv, json: s.json };
  }

  // ---------------------------------------------------------------- writes

  /**
   * An update or delete starts from the object as committed: a commit this thread has not
   * taken yet (another front thread's write, answered to its client already) is waited for,
   * as kube's updates read etcd. Nothing to wait for in the usual case (undefined: no promise).
   */
  private catchUp(cache: ResourceCache): Promise<boolean> | undefined {
    const committed = this.storage.committedRv(cache.gr);
    return this.storage.freshRv(cache.gr) < committed ? this.storage.waitFresh(cache.gr, committed, TOO_LARGE_RV_WAIT_MS) : undefined;
  }

  /**
   * A namespace missing from this thread's cache may be one another front thread has just
   * created (its client was answered once that thread's cache had it): before a create is
   * refused for it, the NamespaceLifecycle plugin has this cache catch up with everything
   * committed to the namespaces' shard, as kube's plugin looks a namespace up in storage
   * when its informer lacks it.
   */
  async namespaceLookup(): Promise<void> {
    const rv = this.storage.latestRv ? await this.storage.latestRv('namespaces') : this.storage.committedRv('namespaces');
    await this.storage.waitFresh('namespaces', rv, NAMESPACE_LOOKUP_MS);
  }

  private invalid(t: ResourceTarget, name: string, errs: FieldError[]): never {
    throw errors.invalid(t.info.kind, t.info.group, name, errs);
  }

  private validateCommon(t: ResourceTarget, obj: any, errs: FieldError[]): void {
    const m = obj.metadata;
    if (typeof m.generateName === 'string' && m.generateName) errs.push(...validateName(m.generateName, t.nameRule, 'metadata.generateName', true));
    if (m.name) errs.push(...validateName(m.name, t.nameRule));
    errs.push(...validateLabels(m.labels));
    errs.push(...validateAnnotations(m.annotations));
    errs.push(...validateFinalizers(m.finalizers));
  }

  /** Commits obj as a write of `type`, with the precondition `expect`. */
  private commit(t: ResourceTarget, type: EventType, ns: string, name: string, obj: any, expect: number): Promise<{ rv: number; json: Buffer }> {
    if (t.conv?.webhook) return this.commitThroughWebhook(t, t.conv, type, ns, name, obj, expect);
    const stored = t.conv ? t.conv.toStorage(obj) : obj;
    const written = this.storage.write({ type, gr: t.gr, key: objectKey(ns, name), expect, obj: stored }, stored);
    // The storage version's answer is the storage's own promise: no extra promise and turn.
    const conv = t.conv;
    return conv ? written.then(({ rv, json }) => ({ rv, json: convertedJson(conv, json) })) : written;
  }

  /** commit for a CRD with a conversion webhook: the object goes to the storage version, and its stored state comes back, through the webhook. */
  private async commitThroughWebhook(t: ResourceTarget, conv: Conversion, type: EventType, ns: string, name: string, obj: any, expect: number): Promise<{ rv: number; json: Buffer }> {
    const stored = await toStorageAsync(conv, obj);
    const { rv, json } = await this.storage.write({ type, gr: t.gr, key: objectKey(ns, name), expect, obj: stored }, stored);
    return { rv, json: await convertedJsonAsync(conv, json) };
  }

  /**
   * A server-side write of the stored object that skips the kind's update rules (kube's
   * subresources that write storage directly, e.g. pods/binding). `mutate` changes a copy
   * of the current object; it runs again on a lost race.
   */
  async storageUpdate(t: ResourceTarget, ns: string, name: string, dryRun: boolean, mutate: (obj: any) => void): Promise<WriteResult> {
    const key = objectKey(ns, name);
    for (let attempt = 0; ; attempt++) {
      let cur = t.conv?.webhook ? await viewAfterWebhook(t, this.cacheOf(t).items.get(key)) : viewFor(t, this.cacheOf(t).items.get(key));
      if (!cur && attempt === 0 && this.storage.latestRv) {
        await this.syncLatest(t.gr);
        cur = await viewAfterWebhook(t, this.cacheOf(t).items.get(key));
      }
      if (!cur) throw errors.notFound(t.groupResource, name);
      const obj = structuredClone(entryObject(cur));
      mutate(obj);
      delete obj.metadata.resourceVersion;
      if (dryRun) return { code: 200, json: this.renderDryRun(t, obj, cur.rv) };
      try {
        const r = await this.commit(t, 'MODIFIED', ns, name, obj, cur.rv);
        return { code: 200, json: r.json };
      } catch (e) {
        if (e instanceof WriteRejected && e.failure !== 'notfound' && attempt < this.maxConflictRetries) continue;
        if (e instanceof WriteRejected) throw e.failure === 'notfound' ? errors.notFound(t.groupResource, name) : errors.staleConflict(t.groupResource, name);
        throw e;
      }
    }
  }

  /**
   * The answer to a dry run. An update or delete answers with the version the object has
   * now (kube's dry-run storage never writes, so nothing moves it); a create has none yet.
   */
  private renderDryRun(t: ResourceTarget, obj: any, currentRv?: number): Buffer {
    // What a real write would answer: the object as it reads back from its storage version.
    // (kube's dry run stores nothing and converts nothing: a CRD's webhook is not called)
    if (t.conv && !t.conv.webhook) obj = t.conv.fromStorage(t.conv.toStorage(obj));
    if (currentRv !== undefined) obj = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(currentRv) } };
    return Buffer.from(JSON.stringify(orderedObject(obj)));
  }

  /**
   * `admission`: the request's admission callbacks (src/handlers/admission.ts); without them
   * a create the server makes itself is admitted as its loopback user.
   */
  async create(t: ResourceTarget, ns: string, obj: any, opts: { dryRun: boolean; warnings?: string[]; fields?: FieldsHook; rejectResourceVersion?: boolean; keepManagedFields?: boolean; admission?: AdmissionHooks; user?: UserInfo }): Promise<WriteResult> {
    const m = obj.metadata;
    const sentRv: unknown = m.resourceVersion;
    if (t.info.namespaced) {
      if (m.namespace && m.namespace !== ns) {
        throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      m.namespace = ns;
    } else {
      delete m.namespace;
    }
    if (!m.name && !m.generateName) this.invalid(t, '', [{ field: 'metadata.name', type: 'FieldValueRequired', detail: 'name or generateName is required' }]);
    delete m.uid;
    delete m.creationTimestamp;
    delete m.resourceVersion;
    delete m.deletionTimestamp;
    delete m.deletionGracePeriodSeconds;
    delete m.selfLink;
    if (t.strategy.tracksGeneration) m.generation = 1;
    else delete m.generation;
    const ctx = opts.user ? { ...this.ctxOf(t), user: opts.user } : this.ctxOf(t);
    t.strategy.prepareForCreate(obj, ctx);
    // Ownership of what the request set and its defaults; not of what admission and the
    // kind's preparation add next (kube's create handler order).
    opts.fields?.(null, obj);
    // Mutating admission (NamespaceLifecycle first: a missing or terminating namespace is
    // refused there), then the kind's own preparation (kube's order: admission before
    // BeforeCreate), the kind's validation, and validating admission.
    const admission = opts.admission ?? this.ownCreateAdmission(t, ns, opts.dryRun, opts.warnings);
    if (admission) {
      const pending = admission.admit(obj, null);
      if (pending) await pending;
    }
    // kube's BeforeCreate, after mutating admission: a mutating webhook sees a generateName
    // create with no name yet, and no uid or creation time
    let nameGenerated = false;
    if (!m.name) {
      if (m.generateName) {
        m.name = generateName(m.generateName);
        nameGenerated = true;
      } else this.invalid(t, '', [{ field: 'metadata.name', type: 'FieldValueRequired', detail: 'name or generateName is required' }]);
    }
    m.uid = randomUUID();
    m.creationTimestamp = nowTimestamp();
    t.strategy.admitCreate(obj, ctx);
    const errs: FieldError[] = [];
    this.validateCommon(t, obj, errs);
    errs.push(...t.strategy.validate(obj, ctx));
    if (errs.length) this.invalid(t, m.name, errs);
    if (admission) {
      const pending = admission.validate(obj, null);
      if (pending) await pending;
    }
    t.strategy.canonicalize(obj);
    if (opts.rejectResourceVersion && !opts.dryRun) checkNoResourceVersionOnCreate(sentRv);
    opts.warnings?.push(...t.strategy.warningsOnCreate(obj));
    // A generated name that happens to be taken is generated again, as kube-apiserver retries
    // it (a name the client gave is not, even with a generateName beside it; nor one that
    // admission replaced).
    const generated = nameGenerated && !!m.generateName && obj.metadata.name.startsWith(m.generateName);
    // (a literal, not { ...ctx, dryRun }: V8 clones a spread that adds a property slowly, ~0.7 µs)
    const finish = t.strategy.beginCreate(obj, { info: ctx.info, hasStatus: ctx.hasStatus, dryRun: opts.dryRun });
    let committed = false;
    try {
      // (shared storage: what the hook reserved is claimed in storage before the commit, allocators/service-allocator.ts)
      const claim = finish && (finish as { claim?: () => Promise<void> }).claim;
      if (claim) await claim();
      for (let attempt = 0; ; attempt++) {
        // A name generated just now is as good as free: the shard's check that the key is
        // absent decides, and a taken one comes back as 'exists' (one lookup in the map of
        // every object of the type saved per create). A given name, or a dry run, is looked up.
        let taken = (opts.dryRun || !generated || attempt > 0) && this.cacheOf(t).items.has(objectKey(ns, m.name));
        // a shared backend: the object in the cache may have been deleted elsewhere since
        if (taken && this.storage.latestRv && attempt === 0) {
          await this.syncLatest(t.gr);
          taken = this.cacheOf(t).items.has(objectKey(ns, m.name));
        }
        if (!taken) {
          if (opts.dryRun) return { code: 201, json: this.renderDryRun(t, obj) };
          try {
            const r = await this.commit(t, 'ADDED', ns, m.name, obj, Expect.Absent);
            committed = true;
            return { code: 201, json: r.json };
          } catch (e) {
            if (isObjectTooLarge(e) && !opts.keepManagedFields && shedManagedFields(obj)) continue;
            if (!(e instanceof WriteRejected && e.failure === 'exists')) throw e;
          }
        }
        if (!generated || attempt >= 7) throw errors.alreadyExists(t.groupResource, m.name);
        m.name = generateName(m.generateName);
      }
    } finally {
      // (no await at all without a hook: even `await undefined` costs a turn of the microtask queue)
      if (finish) {
        const done = finish(committed);
        if (done) await done;
      }
    }
  }

  /**
   * The update path shared by PUT and PATCH. `build` makes the new object from a private
   * copy of the current one; it runs again with the fresh object when a race is lost.
   * `clientRv` is the version the client pinned (a 409 if stale), or '' for none.
   */
  async guaranteedUpdate(
    t: ResourceTarget,
    ns: string,
    name: string,
    opts: {
      dryRun: boolean;
      subresource: string;
      /** the object to create when none exists (PUT where the kind allows it; apply always) */
      /** the object to create when none is stored (a promise when it must wait, e.g. for an authorizer) */
      createIfMissing?: () => any;
      alwaysCreate?: boolean;
      /** the create refuses a resourceVersion (apply's; a PUT's create ignores it) */
      rejectResourceVersion?: boolean;
      fields?: FieldsHook;
      /** a uid the client pinned (PUT with metadata.uid): 409 when it is not the object's */
      uid?: string;
      /** storage's refusal of an object too large is final (apply's): not retried without managedFields */
      keepManagedFields?: boolean;
      /**
       * Runs where the write would go to storage (after validation and admission, never on a
       * dry run): a patch weighs its result there, in kube's order of refusals.
       */
      beforeCommit?: (obj: any) => void;
      /** the request's admission (client writes; src/handlers/admission.ts) */
      admission?: AdmissionHooks;
    },
    /** currentBytes: the size of the current object's stored JSON */
    build: (current: any, currentBytes: number) => any,
  ): Promise<WriteResult> {
    const cache = this.cacheOf(t);
    const key = objectKey(ns, name);
    const behind = this.catchUp(cache);
    if (behind) await behind;
    // a shared backend (latestRv): the cache may lag another replica's writes; where the
    // cached object decides against the write (missing, another uid or version), the cache
    // catches up with storage once and the write looks again, as kube's GuaranteedUpdate
    // re-reads etcd when its cached object turns out stale
    let synced = !this.storage.latestRv;
    for (let attempt = 0; ; attempt++) {
      let cur = t.conv?.webhook ? await viewAfterWebhook(t, cache.items.get(key)) : viewFor(t, cache.items.get(key));
      if (!cur && !synced) {
        synced = true;
        await this.syncLatest(t.gr);
        cur = await viewAfterWebhook(t, cache.items.get(key));
      }
      if (!cur) {
        if (opts.createIfMissing && (t.strategy.allowCreateOnUpdate || opts.alwaysCreate) && !opts.subresource) {
          throwIfCorrupt(this.cacher, t, ns, name);
          const made = opts.createIfMissing();
          return this.create(t, ns, made instanceof Promise ? await made : made, { dryRun: opts.dryRun, fields: opts.fields, rejectResourceVersion: opts.rejectResourceVersion, keepManagedFields: opts.keepManagedFields, admission: opts.admission?.asCreate?.() });
        }
        this.missing(t, ns, name);
      }
      const old = entryObject(cur);
      if (opts.uid && opts.uid !== old.metadata.uid) {
        if (!synced) {
          synced = true;
          await this.syncLatest(t.gr);
          continue;
        }
        throw errors.conflict(t.groupResource, name, `Precondition failed: UID in precondition: ${opts.uid}, UID in object meta: ${old.metadata.uid}`);
      }
      const obj = build(structuredClone(old), cur.json.length);
      const clientRv: string = obj?.metadata?.resourceVersion ?? '';
      if (clientRv !== '' && clientRv !== String(cur.rv)) {
        if (!synced) {
          synced = true;
          await this.syncLatest(t.gr);
          continue;
        }
        throw errors.staleConflict(t.groupResource, name);
      }
      if (obj.metadata.name !== undefined && obj.metadata.name !== name) {
        throw errors.badRequest(`the name of the object (${obj.metadata.name}) does not match the name on the URL (${name})`);
      }
      if (clientRv === '' && !t.strategy.allowUnconditionalUpdate) {
        this.invalid(t, name, [{ field: 'metadata.resourceVersion', type: 'FieldValueInvalid', value: 0, detail: 'must be specified for an update' }]);
      }
      // Client writes come with a field-ownership hook; the server's own (deletion, namespace
      // lifecycle) do not, and may set what a client may not.
      // kube's order: what the client may not change is carried over, field management,
      // mutating admission, the kind's validation, validating admission.
      this.prepareUpdate(t, obj, old, opts.subresource, opts.fields !== undefined);
      opts.fields?.(old, obj);
      const admission = opts.admission;
      if (admission) {
        const admitted = admission.admit(obj, old);
        if (admitted) await admitted;
      }
      this.validateUpdate(t, obj, old, opts.subresource);
      if (admission) {
        const validated = admission.validate(obj, old);
        if (validated) await validated;
      }
      // A write that changes nothing is not written; the client gets the current object.
      // Compared as values: the key order a client sends is not a change.
      // (unless the stored value is stale under the encryption configuration: kube writes it
      // then, so that a rewrite re-encrypts it with the current key)
      if (deepEqual({ ...old, metadata: { ...old.metadata, resourceVersion: undefined } }, obj)) {
        const stale = this.storage.storedStale?.(t.gr, key, cur.rv) ?? false;
        if (!(stale instanceof Promise ? await stale : stale)) return { code: 200, json: cur.json };
      }
      // The last finalizer gone from an object marked for deletion (and not still in a grace period) deletes it.
      const finalizing = obj.metadata.deletionTimestamp && (!obj.metadata.finalizers || obj.metadata.finalizers.length === 0) && !(obj.metadata.deletionGracePeriodSeconds > 0);
      const finish = t.strategy.beginUpdate(obj, old, { info: t.info, hasStatus: t.hasStatus, dryRun: opts.dryRun });
      let committed = false;
      try {
        if (opts.dryRun) return { code: 200, json: this.renderDryRun(t, obj, cur.rv) };
        opts.beforeCommit?.(obj);
        const claim = finish && (finish as { claim?: () => Promise<void> }).claim;
        if (claim) await claim();
        const type = finalizing ? 'DELETED' : 'MODIFIED';
        let r: { rv: number; json: Buffer };
        try {
          r = await this.commit(t, type, ns, name, obj, cur.rv);
        } catch (e) {
          if (!(isObjectTooLarge(e) && !opts.keepManagedFields && shedManagedFields(obj))) throw e;
          r = await this.commit(t, type, ns, name, obj, cur.rv);
        }
        committed = true;
        if (finalizing) await t.strategy.afterDelete(obj);
        return { code: 200, json: r.json };
      } catch (e) {
        if (e instanceof WriteRejected) {
          if (e.failure === 'notfound') throw errors.notFound(t.groupResource, name);
          if (clientRv !== '' || attempt >= this.maxConflictRetries) throw errors.staleConflict(t.groupResource, name);
          continue; // lost a race: rebuild from the fresh object
        }
        throw e;
      } finally {
        if (finish) {
          const done = finish(committed);
          if (done) await done;
        }
      }
    }
  }

  /** Carries over what a client may not change and applies the kind's preparation. Mutates obj. */
  private prepareUpdate(t: ResourceTarget, obj: any, old: any, subresource: string, client: boolean): void {
    const m = obj.metadata;
    const om = old.metadata;
    m.name = om.name;
    if (t.info.namespaced) {
      if (m.namespace !== undefined && m.namespace !== om.namespace) {
        throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      m.namespace = om.namespace;
    }
    // Generated fields cannot be forged (kube-apiserver's ValidateObjectMetaUpdate): a
    // different uid or a new deletionTimestamp is refused; the rest is carried over.
    const forged: FieldError[] = [];
    if (m.uid !== undefined && m.uid !== '' && m.uid !== om.uid) {
      forged.push({ field: 'metadata.uid', type: 'FieldValueInvalid', value: m.uid, detail: 'field is immutable' });
    }
    if (!om.deletionTimestamp && m.deletionTimestamp) {
      forged.push({ field: 'metadata.deletionTimestamp', type: 'FieldValueInvalid', value: m.deletionTimestamp, detail: 'field is immutable' });
    }
    if (om.deletionTimestamp && Array.isArray(m.finalizers)) {
      const had = new Set<string>(om.finalizers ?? []);
      const added = m.finalizers.filter((f: string) => !had.has(f));
      if (added.length > 0) {
        forged.push({
          field: 'metadata.finalizers',
          type: 'FieldValueForbidden',
          detail: `no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f: string) => JSON.stringify(f)).join(', ')}}`,
        });
      }
    }
    if (client && forged.length) this.invalid(t, om.name, forged);
    m.uid = om.uid;
    m.creationTimestamp = om.creationTimestamp;
    if (om.deletionTimestamp) {
      m.deletionTimestamp = om.deletionTimestamp;
      if (om.deletionGracePeriodSeconds !== undefined) m.deletionGracePeriodSeconds = om.deletionGracePeriodSeconds;
    } else {
      delete m.deletionTimestamp;
      delete m.deletionGracePeriodSeconds;
    }
    delete m.resourceVersion;
    delete m.selfLink;
    if (subresource === 'status') {
      // A status write changes status and what the kind's status strategy lets through of
      // the metadata (labels and annotations, for most kinds).
      t.strategy.prepareForStatusUpdate(obj, old);
    } else if (subresource === 'ephemeralcontainers' || subresource === 'resize') {
      // pods/ephemeralcontainers and pods/resize change their part of the spec only (kube's
      // podEphemeralContainersStrategy and podResizeStrategy); everything else stays as stored.
      const next = podSubresourceView(subresource, obj, old);
      for (const k of Object.keys(obj)) delete obj[k];
      Object.assign(obj, next);
    } else if (subresource === 'approval') {
      t.strategy.prepareForSubresourceUpdate(subresource, obj, old);
    } else if (t.hasStatus) {
      // The main resource ignores status changes.
      if (old.status === undefined) delete obj.status;
      else obj.status = structuredClone(old.status);
    }
    const ctx = { ...this.ctxOf(t), subresource };
    t.strategy.prepareForUpdate(obj, old, ctx);
  }

  /** The kind's validation of an update (after mutating admission), then its canonical form. */
  private validateUpdate(t: ResourceTarget, obj: any, old: any, subresource: string): void {
    const ctx = { ...this.ctxOf(t), subresource };
    // After the kind's defaults (kube defaults on decode) and mutating admission (kube's
    // PrepareForUpdate runs after it): a sparse body that defaults to the stored spec is no
    // spec change; an admission step's change to the spec is one.
    if (t.strategy.tracksGeneration) {
      obj.metadata.generation = old.metadata.generation ?? 1;
      if (!deepEqual(obj.spec, old.spec)) obj.metadata.generation++;
    } else {
      delete obj.metadata.generation;
    }
    const errs: FieldError[] = [];
    this.validateCommon(t, obj, errs);
    if (subresource === 'ephemeralcontainers' || subresource === 'resize') errs.push(...t.strategy.validate(obj, ctx), ...validatePodSubresourceUpdate(subresource, obj, old));
    else errs.push(...t.strategy.validate(obj, ctx), ...t.strategy.validateUpdate(obj, old, ctx));
    if (subresource === 'status') errs.push(...t.strategy.validateStatusUpdate(obj, old, ctx));
    if (errs.length) this.invalid(t, obj.metadata.name, errs);
    t.strategy.canonicalize(obj);
  }

  update(t: ResourceTarget, ns: string, name: string, obj: any, opts: { dryRun: boolean; subresource: string; fields?: FieldsHook; admission?: AdmissionHooks }): Promise<WriteResult> {
    // A uid in the body is a precondition (kube-apiserver's defaultUpdatedObjectInfo).
    const uid = typeof obj?.metadata?.uid === 'string' && obj.metadata.uid !== '' ? obj.metadata.uid : undefined;
    return this.guaranteedUpdate(
      t,
      ns,
      name,
      { ...opts, uid, createIfMissing: () => structuredClone(obj) },
      () => structuredClone(obj),
    );
  }

  /** `check` sees the patched object before anything else (field validation; may drop fields or throw). */
  /** `patchBytes`: the size of the patch body (what the patch can add to the object, copies aside). */
  patch(t: ResourceTarget, ns: string, name: string, patchType: string, patch: unknown, opts: { dryRun: boolean; subresource: string; check?: (obj: any) => void; fields?: FieldsHook; patchBytes?: number; admission?: AdmissionHooks }): Promise<WriteResult> {
    // The patch sees the current resourceVersion (a JSON patch may `test` it); it pins the
    // version only when it names it, and then a stale one is a 409.
    const pinned = patchPinsVersion(patchType, patch);
    // The result grew by at most the patch's body and its copies: it is weighed (before it is
    // copied to a shard and encoded there) only when that bound passes the storage limit.
    let bound = 0;
    const beforeCommit = (obj: any) => refuseOversized(obj, bound);
    return this.guaranteedUpdate(t, ns, name, { ...opts, beforeCommit }, (current, currentBytes) => {
      const rv = current.metadata.resourceVersion;
      const stats: JsonPatchStats = { copied: 0 };
      let out: any;
      try {
        if (patchType === 'merge') out = mergePatch(current, patch);
        else if (patchType === 'strategic') out = strategicMergePatch(current, patch as any, rootNode(t.info.group, t.info.version, t.info.kind) ?? ANY, new PatchClock());
        else out = jsonPatch(current, patch, stats, new PatchClock());
      } catch (e) {
        // Nesting past what the engines recurse through cannot be applied (the engines
        // refuse deep patches; a JSON patch can still build a deeper result: this is the
        // net under both, a 422 and never a 500).
        if (e instanceof RangeError) throw errors.patchNotApplicable();
        throw e;
      }
      if (out === null || typeof out !== 'object' || Array.isArray(out)) throw errors.badRequest('the patch produced an object that is not a JSON object');
      bound = currentBytes + (opts.patchBytes ?? 0) + stats.copied;
      if (!out.metadata || typeof out.metadata !== 'object') out.metadata = {};
      out.apiVersion = current.apiVersion;
      out.kind = current.kind;
      if (!pinned && out.metadata.resourceVersion === rv) delete out.metadata.resourceVersion;
      opts.check?.(out);
      return out;
    });
  }

  /** DELETE of one object; what it does is decided by planDelete (src/registry/deletion.ts). */
  /**
   * `admission`: the request's DELETE admission (obj null, old the stored object), run as
   * kube's deleteValidation: after the preconditions, unless a deletion is already pending.
   */
  async delete(t: ResourceTarget, ns: string, name: string, o: DeleteOptions, admission?: AdmissionHooks): Promise<{ deleted: boolean; json: Buffer; obj: any }> {
    const cache = this.cacheOf(t);
    const key = objectKey(ns, name);
    const behind = this.catchUp(cache);
    if (behind) await behind;
    // a shared backend: as guaranteedUpdate, a stale cached object that decides against
    // the delete is looked at again once the cache has caught up with storage
    let synced = !this.storage.latestRv;
    for (let attempt = 0; ; attempt++) {
      let cur = t.conv?.webhook ? await viewAfterWebhook(t, cache.items.get(key)) : viewFor(t, cache.items.get(key));
      if (!cur && !synced) {
        synced = true;
        await this.syncLatest(t.gr);
        cur = await viewAfterWebhook(t, cache.items.get(key));
      }
      if (!cur) this.missing(t, ns, name);
      const old = entryObject(cur);
      if (!synced && o.preconditions && (o.preconditions.uid || o.preconditions.resourceVersion)) {
        try {
          checkPreconditions(t, name, old, cur.rv, o.preconditions);
        } catch {
          synced = true;
          await this.syncLatest(t.gr);
          continue;
        }
      }
      checkPreconditions(t, name, old, cur.rv, o.preconditions);
      const plan = planDelete(t, old, o);
      if (plan.kind === 'pending') return { deleted: false, json: cur.json, obj: old };
      if (admission) {
        const admitted = admission.admit(null, old);
        if (admitted) await admitted;
        const validated = admission.validate(null, old);
        if (validated) await validated;
      }
      const type: EventType = plan.kind === 'now' ? 'DELETED' : 'MODIFIED';
      const obj = plan.obj;
      if (o.dryRun) return { deleted: type === 'DELETED', json: this.renderDryRun(t, obj, cur.rv), obj };
      try {
        const r = await this.commit(t, type, ns, name, obj, cur.rv);
        if (type === 'DELETED') await t.strategy.afterDelete(obj);
        return { deleted: type === 'DELETED', json: r.json, obj };
      } catch (e) {
        if (e instanceof WriteRejected) {
          if (e.failure === 'notfound') throw errors.notFound(t.groupResource, name);
          if (attempt < this.maxConflictRetries) continue;
          throw errors.staleConflict(t.groupResource, name);
        }
        throw e;
      }
    }
  }

  /**
   * `admissionFor`: each item's DELETE admission (kube admits every item of a collection delete).
   * `over`: true once the request has been answered without this (its deadline's 504, or the
   * client gone): the workers then take no further item, as kube's stop when their request's
   * context is done (each item's Delete fails on it). Without it, a collection delete of many
   * objects outlived its 504 and went on deleting, and a client that issued it again while
   * objects were left (kubectl, the nodes bench) ran one more pass beside it each time: 150,000
   * pods took passes that piled up to 9 GB of RSS before they finished.
   */
  async deleteCollection(t: ResourceTarget, ns: string, o: ListOptions, d: DeleteOptions, admissionFor?: (ns: string, name: string) => AdmissionHooks | undefined, over?: () => boolean): Promise<Buffer[]> {
    const listed = await this.list(t, ns, { ...o, limit: 0, continueToken: '' });
    const out: Buffer[] = [];
    const names = listed.items.map((b) => JSON.parse(b.toString('utf8')).metadata as { name: string; namespace?: string });
    // kube's Store.DeleteCollection: --delete-collection-workers deletes at a time, each
    // worker taking the next item; the first failure (other than one already gone) ends it.
    let next = 0;
    let failed: unknown = null;
    const worker = async (): Promise<void> => {
      while (failed === null && next < names.length) {
        if (over?.()) {
          failed = errors.patchTimeout();
          break;
        }
        const m = names[next++];
        try {
          const r = await this.delete(t, m.namespace ?? '', m.name, d, admissionFor?.(m.namespace ?? '', m.name));
          out.push(r.json);
        } catch (e) {
          if (!(e instanceof StatusError && e.code === 404)) failed ??= e;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(this.deleteCollectionWorkers, names.length)) }, worker));
    if (failed !== null) throw failed;
    return out;
  }

  /** The state of one object at an older version, from the revision history. */
  async getAtVersion(t: ResourceTarget, ns: string, name: string, rv: number): Promise<Buffer | undefined> {
    const json = (await this.storage.getAt(t.gr, objectKey(ns, name), rv))?.json;
    if (json && t.conv?.webhook) return convertedJsonAsync(t.conv, json);
    return json && t.conv ? convertedJson(t.conv, json) : json;
  }
}

/**
 * Drops managedFields from an object storage refused as too large, for one more try;
 * false when it has none. kube's create, update and (non-apply) patch handlers do the
 * same: managedFields can be large, and an object is still whole without them.
 */
function shedManagedFields(obj: any): boolean {
  if (obj?.metadata?.managedFields === undefined) return false;
  delete obj.metadata.managedFields;
  return true;
}
