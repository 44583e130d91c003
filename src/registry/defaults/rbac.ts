// Defaults of rbac.authorization.k8s.io/v1 (SetDefaults_RoleBinding, _ClusterRoleBinding and
// _Subject), 1.33: a binding's roleRef and its User and Group subjects name the RBAC group.
import { arr, isObj } from './common.js';

const RBAC = 'rbac.authorization.k8s.io';

export function defaultBinding(obj: any): void {
  if (!isObj(obj)) return;
  if (isObj(obj.roleRef) && !obj.roleRef.apiGroup) obj.roleRef.apiGroup = RBAC;
  for (const s of arr(obj.subjects)) {
    if (!isObj(s) || s.apiGroup) continue;
    // A ServiceAccount's group is the empty (omitted) one.
    if (s.kind === 'User' || s.kind === 'Group') s.apiGroup = RBAC;
  }
}
