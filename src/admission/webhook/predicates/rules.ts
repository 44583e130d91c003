// Whether a request falls under one of a webhook's rules (kube's
// webhook/predicates/rules/rules.go: scope, operations, apiGroups, apiVersions, resources
// with their "resource/subresource" and "*" forms), and which configuration kinds no webhook
// may see (IsExemptAdmissionConfigurationResource).
//
// Thread ownership: none (pure functions).
import type { GroupVersionKind, GroupVersionResource, Operation } from '../../plugin.js';

/** A rule as the configuration stores it (RuleWithOperations), compiled once per configuration version. */
export interface CompiledRule {
  operations: Set<string>;
  groups: Set<string>;
  versions: Set<string>;
  /** [resource, subresource] pairs; "*" matches any; a bare resource has subresource "" */
  resources: Array<[string, string]>;
  scope: '*' | 'Cluster' | 'Namespaced';
}

const has = (s: Set<string>, v: string) => s.has('*') || s.has(v);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

export function compileRule(r: any): CompiledRule {
  const scope = r?.scope === 'Cluster' || r?.scope === 'Namespaced' ? r.scope : '*';
  return {
    operations: new Set(strings(r?.operations)),
    groups: new Set(strings(r?.apiGroups)),
    versions: new Set(strings(r?.apiVersions)),
    resources: strings(r?.resources).map((s) => {
      const i = s.indexOf('/');
      return i < 0 ? [s, ''] : [s.slice(0, i), s.slice(i + 1)];
    }),
    scope,
  };
}

/** What a rule looks at: the operation, the resource (maybe an equivalent one), subresource, namespace. */
export interface RuleSubject {
  operation: Operation;
  resource: GroupVersionResource;
  subresource: string;
  namespace: string;
}

const isNamespaceResource = (r: GroupVersionResource) => r.group === '' && r.version === 'v1' && r.resource === 'namespaces';

export function ruleMatches(rule: CompiledRule, s: RuleSubject): boolean {
  // A namespace object is cluster-scoped although its requests carry its own name as namespace.
  if (rule.scope === 'Namespaced' && (isNamespaceResource(s.resource) || s.namespace === '')) return false;
  if (rule.scope === 'Cluster' && !(isNamespaceResource(s.resource) || s.namespace === '')) return false;
  if (!has(rule.operations, s.operation)) return false;
  if (!has(rule.groups, s.resource.group)) return false;
  if (!has(rule.versions, s.resource.version)) return false;
  for (const [res, sub] of rule.resources) {
    if ((res === '*' || res === s.resource.resource) && (sub === '*' || sub === s.subresource)) return true;
  }
  return false;
}

const EXEMPT_KINDS = new Set([
  'ValidatingWebhookConfiguration',
  'MutatingWebhookConfiguration',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'MutatingAdmissionPolicy',
  'MutatingAdmissionPolicyBinding',
]);

/** Webhooks never see the admission of the objects that configure admission (so a broken hook cannot lock itself in). */
export function isExemptAdmissionConfiguration(kind: GroupVersionKind): boolean {
  return kind.group === 'admissionregistration.k8s.io' && EXEMPT_KINDS.has(kind.kind);
}
