// kube-controller-manager's --controllers rule, for the controllers this server runs.
//
// Thread ownership: none (a pure function).

/** '-name' off, 'name' on, otherwise on when '*' is listed. */
export function controllerEnabled(list: string[], name: string): boolean {
  if (list.includes(`-${name}`)) return false;
  return list.includes(name) || list.includes('*');
}
