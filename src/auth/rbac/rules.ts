// PolicyRule evaluation, as kube's RBAC authorizer and escalation check define it: whether a
// rule allows one request, whether a set of rules covers another (breaking the second down
// to one verb, group, resource and name per rule), and the compact form escalation errors
// print. Pure functions; no state.
import type { AuthorizationAttributes } from '../../http/filters/authorization.js';

export interface PolicyRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

const list = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/** A stored rule, normalised (absent lists as empty; non-string entries dropped). */
export function ruleOf(r: any): PolicyRule {
  const out: PolicyRule = { verbs: list(r?.verbs) };
  if (r?.apiGroups !== undefined) out.apiGroups = list(r.apiGroups);
  if (r?.resources !== undefined) out.resources = list(r.resources);
  if (r?.resourceNames !== undefined) out.resourceNames = list(r.resourceNames);
  if (r?.nonResourceURLs !== undefined) out.nonResourceURLs = list(r.nonResourceURLs);
  return out;
}

const matchesOrStar = (set: string[] | undefined, v: string): boolean => {
  if (!set) return false;
  for (const s of set) if (s === '*' || s === v) return true;
  return false;
};

function resourceMatches(rule: PolicyRule, combined: string, subresource: string): boolean {
  for (const r of rule.resources ?? []) {
    if (r === '*' || r === combined) return true;
    // "*/scale" matches the scale subresource of any resource
    if (subresource && r.length === subresource.length + 2 && r.startsWith('*/') && r.endsWith(subresource)) return true;
  }
  return false;
}

function nameMatches(rule: PolicyRule, name: string): boolean {
  const names = rule.resourceNames;
  if (!names || names.length === 0) return true;
  return names.includes(name);
}

/**
 * strings.TrimRight(s, "*"), by a loop: /\*+$/ tries every star of a run that stops short of the
 * end, quadratic in a rule's text, and this runs on every authorization of a non-resource URL.
 */
function trimStars(s: string): string {
  let end = s.length;
  while (end > 0 && s.charCodeAt(end - 1) === 42) end--;
  return s.slice(0, end);
}

export function urlMatches(patterns: string[] | undefined, path: string): boolean {
  for (const p of patterns ?? []) {
    if (p === '*' || p === path) return true;
    // a trailing * is a prefix match: "/healthz/*" covers "/healthz/etcd"
    if (p.endsWith('*') && path.startsWith(trimStars(p))) return true;
  }
  return false;
}

export function ruleAllows(a: AuthorizationAttributes, rule: PolicyRule): boolean {
  if (!matchesOrStar(rule.verbs, a.verb)) return false;
  if (!a.resourceRequest) return urlMatches(rule.nonResourceURLs, a.path);
  const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  return matchesOrStar(rule.apiGroups, a.apiGroup) && resourceMatches(rule, combined, a.subresource) && nameMatches(rule, a.name);
}

/** One rule per (group, resource, verb, name) and per (url, verb): kube's BreakdownRule. */
function breakdown(rule: PolicyRule): PolicyRule[] {
  const out: PolicyRule[] = [];
  for (const g of rule.apiGroups ?? []) {
    for (const r of rule.resources ?? []) {
      for (const v of rule.verbs) {
        if (rule.resourceNames?.length) for (const n of rule.resourceNames) out.push({ apiGroups: [g], resources: [r], verbs: [v], resourceNames: [n] });
        else out.push({ apiGroups: [g], resources: [r], verbs: [v] });
      }
    }
  }
  for (const u of rule.nonResourceURLs ?? []) for (const v of rule.verbs) out.push({ nonResourceURLs: [u], verbs: [v] });
  return out;
}

const hasAll = (set: string[] | undefined, want: string[] | undefined): boolean => (want ?? []).every((w) => (set ?? []).includes(w));

function resourcesCover(owner: string[] | undefined, wanted: string[] | undefined): boolean {
  const set = owner ?? [];
  if (set.includes('*') || hasAll(set, wanted)) return true;
  for (const path of wanted ?? []) {
    if (set.includes(path)) continue;
    const slash = path.indexOf('/');
    if (slash < 0) return false;
    if (!set.includes(`*/${path.slice(slash + 1)}`)) return false;
  }
  return true;
}

function urlsCover(owner: string[] | undefined, wanted: string[] | undefined): boolean {
  return (wanted ?? []).every((path) => (owner ?? []).some((o) => o === path || (o.endsWith('*') && path.startsWith(trimStars(o)))));
}

function ruleCovers(owner: PolicyRule, sub: PolicyRule): boolean {
  const verbs = owner.verbs.includes('*') || hasAll(owner.verbs, sub.verbs);
  const groups = (owner.apiGroups ?? []).includes('*') || hasAll(owner.apiGroups, sub.apiGroups);
  const ownerNames = owner.resourceNames ?? [];
  const names = sub.resourceNames?.length ? ownerNames.length === 0 || hasAll(ownerNames, sub.resourceNames) : ownerNames.length === 0;
  return verbs && groups && resourcesCover(owner.resources, sub.resources) && urlsCover(owner.nonResourceURLs, sub.nonResourceURLs) && names;
}

/** The parts of `wanted` that no rule of `owner` covers (empty: covered). */
export function uncovered(owner: PolicyRule[], wanted: PolicyRule[]): PolicyRule[] {
  const missing: PolicyRule[] = [];
  for (const w of wanted) for (const sub of breakdown(w)) if (!owner.some((o) => ruleCovers(o, sub))) missing.push(sub);
  return missing;
}

/** Merges single-group, single-resource rules that differ only by verb (kube's CompactRules). */
export function compactRules(rules: PolicyRule[]): PolicyRule[] {
  const out: PolicyRule[] = [];
  const simple = new Map<string, PolicyRule>();
  for (const r of rules) {
    const isSimple = !r.resourceNames?.length && !r.nonResourceURLs?.length && r.apiGroups?.length === 1 && r.resources?.length === 1;
    if (!isSimple) {
      out.push(r);
      continue;
    }
    const key = `${r.apiGroups![0]}\u0000${r.resources![0]}`;
    const have = simple.get(key);
    if (have) have.verbs.push(...r.verbs);
    else simple.set(key, { apiGroups: [...r.apiGroups!], resources: [...r.resources!], verbs: [...r.verbs] });
  }
  return [...out, ...simple.values()];
}

/** Go's %q of a []string: ["a" "b"]. */
export function goQuoteList(v: string[]): string {
  return `[${v.map((s) => JSON.stringify(s)).join(' ')}]`;
}

/** kube's CompactString of a rule, as escalation errors print it. */
export function compactString(r: PolicyRule): string {
  const parts: string[] = [];
  if (r.apiGroups?.length) parts.push(`APIGroups:${goQuoteList(r.apiGroups)}`);
  if (r.resources?.length) parts.push(`Resources:${goQuoteList(r.resources)}`);
  if (r.nonResourceURLs?.length) parts.push(`NonResourceURLs:${goQuoteList(r.nonResourceURLs)}`);
  if (r.resourceNames?.length) parts.push(`ResourceNames:${goQuoteList(r.resourceNames)}`);
  if (r.verbs.length) parts.push(`Verbs:${goQuoteList(r.verbs)}`);
  return `{${parts.join(', ')}}`;
}
