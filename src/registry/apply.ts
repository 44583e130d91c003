// Field management: metadata.managedFields for every write, and server-side apply.
//
// After k8s.io/apiserver's fieldmanager over sigs.k8s.io/structured-merge-diff:
// - Every write records, for its manager and operation (Apply or Update), the fields it
//   owns. An update or non-apply patch takes the fields it changed (and never conflicts);
//   the other managers lose them.
// - An apply merges the applier's configuration into the live object, owns exactly the
//   fields of that configuration, removes what it owned before and no longer sets when no
//   one else owns it, and is refused (409) when it would change a field another manager
//   owns, unless forced, in which case ownership moves to it.
//
// Everything here is pure: the store calls these while it builds the new object on the
// front thread, once per attempt of its optimistic update loop.
import { StatusError, StatusReason, errors } from '../errors.js';
import { ANY, childNode, itemNode, type TypeNode } from './schema-walk.js';
import { PatchClock } from './patch-limits.js';
import { FieldSet, addedFieldsV1, compare, deepEqual, fieldsOf, fieldsV1Problem, itemElement, listMode, pathString, sortedFields } from './managed-fields.js';
import { ownValue, setOwn } from './own-keys.js';

export type Operation = 'Apply' | 'Update';

let stampSecond = -1;
let stamp = '';
/** RFC 3339 at second precision, formatted once per second (every write records one). */
function nowTimestamp(): string {
  const sec = Math.floor(Date.now() / 1000);
  if (sec !== stampSecond) {
    stampSecond = sec;
    stamp = new Date(sec * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  }
  return stamp;
}

export interface Managed {
  manager: string;
  operation: Operation;
  apiVersion: string;
  subresource: string;
  time?: string;
  set: FieldSet;
}

/** Who writes: the field manager, the version the request speaks, the subresource it targets. */
export interface WriteIdentity {
  manager: string;
  apiVersion: string;
  subresource: string;
}

/** kube-apiserver keeps at most this many Update entries; older ones merge into one. */
export const MAX_UPDATE_MANAGERS = 10;
const ANCIENT = 'ancient-changes';

export function keyOf(m: { manager: string; operation: Operation; apiVersion: string; subresource: string }): string {
  // Appliers are one entry whatever version they spoke; updaters one per version.
  return JSON.stringify([m.manager, m.operation, m.operation === 'Apply' ? '' : m.apiVersion, m.subresource]);
}

function isObj(v: unknown): v is Record<string, any> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** An entry list of only empty entries: the request asks to drop all ownership (the reset rule). */
export function isReset(mf: unknown): boolean {
  return Array.isArray(mf) && mf.length > 0 && mf.every((e) => isObj(e) && Object.keys(e).length === 0);
}

export function decodeManaged(mf: unknown): Map<string, Managed> | undefined {
  if (!Array.isArray(mf)) return undefined;
  const out = new Map<string, Managed>();
  for (const e of mf) {
    if (!isObj(e)) return undefined;
    if (e.operation !== 'Apply' && e.operation !== 'Update') return undefined;
    if (e.fieldsType !== undefined && e.fieldsType !== 'FieldsV1') return undefined;
    if (e.fieldsV1 !== undefined && fieldsV1Problem(e.fieldsV1) !== undefined) return undefined;
    // typed strings in kube's ManagedFieldsEntry: anything else does not decode
    if (![e.manager, e.apiVersion, e.subresource].every((x) => x === undefined || x === null || typeof x === 'string')) return undefined;
    const m: Managed = {
      manager: String(e.manager ?? ''),
      operation: e.operation,
      apiVersion: String(e.apiVersion ?? ''),
      subresource: String(e.subresource ?? ''),
      time: typeof e.time === 'string' ? e.time : undefined,
      set: FieldSet.fromFieldsV1(e.fieldsV1),
    };
    const k = keyOf(m);
    const prev = out.get(k);
    if (prev) prev.set = prev.set.union(m.set);
    else out.set(k, m);
  }
  return out;
}

export function encodeManaged(managed: Map<string, Managed>): any[] | undefined {
  const entries = [...managed.values()].filter((m) => !m.set.empty());
  if (entries.length === 0) return undefined;
  entries.sort((p, q) => {
    if (p.operation !== q.operation) return p.operation < q.operation ? -1 : 1;
    const pt = p.time ?? '';
    const qt = q.time ?? '';
    if (pt !== qt) return pt < qt ? -1 : 1;
    if (p.manager !== q.manager) return p.manager < q.manager ? -1 : 1;
    if (p.apiVersion !== q.apiVersion) return p.apiVersion < q.apiVersion ? -1 : 1;
    return p.subresource < q.subresource ? -1 : p.subresource > q.subresource ? 1 : 0;
  });
  return entries.map((m) => {
    const e: Record<string, unknown> = { manager: m.manager, operation: m.operation, apiVersion: m.apiVersion };
    if (m.time) e.time = m.time;
    e.fieldsType = 'FieldsV1';
    e.fieldsV1 = m.set.toFieldsV1();
    if (m.subresource) e.subresource = m.subresource;
    return e;
  });
}

const IGNORED_META = ['name', 'namespace', 'creationTimestamp', 'selfLink', 'uid', 'generation', 'managedFields', 'resourceVersion'];
const IGNORED_COMMON: string[][] = [['f:apiVersion'], ['f:kind'], ...IGNORED_META.map((m) => ['f:metadata', 'f:' + m])];
// Built once (per kind's status reset list): every write consults one.
const IGNORED_STATUS_WRITE = [...IGNORED_COMMON, ['f:spec']];
const IGNORED_MAIN_WITH_STATUS = [...IGNORED_COMMON, ['f:status']];
const ignoredForStatus = new WeakMap<string[][], string[][]>();

/** Fields no manager owns: the object's identity and server-set metadata, and what the target resets. Shared: never mutate. */
function ignoredPaths(subresource: string, hasStatus: boolean, statusReset?: string[][]): string[][] {
  if (subresource === 'status') {
    if (!statusReset) return IGNORED_STATUS_WRITE;
    let l = ignoredForStatus.get(statusReset);
    if (!l) ignoredForStatus.set(statusReset, (l = [...IGNORED_COMMON, ...statusReset]));
    return l;
  }
  return hasStatus ? IGNORED_MAIN_WITH_STATUS : IGNORED_COMMON;
}

function withoutIgnored(s: FieldSet, ignored: string[][]): FieldSet {
  const out = s.clone();
  for (const p of ignored) out.removePrefix(p);
  out.member = false;
  const meta = out.children.get('f:metadata');
  if (meta) meta.member = false;
  return out;
}

function stripManaged(obj: any): any {
  const o = { ...obj, metadata: { ...(obj?.metadata ?? {}) } };
  delete o.metadata.managedFields;
  return o;
}

function capUpdaters(managed: Map<string, Managed>): void {
  const updaters = [...managed.entries()].filter(([, m]) => m.operation === 'Update');
  if (updaters.length <= MAX_UPDATE_MANAGERS) return;
  updaters.sort((a, b) => ((a[1].time ?? '') < (b[1].time ?? '') ? -1 : 1));
  const excess = updaters.length - MAX_UPDATE_MANAGERS + 1;
  let ancient: Managed | undefined;
  for (const [k, m] of updaters.slice(0, excess)) {
    managed.delete(k);
    if (m.manager === ANCIENT) {
      ancient = ancient ? { ...ancient, set: ancient.set.union(m.set) } : m;
      continue;
    }
    ancient = ancient
      ? { ...ancient, set: ancient.set.union(m.set), time: m.time ?? ancient.time }
      : { manager: ANCIENT, operation: 'Update', apiVersion: m.apiVersion, subresource: '', time: m.time, set: m.set.clone() };
  }
  if (ancient) {
    const k = keyOf(ancient);
    const prev = managed.get(k);
    managed.set(k, prev ? { ...prev, set: prev.set.union(ancient.set) } : ancient);
  }
}

export interface ManagedContext {
  root: TypeNode;
  hasStatus: boolean;
  /** what a status write of this kind resets (kube's status ResetFields); spec when absent */
  statusReset?: string[][];
}

/**
 * Records an Update (create, update, or any non-apply patch) in obj.metadata.managedFields.
 * old is the live object (null on create); obj is the object about to be stored.
 */
export function recordUpdate(old: any | null, obj: any, id: WriteIdentity, ctx: ManagedContext): void {
  if (old === null && canRecordCreate(obj, id, ctx)) {
    recordCreate(obj, id, ctx);
    return;
  }
  recordUpdateGeneral(old, obj, id, ctx);
}

const IGNORED_META_SET = new Set(IGNORED_META);

/**
 * Whether recordCreate gives what the general path would: a create of the main resource
 * that sends no managedFields of its own (so no one else owns anything), of a kind whose
 * root is a granular (non-atomic) struct, map or untyped object.
 */
function canRecordCreate(obj: any, id: WriteIdentity, ctx: ManagedContext): boolean {
  const root = ctx.root;
  return id.subresource === '' && isObj(obj) && isObj(obj.metadata) && obj.metadata.managedFields === undefined && (root.kind === 'struct' || root.kind === 'map' || root.kind === 'any') && !root.atomic;
}

/**
 * The usual create: the request's manager owns every field the object sets, except those
 * no manager owns (ignoredPaths: identity and server-set metadata, and status where the
 * kind has a status subresource). The same entry as the general path (compare against
 * nothing, withoutIgnored, encodeManaged) builds, built straight as FieldsV1 without
 * copying the object or building field sets (test: src/registry/apply.test.ts).
 */
function recordCreate(obj: any, id: WriteIdentity, ctx: ManagedContext): void {
  const root = ctx.root;
  const typed = root.kind === 'struct' || root.kind === 'map';
  let keys: string[] | undefined;
  let vals: Record<string, unknown> | undefined;
  for (const k of Object.keys(obj)) {
    if (k === 'apiVersion' || k === 'kind' || (k === 'status' && ctx.hasStatus)) continue;
    const cn = typed ? childNode(root, k) : ANY;
    const c = k === 'metadata' ? createdMetadataFields(obj.metadata, cn) : addedFieldsV1(obj[k], cn, !!cn.valueStruct);
    if (c === undefined) continue;
    const pe = 'f:' + k;
    (keys ??= []).push(pe);
    (vals ??= {})[pe] = c;
  }
  if (!keys) {
    delete obj.metadata.managedFields;
    return;
  }
  const fieldsV1 = sortedFields(keys, vals!);
  const e: Record<string, unknown> = { manager: id.manager, operation: 'Update', apiVersion: id.apiVersion };
  e.time = nowTimestamp();
  e.fieldsType = 'FieldsV1';
  e.fieldsV1 = fieldsV1;
  obj.metadata.managedFields = [e];
}

/** metadata's share of a create (never a member itself; the ignored fields left out), or undefined. */
function createdMetadataFields(m: Record<string, unknown>, n: TypeNode): Record<string, unknown> | undefined {
  const typed = n.kind === 'struct' || n.kind === 'map';
  if (typed && n.atomic) return undefined;
  let keys: string[] | undefined;
  let vals: Record<string, unknown> | undefined;
  for (const k of Object.keys(m)) {
    if (IGNORED_META_SET.has(k)) continue;
    const cn = typed ? childNode(n, k) : ANY;
    const c = addedFieldsV1(m[k], cn, !!cn.valueStruct);
    if (c === undefined) continue;
    const pe = 'f:' + k;
    (keys ??= []).push(pe);
    (vals ??= {})[pe] = c;
  }
  return keys ? sortedFields(keys, vals!) : undefined;
}

/** recordUpdate for any write: the request's or the live object's entries, the changes, the cap. */
export function recordUpdateGeneral(old: any | null, obj: any, id: WriteIdentity, ctx: ManagedContext): void {
  const ignored = ignoredPaths(id.subresource, ctx.hasStatus, ctx.statusReset);
  // The request's own managedFields win (a client may edit them), unless it sends the reset
  // form (drop everything), sends none, or writes a subresource.
  const sent = obj.metadata?.managedFields;
  let managed: Map<string, Managed>;
  if (isReset(sent)) managed = new Map();
  else {
    const fromReq = id.subresource ? undefined : decodeManaged(sent);
    managed = fromReq && fromReq.size > 0 ? fromReq : (decodeManaged(old?.metadata?.managedFields) ?? new Map());
  }
  const c = compare(old ? stripManaged(old) : {}, stripManaged(obj), ctx.root);
  // (a create modifies nothing: its added fields need no union, withoutIgnored copies them)
  const changed = withoutIgnored(c.modified.empty() ? c.added : c.modified.union(c.added), ignored);
  const removed = c.removed;
  const anyRemoved = !removed.empty();
  for (const m of managed.values()) {
    m.set = m.set.difference(changed);
    if (anyRemoved) m.set = m.set.difference(removed);
  }
  if (!changed.empty()) {
    const me: Managed = { manager: id.manager, operation: 'Update', apiVersion: id.apiVersion, subresource: id.subresource, set: changed, time: nowTimestamp() };
    const k = keyOf(me);
    const prev = managed.get(k);
    if (prev) me.set = prev.set.union(changed);
    managed.set(k, me);
  }
  capUpdaters(managed);
  const out = encodeManaged(managed);
  if (out) obj.metadata.managedFields = out;
  else delete obj.metadata.managedFields;
}

export interface ApplyOptions {
  force: boolean;
}

/** What an apply computed in its first stage, for the second (conflicts and ownership). */
export interface ApplyPlan {
  managed: Map<string, Managed>;
  key: string;
  setChanged: boolean;
  /** the fields of the live object's client-side apply annotation (kubectl upgrading to server-side apply) */
  lastApplied?: FieldSet;
}

/** The annotation kubectl's client-side apply keeps its last configuration in. */
export const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
/** Only kubectl's own server-side apply takes over from its client-side apply (kube's lastAppliedManager). */
const KUBECTL = 'kubectl';

/**
 * Stage one of an apply: merges config into live, gives the applier the fields of config,
 * and prunes what it owned before and no longer sets. live is null for a create.
 * Returns the new object (without managedFields) and the plan for finishApply.
 */
export function planApply(live: any | null, config: any, id: WriteIdentity, ctx: ManagedContext): { obj: any; plan: ApplyPlan } {
  // The merge and the prune run on the patch clock (patch-limits.ts), as every patch engine.
  clock = new PatchClock();
  try {
    return planApplyTimed(live, config, id, ctx);
  } finally {
    clock = undefined;
  }
}

/** The clock of the apply being planned, ticked per merged node and pruned path. */
let clock: PatchClock | undefined;

function planApplyTimed(live: any | null, config: any, id: WriteIdentity, ctx: ManagedContext): { obj: any; plan: ApplyPlan } {
  const ignored = ignoredPaths(id.subresource, ctx.hasStatus, ctx.statusReset);
  let managed = decodeManaged(live?.metadata?.managedFields) ?? new Map<string, Managed>();
  const liveObj = live ? stripManaged(live) : null;
  if (live && managed.size === 0) {
    // An object nobody manages yet: what it holds belongs to "before-first-apply".
    const set = withoutIgnored(fieldsOf(liveObj, ctx.root), ignored);
    const m: Managed = { manager: 'before-first-apply', operation: 'Update', apiVersion: id.apiVersion, subresource: '', set, time: nowTimestamp() };
    managed = new Map([[keyOf(m), m]]);
  }
  const merged = mergeApply(liveObj ?? {}, config, ctx.root);
  const newSet = withoutIgnored(fieldsOf(config, ctx.root), ignored);
  const me: Managed = { manager: id.manager, operation: 'Apply', apiVersion: id.apiVersion, subresource: id.subresource, set: newSet };
  const key = keyOf(me);
  const last = managed.get(key);
  me.time = last?.time;
  managed.set(key, me);
  const setChanged = !last || !last.set.sameMembers(newSet) || last.apiVersion !== id.apiVersion;
  if (last) prune(merged, last.set, managed, ignored, ctx.root);
  delete merged.metadata?.managedFields;
  const plan: ApplyPlan = { managed, key, setChanged };
  const annotation = live?.metadata?.annotations?.[LAST_APPLIED];
  if (id.manager === KUBECTL && typeof annotation === 'string' && annotation !== '') {
    // kubectl moving an object from client-side to server-side apply: the fields its
    // annotation lists may be taken from the client-side applier without a conflict, and the
    // annotation follows the new configuration (kube's lastAppliedManager and lastAppliedUpdater).
    try {
      plan.lastApplied = fieldsOf(JSON.parse(annotation), ctx.root);
    } catch {
      // an annotation that is not JSON allows nothing
    }
    const cfg = structuredClone(config);
    if (cfg.metadata?.annotations) {
      delete cfg.metadata.annotations[LAST_APPLIED];
      if (Object.keys(cfg.metadata.annotations).length === 0) delete cfg.metadata.annotations;
    }
    merged.metadata ??= {};
    merged.metadata.annotations = { ...(merged.metadata.annotations ?? {}), [LAST_APPLIED]: JSON.stringify(cfg) };
  }
  return { obj: merged, plan };
}

/**
 * Stage two, on the object as it will be stored (after the kind's own preparation):
 * the conflicts with other managers, then ownership moves. Throws 409 on conflicts
 * unless forced.
 */
export function finishApply(live: any | null, obj: any, plan: ApplyPlan, id: WriteIdentity, opts: ApplyOptions, ctx: ManagedContext): void {
  const ignored = ignoredPaths(id.subresource, ctx.hasStatus, ctx.statusReset);
  const after = stripManaged(obj);
  if (plan.lastApplied) {
    // The synced annotation is bookkeeping, not a change anyone owns.
    const was = live?.metadata?.annotations?.[LAST_APPLIED];
    after.metadata.annotations = { ...(after.metadata.annotations ?? {}), [LAST_APPLIED]: was };
  }
  const c = compare(live ? stripManaged(live) : {}, after, ctx.root);
  // (a create modifies nothing: its added fields need no union, withoutIgnored copies them)
  const changed = withoutIgnored(c.modified.empty() ? c.added : c.modified.union(c.added), ignored);
  let conflicts: Array<{ manager: Managed; path: string[] }> = [];
  for (const [k, m] of plan.managed) {
    if (k === plan.key) continue;
    const hit = m.set.intersection(changed);
    if (!hit.empty()) for (const p of hit.paths()) conflicts.push({ manager: m, path: p });
  }
  if (plan.lastApplied) conflicts = conflicts.filter((x) => !plan.lastApplied!.has(x.path));
  if (conflicts.length > 0 && !opts.force) throw applyConflict(conflicts);
  for (const [k, m] of plan.managed) {
    if (k === plan.key) continue;
    m.set = m.set.difference(changed).difference(c.removed);
  }
  const me = plan.managed.get(plan.key)!;
  if (plan.setChanged || !deepEqual(stripManaged(live ?? {}), stripManaged(obj)) || !me.time) me.time = nowTimestamp();
  capUpdaters(plan.managed);
  const out = encodeManaged(plan.managed);
  if (out) obj.metadata.managedFields = out;
  else delete obj.metadata.managedFields;
}

function printManager(m: Managed): string {
  let s = JSON.stringify(m.manager);
  if (m.subresource) s += ` with subresource ${JSON.stringify(m.subresource)}`;
  if (m.operation === 'Update') s += ` using ${m.apiVersion}`;
  return s;
}

/** kube-apiserver's apply conflict: 409 Conflict, one FieldManagerConflict cause per field. */
export function applyConflict(conflicts: Array<{ manager: Managed; path: string[] }>): StatusError {
  const causes = conflicts.map((c) => ({ reason: 'FieldManagerConflict', message: `conflict with ${printManager(c.manager)}`, field: pathString(c.path) }));
  let message: string;
  if (conflicts.length === 1) {
    message = `Apply failed with 1 conflict: conflict with ${printManager(conflicts[0].manager)}: ${pathString(conflicts[0].path)}`;
  } else {
    const by = new Map<string, string[]>();
    for (const c of conflicts) {
      const k = printManager(c.manager);
      if (!by.has(k)) by.set(k, []);
      by.get(k)!.push(pathString(c.path));
    }
    const lines: string[] = [];
    for (const k of [...by.keys()].sort()) {
      lines.push(`conflicts with ${k}:`);
      for (const p of by.get(k)!) lines.push(`- ${p}`);
    }
    message = `Apply failed with ${conflicts.length} conflicts: ${lines.join('\n')}`;
  }
  return new StatusError(409, StatusReason.Conflict, message, { causes });
}

// ---------------------------------------------------------------- merge and prune

/** The applier's configuration merged over the live object (structured-merge-diff's Merge). */
export function mergeApply(lhs: any, rhs: any, n: TypeNode): any {
  clock?.tick();
  if (rhs === undefined) return lhs;
  if (rhs === null) return undefined;
  if (Array.isArray(rhs)) {
    if (!Array.isArray(lhs)) return structuredClone(rhs);
    const mode = n.kind === 'list' ? listMode(n) : 'atomic';
    if (mode === 'atomic') return structuredClone(rhs);
    return mergeLists(lhs, rhs, n);
  }
  if (isObj(rhs)) {
    if (!isObj(lhs)) return mergeApply({}, rhs, n);
    if ((n.kind === 'struct' || n.kind === 'map') && n.atomic) return structuredClone(rhs);
    const out: Record<string, any> = { ...lhs };
    // (the configuration's keys are the client's: own fields only, `__proto__` a plain one)
    for (const [k, v] of Object.entries(rhs)) {
      const cn = n.kind === 'struct' || n.kind === 'map' ? childNode(n, k) : ANY;
      const m = mergeApply(ownValue(lhs, k), v, cn);
      if (m === undefined) delete out[k];
      else setOwn(out, k, m);
    }
    return out;
  }
  return rhs;
}

/**
 * Merges two associative lists: items of the configuration in its order, live-only items
 * kept in place between them (the interleaving structured-merge-diff uses).
 */
function mergeLists(lhs: any[], rhs: any[], n: TypeNode): any[] {
  const en = itemNode(n);
  const lpe = lhs.map((x, i) => itemElement(n, x, i) ?? `#l${i}`);
  const rpe = rhs.map((x, i) => itemElement(n, x, i) ?? `#r${i}`);
  const lIndex = new Map<string, number>();
  lpe.forEach((p, i) => {
    if (!lIndex.has(p)) lIndex.set(p, i);
  });
  const rIndex = new Map<string, number>();
  rpe.forEach((p, i) => {
    if (!rIndex.has(p)) rIndex.set(p, i);
  });
  const out: any[] = [];
  const emitted = new Set<string>();
  let ri = 0;
  const emitR = (j: number) => {
    const p = rpe[j];
    if (emitted.has(p)) return;
    emitted.add(p);
    const l = lIndex.has(p) ? lhs[lIndex.get(p)!] : undefined;
    const m = mergeApply(l, rhs[j], en);
    if (m !== undefined) out.push(m);
  };
  lhs.forEach((item, i) => {
    const j = rIndex.get(lpe[i]);
    if (j === undefined) {
      out.push(item); // live-only items keep their place
      return;
    }
    // the configuration's items up to this shared one come first, in its order
    for (; ri <= j; ri++) emitR(ri);
  });
  for (; ri < rhs.length; ri++) emitR(ri);
  return out;
}

/** Removes from obj what the applier owned last time and nobody owns now. */
function prune(obj: any, last: FieldSet, managed: Map<string, Managed>, ignored: string[][], root: TypeNode): void {
  const owned = (p: string[]) => [...managed.values()].some((m) => m.set.hasPrefix(p));
  const isIgnored = (p: string[]) => ignored.some((ig) => ig.length <= p.length && ig.every((x, i) => x === p[i])) || (p.length === 1 && p[0] === 'f:metadata');
  const candidates: string[][] = [];
  const walk = (s: FieldSet, path: string[]) => {
    // A named field is a candidate whether or not it was a member itself (EnsureNamedFieldsAreMembers).
    if (path.length > 0 && (s.member || path[path.length - 1].startsWith('f:'))) candidates.push(path);
    for (const [k, c] of s.children) walk(c, [...path, k]);
  };
  walk(last, []);
  // Shallowest first: a path goes only when nobody owns anything below it, and then its
  // contents go with it (removing the contents first would leave items without their keys).
  candidates.sort((a, b) => a.length - b.length);
  const lists = new ListItems();
  for (const p of candidates) {
    clock?.tick();
    if (isIgnored(p) || owned(p)) continue;
    removePath(obj, p, root, lists);
  }
  lists.removeMarked();
}

/**
 * The items of the lists prune walks, found by path element through one index per list
 * (built on first use) instead of a scan per removed path, which made pruning n items of an
 * n-item list quadratic (5,000 env vars: 13 s of the front thread). Items are marked while
 * pruning and taken out at the end, so the indexes stay right; what lies inside a marked
 * item may still be pruned, to no effect.
 */
class ListItems {
  private readonly index = new Map<any[], Map<string, number>>();
  private readonly marked = new Map<any[], Set<number>>();

  find(list: any[], node: TypeNode, pe: string): number {
    let ix = this.index.get(list);
    if (!ix) {
      ix = new Map();
      for (let j = 0; j < list.length; j++) {
        const e = itemElement(node, list[j], j);
        if (e !== undefined && !ix.has(e)) ix.set(e, j);
      }
      this.index.set(list, ix);
    }
    const i = ix.get(pe);
    return i === undefined || this.marked.get(list)?.has(i) ? -1 : i;
  }

  mark(list: any[], i: number): void {
    let m = this.marked.get(list);
    if (!m) this.marked.set(list, (m = new Set()));
    m.add(i);
  }

  removeMarked(): void {
    for (const [list, m] of this.marked) {
      let w = 0;
      for (let r = 0; r < list.length; r++) if (!m.has(r)) list[w++] = list[r];
      list.length = w;
    }
  }
}

function removePath(obj: any, path: string[], n: TypeNode, lists: ListItems): void {
  let cur: any = obj;
  let node = n;
  for (let i = 0; i < path.length; i++) {
    const pe = path[i];
    const lastStep = i === path.length - 1;
    if (pe.startsWith('f:')) {
      if (!isObj(cur)) return;
      const k = pe.slice(2);
      if (lastStep) {
        delete cur[k];
        return;
      }
      node = node.kind === 'struct' || node.kind === 'map' ? childNode(node, k) : ANY;
      cur = ownValue(cur, k);
    } else {
      if (!Array.isArray(cur)) return;
      const idx = lists.find(cur, node, pe);
      if (idx < 0) return;
      if (lastStep) {
        lists.mark(cur, idx);
        return;
      }
      cur = cur[idx];
      node = itemNode(node);
    }
  }
}

export function fieldManagerInvalid(kind: 'PatchOptions' | 'CreateOptions' | 'UpdateOptions', causes: Array<{ field: string; type: 'FieldValueRequired' | 'FieldValueTooLong' | 'FieldValueInvalid' | 'FieldValueForbidden'; value?: unknown; detail?: string }>): StatusError {
  return errors.invalid(kind, 'meta.k8s.io', '', causes);
}
