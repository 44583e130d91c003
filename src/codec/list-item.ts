// The items of a list as kube-apiserver writes them. A built-in type's list is a typed list
// (ConfigMapList…), whose items carry no kind and apiVersion on the wire; a custom
// resource's list is unstructured, and its items keep theirs. Single objects and the
// objects of watch events always carry them.
//
// The stored JSON of an object starts with its kind and apiVersion, so a list item is the
// stored bytes with that prefix cut: `{` and the rest, with no parse and no re-encoding.
import type { ResourceTarget } from '../registry/store.js';

const OPEN = Buffer.from('{');
/** by apiVersion + NUL + kind; built-in kinds are few, so this stays small */
const prefixes = new Map<string, Buffer>();

/** The prefix the items of the target's list drop (`{"kind":…,"apiVersion":…,`), or undefined when they keep their type. */
export function itemPrefix(target: ResourceTarget): Buffer | undefined {
  const { custom, group, version, kind } = target.info;
  if (custom) return undefined;
  const apiVersion = group ? `${group}/${version}` : version;
  const key = `${apiVersion}\0${kind}`;
  let p = prefixes.get(key);
  if (!p) prefixes.set(key, (p = Buffer.from(`{"kind":${JSON.stringify(kind)},"apiVersion":${JSON.stringify(apiVersion)},`)));
  return p;
}

function cuts(json: Buffer, prefix: Buffer | undefined): prefix is Buffer {
  return prefix !== undefined && json.length > prefix.length && json.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;
}

/** The byte length of json as a list item. */
export function itemLength(json: Buffer, prefix: Buffer | undefined): number {
  return cuts(json, prefix) ? json.length - prefix.length + 1 : json.length;
}

/** Writes json as a list item into out at off; returns the offset after it. */
export function writeItem(json: Buffer, prefix: Buffer | undefined, out: Buffer, off: number): number {
  if (cuts(json, prefix)) {
    out[off] = 0x7b; // {
    return off + 1 + json.copy(out, off + 1, prefix.length);
  }
  return off + json.copy(out, off);
}

/** Pushes json as a list item onto parts (for a Buffer.concat), without copying it. */
export function pushItem(parts: Buffer[], json: Buffer, prefix: Buffer | undefined): void {
  if (cuts(json, prefix)) parts.push(OPEN, json.subarray(prefix.length));
  else parts.push(json);
}

/** A parsed object as a list item (for YAML and CBOR lists): a copy without kind and apiVersion. */
export function itemValue(obj: any, prefix: Buffer | undefined): any {
  if (prefix === undefined || obj === null || typeof obj !== 'object') return obj;
  const { kind: _k, apiVersion: _v, ...rest } = obj;
  return rest;
}
