// The audit policy (--audit-policy-file): an audit.k8s.io/v1 Policy in YAML or JSON. Its
// rules are tried in order and the first that matches a request decides the level the
// request is recorded at, and which stages are left out. A request no rule matches is not
// recorded (level None), as in kube-apiserver.
//
// The file is read and checked once at start; a policy kube-apiserver would refuse (an
// unknown level or stage, a rule mixing resources and non-resource URLs, no rules at all)
// stops start-up with the reason.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { RequestInfo } from '../request/request-info.js';
import type { UserInfo } from '../auth/user.js';

export type Level = 'None' | 'Metadata' | 'Request' | 'RequestResponse';
export type Stage = 'RequestReceived' | 'ResponseStarted' | 'ResponseComplete' | 'Panic';

export const LEVELS: readonly Level[] = ['None', 'Metadata', 'Request', 'RequestResponse'];
export const STAGES: readonly Stage[] = ['RequestReceived', 'ResponseStarted', 'ResponseComplete', 'Panic'];

/** The rank of a level, to compare them (None < Metadata < Request < RequestResponse). */
export function levelRank(l: Level): number {
  return LEVELS.indexOf(l);
}

export interface GroupResources {
  group: string;
  resources: string[];
  resourceNames: string[];
}

export interface PolicyRule {
  level: Level;
  users: string[];
  userGroups: string[];
  verbs: string[];
  resources: GroupResources[];
  namespaces: string[];
  nonResourceURLs: string[];
  omitStages: Stage[];
  omitManagedFields?: boolean;
}

export interface Policy {
  rules: PolicyRule[];
  omitStages: Stage[];
  omitManagedFields: boolean;
}

/** What the policy decides for one request. */
export interface Decision {
  level: Level;
  omitStages: Stage[];
  omitManagedFields: boolean;
}

export class PolicyError extends Error {}

const NONE: Decision = { level: 'None', omitStages: [], omitManagedFields: false };

function strings(v: unknown, path: string, errs: string[]): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) {
    errs.push(`${path}: Invalid value: must be a list of strings`);
    return [];
  }
  return v as string[];
}

function stages(v: unknown, path: string, errs: string[]): Stage[] {
  const out = strings(v, path, errs);
  out.forEach((s, i) => {
    if (!STAGES.includes(s as Stage)) errs.push(`${path}[${i}]: Unsupported value: "${s}": supported values: "${STAGES.join('", "')}"`);
  });
  return out as Stage[];
}

/** Parses and validates a Policy object (already decoded from YAML or JSON). */
export function policyOf(doc: unknown): Policy {
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new PolicyError('the file does not hold an object');
  const d = doc as Record<string, unknown>;
  if (d.kind !== 'Policy') throw new PolicyError(`unexpected kind "${String(d.kind ?? '')}": want Policy`);
  if (d.apiVersion !== 'audit.k8s.io/v1') throw new PolicyError(`unsupported apiVersion "${String(d.apiVersion ?? '')}": want audit.k8s.io/v1`);
  const errs: string[] = [];
  const policy: Policy = {
    rules: [],
    omitStages: stages(d.omitStages, 'omitStages', errs),
    omitManagedFields: d.omitManagedFields === true,
  };
  const rules = d.rules ?? [];
  if (!Array.isArray(rules)) throw new PolicyError('rules: Invalid value: must be a list');
  rules.forEach((r: any, i: number) => {
    const p = `rules[${i}]`;
    if (!r || typeof r !== 'object') {
      errs.push(`${p}: Invalid value: must be an object`);
      return;
    }
    if (r.level === undefined || r.level === '') errs.push(`${p}.level: Required value`);
    else if (!LEVELS.includes(r.level)) errs.push(`${p}.level: Unsupported value: "${r.level}": supported values: "${LEVELS.join('", "')}"`);
    const resources: GroupResources[] = [];
    if (r.resources !== undefined && r.resources !== null) {
      if (!Array.isArray(r.resources)) errs.push(`${p}.resources: Invalid value: must be a list`);
      else
        r.resources.forEach((g: any, j: number) => {
          const gp = `${p}.resources[${j}]`;
          const gr: GroupResources = {
            group: typeof g?.group === 'string' ? g.group : '',
            resources: strings(g?.resources, `${gp}.resources`, errs),
            resourceNames: strings(g?.resourceNames, `${gp}.resourceNames`, errs),
          };
          // kube: a group is a DNS subdomain (or "" for the core group), never a path.
          if (gr.group.includes('/')) errs.push(`${gp}.group: Invalid value: "${gr.group}": must not contain '/'`);
          if (gr.resourceNames.length) {
            for (const res of gr.resources) {
              if (res === '*' || res.startsWith('*/')) errs.push(`${gp}.resourceNames: Invalid value: using resourceNames requires specific resources, not "${res}"`);
            }
          }
          resources.push(gr);
        });
    }
    const rule: PolicyRule = {
      level: r.level,
      users: strings(r.users, `${p}.users`, errs),
      userGroups: strings(r.userGroups, `${p}.userGroups`, errs),
      verbs: strings(r.verbs, `${p}.verbs`, errs),
      resources,
      namespaces: strings(r.namespaces, `${p}.namespaces`, errs),
      nonResourceURLs: strings(r.nonResourceURLs, `${p}.nonResourceURLs`, errs),
      omitStages: stages(r.omitStages, `${p}.omitStages`, errs),
    };
    if (typeof r.omitManagedFields === 'boolean') rule.omitManagedFields = r.omitManagedFields;
    if (rule.nonResourceURLs.length && (rule.resources.length || rule.namespaces.length)) {
      errs.push(`${p}.nonResourceURLs: Invalid value: rules cannot apply to both regular resources and non-resource URLs`);
    }
    rule.nonResourceURLs.forEach((u, j) => {
      if (u === '*') return;
      if (!u.startsWith('/')) errs.push(`${p}.nonResourceURLs[${j}]: Invalid value: "${u}": non-resource URL rules must begin with a '/' character`);
      if (u.slice(0, -1).includes('*')) errs.push(`${p}.nonResourceURLs[${j}]: Invalid value: "${u}": non-resource URL wildcards ('*') must be the final character of the rule`);
    });
    policy.rules.push(rule);
  });
  if (errs.length) throw new PolicyError(errs.join(', '));
  return policy;
}

/** Reads --audit-policy-file; every failure is a PolicyError naming the file. */
export function loadPolicyFile(path: string): Policy {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new PolicyError(`failed to read audit policy file "${path}": ${(e as Error).message}`);
  }
  let doc: unknown;
  try {
    // JSON is YAML; the yaml package reads both.
    doc = parseYaml(text);
  } catch (e) {
    throw new PolicyError(`failed decoding audit policy file "${path}": ${(e as Error).message}`);
  }
  let policy: Policy;
  try {
    policy = policyOf(doc);
  } catch (e) {
    throw new PolicyError(`invalid audit policy file "${path}": ${(e as Error).message}`);
  }
  if (policy.rules.length === 0) throw new PolicyError(`loaded illegal audit policy with 0 rules from file "${path}"`);
  return policy;
}

function pathMatches(path: string, spec: string): boolean {
  if (spec === '*' || spec === path) return true;
  return spec.endsWith('*') && path.startsWith(spec.slice(0, -1));
}

function resourceMatches(rule: PolicyRule, info: RequestInfo): boolean {
  if (!info.isResourceRequest) return false;
  // A cluster-scoped resource is in namespace "".
  if (rule.namespaces.length && !rule.namespaces.includes(info.namespace)) return false;
  if (rule.resources.length === 0) return true;
  const sub = info.subresource;
  const combined = sub ? `${info.resource}/${sub}` : info.resource;
  for (const gr of rule.resources) {
    if (gr.group !== info.apiGroup) continue;
    if (gr.resources.length === 0) return true;
    if (gr.resourceNames.length && !gr.resourceNames.includes(info.name)) continue;
    for (const res of gr.resources) {
      if (res === '*' || res === combined) return true;
      if (sub && res.startsWith('*/') && res.slice(2) === sub) return true;
      if (res.endsWith('/*') && res.slice(0, -2) === info.resource) return true;
    }
  }
  return false;
}

function ruleMatches(rule: PolicyRule, user: UserInfo | undefined, info: RequestInfo): boolean {
  if (rule.users.length && (!user || !rule.users.includes(user.name))) return false;
  if (rule.userGroups.length && (!user || !user.groups.some((g) => rule.userGroups.includes(g)))) return false;
  if (rule.verbs.length && !rule.verbs.includes(info.verb)) return false;
  if (rule.namespaces.length || rule.resources.length) return resourceMatches(rule, info);
  if (rule.nonResourceURLs.length) return !info.isResourceRequest && rule.nonResourceURLs.some((s) => pathMatches(info.path, s));
  return true;
}

/** The policy's decision for a request: the first matching rule's level, or None. */
export function evaluate(policy: Policy, user: UserInfo | undefined, info: RequestInfo): Decision {
  for (const rule of policy.rules) {
    if (!ruleMatches(rule, user, info)) continue;
    if (rule.level === 'None') return NONE;
    const omit = rule.omitStages.length ? [...new Set([...policy.omitStages, ...rule.omitStages])] : policy.omitStages;
    return { level: rule.level, omitStages: omit, omitManagedFields: rule.omitManagedFields ?? policy.omitManagedFields };
  }
  return NONE;
}
