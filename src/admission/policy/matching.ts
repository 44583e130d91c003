// kube's policy matching (apiserver/pkg/admission/plugin/policy/matching/matching.go and
// webhook/predicates/rules, namespace, object): whether a request falls under a policy's
// matchConstraints or a binding's matchResources: resourceRules and excludeResourceRules
// (operations, apiGroups, apiVersions, resources with "*", "*/*", "r/*", "*/sub", resourceNames,
// scope), namespaceSelector, objectSelector and matchPolicy.
//
// Where we differ: matchPolicy Equivalent matches the request's group and resource in any
// version a rule names (kubeshard serves each resource in the one version it stores, so there
// is no other version to convert to); Exact also requires the version.
import type { Attributes, ObjectSource } from '../plugin.js';
import { selectorMatches } from '../../registry/label-selector.js';

export interface RuleWithOperations {
  operations?: string[];
  apiGroups?: string[];
  apiVersions?: string[];
  resources?: string[];
  resourceNames?: string[];
  scope?: string;
}

export interface MatchResources {
  namespaceSelector?: any;
  objectSelector?: any;
  resourceRules?: RuleWithOperations[];
  excludeResourceRules?: RuleWithOperations[];
  matchPolicy?: string;
}

const has = (list: string[] | undefined, v: string) => !!list && (list.includes('*') || list.includes(v));

function resourceMatches(resources: string[] | undefined, resource: string, sub: string): boolean {
  for (const r of resources ?? []) {
    if (r === '*/*') return true;
    const [rr, rs = ''] = r.split('/', 2);
    const resOk = rr === '*' || rr === resource;
    const subOk = r.includes('/') ? rs === '*' || rs === sub : sub === '';
    if (resOk && subOk) return true;
  }
  return false;
}

/** kube's rules.Matcher.Matches for one rule. */
export function ruleMatches(rule: RuleWithOperations, a: Attributes, exact: boolean, forExclude = false): boolean {
  const op = a.operation;
  if (!forExclude || rule.operations?.length) if (!has(rule.operations, op)) return false;
  const group = a.resource?.group ?? a.info.group;
  const version = a.resource?.version ?? a.info.version;
  const resource = a.resource?.resource ?? a.info.resource;
  if (!has(rule.apiGroups, group)) return false;
  if (exact && !has(rule.apiVersions, version)) return false;
  if (!exact && !rule.apiVersions?.length) return false;
  if (!resourceMatches(rule.resources, resource, a.subresource)) return false;
  const scope = rule.scope ?? '*';
  const namespaced = a.info.namespaced;
  if (scope === 'Cluster' && namespaced) return false;
  if (scope === 'Namespaced' && !namespaced) return false;
  if (rule.resourceNames?.length) {
    const name = a.name || a.obj?.metadata?.name || '';
    if (!rule.resourceNames.includes(name)) return false;
  }
  return true;
}

function labelsOf(o: any): Record<string, string> | undefined {
  return o?.metadata?.labels;
}

/** kube's namespace predicate: cluster-scoped requests always match; a Namespace is matched on its own labels. */
function namespaceMatches(sel: any, a: Attributes, objects: ObjectSource): boolean {
  if (!sel || (!sel.matchLabels && !sel.matchExpressions)) return true;
  const isNamespace = a.info.group === '' && a.info.resource === 'namespaces';
  if (isNamespace) return selectorMatches(sel, labelsOf(a.obj) ?? labelsOf(a.old));
  if (!a.info.namespaced || !a.namespace) return true;
  const ns = objects.get('namespaces', '', a.namespace);
  return selectorMatches(sel, labelsOf(ns) ?? {});
}

/** kube's object predicate: the new or the old object's labels match. */
function objectMatches(sel: any, a: Attributes): boolean {
  if (!sel || (!sel.matchLabels && !sel.matchExpressions)) return true;
  return (a.obj != null && selectorMatches(sel, labelsOf(a.obj) ?? {})) || (a.old != null && selectorMatches(sel, labelsOf(a.old) ?? {}));
}

/** kube's matching.Matcher.Matches over a MatchResources. */
export function matches(m: MatchResources | undefined, a: Attributes, objects: ObjectSource, binding = false): boolean {
  // a binding without matchResources, or without resourceRules, narrows nothing
  if (!m) return binding;
  if (!namespaceMatches(m.namespaceSelector, a, objects)) return false;
  if (!objectMatches(m.objectSelector, a)) return false;
  const exact = m.matchPolicy === 'Exact';
  for (const r of m.excludeResourceRules ?? []) if (ruleMatches(r, a, exact, true)) return false;
  if (binding && !m.resourceRules?.length) return true;
  return (m.resourceRules ?? []).some((r) => ruleMatches(r, a, exact));
}

/** kube's rules.IsExemptAdmissionConfigurationResource: policies never intercept admission configuration. */
export function isExemptAdmissionConfiguration(a: Attributes): boolean {
  return (
    a.info.group === 'admissionregistration.k8s.io' &&
    ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations', 'validatingadmissionpolicies', 'validatingadmissionpolicybindings', 'mutatingadmissionpolicies', 'mutatingadmissionpolicybindings'].includes(
      a.info.resource,
    )
  );
}
