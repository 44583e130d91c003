// Field sets of server-side apply, in the FieldsV1 form of metadata.managedFields: a tree
// whose keys are path elements, `f:<field>` for a struct field or map key, `k:{...}` for
// the item of a list-map (its key fields, sorted, as JSON), `v:<json>` for the item of a
// set, `i:<n>` for an item of an untyped list. A node is a member of the set when it is a
// leaf (`{}`) or carries the `.` key; inner nodes without `.` only lead to members.
//
// Also here: the walks that compute the set of fields an object sets (what an applier
// owns) and the difference between two objects (what an updater changed), after
// sigs.k8s.io/structured-merge-diff's ToFieldSet and Compare.
import { ANY, childNode, hasField, itemNode, type TypeNode } from './schema-walk.js';
import { ownValue } from './own-keys.js';

export class FieldSet {
  member = false;
  children = new Map<string, FieldSet>();

  static fromFieldsV1(v: unknown): FieldSet {
    const s = new FieldSet();
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return s;
    for (const [k, c] of Object.entries(v as Record<string, unknown>)) {
      if (k === '.') {
        s.member = true;
        continue;
      }
      const child = FieldSet.fromFieldsV1(c);
      if (child.children.size === 0) child.member = true;
      s.children.set(k, child);
    }
    return s;
  }

  toFieldsV1(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    if (this.member && this.children.size > 0) out['.'] = {};
    const keys = [...this.children.keys()].sort(comparePathElements);
    for (const k of keys) {
      const c = this.children.get(k)!;
      if (c.empty()) continue;
      out[k] = c.toFieldsV1();
    }
    return out;
  }

  child(k: string): FieldSet {
    let c = this.children.get(k);
    if (!c) this.children.set(k, (c = new FieldSet()));
    return c;
  }

  insert(path: string[]): void {
    let s: FieldSet = this;
    for (const pe of path) s = s.child(pe);
    s.member = true;
  }

  has(path: string[]): boolean {
    let s: FieldSet | undefined = this;
    for (const pe of path) {
      s = s.children.get(pe);
      if (!s) return false;
    }
    return s.member;
  }

  /** Whether the set holds path or anything below it. */
  hasPrefix(path: string[]): boolean {
    let s: FieldSet | undefined = this;
    for (const pe of path) {
      s = s.children.get(pe);
      if (!s) return false;
    }
    return !s.empty();
  }

  /**
   * Whether both sets hold the same members: what comparing their FieldsV1 forms tells,
   * without building and sorting them (an apply asks it of every configuration).
   */
  sameMembers(o: FieldSet): boolean {
    if (this.member !== o.member) return false;
    let n = 0;
    for (const [k, c] of this.children) {
      if (c.empty()) continue;
      const oc = o.children.get(k);
      if (!oc || !c.sameMembers(oc)) return false;
      n++;
    }
    let m = 0;
    for (const c of o.children.values()) if (!c.empty() && ++m > n) return false;
    return m === n;
  }

  empty(): boolean {
    if (this.member) return false;
    for (const c of this.children.values()) if (!c.empty()) return false;
    return true;
  }

  clone(): FieldSet {
    const s = new FieldSet();
    s.member = this.member;
    for (const [k, c] of this.children) s.children.set(k, c.clone());
    return s;
  }

  union(o: FieldSet): FieldSet {
    const s = this.clone();
    s.addAll(o);
    return s;
  }

  private addAll(o: FieldSet): void {
    if (o.member) this.member = true;
    for (const [k, c] of o.children) this.child(k).addAll(c);
  }

  /** Members of this set that are not members of o (exact paths). */
  difference(o: FieldSet): FieldSet {
    const s = new FieldSet();
    s.member = this.member && !o.member;
    for (const [k, c] of this.children) {
      const oc = o.children.get(k);
      const d = oc ? c.difference(oc) : c.clone();
      if (!d.empty()) s.children.set(k, d);
    }
    return s;
  }

  /** Members of this set that are members of o. */
  intersection(o: FieldSet): FieldSet {
    const s = new FieldSet();
    s.member = this.member && o.member;
    for (const [k, c] of this.children) {
      const oc = o.children.get(k);
      if (!oc) continue;
      const d = c.intersection(oc);
      if (!d.empty()) s.children.set(k, d);
    }
    return s;
  }

  /** Removes path and everything below it. */
  removePrefix(path: string[]): void {
    if (path.length === 0) {
      this.member = false;
      this.children.clear();
      return;
    }
    let s: FieldSet = this;
    for (let i = 0; i < path.length - 1; i++) {
      const c = s.children.get(path[i]);
      if (!c) return;
      s = c;
    }
    s.children.delete(path[path.length - 1]);
  }

  /** Every member path, depth first. */
  paths(prefix: string[] = [], out: string[][] = []): string[][] {
    if (this.member) out.push(prefix);
    for (const k of [...this.children.keys()].sort(comparePathElements)) this.children.get(k)!.paths([...prefix, k], out);
    return out;
  }
}

const ORDER: Record<string, number> = { f: 0, k: 1, v: 2, i: 3 };
function comparePathElements(a: string, b: string): number {
  const d = (ORDER[a[0]] ?? 9) - (ORDER[b[0]] ?? 9);
  if (d !== 0) return d;
  if (a[0] === 'i') return Number(a.slice(2)) - Number(b.slice(2));
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The deepest FieldsV1 set decodeManaged takes from a client. kube has no limit, but the set
 * walks here recurse (and printing a path copies it), so a set nested thousands of levels
 * deep would overflow the stack; no object a client can write nests that deep in its schema.
 */
export const MAX_FIELDS_V1_DEPTH = 1000;

function jsonParses(s: string, object: boolean): boolean {
  try {
    const v = JSON.parse(s);
    return !object || (v !== null && typeof v === 'object' && !Array.isArray(v));
  } catch {
    return false;
  }
}

/**
 * Why a FieldsV1 value from a client is not one (structured-merge-diff's Set.FromJSON
 * errors), or undefined when it is: every key a path element (`f:<name>`, `k:<JSON
 * object>`, `v:<JSON>`, `i:<integer>`, or `.`), every value an object, no deeper than
 * MAX_FIELDS_V1_DEPTH. Iterative. kube drops managedFields it cannot decode (the live
 * object's are kept), and so does decodeManaged with this.
 */
export function fieldsV1Problem(v: unknown): string | undefined {
  const stack: Array<[unknown, number]> = [[v, 1]];
  while (stack.length) {
    const [x, depth] = stack.pop()!;
    if (x === null || typeof x !== 'object' || Array.isArray(x)) return 'expected an object';
    if (depth > MAX_FIELDS_V1_DEPTH) return 'nested too deeply';
    for (const [k, c] of Object.entries(x as Record<string, unknown>)) {
      const rest = k.slice(2);
      const ok =
        k === '.' ||
        k.startsWith('f:') ||
        (k.startsWith('k:') && jsonParses(rest, true)) ||
        (k.startsWith('v:') && jsonParses(rest, false)) ||
        (k.startsWith('i:') && /^-?[0-9]{1,18}$/.test(rest));
      if (!ok) return `invalid path element ${JSON.stringify(k)}`;
      stack.push([c, depth + 1]);
    }
  }
  return undefined;
}

/** `.spec.template.spec.containers[name="nginx"].image`, the way kube prints a field path. */
export function pathString(path: string[]): string {
  let s = '';
  for (const pe of path) {
    const rest = pe.slice(2);
    switch (pe[0]) {
      case 'f':
        s += '.' + rest;
        break;
      case 'k': {
        // path elements come from fieldsOf or a checked FieldsV1 (fieldsV1Problem): JSON objects
        let o: Record<string, unknown>;
        try {
          o = JSON.parse(rest);
        } catch {
          s += `[${rest}]`;
          break;
        }
        s += '[' + Object.keys(o ?? {}).map((k) => `${k}=${JSON.stringify(o[k])}`).join(',') + ']';
        break;
      }
      case 'v':
        s += `[=${rest}]`;
        break;
      case 'i':
        s += `[${rest}]`;
        break;
    }
  }
  return s;
}

function isObj(v: unknown): v is Record<string, any> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function sortedJson(o: Record<string, unknown>): string {
  const keys = Object.keys(o).sort();
  return '{' + keys.map((k) => `${JSON.stringify(k)}:${JSON.stringify(o[k])}`).join(',') + '}';
}

/** How a list's items are addressed: by key fields, by value, or by position. */
export function listMode(n: TypeNode): 'atomic' | 'map' | 'set' {
  if (n.kind !== 'list') return 'atomic';
  if (n.listType === 'map' || n.listType === 'set' || n.listType === 'atomic') return n.listType;
  // Without listType, patchStrategy=merge reads as a map keyed by patchMergeKey (or a set of scalars).
  if (n.patchStrategies?.includes('merge')) return n.patchMergeKey ? 'map' : 'set';
  return 'atomic';
}

export function listKeys(n: TypeNode): string[] {
  if (n.listKeys?.length) return n.listKeys;
  return n.patchMergeKey ? [n.patchMergeKey] : [];
}

/**
 * The path element of a list item, or undefined when it cannot be addressed. Key fields
 * the item omits take their schema default when there is one (kube does the same with
 * `protocol` of ports, which defaults to TCP).
 */
export function itemElement(n: TypeNode, item: unknown, index: number): string | undefined {
  const mode = listMode(n);
  if (mode === 'set') return 'v:' + JSON.stringify(item);
  if (mode === 'map') {
    if (!isObj(item)) return undefined;
    const keys: Record<string, unknown> = {};
    const en = itemNode(n);
    for (const k of listKeys(n)) {
      let v = ownValue(item, k);
      if (v === undefined) v = keyDefault(en, k);
      if (v === undefined) continue;
      keys[k] = v;
    }
    if (Object.keys(keys).length === 0) return undefined;
    return 'k:' + sortedJson(keys);
  }
  return 'i:' + index;
}

function keyDefault(item: TypeNode, key: string): unknown {
  if (item.kind !== 'struct') return undefined;
  const p = item.def?.p;
  const d = p && Object.hasOwn(p, key) ? p[key].d : undefined;
  // Zero values ("" and 0) are not defaults a client relies on; named defaults are (TCP).
  return d === '' || d === 0 ? undefined : d;
}

/** The fields an object sets, as an applier comes to own them (structured-merge-diff's ToFieldSet). */
export function fieldsOf(obj: unknown, n: TypeNode): FieldSet {
  const s = new FieldSet();
  walkSet(obj, n, [], s);
  return s;
}

function walkSet(v: unknown, n: TypeNode, path: string[], s: FieldSet): void {
  if (Array.isArray(v)) {
    const mode = n.kind === 'list' ? listMode(n) : 'atomic';
    if (mode === 'atomic') {
      s.insert(path);
      return;
    }
    const en = itemNode(n);
    // path is one array, extended and restored around each child (insert keeps no path):
    // a copy per node made an apply of a long list mostly garbage collection
    for (let i = 0; i < v.length; i++) {
      const pe = itemElement(n, v[i], i);
      if (!pe) continue;
      path.push(pe);
      walkSet(v[i], en, path, s);
      s.insert(path);
      path.pop();
    }
    return;
  }
  if (isObj(v)) {
    if ((n.kind === 'struct' || n.kind === 'map') && n.atomic) {
      s.insert(path);
      return;
    }
    for (const [k, c] of Object.entries(v)) {
      path.push('f:' + k);
      const cn = n.kind === 'struct' || n.kind === 'map' ? childNode(n, k) : ANY;
      walkSet(c, cn, path, s);
      if (c === null || (isObj(c) && Object.keys(c).length === 0) || (n.kind !== 'struct' || !hasField(n, k))) s.insert(path);
      path.pop();
    }
    return;
  }
  s.insert(path);
}

export interface Comparison {
  added: FieldSet;
  modified: FieldSet;
  removed: FieldSet;
}

/** What changed from lhs to rhs, path by path (structured-merge-diff's Compare). */
export function compare(lhs: unknown, rhs: unknown, n: TypeNode): Comparison {
  const c: Comparison = { added: new FieldSet(), modified: new FieldSet(), removed: new FieldSet() };
  cmp(lhs, rhs, n, [], c, false);
  return c;
}

function leaf(lhs: unknown, rhs: unknown, path: string[], c: Comparison): void {
  if (lhs === undefined && rhs === undefined) return;
  if (lhs === undefined) c.added.insert(path);
  else if (rhs === undefined) c.removed.insert(path);
  else if (!deepEqual(lhs, rhs)) c.modified.insert(path);
}

function cmp(lhs: unknown, rhs: unknown, n: TypeNode, path: string[], c: Comparison, valueStruct: boolean): void {
  if (lhs === undefined && rhs === undefined) return;
  const l = lhs === null ? undefined : lhs;
  const r = rhs === null ? undefined : rhs;
  const shape = Array.isArray(l) || Array.isArray(r) ? 'list' : isObj(l) || isObj(r) ? 'map' : 'scalar';
  if (shape === 'scalar' || (l !== undefined && r !== undefined && (Array.isArray(l) !== Array.isArray(r) || isObj(l) !== isObj(r)))) {
    leaf(lhs, rhs, path, c);
    return;
  }
  if (shape === 'list') {
    const ll = (l as unknown[] | undefined) ?? [];
    const rl = (r as unknown[] | undefined) ?? [];
    const mode = n.kind === 'list' ? listMode(n) : 'atomic';
    if (mode === 'atomic' || (ll.length === 0 && rl.length === 0)) {
      leaf(lhs, rhs, path, c);
      return;
    }
    const en = itemNode(n);
    const li = new Map<string, unknown>();
    ll.forEach((x, i) => {
      const pe = itemElement(n, x, i);
      if (pe && !li.has(pe)) li.set(pe, x);
    });
    const ri = new Map<string, unknown>();
    rl.forEach((x, i) => {
      const pe = itemElement(n, x, i);
      if (pe && !ri.has(pe)) ri.set(pe, x);
    });
    // path is one array, extended and restored around each child (insert copies nothing)
    for (const [pe, x] of li) {
      path.push(pe);
      cmp(x, ri.get(pe), en, path, c, false);
      path.pop();
    }
    for (const [pe, x] of ri) {
      if (li.has(pe)) continue;
      path.push(pe);
      cmp(undefined, x, en, path, c, false);
      path.pop();
    }
  } else {
    const lm = (l as Record<string, unknown> | undefined) ?? {};
    const rm = (r as Record<string, unknown> | undefined) ?? {};
    const atomic = (n.kind === 'struct' || n.kind === 'map') && n.atomic;
    const lk = Object.keys(lm);
    const rk = Object.keys(rm);
    if (atomic || (lk.length === 0 && rk.length === 0)) {
      leaf(lhs, rhs, path, c);
      return;
    }
    const typed = n.kind === 'struct' || n.kind === 'map';
    // (rm may lack lm's key: an inherited member such as `constructor` is no value of it)
    for (const k of lk) child(lm[k], ownValue(rm, k), k);
    for (const k of rk) if (!Object.prototype.hasOwnProperty.call(lm, k)) child(undefined, rm[k], k);
    function child(lv: unknown, rv: unknown, k: string): void {
      const cn = typed ? childNode(n, k) : ANY;
      path.push('f:' + k);
      cmp(lv, rv, cn, path, c, !!cn.valueStruct);
      path.pop();
    }
  }
  // A map or struct that appears or goes away is itself added or removed (lists are not),
  // except a struct Go keeps by value: it is always there (as `{}`), so it never comes or goes.
  if (path.length > 0 && !valueStruct && shape === 'map') {
    if (l === undefined) c.added.insert(path);
    else if (r === undefined) c.removed.insert(path);
  }
}

/**
 * compare(nothing, v, n) as FieldsV1, built directly: what a create adds, in toFieldsV1's
 * form (children in path-element order, "." on members that have children), without the
 * intermediate sets. Mirrors cmp() with an absent left side: scalars, nulls, atomic or
 * empty maps and lists are leaves; list items are addressed by itemElement (the first of
 * equal elements wins) and a list itself is never a member; a map or struct is a member
 * unless Go keeps it by value (valueStruct). undefined when the value adds nothing.
 */
export function addedFieldsV1(v: unknown, n: TypeNode, valueStruct: boolean): Record<string, unknown> | undefined {
  if (v === undefined) return undefined;
  if (Array.isArray(v)) {
    const mode = n.kind === 'list' ? listMode(n) : 'atomic';
    if (mode === 'atomic' || v.length === 0) return {};
    const en = itemNode(n);
    let seen: Set<string> | undefined;
    let keys: string[] | undefined;
    let vals: Record<string, unknown> | undefined;
    for (let i = 0; i < v.length; i++) {
      const pe = itemElement(n, v[i], i);
      if (!pe) continue;
      if ((seen ??= new Set()).has(pe)) continue;
      seen.add(pe);
      const c = addedFieldsV1(v[i], en, false);
      if (c === undefined) continue;
      (keys ??= []).push(pe);
      (vals ??= {})[pe] = c;
    }
    return keys ? sortedFields(keys, vals!) : undefined;
  }
  if (!isObj(v)) return {};
  const typed = n.kind === 'struct' || n.kind === 'map';
  const fields = Object.keys(v);
  if ((typed && n.atomic) || fields.length === 0) return {};
  let keys: string[] | undefined;
  let vals: Record<string, unknown> | undefined;
  for (const k of fields) {
    const cn = typed ? childNode(n, k) : ANY;
    const c = addedFieldsV1(v[k], cn, !!cn.valueStruct);
    if (c === undefined) continue;
    const pe = 'f:' + k;
    (keys ??= []).push(pe);
    (vals ??= {})[pe] = c;
  }
  if (!keys) return valueStruct ? undefined : {};
  // All of one kind of path element ("f:"), so plain string order is comparePathElements' order.
  return sortedFields(keys, vals!, !valueStruct);
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => deepEqual(x, bb[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ka = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const kb = Object.keys(bo).filter((k) => bo[k] !== undefined);
  return ka.length === kb.length && ka.every((k) => deepEqual(ao[k], bo[k]));
}

/**
 * A fieldsV1 object from its path elements and their children, keys in sorted order (the
 * order kube serializes a set in, when the elements are all of one kind); `self` adds the
 * "." entry first.
 */
export function sortedFields(keys: string[], vals: Record<string, unknown>, self = false): Record<string, unknown> {
  // (Array.prototype.sort copies the array even when it is in order already, as one key always is)
  for (let i = 1; i < keys.length; i++) {
    if (keys[i - 1] > keys[i]) {
      keys.sort();
      break;
    }
  }
  const out: Record<string, unknown> = {};
  if (self) out['.'] = {};
  for (const k of keys) out[k] = vals[k];
  return out;
}
