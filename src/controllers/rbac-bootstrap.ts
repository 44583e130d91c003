// RBAC's bootstrap policy upkeep (kube-apiserver's rbac/bootstrap-roles post-start hook): at
// start every default ClusterRole and ClusterRoleBinding, and the Roles and RoleBindings of
// kube-system and kube-public (kube's namespace policy), is created when missing, and one
// that still says rbac.authorization.kubernetes.io/autoupdate "true" is reconciled as kube
// does: missing labels, annotations, rules and subjects are added, nothing is removed, and a
// binding whose roleRef is not the policy's is made anew (a user who set "false" keeps
// theirs; one without the annotation gets it back). Runs whatever the authorization mode, as kube does.
//
// Thread ownership: the front thread. Writes go through the generic store without a field
// manager hook, so they skip the escalation checks a client's write meets.
import type { Targets } from '../api/targets.js';
import { ensureBootstrapObject } from './bootstrap-object.js';
import type { ResourceTarget, Store } from '../registry/store.js';
import { AUTOUPDATE_ANNOTATION, bootstrapClusterRoleBindings, bootstrapClusterRoles, bootstrapNamespaceRoleBindings, bootstrapNamespaceRoles } from '../auth/rbac/bootstrap-policy.js';
import { RBAC_GROUP } from '../auth/rbac/resolver.js';
import { ruleOf, uncovered } from '../auth/rbac/rules.js';

const sameRoleRef = (a: any, b: any) => a?.apiGroup === b.apiGroup && a?.kind === b.kind && a?.name === b.name;
const sameSubject = (a: any, b: any) => a?.kind === b?.kind && a?.name === b?.name && (a?.namespace ?? '') === (b?.namespace ?? '');

/** The reconciled object (kube's computeReconciledRole / RoleBinding), or null when nothing is missing. */
function reconcile(have: any, want: any): any | null {
  const out = structuredClone(have);
  let changed = false;
  for (const key of ['labels', 'annotations'] as const) {
    for (const [k, v] of Object.entries(want.metadata[key] ?? {})) {
      if (out.metadata[key]?.[k] !== undefined) continue;
      (out.metadata[key] ??= {})[k] = v;
      changed = true;
    }
  }
  if (want.kind === 'ClusterRole' || want.kind === 'Role') {
    if (want.aggregationRule) {
      const sels: any[] = out.aggregationRule?.clusterRoleSelectors ?? [];
      for (const s of want.aggregationRule.clusterRoleSelectors) {
        if (sels.some((x) => JSON.stringify(x) === JSON.stringify(s))) continue;
        out.aggregationRule = { clusterRoleSelectors: [...sels, s] };
        changed = true;
      }
    } else {
      const missing = uncovered((out.rules ?? []).map(ruleOf), want.rules ?? []);
      if (missing.length) {
        out.rules = [...(out.rules ?? []), ...missing];
        changed = true;
      }
    }
  } else {
    for (const s of want.subjects ?? []) {
      if ((out.subjects ?? []).some((x: any) => sameSubject(x, s))) continue;
      (out.subjects ??= []).push(s);
      changed = true;
    }
  }
  return changed ? out : null;
}

export class RbacBootstrap {
  readonly clusterRolesT: ResourceTarget;
  readonly clusterBindingsT: ResourceTarget;
  private readonly rolesT: ResourceTarget;
  private readonly bindingsT: ResourceTarget;

  constructor(
    private store: Store,
    targets: Targets,
  ) {
    this.clusterRolesT = targets.resolve(RBAC_GROUP, 'v1', 'clusterroles')!;
    this.clusterBindingsT = targets.resolve(RBAC_GROUP, 'v1', 'clusterrolebindings')!;
    this.rolesT = targets.resolve(RBAC_GROUP, 'v1', 'roles')!;
    this.bindingsT = targets.resolve(RBAC_GROUP, 'v1', 'rolebindings')!;
  }

  async start(): Promise<void> {
    for (const o of bootstrapClusterRoles()) await this.ensure(this.clusterRolesT, o);
    for (const o of bootstrapClusterRoleBindings()) await this.ensure(this.clusterBindingsT, o);
    // (kube-system and kube-public exist by now: the namespaces are made first)
    for (const o of bootstrapNamespaceRoles()) await this.ensure(this.rolesT, o);
    for (const o of bootstrapNamespaceRoleBindings()) await this.ensure(this.bindingsT, o);
  }

  private ensure(t: ResourceTarget, want: any): Promise<void> {
    return ensureBootstrapObject(this.store, t, want, {
      annotation: AUTOUPDATE_ANNOTATION,
      reconcile: (have) => reconcile(have, want),
      label: 'rbac bootstrap',
      protectedOnlyByFalse: true,
      // (a binding to another role than the policy's is made again: roleRef cannot be updated)
      recreate: want.roleRef ? (have) => !sameRoleRef(have.roleRef, want.roleRef) : undefined,
    });
  }

}
