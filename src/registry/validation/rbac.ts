// rbac.authorization.k8s.io/v1 Roles and bindings, as kube 1.33's pkg/apis/rbac/validation
// checks them. Names are path segments only (checked by the store).
import type { FieldError } from '../strategy.js';
import { nameErrors } from '../validation.js';
import {
  invalid,
  isObj,
  list,
  notSupported,
  required,
  sameValue,
} from './field.js';

const RBAC = 'rbac.authorization.k8s.io';

function validatePolicyRule(rule: any, namespaced: boolean, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!isObj(rule)) return errs;
  if (list(rule.verbs).length === 0) errs.push(required(`${path}.verbs`, 'verbs must contain at least one value'));
  const urls = list(rule.nonResourceURLs);
  if (urls.length > 0) {
    if (namespaced) errs.push(invalid(`${path}.nonResourceURLs`, urls, 'namespaced rules cannot apply to non-resource URLs'));
    if (list(rule.apiGroups).length || list(rule.resources).length || list(rule.resourceNames).length) {
      errs.push(invalid(`${path}.nonResourceURLs`, urls, 'rules cannot apply to both regular resources and non-resource URLs'));
    }
    return errs;
  }
  if (list(rule.apiGroups).length === 0) errs.push(required(`${path}.apiGroups`, 'resource rules must supply at least one api group'));
  if (list(rule.resources).length === 0) errs.push(required(`${path}.resources`, 'resource rules must supply at least one resource'));
  if (list(rule.resourceNames).length > 0 && list(rule.resources).length > 1) {
    errs.push(required(`${path}.resourceNames`, 'resource names cannot apply to multiple resources'));
  }
  return errs;
}

/** Role (namespaced) and ClusterRole: every rule. */
export function validateRole(obj: any, namespaced: boolean): FieldError[] {
  const errs: FieldError[] = [];
  list(obj?.rules).forEach((r, i) => errs.push(...validatePolicyRule(r, namespaced, `rules[${i}]`)));
  return errs;
}

function validateSubject(s: any, namespaced: boolean, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!isObj(s)) return errs;
  const name = typeof s.name === 'string' ? s.name : '';
  const group = s.apiGroup ?? '';
  if (name === '') errs.push(required(`${path}.name`));
  switch (s.kind) {
    case 'ServiceAccount':
      if (name !== '') for (const m of nameErrors(name, 'subdomain')) errs.push(invalid(`${path}.name`, name, m));
      if (group !== '') errs.push(notSupported(`${path}.apiGroup`, group, ['']));
      if (!namespaced && !s.namespace) errs.push(required(`${path}.namespace`));
      break;
    case 'User':
      if (name === '') errs.push(invalid(`${path}.name`, name, 'user name cannot be empty'));
      if (group !== RBAC) errs.push(notSupported(`${path}.apiGroup`, group, [RBAC]));
      break;
    case 'Group':
      if (name === '') errs.push(invalid(`${path}.name`, name, 'group name cannot be empty'));
      if (group !== RBAC) errs.push(notSupported(`${path}.apiGroup`, group, [RBAC]));
      break;
    default:
      errs.push(notSupported(`${path}.kind`, s.kind ?? '', ['ServiceAccount', 'User', 'Group']));
  }
  return errs;
}

/** RoleBinding (namespaced: a Role or ClusterRole) and ClusterRoleBinding (a ClusterRole only). */
export function validateBinding(obj: any, namespaced: boolean): FieldError[] {
  const errs: FieldError[] = [];
  const ref = isObj(obj?.roleRef) ? obj.roleRef : {};
  const group = ref.apiGroup ?? '';
  if (group !== RBAC) errs.push(notSupported('roleRef.apiGroup', group, [RBAC]));
  const kinds = namespaced ? ['Role', 'ClusterRole'] : ['ClusterRole'];
  if (!kinds.includes(ref.kind)) errs.push(notSupported('roleRef.kind', ref.kind ?? '', kinds));
  const name = typeof ref.name === 'string' ? ref.name : '';
  if (name === '') errs.push(required('roleRef.name'));
  else for (const m of nameErrors(name, 'path')) errs.push(invalid('roleRef.name', name, m));
  list(obj?.subjects).forEach((s, i) => errs.push(...validateSubject(s, namespaced, `subjects[${i}]`)));
  return errs;
}

/** The internal rbac.RoleRef a field error prints (Go field names, no JSON tags). */
function internalRoleRef(ref: any): unknown {
  const r = isObj(ref) ? ref : {};
  return { APIGroup: r.apiGroup ?? '', Kind: r.kind ?? '', Name: r.name ?? '' };
}

/** A binding's roleRef may not change: a new binding is needed to point elsewhere. */
export function validateBindingUpdate(obj: any, old: any): FieldError[] {
  const now = internalRoleRef(obj?.roleRef);
  if (sameValue(now, internalRoleRef(old?.roleRef))) return [];
  return [invalid('roleRef', now, 'cannot change roleRef')];
}
