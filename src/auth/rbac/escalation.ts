// RBAC's escalation prevention (kube's policy-based storage of roles and bindings): a user
// may write a Role or ClusterRole only with every permission it grants already held (or the
// `escalate` verb on it), and a RoleBinding or ClusterRoleBinding only with every permission
// of the role it references held (or the `bind` verb on that role). system:masters may do
// anything; a write that only touches the fields the garbage collector needs is let through.
//
// The check runs on the object as the write will store it (the field-manager hook the store
// calls on every client create and update), before validation, as kube's wrappers run before
// the generic store's. In-process controllers write without such a hook and are not checked.
import type { FieldsHook } from '../../registry/store.js';
import type { HandlerContext } from '../../handlers/context.js';
import type { AuthorizationAttributes } from '../../http/filters/authorization.js';
import { errors } from '../../errors.js';
import { ANONYMOUS, type UserInfo } from '../user.js';
import { RBAC_GROUP } from './resolver.js';
import { compactRules, compactString, goQuoteList, ruleOf, uncovered, type PolicyRule } from './rules.js';

const PRIVILEGED_GROUP = 'system:masters';
const FULL_AUTHORITY: PolicyRule[] = [
  { verbs: ['*'], apiGroups: ['*'], resources: ['*'] },
  { verbs: ['*'], nonResourceURLs: ['*'] },
];

/** Whether only the fields the garbage collector manages changed (kube's IsOnlyMutatingGCFields). */
function onlyGcFields(obj: any, old: any): boolean {
  const strip = (o: any) => {
    const c = { ...o, metadata: { ...o.metadata } };
    delete c.metadata.ownerReferences;
    delete c.metadata.finalizers;
    delete c.metadata.resourceVersion;
    delete c.metadata.managedFields;
    return JSON.stringify(canonical(c));
  };
  return strip(obj) === strip(old);
}

function canonical(v: any): any {
  if (Array.isArray(v)) return v.map(canonical);
  if (v === null || typeof v !== 'object') return v;
  const out: any = {};
  for (const k of Object.keys(v).sort()) out[k] = canonical(v[k]);
  return out;
}

function resourceAttrs(user: UserInfo, verb: string, apiGroup: string, resource: string, namespace: string, name: string): AuthorizationAttributes {
  return { user, verb, resourceRequest: true, apiGroup, resource, subresource: '', namespace, name, path: '' };
}

/** kube's ConfirmNoEscalation: the message of what the user would grant without holding it, or null. */
function escalation(c: HandlerContext, user: UserInfo, namespace: string, wanted: PolicyRule[]): string | null {
  const held = c.auth!.rbac.resolve(user, namespace);
  const missing = uncovered(
    held.rules.map((a) => a.rule),
    wanted,
  );
  if (!missing.length) return null;
  const lines = [...new Set(compactRules(missing).map(compactString))].sort();
  let msg = `user ${JSON.stringify(user.name)} (groups=${goQuoteList(user.groups)}) is attempting to grant RBAC permissions not currently held:\n${lines.join('\n')}`;
  if (held.errors.length) msg += `; resolution errors: [${held.errors.join(' ')}]`;
  return msg;
}

/** The hook with the escalation check in front, for writes of the four RBAC kinds; else the hook itself. */
export function withEscalationCheck(c: HandlerContext, hook: FieldsHook): FieldsHook {
  const info = c.target.info;
  if (info.group !== RBAC_GROUP || c.info.subresource || !c.auth) return hook;
  const user = c.req.user ?? ANONYMOUS;
  if (user.groups.includes(PRIVILEGED_GROUP)) return hook;
  const resource = info.resource;
  const ns = c.info.namespace;
  const authorizer = c.auth.authorizer;
  const gr = { group: RBAC_GROUP, resource };
  let check: ((old: any, obj: any) => void) | null = null;
  if (resource === 'roles' || resource === 'clusterroles') {
    check = (old, obj) => {
      if (old && onlyGcFields(obj, old)) return;
      // kube's RoleEscalationAuthorized: the request's own resource and name, with verb escalate
      if (authorizer.decideSync(resourceAttrs(user, 'escalate', RBAC_GROUP, resource, ns, c.info.name)).allowed) return;
      const name = obj?.metadata?.name ?? '';
      const rules = (Array.isArray(obj?.rules) ? obj.rules : []).map(ruleOf);
      const msg = escalation(c, user, ns, rules);
      if (msg) throw errors.forbidden(gr, name, `${resource}.${RBAC_GROUP} ${JSON.stringify(name)} is forbidden: ${msg}`);
      // an aggregationRule can gather anything: it takes full authority
      const aggregationChanged = obj?.aggregationRule && (!old || JSON.stringify(canonical(old.aggregationRule ?? null)) !== JSON.stringify(canonical(obj.aggregationRule)));
      if (resource === 'clusterroles' && aggregationChanged && escalation(c, user, ns, FULL_AUTHORITY)) {
        throw errors.forbidden(gr, name, `${resource}.${RBAC_GROUP} ${JSON.stringify(name)} is forbidden: must have cluster-admin privileges to use the aggregationRule`);
      }
    };
  } else if (resource === 'rolebindings' || resource === 'clusterrolebindings') {
    check = (old, obj) => {
      if (old && onlyGcFields(obj, old)) return;
      const ref = obj?.roleRef ?? {};
      const kind = String(ref.kind ?? '');
      const refName = String(ref.name ?? '');
      // kube's BindingAuthorized: verb bind on the referenced role, in the binding's namespace
      if (kind === 'Role' || kind === 'ClusterRole') {
        const refResource = kind === 'Role' ? 'roles' : 'clusterroles';
        if (authorizer.decideSync(resourceAttrs(user, 'bind', String(ref.apiGroup ?? ''), refResource, ns, refName)).allowed) return;
      }
      const rules = c.auth!.rbac.roleRefRules(kind, refName, ns);
      if (typeof rules === 'string') {
        if (kind === 'Role' || kind === 'ClusterRole') throw errors.notFound({ group: RBAC_GROUP, resource: kind === 'Role' ? 'roles' : 'clusterroles' }, refName);
        throw errors.badRequest(rules);
      }
      const name = obj?.metadata?.name ?? '';
      const msg = escalation(c, user, ns, rules);
      if (msg) throw errors.forbidden(gr, name, `${resource}.${RBAC_GROUP} ${JSON.stringify(name)} is forbidden: ${msg}`);
    };
  }
  if (!check) return hook;
  const run = check;
  return (old, obj) => {
    run(old, obj);
    hook(old, obj);
  };
}
