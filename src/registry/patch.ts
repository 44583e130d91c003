// JSON merge patch (RFC 7386) and JSON patch (RFC 6902). A patch document that cannot be
// read is 400; one that cannot be applied (a failed `test`, a missing path) is 422, the
// way kube-apiserver answers both. A JSON patch is bounded as kube bounds it (10,000
// operations, 3 MiB of copies) and by the patch clock (patch-limits.ts).
import { StatusError, errors } from '../errors.js';
import { JSON_PATCH_MAX_COPY_BYTES, MAX_JSON_PATCH_OPERATIONS, MAX_PATCH_DEPTH, PatchClock, jsonSizeUpTo, nestsDeeperThan, refuseDeepPatch } from './patch-limits.js';
import { ownValue, setOwn } from './own-keys.js';

export function mergePatch(target: any, patch: any): any {
  refuseDeepPatch(patch);
  return mergeInto(target, patch);
}

function mergeInto(target: any, patch: any): any {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: any = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
  // Keys are the client's (`__proto__` included): read and written as own fields only.
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else setOwn(out, k, mergeInto(ownValue(out, k), v));
  }
  return out;
}

/** json-patch's error for a patch that does not apply: kube answers the generic 422 without its text. */
function unprocessable(message: string): StatusError {
  return errors.jsonPatchNotApplicable(message);
}

function parsePointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw unprocessable(`invalid JSON pointer "${path}"`);
  return path
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/**
 * Whether a (in the document) equals b (in the patch). Work is bounded by b's size, which
 * the request body bounds: a `test` of a small value against a huge subtree must not walk
 * the subtree once per operation.
 */
function deepEqual(a: any, b: any): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x: any, i: number) => deepEqual(x, b[i]));
  const kb = Object.keys(b);
  for (const k of kb) if (!Object.prototype.hasOwnProperty.call(a, k) || !deepEqual(a[k], b[k])) return false;
  // a holds every key of b: equal when it holds no more (counted up to one past b's)
  let n = 0;
  for (const _ in a) if (++n > kb.length) return false;
  return true;
}

interface Loc {
  parent: any;
  key: string;
}

/**
 * The containers a copy-on-write patch made (and may change in place); undefined when the
 * patch works on a whole copy of the document. Set for the duration of one jsonPatch call.
 */
let copying: Set<object> | undefined;

/** A shallow copy of a container (spread defines an own `__proto__` key as a plain field). */
const shallow = (o: any): any => (Array.isArray(o) ? o.slice() : { ...o });

/**
 * The parent of the path's last token. In copy-on-write mode (`copying` set), every container
 * on the way that the patch did not make yet is copied (shallow) and put in its parent's
 * place, so the change that follows touches only copies, never the caller's document.
 */
function locate(doc: any, tokens: string[], path: string): Loc {
  let cur = doc;
  for (let i = 0; i < tokens.length - 1; i++) {
    const t = tokens[i];
    if (cur === null || typeof cur !== 'object') throw unprocessable(`doc is missing path: "${path}": missing value`);
    // (own fields only: `/__proto__/x` or `/toString` name nothing in a document without them)
    const arr = Array.isArray(cur);
    const k: string | number = arr ? arrayIndex(cur, t, path, false) : t;
    let next = arr ? cur[k as number] : ownValue(cur, t);
    if (next === undefined) throw unprocessable(`doc is missing path: "${path}": missing value`);
    if (copying && next !== null && typeof next === 'object' && !copying.has(next)) {
      next = shallow(next);
      copying.add(next);
      if (arr) cur[k as number] = next;
      else setOwn(cur, t, next);
    }
    cur = next;
  }
  if (cur === null || typeof cur !== 'object') throw unprocessable(`doc is missing path: "${path}": missing value`);
  return { parent: cur, key: tokens[tokens.length - 1] };
}

function arrayIndex(arr: any[], token: string, path: string, forAdd: boolean): number {
  if (forAdd && token === '-') return arr.length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw unprocessable(`invalid array index "${token}" in path "${path}"`);
  const i = Number(token);
  if (forAdd ? i > arr.length : i >= arr.length) throw unprocessable(`unable to access invalid index: ${i}`);
  return i;
}

function getAt(doc: any, path: string): any {
  let cur = doc;
  for (const t of parsePointer(path)) {
    if (cur === null || typeof cur !== 'object') return undefined;
    if (Array.isArray(cur)) cur = /^(0|[1-9][0-9]*)$/.test(t) ? cur[Number(t)] : undefined;
    else cur = ownValue(cur, t);
  }
  return cur;
}

function removeAt(doc: any, path: string): any {
  const tokens = parsePointer(path);
  if (tokens.length === 0) throw unprocessable('cannot remove the whole document');
  const { parent, key } = locate(doc, tokens, path);
  if (Array.isArray(parent)) {
    const i = arrayIndex(parent, key, path, false);
    return parent.splice(i, 1)[0];
  }
  if (!Object.hasOwn(parent, key)) throw unprocessable(`Unable to remove nonexistent key: ${key}: missing value`);
  const v = parent[key];
  delete parent[key];
  return v;
}

/**
 * Puts value at path. It is copied unless owned (a moved value, taken out of the document
 * already: copying it would cost its size once per `move`).
 */
function addAt(doc: any, path: string, value: any, replace: boolean, owned = false): any {
  const tokens = parsePointer(path);
  let v = owned ? value : structuredClone(value);
  if (tokens.length === 0) {
    // the new root is changed in place by the operations after: in copy-on-write mode it
    // must be a container of this patch's (a moved value is still the caller's)
    if (copying && v !== null && typeof v === 'object') {
      if (owned && !copying.has(v)) v = shallow(v);
      copying.add(v);
    }
    return v;
  }
  const { parent, key } = locate(doc, tokens, path);
  if (Array.isArray(parent)) {
    const i = arrayIndex(parent, key, path, !replace);
    if (replace) parent[i] = v;
    else parent.splice(i, 0, v);
  } else {
    if (replace && !Object.hasOwn(parent, key)) throw unprocessable(`replace operation does not apply: doc is missing key: ${path}: missing value`);
    setOwn(parent, key, v);
  }
  return doc;
}

/** Go's name for the JSON type of a decoded value, as encoding/json's errors give it. */
function goJsonType(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  if (typeof v === 'boolean') return 'bool';
  return typeof v; // number, object
}

/**
 * An operation's `path` or `from` (named by field), a string, or json-patch's error for the
 * operation: missing (or null) is ErrMissing, another type is the JSON decoder's error.
 * add, remove and copy report a bad path as plain "missing value" (json-patch drops the cause).
 */
function opField(op: Record<string, unknown>, field: 'path' | 'from', kind: string): string {
  const v = ownValue(op, field);
  if (typeof v === 'string') return v;
  const cause =
    v === undefined || v === null
      ? field === 'path'
        ? 'operation missing path field: missing value'
        : 'operation, missing from field: missing value'
      : `json: cannot unmarshal ${goJsonType(v)} into Go value of type string`;
  const dropsCause = field === 'path' && (kind === 'add' || kind === 'remove' || kind === 'copy');
  throw unprocessable(`${kind} operation failed to decode ${field}: ${dropsCause ? 'missing value' : cause}`);
}

const opPath = (op: Record<string, unknown>, kind: string) => opField(op, 'path', kind);
const opFrom = (op: Record<string, unknown>, kind: string) => opField(op, 'from', kind);

/**
 * The error of kube's strict decoding of a JSON patch, which its handler runs first when
 * fieldValidation is Warn (the default) or Strict: the patch decoded into a list of
 * {op, path, from: string; value: any}, so an op, path or from of another type (or an
 * operation that is no map) fails the request as a 400 "error decoding patch: ..." before
 * json-patch sees it. The first error in document order, or undefined.
 */
export function strictJsonPatchTypeError(patch: unknown): string | undefined {
  if (patch === null) return undefined;
  if (!Array.isArray(patch)) return `json: cannot unmarshal ${goJsonType(patch)} into Go value of type []handlers.jsonPatchOp`;
  for (const op of patch) {
    if (op === null) continue;
    if (typeof op !== 'object' || Array.isArray(op)) return `json: cannot unmarshal ${goJsonType(op)} into Go value of type handlers.jsonPatchOp`;
    for (const k of Object.keys(op)) {
      if (k !== 'op' && k !== 'path' && k !== 'from') continue;
      const v = op[k];
      if (v !== null && typeof v !== 'string') return `json: cannot unmarshal ${goJsonType(v)} into Go struct field jsonPatchOp.${k} of type string`;
    }
  }
  return undefined;
}

/** What a JSON patch did that the caller weighs afterwards. */
export interface JsonPatchStats {
  /** the JSON bytes (estimated) that copy operations added */
  copied: number;
}

/**
 * Applies a JSON patch to a copy of doc (doc itself is never changed). With `share`, the
 * copy is made only along the paths the patch changes, and the result shares every other
 * subtree with doc: for a caller that neither keeps doc nor changes the result's subtrees in
 * place behind doc's back (a webhook's patch of the request's object, which replaces it), it
 * saves the whole document's structuredClone per patch. The store's patches (the result
 * becomes a new stored object, doc is the cached current one) copy the whole document.
 */
export function jsonPatch(doc: any, patch: unknown, stats?: JsonPatchStats, clock = new PatchClock(), share = false): any {
  if (!Array.isArray(patch)) throw errors.badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  // Counted before anything is applied, as kube's handler does once the patch is decoded.
  if (patch.length > MAX_JSON_PATCH_OPERATIONS) throw errors.jsonPatchTooManyOperations(MAX_JSON_PATCH_OPERATIONS, patch.length);
  refuseDeepPatch(patch);
  if (!share || doc === null || typeof doc !== 'object') return applyOps(structuredClone(doc), patch, stats, clock);
  const root = shallow(doc);
  copying = new Set([root]);
  try {
    return applyOps(root, patch, stats, clock);
  } finally {
    copying = undefined;
  }
}

function applyOps(doc: any, patch: any[], stats: JsonPatchStats | undefined, clock: PatchClock): any {
  let cur = doc;
  // json-patch's AccumulatedCopySizeLimit: what copies added so far, weighed per copy
  // (a copy larger than what is left of the limit is not weighed past the limit).
  let copied = 0;
  for (const op of patch) {
    clock.tick();
    // (json-patch decodes each operation into a map: null is an empty one, of kind "unknown")
    if (op === null) throw unprocessable('Unexpected kind: unknown');
    if (typeof op !== 'object' || Array.isArray(op)) throw errors.badRequest(`json: cannot unmarshal ${goJsonType(op)} into Go value of type jsonpatch.Operation`);
    // json-patch reads op, path and from as strings: an op of another type is "unknown", a
    // path or from that is missing or not a string fails the operation (messages below).
    const kind = typeof ownValue(op, 'op') === 'string' ? (op.op as string) : 'unknown';
    const value = ownValue(op, 'value') ?? null;
    switch (kind) {
      case 'add':
        cur = addAt(cur, opPath(op, 'add'), value, false);
        break;
      case 'replace':
        cur = addAt(cur, opPath(op, 'replace'), value, true);
        break;
      case 'remove':
        removeAt(cur, opPath(op, 'remove'));
        break;
      case 'move': {
        const v = removeAt(cur, opFrom(op, 'move'));
        cur = addAt(cur, opPath(op, 'move'), v, false, true);
        break;
      }
      case 'copy': {
        const from = opFrom(op, 'copy');
        const v = getAt(cur, from);
        if (v === undefined) throw unprocessable(`copy from missing path: "${from}"`);
        const path = opPath(op, 'copy');
        copied += jsonSizeUpTo(v, JSON_PATCH_MAX_COPY_BYTES - copied);
        if (copied > JSON_PATCH_MAX_COPY_BYTES) {
          throw unprocessable(`Unable to complete the copy, the accumulated size increase of copy is ${copied}, exceeding the limit ${JSON_PATCH_MAX_COPY_BYTES}`);
        }
        cur = addAt(cur, path, v, false);
        break;
      }
      case 'test': {
        const path = opPath(op, 'test');
        const v = getAt(cur, path);
        if (!deepEqual(v, value)) throw unprocessable(`the server rejected our request due to an error in our request: testing value ${path} failed: test failed`);
        break;
      }
      default:
        throw unprocessable(`Unexpected kind: ${kind}`);
    }
  }
  // add, copy and move can nest the document deeper than any patch does (a value added at
  // the end of a deep path, a subtree moved into a new map per three operations): a result
  // past what the rest of the write path recurses through cannot be stored.
  if (nestsDeeperThan(cur, MAX_PATCH_DEPTH)) throw unprocessable(`the patched object nests deeper than ${MAX_PATCH_DEPTH} levels`);
  if (stats) stats.copied = copied;
  return cur;
}
