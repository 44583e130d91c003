// Objects whose stored bytes cannot be decoded (KEP-3926, spec 3.1), as kube-apiserver 1.33
// reports and removes them.
//
// The cache layer keeps such objects out of the caches at start-up (Cacher.corruptOf),
// so that the server starts and every other object is served. Here:
//   - a get (and an update, patch or normal delete, which read the object first) fails with
//     500 InternalError naming the object's storage key;
//   - a list that would include one fails: with the gate AllowUnsafeMalformedObjectDeletion,
//     500 StorageReadError with a cause per corrupt key; without it, the first decode error;
//   - a DELETE with ignoreStoreReadErrorWithClusterBreakingPotential (gate on) removes it from
//     storage without reading it: no finalizers, no preconditions, no admission. On an object
//     that is readable (or absent) the option is refused with 422.
//
// Thread ownership: everything here runs on the front thread; the corrupt set belongs to the
// cache layer (src/storage/cacher.ts), which also lives there.
import { errors, StatusError, StatusReason, qualifiedResource } from '../errors.js';
import { features } from '../features.js';
import { looksLikeObject, type Cacher } from '../storage/cacher.js';
import { WriteRejected, type CorruptObject } from '../storage/interface.js';
import type { ResourceTarget } from './store.js';

const GATE = 'AllowUnsafeMalformedObjectDeletion';
/** kube's storage error code for a corrupt object (k8s.io/apiserver/pkg/storage ErrCodeCorruptObj) */
const ERR_CODE_CORRUPT = 7;
/** at most this many corrupt keys are named in one list error; kube's aggregator stops there too */
const MAX_LIST_CAUSES = 100;

function objectKeyOf(ns: string, name: string): string {
  return `${ns}/${name}`;
}

/** The key kube-apiserver would store the object at, as its errors name it: /registry/<resource>/[<ns>/]<name>. */
export function storageKey(t: ResourceTarget, key: string): string {
  const i = key.indexOf('/');
  const ns = key.slice(0, i);
  const name = key.slice(i + 1);
  return `/registry/${t.info.resource}/${ns ? ns + '/' : ''}${name}`;
}

/** Why the bytes do not decode, worded like Go's JSON decoder behind kube's storage codec. */
export function decodeProblem(bytes: Buffer): string {
  const text = bytes.toString('utf8');
  let i = 0;
  while (i < text.length && ' \t\r\n'.includes(text[i])) i++;
  if (i >= text.length) return "couldn't get version/kind; json parse error: unexpected end of JSON input";
  const c = text[i];
  if (!'{["-0123456789tfn'.includes(c)) {
    const shown = c === "'" ? "\\'" : c.charCodeAt(0) < 0x20 || c === '\ufffd' ? `\\x${bytes[i].toString(16).padStart(2, '0')}` : c;
    return `couldn't get version/kind; json parse error: invalid character '${shown}' looking for beginning of value`;
  }
  try {
    const v = JSON.parse(text);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return "couldn't get version/kind; json parse error: json: cannot unmarshal into Go value of type struct";
    return 'Object kind or apiVersion is missing';
  } catch (e) {
    const m = (e as Error).message;
    if (/end of JSON input|Unterminated|Expected/.test(m) && !looksLikeObject(bytes)) return "couldn't get version/kind; json parse error: unexpected end of JSON input";
    return `couldn't get version/kind; json parse error: ${m}`;
  }
}

function storageErrorText(t: ResourceTarget, key: string, c: CorruptObject): string {
  return `StorageError: corrupt object, Code: ${ERR_CODE_CORRUPT}, Key: ${storageKey(t, key)}, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=${c.rv}: ${decodeProblem(c.bytes)}`;
}

function corruptOne(cacher: Cacher, t: ResourceTarget, key: string): CorruptObject | undefined {
  return cacher.corruptOf(t.gr)?.get(key);
}

/** The error for reading one corrupt object, as kube words it with the gate on and off. */
function readError(t: ResourceTarget, key: string, c: CorruptObject): StatusError {
  if (features.enabled(GATE)) return errors.internal(storageErrorText(t, key, c));
  return errors.internal(decodeProblem(c.bytes));
}

/** Throws when the object ns/name is stored but cannot be decoded. For the "not in the cache" paths. */
export function throwIfCorrupt(cacher: Cacher, t: ResourceTarget, ns: string, name: string): void {
  const m = cacher.corruptOf(t.gr);
  if (!m) return;
  const key = objectKeyOf(ns, name);
  const c = m.get(key);
  if (c) throw readError(t, key, c);
}

/** Throws when a list of namespace ns ("" = all) would include a corrupt object. */
export function checkListable(cacher: Cacher, t: ResourceTarget, ns: string): void {
  const m = cacher.corruptOf(t.gr);
  if (!m) return;
  const prefix = ns === '' ? '' : ns + '/';
  const keys = [...m.keys()].filter((k) => k.startsWith(prefix)).sort();
  if (keys.length === 0) return;
  if (!features.enabled(GATE)) throw readError(t, keys[0], m.get(keys[0])!);
  const causes: Array<{ reason: string; message: string; field?: string }> = keys.slice(0, MAX_LIST_CAUSES).map((k) => ({
    reason: 'UnexpectedServerResponse',
    message: storageErrorText(t, k, m.get(k)!),
    field: storageKey(t, k),
  }));
  if (keys.length > MAX_LIST_CAUSES) causes.push({ reason: 'TooMany', message: 'too many errors, the list is truncated' });
  throw new StatusError(500, StatusReason.StoreReadError, `failed to read one or more ${qualifiedResource(t.groupResource)} from the storage`, {
    name: 'list',
    ...(t.groupResource.group ? { group: t.groupResource.group } : {}),
    kind: t.groupResource.resource,
    causes,
  });
}

/** Bytes read straight from storage (watch cache off, or history): refused when they cannot be an object. */
export function checkStoredBytes(t: ResourceTarget, key: string, rv: number, bytes: Buffer): void {
  if (!looksLikeObject(bytes)) throw readError(t, key, { rv, bytes });
}

/**
 * DELETE with ignoreStoreReadErrorWithClusterBreakingPotential: removes a corrupt object from
 * storage without reading it. What is written as its last state (the tombstone watchers and
 * history see) is a stub that names it; the undecodable bytes never reach a client.
 */
export async function unsafeDelete(cacher: Cacher, t: ResourceTarget, ns: string, name: string): Promise<void> {
  const key = objectKeyOf(ns, name);
  const c = corruptOne(cacher, t, key);
  if (!c) {
    // kube-apiserver reads the object first: readable or absent, the option is refused.
    throw errors.invalid(t.groupResource.resource, t.groupResource.group, name, [
      { field: 'ignoreStoreReadErrorWithClusterBreakingPotential', type: 'FieldValueInvalid', value: true, detail: 'is exclusively used to delete corrupt object(s), try again by removing this option' },
    ]);
  }
  const apiVersion = t.info.group ? `${t.info.group}/${t.info.version}` : t.info.version;
  const meta = t.info.namespaced ? `{"name":${JSON.stringify(name)},"namespace":${JSON.stringify(ns)},"resourceVersion":"` : `{"name":${JSON.stringify(name)},"resourceVersion":"`;
  const head = `{"kind":${JSON.stringify(t.info.kind)},"apiVersion":${JSON.stringify(apiVersion)},"metadata":${meta}`;
  const stub = { kind: t.info.kind, apiVersion, metadata: t.info.namespaced ? { name, namespace: ns } : { name } };
  try {
    await cacher.storage.write({ type: 'DELETED', gr: t.gr, key, expect: c.rv, head, tail: '"}}' }, stub);
  } catch (e) {
    // Gone already (another unsafe delete won the race): the object is removed all the same.
    if (!(e instanceof WriteRejected && e.failure === 'notfound')) throw e;
  }
  cacher.corruptOf(t.gr)?.delete(key);
}
