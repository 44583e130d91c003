// Strategic merge patch (application/strategic-merge-patch+json), the patch kubectl's
// client-side apply, edit and patch send for built-in kinds. A JSON merge patch, except
// where the schema says otherwise: lists whose field carries patchStrategy "merge" are
// merged item by item on patchMergeKey (or as sets of scalars), and the patch may carry
// directives:
//   $patch: replace | delete | merge      (in a map, or as a list item)
//   $retainKeys: [keys]                    (drop the other keys of the original map)
//   $deleteFromPrimitiveList/<field>: [..] (remove scalars from a merged list)
//   $setElementOrder/<field>: [..]         (the order of a merged list after the patch)
// Null deletes a field. The result order of merged lists follows k8s.io/apimachinery's
// strategicpatch: patch items in patch (or $setElementOrder) order, server-only items
// kept where they were relative to them.
//
// Custom resources have no patch markers and are refused by the handler (415).
import { StatusError, StatusReason, errors } from '../errors.js';
import { ANY, childNode, isMergeList, itemNode, type TypeNode } from './schema-walk.js';
import { PatchClock, refuseDeepPatch } from './patch-limits.js';
import { ownValue, setOwn } from './own-keys.js';

const DIRECTIVE = '$patch';
const RETAIN_KEYS = '$retainKeys';
const DELETE_PRIMITIVE = '$deleteFromPrimitiveList/';
const SET_ORDER = '$setElementOrder/';

type Obj = Record<string, any>;

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function badPatch(message: string): StatusError {
  return errors.badRequest(message);
}

function unprocessable(message: string): StatusError {
  return new StatusError(422, StatusReason.Invalid, message, { causes: [{ reason: 'FieldValueInvalid', message }] });
}

/**
 * kube maps ErrNoListOfLists and ErrPatchContentNotMatchRetainKeys to
 * NewGenericServerResponse(422): the error's own text is dropped.
 */
function genericUnprocessable(): StatusError {
  return new StatusError(422, StatusReason.Invalid, 'the server rejected our request due to an error in our request', {});
}

/** mergepatch.ErrBadPatchFormatForRetainKeys: a 400 (as are the other ErrBadPatchFormat errors). */
const badRetainKeys = () => badPatch('invalid patch format of retainKeys');

/** Go's %v of a decoded JSON value: map[k:v ...] with sorted keys, [a b], <nil>. */
function goFormat(v: unknown): string {
  if (v === null || v === undefined) return '<nil>';
  if (Array.isArray(v)) return `[${v.map(goFormat).join(' ')}]`;
  if (isObj(v)) return `map[${Object.keys(v).sort().map((k) => `${k}:${goFormat(v[k])}`).join(' ')}]`;
  return String(v);
}

/**
 * mergepatch.ErrNoMergeKey is a plain error, not a Status: kube answers it as an unknown
 * error, a 500 without a reason carrying the error's text.
 */
function noMergeKey(item: Obj, mergeKey: string): StatusError {
  return new StatusError(500, '', `map: ${goFormat(item)} does not contain declared merge key: ${mergeKey}`);
}

/** The clock of the patch being applied (patch-limits.ts), ticked per map key and list item. */
let clock: PatchClock | undefined;
const tick = () => clock?.tick();

/** Applies a strategic merge patch to original (not modified) and returns the result. */
export function strategicMergePatch(original: Obj, patch: Obj, schema: TypeNode, patchClock = new PatchClock()): Obj {
  if (!isObj(patch)) throw badPatch('strategic merge patch must be a JSON object');
  refuseDeepPatch(patch);
  clock = patchClock;
  try {
    return mergeMap(structuredClone(original), structuredClone(patch), schema);
  } finally {
    clock = undefined;
  }
}

function directiveOf(m: Obj): string | undefined {
  const d = ownValue(m, DIRECTIVE);
  if (d === undefined) return undefined;
  // (any JSON value may sit here: it is named as Go's %v names it, never String()ed)
  if (d !== 'replace' && d !== 'delete' && d !== 'merge') throw badPatch(`Unknown patch type: ${goFormat(d)}`);
  return d;
}

/** A map's $patch, unvalidated (list items and cleaned values are checked where merged). */
const directiveIn = (x: unknown): unknown => (isObj(x) ? ownValue(x, DIRECTIVE) : undefined);

/** Removes directives and nulls from a value that lands where the original had nothing. */
function clean(v: any, n: TypeNode): any {
  if (Array.isArray(v)) {
    const item = itemNode(n);
    const out: any[] = [];
    for (const x of v) {
      const d = directiveIn(x);
      if (d === 'delete') continue;
      if (d === 'replace') continue;
      out.push(clean(x, item));
    }
    return out;
  }
  if (isObj(v)) {
    if (directiveIn(v) === 'delete') return {};
    return mergeMap({}, v, n);
  }
  return v;
}

function mergeMap(original: Obj, patch: Obj, n: TypeNode): Obj {
  const d = directiveOf(patch);
  if (d === 'replace') {
    const { [DIRECTIVE]: _, ...rest } = patch;
    return clean(rest, n);
  }
  if (d === 'delete') return {};
  delete patch[DIRECTIVE];

  // $retainKeys: the original keeps only the named keys.
  if (Object.hasOwn(patch, RETAIN_KEYS)) {
    const keys = patch[RETAIN_KEYS];
    // A list of field names. A scalar that is no string names no field; a map or a list in
    // it is refused (kube hashes each item and panics on those: a 500).
    if (!Array.isArray(keys) || keys.some((k) => k !== null && typeof k === 'object')) throw badRetainKeys();
    delete patch[RETAIN_KEYS];
    const keep = new Set<string>(keys.filter((k): k is string => typeof k === 'string'));
    // Every field the patch sets must be retained (deletions and the list directives aside).
    for (const k of Object.keys(patch)) {
      if (patch[k] === null || k.startsWith(DELETE_PRIMITIVE) || k.startsWith(SET_ORDER)) continue;
      if (!keep.has(k)) throw badRetainKeys();
    }
    for (const k of Object.keys(original)) if (!keep.has(k)) delete original[k];
  }

  // $setElementOrder/<field>, with the field's own patch list merged under that order.
  for (const key of Object.keys(patch)) {
    if (!key.startsWith(SET_ORDER)) continue;
    const field = key.slice(SET_ORDER.length);
    const order = patch[key];
    delete patch[key];
    if (!Array.isArray(order)) throw badPatch('invalid patch format of setElementOrder list');
    const fn = childNode(n, field);
    const mergeKey = fn.patchMergeKey ?? '';
    const ov = ownValue(original, field);
    const orig: any[] = Array.isArray(ov) ? ov : [];
    let merged = orig;
    if (Object.hasOwn(patch, field)) {
      const pv = patch[field];
      delete patch[field];
      if (pv === null) {
        delete original[field];
        continue;
      }
      if (!Array.isArray(pv)) throw badPatch(`invalid patch: ${field} must be a list`);
      merged = mergeListItems(orig, pv, fn, mergeKey);
    }
    const scalar = !merged.some(isObj) && !order.some(isObj);
    const orderKey = (x: any) => (scalar ? JSON.stringify(x) : isObj(x) ? JSON.stringify(ownValue(x, mergeKey)) : JSON.stringify(x));
    const inOrder = new Set(order.map(orderKey));
    const patchItems = merged.filter((x) => inOrder.has(orderKey(x)));
    const serverOnly = merged.filter((x) => !inOrder.has(orderKey(x)));
    setOwn(original, field, normalizeOrder(patchItems, serverOnly, order, orig, orderKey));
  }

  for (const [rawKey, pv] of Object.entries(patch)) {
    tick();
    let key = rawKey;
    let deleteList = false;
    if (rawKey.startsWith(DELETE_PRIMITIVE)) {
      key = rawKey.slice(DELETE_PRIMITIVE.length);
      deleteList = true;
      if (!Array.isArray(pv)) throw badPatch('invalid patch format of primitive list');
      const cur = ownValue(original, key);
      if (Array.isArray(cur)) {
        const drop = new Set(pv.map((x) => JSON.stringify(x)));
        setOwn(original, key, cur.filter((x) => !drop.has(JSON.stringify(x))));
      }
      continue;
    }
    void deleteList;
    const fn = childNode(n, key);
    if (pv === null) {
      delete original[key];
      continue;
    }
    // (the client's keys, `__proto__` among them, are own fields only: read and written so)
    const ov = ownValue(original, key);
    if (ov === undefined || ov === null) {
      setOwn(original, key, clean(pv, fn));
      continue;
    }
    if (isObj(ov) && isObj(pv)) {
      if (fn.patchStrategies?.includes('replace')) setOwn(original, key, clean(stripDirective(pv), fn));
      else setOwn(original, key, mergeMap(ov, pv, fn));
    } else if (Array.isArray(ov) && Array.isArray(pv)) {
      setOwn(original, key, isMergeList(fn) ? mergeList(ov, pv, fn) : clean(pv, fn));
    } else {
      setOwn(original, key, clean(pv, fn));
    }
  }
  return original;
}

function stripDirective(m: Obj): Obj {
  const { [DIRECTIVE]: _, ...rest } = m;
  return rest;
}

/** Merges a patch list into an original list of a patchStrategy=merge field. */
function mergeList(original: any[], patch: any[], n: TypeNode): any[] {
  if (original.length === 0 && patch.length === 0) return original;
  const mergeKey = n.patchMergeKey ?? '';
  // A `$patch: replace` item replaces the whole list with the other items.
  if (patch.some((x) => directiveIn(x) === 'replace')) {
    return clean(
      patch.filter((x) => directiveIn(x) !== 'replace'),
      n,
    );
  }
  const merged = mergeListItems(original, patch, n, mergeKey);
  const scalar = !merged.some(isObj) && !patch.some(isObj);
  const orderKey = (x: any) => (scalar ? JSON.stringify(x) : isObj(x) ? JSON.stringify(ownValue(x, mergeKey)) : JSON.stringify(x));
  const patchOrder = patch.filter((x) => directiveIn(x) === undefined);
  const inPatch = new Set(patchOrder.map(orderKey));
  const patchItems = merged.filter((x) => inPatch.has(orderKey(x)));
  const serverOnly = merged.filter((x) => !inPatch.has(orderKey(x)));
  return normalizeOrder(patchItems, serverOnly, patchOrder, original, orderKey);
}

/** The item-wise merge without ordering: deletions, merges of matching items, additions. */
function mergeListItems(original: any[], patch: any[], n: TypeNode, mergeKey: string): any[] {
  const item = itemNode(n);
  const scalar = patch.every((x) => !isObj(x)) && original.every((x) => !isObj(x));
  if (scalar) {
    if (patch.some(Array.isArray)) throw genericUnprocessable();
    const seen = new Set<string>();
    const out: any[] = [];
    for (const x of [...original, ...patch]) {
      const k = JSON.stringify(x);
      if (!seen.has(k)) {
        seen.add(k);
        out.push(x);
      }
    }
    return out;
  }
  if (!mergeKey) throw unprocessable('cannot merge lists without a merge key');
  const out = original.slice();
  const keyOf = (x: any) => JSON.stringify(isObj(x) ? ownValue(x, mergeKey) : undefined);
  // Where each merge key sits in out (every place: a delete removes all of them, a merge
  // takes the first), so that a patch of m items costs m lookups, not m scans of the list.
  const at = new Map<string, number[]>();
  const note = (k: string, i: number) => {
    const l = at.get(k);
    if (l) l.push(i);
    else at.set(k, [i]);
  };
  out.forEach((x, i) => note(keyOf(x), i));
  const gone = new Set<number>();
  for (const p of patch) {
    tick();
    if (!isObj(p)) throw unprocessable(`unable to merge a list of maps with a non-map item: ${JSON.stringify(p)}`);
    const d = directiveOf(p);
    if (ownValue(p, mergeKey) === undefined) throw noMergeKey(p, mergeKey);
    const k = keyOf(p);
    const places = at.get(k);
    if (d === 'delete') {
      if (places) for (const i of places) gone.add(i);
      at.delete(k);
      continue;
    }
    const i = places?.find((j) => isObj(out[j]));
    if (i !== undefined) out[i] = mergeMap(out[i], p, item);
    else {
      note(k, out.length);
      out.push(clean(p, item));
    }
  }
  return gone.size === 0 ? out : out.filter((_, i) => !gone.has(i));
}

/**
 * The ordering rule of apimachinery's normalizeElementOrder: patch items sorted by the patch
 * order, server-only items sorted by their original order, then merged so that each keeps
 * its place relative to the items of the other kind as the original had it.
 */
function normalizeOrder(patchItems: any[], serverOnly: any[], patchOrder: any[], serverOrder: any[], keyOf: (x: any) => string): any[] {
  const pIdx = new Map<string, number>();
  patchOrder.forEach((x, i) => {
    const k = keyOf(x);
    if (!pIdx.has(k)) pIdx.set(k, i);
  });
  const sIdx = new Map<string, number>();
  serverOrder.forEach((x, i) => {
    const k = keyOf(x);
    if (!sIdx.has(k)) sIdx.set(k, i);
  });
  // Each item's key is encoded once, not once per comparison of the sorts.
  const keyed = (items: any[]) => items.map((x) => ({ x, k: keyOf(x) }));
  const left = keyed(patchItems).sort((a, b) => (pIdx.get(a.k) ?? 0) - (pIdx.get(b.k) ?? 0));
  const right = keyed(serverOnly).sort((a, b) => (sIdx.get(a.k) ?? 0) - (sIdx.get(b.k) ?? 0));
  const out: any[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length || j < right.length) {
    if (i >= left.length) out.push(right[j++].x);
    else if (j >= right.length) out.push(left[i++].x);
    else {
      const li = sIdx.get(left[i].k);
      const ri = sIdx.get(right[j].k);
      if (li !== undefined && ri !== undefined && li < ri) out.push(left[i++].x);
      else out.push(right[j++].x);
    }
  }
  return out;
}

export { ANY };
