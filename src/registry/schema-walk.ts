// Type nodes over the committed schema catalog, the view that strategic merge patch and
// server-side apply walk objects with. A node says what a value is (struct, map, list,
// scalar, or untyped) and carries the merge markers of the field that holds it: patch
// strategy and merge key (strategic merge), list type, list-map keys and map/struct
// atomicity (server-side apply).
//
// Thread ownership: nodes are immutable and memoized per thread (the catalog is per thread).
import { definitionOf, definitions, type SchemaDef, type SchemaProp } from '../api/schema.js';

export type NodeKind = 'struct' | 'map' | 'list' | 'scalar' | 'any';

export interface TypeNode {
  kind: NodeKind;
  /** struct fields (resolved lazily through field()) */
  def?: SchemaDef;
  /** map values and list items */
  elem?: TypeNode;
  /** a map or struct that is one value (x-kubernetes-map-type atomic) */
  atomic?: boolean;
  listType?: 'atomic' | 'set' | 'map';
  listKeys?: string[];
  /** x-kubernetes-patch-strategy of the field holding this value, split: merge, retainKeys, replace */
  patchStrategies?: string[];
  patchMergeKey?: string;
  /** a struct field Go keeps as a value, not a pointer: it always exists, so it is never "added" */
  valueStruct?: boolean;
  /** struct fields of a schema outside the catalog (custom resources: src/registry/crd/structural.ts) */
  fields?: (key: string) => TypeNode | undefined;
}

/** Untyped data (custom resources, RawExtension): maps granular, lists atomic. */
export const ANY: TypeNode = Object.freeze({ kind: 'any' }) as TypeNode;

const byProp = new WeakMap<SchemaProp, TypeNode>();
const byDef = new Map<string, TypeNode>();
const fieldCache = new WeakMap<TypeNode, Map<string, TypeNode>>();

function fromDef(def: SchemaDef | undefined): TypeNode {
  if (!def) return ANY;
  if (def.p) return { kind: 'struct', def, atomic: def.mt === 'atomic' };
  if (def.t === 'object') return ANY; // RawExtension, FieldsV1, JSON: free-form
  return { kind: 'scalar' }; // Time, Quantity, IntOrString, ...
}

export function nodeOfProp(p: SchemaProp | undefined): TypeNode {
  if (!p) return ANY;
  const hit = byProp.get(p);
  if (hit) return hit;
  let n: TypeNode;
  if (p.r) {
    n = { ...fromDef(definitions[p.r]) };
    if (n.kind === 'struct' && p.d !== undefined) n.valueStruct = true;
  } else if (p.t === 'array') {
    n = { kind: 'list', elem: nodeOfProp(p.i), listType: p.lt, listKeys: p.lk };
  } else if (p.t === 'object') {
    n = p.a ? { kind: 'map', elem: nodeOfProp(p.a), atomic: p.mt === 'atomic' } : ANY;
    if (n === ANY) n = { kind: 'any' };
  } else {
    n = { kind: 'scalar' };
  }
  if (p.ps) n.patchStrategies = p.ps.split(',');
  if (p.pk) n.patchMergeKey = p.pk;
  if (p.mt === 'atomic') n.atomic = true;
  byProp.set(p, n);
  return n;
}

/** The root node of a kind, or undefined when the catalog does not know it (custom resources). */
export function rootNode(group: string, version: string, kind: string): TypeNode | undefined {
  const name = definitionOf(group, version, kind);
  if (!name) return undefined;
  let n = byDef.get(name);
  if (!n) {
    n = { ...fromDef(definitions[name]), valueStruct: true };
    byDef.set(name, n);
  }
  return n;
}

/** The node of a struct field or map value; ANY for untyped data and unknown fields. */
export function childNode(n: TypeNode, key: string): TypeNode {
  if (n.kind === 'map') return n.elem ?? ANY;
  if (n.fields) return n.fields(key) ?? ANY;
  if (n.kind !== 'struct' || !n.def?.p) return ANY;
  let m = fieldCache.get(n);
  if (!m) fieldCache.set(n, (m = new Map()));
  let c = m.get(key);
  if (!c) {
    // (a field name the client chose, `__proto__` or `constructor`, names no inherited member)
    c = nodeOfProp(Object.hasOwn(n.def.p, key) ? n.def.p[key] : undefined);
    m.set(key, c);
  }
  return c;
}

export function hasField(n: TypeNode, key: string): boolean {
  if (n.fields) return n.fields(key) !== undefined;
  return n.kind === 'struct' && !!n.def?.p && Object.prototype.hasOwnProperty.call(n.def.p, key);
}

export function itemNode(n: TypeNode): TypeNode {
  return n.kind === 'list' ? (n.elem ?? ANY) : ANY;
}

export function isMergeList(n: TypeNode): boolean {
  return !!n.patchStrategies?.includes('merge');
}
