// JSON merge patch (RFC 7386) and JSON patch (RFC 6902). A patch document that cannot be
// read is 400; one that cannot be applied (a failed `test`, a missing path) is 422, the
// way kube-apiserver answers both.
import { StatusError, StatusReason, errors } from '../errors.js';

export function mergePatch(target: any, patch: any): any {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: any = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function unprocessable(message: string): StatusError {
  return new StatusError(422, StatusReason.Invalid, message, { causes: [{ reason: 'FieldValueInvalid', message }] });
}

function parsePointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw unprocessable(`invalid JSON pointer "${path}"`);
  return path
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function deepEqual(a: any, b: any): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x: any, i: number) => deepEqual(x, b[i]));
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k]));
}

interface Loc {
  parent: any;
  key: string;
}

function locate(doc: any, tokens: string[], path: string): Loc {
  let cur = doc;
  for (let i = 0; i < tokens.length - 1; i++) {
    const t = tokens[i];
    if (cur === null || typeof cur !== 'object') throw unprocessable(`doc is missing path: "${path}": missing value`);
    cur = Array.isArray(cur) ? cur[arrayIndex(cur, t, path, false)] : cur[t];
    if (cur === undefined) throw unprocessable(`doc is missing path: "${path}": missing value`);
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
    cur = Array.isArray(cur) ? cur[Number(t)] : cur[t];
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
  if (!(key in parent)) throw unprocessable(`Unable to remove nonexistent key: ${key}: missing value`);
  const v = parent[key];
  delete parent[key];
  return v;
}

function addAt(doc: any, path: string, value: any, replace: boolean): any {
  const tokens = parsePointer(path);
  if (tokens.length === 0) return structuredClone(value);
  const { parent, key } = locate(doc, tokens, path);
  if (Array.isArray(parent)) {
    const i = arrayIndex(parent, key, path, !replace);
    if (replace) parent[i] = structuredClone(value);
    else parent.splice(i, 0, structuredClone(value));
  } else {
    if (replace && !(key in parent)) throw unprocessable(`replace operation does not apply: doc is missing key: ${path}: missing value`);
    parent[key] = structuredClone(value);
  }
  return doc;
}

export function jsonPatch(doc: any, patch: unknown): any {
  if (!Array.isArray(patch)) throw errors.badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  let cur = structuredClone(doc);
  for (const op of patch) {
    if (op === null || typeof op !== 'object') throw errors.badRequest('json: cannot unmarshal into Go value of type jsonpatch.Operation');
    const path = op.path;
    if (typeof path !== 'string') throw unprocessable(`Unexpected kind: ${op.op}`);
    switch (op.op) {
      case 'add':
        cur = addAt(cur, path, op.value, false);
        break;
      case 'replace':
        cur = addAt(cur, path, op.value, true);
        break;
      case 'remove':
        removeAt(cur, path);
        break;
      case 'move': {
        const v = removeAt(cur, op.from);
        cur = addAt(cur, path, v, false);
        break;
      }
      case 'copy': {
        const v = getAt(cur, op.from);
        if (v === undefined) throw unprocessable(`copy from missing path: "${op.from}"`);
        cur = addAt(cur, path, v, false);
        break;
      }
      case 'test': {
        const v = getAt(cur, path);
        if (!deepEqual(v, op.value ?? null)) throw unprocessable(`the server rejected our request due to an error in our request: testing value ${path} failed: test failed`);
        break;
      }
      default:
        throw unprocessable(`Unexpected kind: ${String(op.op)}`);
    }
  }
  return cur;
}
