// What mutating and validating webhooks share (kube's webhook/generic/webhook.go): the
// request's kind and resource, ShouldCallHook (namespaceSelector, objectSelector, rules with
// matchPolicy: Equivalent, matchConditions), the object in the hook's version, and how an
// answer's warnings and audit annotations reach the request.
//
// Thread ownership: none (functions over the caller's state).
import type { ResourceInfo } from '../../api/catalog-types.js';
import { StatusError } from '../../errors.js';
import { forbidden, type Attributes, type GroupVersionKind, type GroupVersionResource, type ObjectSource } from '../plugin.js';
import type { CompileMatchConditions } from '../match-conditions.js';
import { admissionMetrics } from './metrics.js';
import { convertObject, kindOf, type EquivalentResourceMapper, type ServedGroupVersions } from './equivalents.js';
import { matchNamespaceSelector } from './predicates/namespace.js';
import { matchObjectSelector } from './predicates/object.js';
import { ruleMatches, type RuleSubject } from './predicates/rules.js';
import type { Invocation } from './request/admissionreview.js';
import type { Hook } from './source.js';

/** The options both webhook plugins take (the second constructor argument). */
export interface WebhookPluginConfig {
  /** compiles matchConditions (src/cel/match-conditions.ts); without it a hook with conditions fails by its failurePolicy */
  compileMatchConditions?: CompileMatchConditions;
  /** the served resources, for matchPolicy: Equivalent (the server's Catalog); else the built-in data and the cached CRDs */
  catalog?: ServedGroupVersions;
  /** sets an object's defaults after a webhook patched it (kube defaults the patched object) */
  defaulter?: (obj: any, info: ResourceInfo) => void;
}

/** The request's kind (the seam's, else the resource's or subresource's kind). */
export function requestKind(a: Attributes): GroupVersionKind {
  return a.kind ?? kindOf(a.info, a.subresource);
}

export function requestResource(a: Attributes): GroupVersionResource {
  return a.resource ?? { group: a.info.group, version: a.info.version, resource: a.info.resource };
}

/**
 * kube's ShouldCallHook: the invocation (the resource and kind the hook is called with), or
 * undefined when the hook does not apply. Throws the StatusError the request fails with (a
 * missing namespace; matchConditions that cannot be evaluated under failurePolicy Fail).
 */
export function shouldCallHook(
  hook: Hook,
  a: Attributes,
  objects: ObjectSource,
  mapper: EquivalentResourceMapper,
  versioned: (kind: GroupVersionKind, resource: GroupVersionResource) => { object: any; oldObject: any },
): Invocation | undefined {
  const resource = requestResource(a);
  const ns = matchNamespaceSelector(objects, hook.namespaceSelector, a, resource.resource);
  if (ns === false) return undefined;
  if (!matchObjectSelector(hook.objectSelector, a.obj, a.old)) return undefined;
  const subject: RuleSubject = { operation: a.operation, resource, subresource: a.subresource, namespace: a.namespace };
  let inv: Invocation | undefined;
  for (const r of hook.rules) {
    if (ruleMatches(r, subject)) {
      inv = { kind: requestKind(a), resource, subresource: a.subresource };
      break;
    }
  }
  if (!inv && hook.matchPolicy === 'Equivalent') {
    const equivalents = mapper.equivalentResourcesFor(resource, a.subresource);
    outer: for (const r of hook.rules) {
      for (const eq of equivalents) {
        if (eq.group === resource.group && eq.version === resource.version && eq.resource === resource.resource) continue;
        if (ruleMatches(r, { ...subject, resource: eq })) {
          const kind = mapper.kindFor(eq, a.subresource);
          if (!kind) throw errorsInternal(`unable to convert to ${eq.group}/${eq.version}, Resource=${eq.resource}: unknown kind`);
          inv = { kind, resource: eq, subresource: a.subresource };
          break outer;
        }
      }
    }
  }
  if (!inv) return undefined;
  if (ns instanceof StatusError) throw ns;
  if (hook.matchConditionsError !== undefined) {
    if (hook.failurePolicy === 'Ignore') return undefined;
    throw forbidden(a, hook.matchConditionsError);
  }
  if (hook.matchConditions) {
    const v = versioned(inv.kind, inv.resource);
    const request = {
      kind: inv.kind,
      resource: inv.resource,
      subResource: inv.subresource,
      requestKind: requestKind(a),
      requestResource: resource,
      requestSubResource: a.subresource,
      name: a.name,
      namespace: a.namespace,
      operation: a.operation,
      userInfo: a.user ? { username: a.user.name, uid: a.user.uid, groups: a.user.groups, extra: a.user.extra } : {},
      dryRun: a.dryRun,
      options: a.options ?? null,
    };
    const m = hook.matchConditions(a, { object: v.object, oldObject: v.oldObject, request });
    if (m.error !== undefined) {
      if (hook.failurePolicy === 'Ignore') return undefined;
      throw forbidden(a, m.error);
    }
    if (!m.matches) {
      admissionMetrics.observeMatchConditionExclusion(hook.name, hook.type, a.operation);
      return undefined;
    }
  }
  return inv;
}

function errorsInternal(message: string): StatusError {
  return new StatusError(500, 'InternalError', `Internal error occurred: ${message}`, { causes: [{ message }] });
}

/**
 * The request's objects in other versions of their resource, converted on first use and
 * kept (kube's VersionedAttributes). `dirty` marks them stale after a mutation.
 */
export class VersionedObjects {
  private byVersion = new Map<string, { object: any; oldObject: any }>();

  constructor(
    private readonly a: Attributes,
    private readonly mapper: EquivalentResourceMapper,
  ) {}

  /** The objects as a hook of this kind and resource sees them. */
  get(kind: GroupVersionKind, resource: GroupVersionResource): { object: any; oldObject: any } {
    const req = requestResource(this.a);
    if (resource.group === req.group && resource.version === req.version) return { object: this.a.obj, oldObject: this.a.old };
    const key = `${resource.group}/${resource.version}/${kind.kind}`;
    let v = this.byVersion.get(key);
    if (!v) {
      const from = this.a.info;
      const to = this.mapper.info(resource) ?? from;
      // a subresource's own kind (Scale) is the same in every version
      const convert = this.a.subresource === '' || this.a.subresource === 'status';
      v = {
        object: convert ? convertObject(this.a.obj, from, to) : this.a.obj,
        oldObject: convert ? convertObject(this.a.old, from, to) : this.a.old,
      };
      this.byVersion.set(key, v);
    }
    return v;
  }

  /** After a mutation of the request's object: other versions are converted again. */
  invalidate(): void {
    this.byVersion.clear();
  }
}

/** The request's object replaced by `next` while keeping its identity (the store holds references to it and its metadata). */
export function replaceObject(target: any, next: any): void {
  const meta = target.metadata;
  for (const k of Object.keys(target)) if (!Object.hasOwn(next, k)) delete target[k];
  for (const k of Object.keys(next)) {
    if (k === 'metadata' && meta && typeof meta === 'object' && next.metadata && typeof next.metadata === 'object' && !Array.isArray(next.metadata)) {
      for (const mk of Object.keys(meta)) if (!Object.hasOwn(next.metadata, mk)) delete meta[mk];
      for (const mk of Object.keys(next.metadata)) setOwnKey(meta, mk, next.metadata[mk]);
      target.metadata = meta;
    } else setOwnKey(target, k, next[k]);
  }
}

function setOwnKey(o: any, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
  else o[k] = v;
}

/** kube's warning recorder limits (endpoints/filters/warning.go): 4 KiB of runes in all, then 256 per warning. */
const TRUNCATE_TOTAL_RUNES = 4 * 1024;
const TRUNCATE_ITEM_RUNES = 256;

const runes = (s: string) => [...s].length;
const truncate = (s: string) => {
  const r = [...s];
  return r.length > TRUNCATE_ITEM_RUNES ? r.slice(0, TRUNCATE_ITEM_RUNES).join('') : s;
};

/**
 * Adds a webhook's warning to the request as kube's recorder does: empty, duplicate and
 * unprintable ones dropped; past 4 KiB of text every warning is cut to 256 runes, and what
 * still does not fit is dropped.
 */
export function addWarning(a: Attributes, text: string): void {
  if (!text || /[\x00-\x08\x0a-\x1f\x7f]/.test(text)) return;
  const list = (a.warnings ??= []);
  if (list.includes(text)) return;
  const state = truncation.get(list) ?? { truncating: false };
  let written = 0;
  for (const w of list) written += runes(w);
  if (state.truncating && written >= TRUNCATE_TOTAL_RUNES) return;
  if (!state.truncating && written + runes(text) > TRUNCATE_TOTAL_RUNES) {
    state.truncating = true;
    truncation.set(list, state);
    for (let i = 0; i < list.length; i++) list[i] = truncate(list[i]);
    written = list.reduce((n, w) => n + runes(w), 0);
  }
  const t = state.truncating ? truncate(text) : text;
  if (state.truncating && written + runes(t) > TRUNCATE_TOTAL_RUNES) return;
  list.push(t);
}
const truncation = new WeakMap<string[], { truncating: boolean }>();

/** kube's Attributes.AddAnnotation: a key already set to another value is not overwritten. */
export function addAuditAnnotation(a: Attributes, key: string, value: string): void {
  const m = (a.auditAnnotations ??= {});
  if (!Object.hasOwn(m, key)) m[key] = value;
}
