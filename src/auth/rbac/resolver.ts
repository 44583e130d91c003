// The RBAC rule resolver and authorizer (kube's DefaultRuleResolver and RBACAuthorizer):
// which rules apply to a user in a namespace (the ClusterRoleBindings, then the RoleBindings
// of that namespace, each binding a Role of its namespace or a ClusterRole), and whether one
// of them allows a request.
//
// Thread ownership: the front thread. The index (roles by name, bindings by namespace) is
// built from the front thread's caches of the four RBAC kinds; a committed change to any of
// them marks it stale (a cache-layer observer) and the next request rebuilds it, as the
// priority-and-fairness classifier does with FlowSchemas. What a user holds in a namespace
// is remembered per (user, groups, namespace) in a bounded map that a rebuild drops, so a
// request costs one map lookup and a walk of that user's rules; no request scans the stores.
import type { UserInfo } from '../user.js';
import type { AuthorizationAttributes, Decision } from '../attributes.js';
import { ruleAllows, ruleOf, type PolicyRule } from './rules.js';

export const RBAC_GROUP = 'rbac.authorization.k8s.io';
const SA_PREFIX = 'system:serviceaccount:';
const MEMO_LIMIT = 4096;

interface Subject {
  kind: string;
  name: string;
  namespace: string;
}
interface BindingIndex {
  /** "name" of a ClusterRoleBinding, "name/namespace" of a RoleBinding (kube's describer) */
  label: string;
  kind: 'ClusterRoleBinding' | 'RoleBinding';
  namespace: string;
  roleKind: string;
  roleName: string;
  subjects: Subject[];
}

/** A rule that applies, with where it comes from (formatted only when a decision needs it). */
export interface AppliedRule {
  rule: PolicyRule;
  binding: BindingIndex;
  subject: Subject;
}
export interface Resolved {
  rules: AppliedRule[];
  /** roles that bindings of this user name but that do not exist (kube's resolution errors) */
  errors: string[];
}

export interface RbacSource {
  /** the current objects of one RBAC kind (clusterroles, roles, clusterrolebindings, rolebindings) */
  objects(resource: string): any[];
}

function subjectApplies(u: UserInfo, s: Subject, namespace: string): boolean {
  switch (s.kind) {
    case 'User':
      return u.name === s.name;
    case 'Group':
      return u.groups.includes(s.name);
    case 'ServiceAccount': {
      // an unqualified ServiceAccount subject of a RoleBinding means one of the binding's namespace
      const ns = s.namespace || namespace;
      if (!ns) return false;
      return u.name === `${SA_PREFIX}${ns}:${s.name}`;
    }
    default:
      return false;
  }
}

function describeSubject(s: Subject, bindingNamespace: string): string {
  if (s.kind === 'ServiceAccount') return `${s.kind} ${JSON.stringify(`${s.name}/${s.namespace || bindingNamespace}`)}`;
  return `${s.kind} ${JSON.stringify(s.name)}`;
}

/** kube's binding describer: `ClusterRoleBinding "x" of ClusterRole "y" to User "z"`. */
export function describeSource(a: AppliedRule): string {
  const b = a.binding;
  return `${b.kind} ${JSON.stringify(b.label)} of ${b.roleKind} ${JSON.stringify(b.roleName)} to ${describeSubject(a.subject, b.namespace)}`;
}

function bindingOf(o: any, kind: BindingIndex['kind']): BindingIndex {
  const ns: string = o.metadata?.namespace ?? '';
  const subjects: Subject[] = (Array.isArray(o.subjects) ? o.subjects : []).map((s: any) => ({ kind: String(s?.kind ?? ''), name: String(s?.name ?? ''), namespace: String(s?.namespace ?? '') }));
  return {
    label: kind === 'RoleBinding' ? `${o.metadata.name}/${ns}` : o.metadata.name,
    kind,
    namespace: ns,
    roleKind: String(o.roleRef?.kind ?? ''),
    roleName: String(o.roleRef?.name ?? ''),
    subjects,
  };
}

const byName = (a: any, b: any) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0);

export class RbacResolver {
  private stale = true;
  private clusterRoles = new Map<string, PolicyRule[]>();
  private roles = new Map<string, PolicyRule[]>();
  private clusterBindings: BindingIndex[] = [];
  private roleBindings = new Map<string, BindingIndex[]>();
  private memo = new Map<string, Resolved>();
  /** users' memo keys, per UserInfo object (a static token's user is one object for all its requests) */
  private keys = new WeakMap<UserInfo, string>();

  constructor(private source: RbacSource) {}

  /** A committed change to a role or binding: rebuilt on next use. */
  invalidate(): void {
    this.stale = true;
  }

  private rebuild(): void {
    this.stale = false;
    this.memo.clear();
    this.clusterRoles = new Map();
    for (const o of this.source.objects('clusterroles')) this.clusterRoles.set(o.metadata.name, (Array.isArray(o.rules) ? o.rules : []).map(ruleOf));
    this.roles = new Map();
    for (const o of this.source.objects('roles')) this.roles.set(`${o.metadata.namespace}/${o.metadata.name}`, (Array.isArray(o.rules) ? o.rules : []).map(ruleOf));
    this.clusterBindings = this.source.objects('clusterrolebindings').sort(byName).map((o) => bindingOf(o, 'ClusterRoleBinding'));
    this.roleBindings = new Map();
    for (const o of this.source.objects('rolebindings').sort(byName)) {
      const b = bindingOf(o, 'RoleBinding');
      let arr = this.roleBindings.get(b.namespace);
      if (!arr) this.roleBindings.set(b.namespace, (arr = []));
      arr.push(b);
    }
  }

  /** The rules of a binding's role reference (kube's GetRoleReferenceRules); a string is the error. */
  roleRefRules(kind: string, name: string, namespace: string): PolicyRule[] | string {
    if (this.stale) this.rebuild();
    if (kind === 'Role') return this.roles.get(`${namespace}/${name}`) ?? `role.${RBAC_GROUP} ${JSON.stringify(name)} not found`;
    if (kind === 'ClusterRole') return this.clusterRoles.get(name) ?? `clusterrole.${RBAC_GROUP} ${JSON.stringify(name)} not found`;
    return `unsupported role reference kind: ${JSON.stringify(kind)}`;
  }

  private keyOf(u: UserInfo): string {
    let k = this.keys.get(u);
    if (k === undefined) {
      k = `${u.name}\u0000${u.groups.join('\u0000')}`;
      this.keys.set(u, k);
    }
    return k;
  }

  /** Every rule that applies to the user in the namespace ("" : the cluster bindings only). */
  resolve(u: UserInfo, namespace: string): Resolved {
    if (this.stale) this.rebuild();
    const key = `${namespace}\u0001${this.keyOf(u)}`;
    const known = this.memo.get(key);
    if (known) return known;
    const out: Resolved = { rules: [], errors: [] };
    const visit = (bindings: BindingIndex[] | undefined, ns: string) => {
      for (const b of bindings ?? []) {
        const subject = b.subjects.find((s) => subjectApplies(u, s, ns));
        if (!subject) continue;
        const rules = this.roleRefRules(b.roleKind, b.roleName, ns);
        if (typeof rules === 'string') {
          out.errors.push(rules);
          continue;
        }
        for (const rule of rules) out.rules.push({ rule, binding: b, subject });
      }
    };
    visit(this.clusterBindings, '');
    if (namespace) visit(this.roleBindings.get(namespace), namespace);
    if (this.memo.size >= MEMO_LIMIT) this.memo.clear();
    this.memo.set(key, out);
    return out;
  }

  /** kube's RBACAuthorizer.Authorize: allow with the first rule that matches, else no opinion. */
  authorize(a: AuthorizationAttributes): Decision & { noOpinion?: boolean } {
    const r = this.resolve(a.user, a.namespace);
    for (const applied of r.rules) if (ruleAllows(a, applied.rule)) return { allowed: true, reason: `RBAC: allowed by ${describeSource(applied)}` };
    return { allowed: false, reason: r.errors.length ? `RBAC: ${aggregate(r.errors)}` : '' };
  }
}

/** Go's utilerrors.NewAggregate(...).Error(): one message alone, several in brackets. */
export function aggregate(msgs: string[]): string {
  return msgs.length === 1 ? msgs[0] : `[${msgs.join(', ')}]`;
}
