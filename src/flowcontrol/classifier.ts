// Priority-and-fairness classification: which FlowSchema (and so which priority level) a
// request belongs to, as kube-apiserver decides it. The schemas are tried in order of
// spec.matchingPrecedence, then name; the first whose rules match wins. A rule matches when
// one of its subjects matches the user and one of its resource or non-resource rules
// matches the request. Schemas whose priority level does not exist (Dangling) are skipped.
//
// Thread ownership: the front thread. The configuration is read from the front thread's
// caches of FlowSchemas and PriorityLevelConfigurations; a commit to either marks it stale
// and the next request rebuilds it. Results are remembered per (user, request shape) in a
// bounded map that a rebuild drops, so a GET on the hot path costs two map lookups.
import type { UserInfo } from '../auth/user.js';
import type { RequestInfo } from '../request/request-info.js';
import type { HeaderList } from '../http/types.js';
import type { LevelState } from './priority-levels.js';
import { mandatoryFlowSchemas, mandatoryPriorityLevels } from './bootstrap-objects.js';

/** Response headers naming the matched objects by uid (Go's canonical spelling, as kube's replies carry them). */
export const FLOW_SCHEMA_UID_HEADER = 'X-Kubernetes-Pf-Flowschema-Uid';
export const PRIORITY_LEVEL_UID_HEADER = 'X-Kubernetes-Pf-Prioritylevel-Uid';

const SA_PREFIX = 'system:serviceaccount:';

type SubjectTest = (u: UserInfo) => boolean;
type RuleTest = (info: RequestInfo) => boolean;

/** A priority level as the filter uses it; its mutable runtime state lives in the limiter. */
export interface LevelConfig {
  name: string;
  uid: string;
  exempt: boolean;
  shares: number;
  lendablePercent: number;
  /** how much of its nominal seats it may borrow on top, in percent; null: no bound but the server's */
  borrowingLimitPercent: number | null;
  /** 'Reject' or 'Queue' (Limited levels) */
  limitResponse: 'Reject' | 'Queue';
  queues: number;
  handSize: number;
  queueLengthLimit: number;
  /** the level's seats and queues, attached by the filter when the configuration is rebuilt */
  state?: LevelState;
}

export interface SchemaConfig {
  name: string;
  uid: string;
  precedence: number;
  distinguisher: '' | 'ByUser' | 'ByNamespace';
  level: LevelConfig;
  rules: Array<{ subjects: SubjectTest[]; rules: RuleTest[] }>;
}

/** The outcome for one (user, request shape): shared by every request with that shape, never mutated. */
export interface Classification {
  schema: SchemaConfig;
  level: LevelConfig;
  /** the two X-Kubernetes-PF-* headers */
  headers: HeaderList;
  /** the filter's per-outcome accounting, attached on first use (counters and seat release) */
  flow?: unknown;
}

const has = (list: unknown, v: string): boolean => Array.isArray(list) && (list.includes('*') || list.includes(v));

function compileSubject(s: any): SubjectTest | null {
  switch (s?.kind) {
    case 'User': {
      const name = s.user?.name;
      if (typeof name !== 'string') return null;
      return name === '*' ? () => true : (u) => u.name === name;
    }
    case 'Group': {
      const name = s.group?.name;
      if (typeof name !== 'string') return null;
      return name === '*' ? () => true : (u) => u.groups.includes(name);
    }
    case 'ServiceAccount': {
      const ns = s.serviceAccount?.namespace;
      const name = s.serviceAccount?.name;
      if (typeof ns !== 'string' || typeof name !== 'string') return null;
      const prefix = `${SA_PREFIX}${ns}:`;
      if (name === '*') return (u) => u.name.startsWith(prefix) && u.name.indexOf(':', prefix.length) < 0 && u.name.length > prefix.length;
      const full = prefix + name;
      return (u) => u.name === full;
    }
    default:
      return null;
  }
}

function compileResourceRule(r: any): RuleTest {
  const verbs = r?.verbs;
  const groups = r?.apiGroups;
  const resources = r?.resources;
  const namespaces = r?.namespaces;
  const clusterScope = r?.clusterScope === true;
  return (info) => {
    if (!info.isResourceRequest) return false;
    if (!has(verbs, info.verb) || !has(groups, info.apiGroup)) return false;
    const res = info.subresource ? `${info.resource}/${info.subresource}` : info.resource;
    if (!has(resources, res)) return false;
    return info.namespace === '' ? clusterScope : has(namespaces, info.namespace);
  };
}

function urlMatches(patterns: unknown, path: string): boolean {
  if (!Array.isArray(patterns)) return false;
  for (const p of patterns) {
    if (typeof p !== 'string') continue;
    if (p === '*' || p === path) return true;
    // "/healthz/*" covers everything under /healthz/ (a trailing * is a prefix match).
    if (p.length > 1 && p.endsWith('*') && path.startsWith(p.slice(0, -1))) return true;
  }
  return false;
}

function compileNonResourceRule(r: any): RuleTest {
  const verbs = r?.verbs;
  const urls = r?.nonResourceURLs;
  return (info) => !info.isResourceRequest && has(verbs, info.verb) && urlMatches(urls, info.path);
}

export function levelFromObject(o: any): LevelConfig {
  const spec = o?.spec ?? {};
  const exempt = spec.type === 'Exempt';
  const lim = spec.limited ?? {};
  const q = lim.limitResponse?.queuing ?? {};
  return {
    name: o.metadata.name,
    uid: o.metadata.uid ?? '',
    exempt,
    shares: exempt ? Number(spec.exempt?.nominalConcurrencyShares ?? 0) : Number(lim.nominalConcurrencyShares ?? 30),
    lendablePercent: Number((exempt ? spec.exempt?.lendablePercent : lim.lendablePercent) ?? 0),
    borrowingLimitPercent: !exempt && lim.borrowingLimitPercent !== undefined && lim.borrowingLimitPercent !== null ? Number(lim.borrowingLimitPercent) : null,
    limitResponse: lim.limitResponse?.type === 'Queue' ? 'Queue' : 'Reject',
    queues: Math.max(1, Number(q.queues ?? 64)),
    handSize: Math.max(1, Number(q.handSize ?? 8)),
    queueLengthLimit: Math.max(1, Number(q.queueLengthLimit ?? 50)),
  };
}

export function schemaFromObject(o: any, levels: Map<string, LevelConfig>): SchemaConfig | null {
  const spec = o?.spec ?? {};
  const level = levels.get(spec.priorityLevelConfiguration?.name);
  if (!level) return null; // dangling: kube does not classify into it
  const dm = spec.distinguisherMethod?.type;
  const rules: SchemaConfig['rules'] = [];
  for (const r of Array.isArray(spec.rules) ? spec.rules : []) {
    const subjects = (Array.isArray(r?.subjects) ? r.subjects : []).map(compileSubject).filter((x: SubjectTest | null): x is SubjectTest => x !== null);
    const tests = [...(Array.isArray(r?.resourceRules) ? r.resourceRules.map(compileResourceRule) : []), ...(Array.isArray(r?.nonResourceRules) ? r.nonResourceRules.map(compileNonResourceRule) : [])];
    if (subjects.length && tests.length) rules.push({ subjects, rules: tests });
  }
  return {
    name: o.metadata.name,
    uid: o.metadata.uid ?? '',
    precedence: Number(spec.matchingPrecedence ?? 1000),
    distinguisher: dm === 'ByUser' || dm === 'ByNamespace' ? dm : '',
    level,
    rules,
  };
}

function matches(s: SchemaConfig, u: UserInfo, info: RequestInfo): boolean {
  for (const r of s.rules) {
    if (!r.subjects.some((t) => t(u))) continue;
    if (r.rules.some((t) => t(info))) return true;
  }
  return false;
}

/** How many (user, request shape) outcomes are remembered before the map starts over. */
const CACHE_LIMIT = 8192;

/** A user's part of the cache key: name and groups, computed once per UserInfo object. */
const userKeys = new WeakMap<UserInfo, string>();
function userKey(u: UserInfo): string {
  let k = userKeys.get(u);
  if (k === undefined) userKeys.set(u, (k = `${u.name}\0${u.groups.join('\0')}`));
  return k;
}

function requestKey(info: RequestInfo): string {
  return info.isResourceRequest ? `${info.verb} ${info.apiGroup} ${info.resource} ${info.subresource} ${info.namespace}` : `${info.verb} ${info.path}`;
}

/** One user's remembered outcomes, with the last one at hand (clients repeat themselves). */
interface UserCache {
  byRequest: Map<string, Classification | null>;
  last: RequestInfo | null;
  lastOutcome: Classification | null;
}

/** Whether two requests have the same shape as far as classification goes (the object's name does not count). */
function sameShape(a: RequestInfo, b: RequestInfo): boolean {
  if (a.isResourceRequest !== b.isResourceRequest || a.verb !== b.verb) return false;
  if (!a.isResourceRequest) return a.path === b.path;
  return a.resource === b.resource && a.namespace === b.namespace && a.apiGroup === b.apiGroup && a.subresource === b.subresource;
}

export class Classifier {
  private schemas: SchemaConfig[] = [];
  private levelsByName = new Map<string, LevelConfig>();
  private stale = true;
  /** userKey → that user's outcomes */
  private cache = new Map<string, UserCache>();
  private cached = 0;
  /** Told after each rebuild, with the new levels (the limiter resizes its own state). */
  onRebuild: ((levels: Map<string, LevelConfig>) => void) | null = null;

  /** read: the FlowSchema and PriorityLevelConfiguration objects as the caches hold them now */
  constructor(private read: () => { schemas: any[]; levels: any[] }) {}

  /** A FlowSchema or priority level changed: the next request rebuilds. */
  invalidate(): void {
    this.stale = true;
  }

  levels(): Map<string, LevelConfig> {
    if (this.stale) this.rebuild();
    return this.levelsByName;
  }

  private rebuild(): void {
    this.stale = false;
    const { schemas, levels } = this.read();
    const byName = new Map<string, LevelConfig>();
    for (const o of levels) if (o?.metadata?.name) byName.set(o.metadata.name, levelFromObject(o));
    // The mandatory levels and schemas are there even while their objects are not (deleted,
    // not created yet): kube's controller imagines them from its bootstrap copies (imaginePL,
    // digestFlowSchemasLocked); they carry no uid, so no PF header names them.
    for (const o of mandatoryPriorityLevels()) if (!byName.has(o.metadata.name)) byName.set(o.metadata.name, levelFromObject(o));
    const out: SchemaConfig[] = [];
    const seen = new Set<string>();
    for (const o of schemas) {
      const s = o?.metadata?.name ? schemaFromObject(o, byName) : null;
      if (s) out.push(s);
      if (s) seen.add(s.name);
    }
    for (const o of mandatoryFlowSchemas()) if (!seen.has(o.metadata.name)) out.push(schemaFromObject(o, byName)!);
    out.sort((a, b) => a.precedence - b.precedence || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.schemas = out;
    this.levelsByName = byName;
    this.cache = new Map();
    this.cached = 0;
    this.onRebuild?.(byName);
  }

  /**
   * The request's FlowSchema and priority level (null only when a user-made level named
   * catch-all is broken: the request then goes unlimited, as there is nothing to limit it by).
   */
  classify(u: UserInfo, info: RequestInfo): Classification | null {
    if (this.stale) this.rebuild();
    const uk = userKey(u);
    let uc = this.cache.get(uk);
    if (uc !== undefined) {
      // the same shape as this user's previous request: no key to build
      if (uc.last !== null && sameShape(uc.last, info)) return uc.lastOutcome;
      const rk = requestKey(info);
      const hit = uc.byRequest.get(rk);
      if (hit !== undefined) {
        uc.last = info;
        uc.lastOutcome = hit;
        return hit;
      }
    }
    const c = this.compute(u, info);
    if (this.cached >= CACHE_LIMIT) {
      this.cache = new Map();
      this.cached = 0;
      uc = undefined;
    }
    if (uc === undefined) this.cache.set(uk, (uc = { byRequest: new Map(), last: null, lastOutcome: null }));
    uc.byRequest.set(requestKey(info), c);
    uc.last = info;
    uc.lastOutcome = c;
    this.cached++;
    return c;
  }

  private compute(u: UserInfo, info: RequestInfo): Classification | null {
    for (const s of this.schemas) if (matches(s, u, info)) return outcome(s);
    // Nothing matched (a user in neither system:authenticated nor system:unauthenticated):
    // kube falls back to the catch-all schema all the same.
    const level = this.levelsByName.get('catch-all');
    if (!level) return null;
    return outcome(this.schemas.find((s) => s.name === 'catch-all') ?? { name: 'catch-all', uid: '', precedence: 10000, distinguisher: 'ByUser', level, rules: [] });
  }
}

function outcome(s: SchemaConfig): Classification {
  const headers: HeaderList = [];
  if (s.uid) headers.push([FLOW_SCHEMA_UID_HEADER, s.uid]);
  if (s.level.uid) headers.push([PRIORITY_LEVEL_UID_HEADER, s.level.uid]);
  return { schema: s, level: s.level, headers };
}
