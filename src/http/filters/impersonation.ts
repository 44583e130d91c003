// Impersonation (kube's WithImpersonation): Impersonate-User, Impersonate-Group (repeatable),
// Impersonate-Uid and Impersonate-Extra-<key> headers make the request run as another user,
// once the authenticated requester is authorized for verb "impersonate" on each thing asked
// for: users, groups and serviceaccounts (group ""), uids and userextras/<key>
// (authentication.k8s.io). It sits after authentication and before flow control and
// authorization, which then see the impersonated user.
//
// Cost: a request without the three main headers pays three header lookups and nothing
// else. Extra headers are only looked at with one of them; on their own (an error in kube)
// they are ignored, which grants nothing.
//
// Repeated headers reach us joined with ", " (the transport merges them), so a group name
// holding ", " cannot be impersonated apart; kube would keep it whole.
import type { Filter } from '../filter-chain.js';
import type { ApiRequest } from '../types.js';
import { errors } from '../../errors.js';
import { ANONYMOUS, type UserInfo } from '../../auth/user.js';
import { forbiddenError, type Authorizer, type AuthorizationAttributes } from './authorization.js';

const SA_PREFIX = 'system:serviceaccount:';
const EXTRA_PREFIX = 'impersonate-extra-';
const AUTHN_GROUP = 'authentication.k8s.io';

interface Ask {
  /** what kube's message names: resource (and subresource), group, namespace, name */
  resource: string;
  subresource: string;
  group: string;
  namespace: string;
  name: string;
}

const splitList = (v: string): string[] =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** "system:serviceaccount:<ns>:<name>" split, or null (kube's serviceaccount.SplitUsername). */
function splitServiceAccount(u: string): [string, string] | null {
  if (!u.startsWith(SA_PREFIX)) return null;
  const parts = u.slice(SA_PREFIX.length).split(':');
  if (parts.length !== 2 || !parts[0] || !parts[1]) return null;
  return [parts[0], parts[1]];
}

function extrasOf(req: ApiRequest): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const k in req.headers) {
    if (!k.startsWith(EXTRA_PREFIX)) continue;
    let key = k.slice(EXTRA_PREFIX.length);
    try {
      key = decodeURIComponent(key); // keys are percent-encoded in header names
    } catch {
      /* kept as sent */
    }
    out.set(key, splitList(req.headers[k]));
  }
  return out;
}

export function impersonationFilter(authorizer: Authorizer): Filter {
  return {
    name: 'impersonation',
    run(req) {
      const h = req.headers;
      if (h['impersonate-user'] === undefined && h['impersonate-group'] === undefined && h['impersonate-uid'] === undefined) return;
      return impersonate(req);
    },
  };

  // (async: an authorization mode may have to call out)
  async function impersonate(req: Parameters<Filter['run']>[0]): Promise<void> {
    {
      const h = req.headers;
      const wantUser = h['impersonate-user'];
      const wantGroups = h['impersonate-group'];
      const wantUid = h['impersonate-uid'];
      const requester = req.user ?? ANONYMOUS;
      const groupsSpecified = wantGroups !== undefined && wantGroups !== '';
      const extras = extrasOf(req);
      if (!wantUser) {
        throw errors.internal(`requested impersonation of ${[groupsSpecified ? 'groups' : '', wantUid ? 'uid' : '', extras.size ? 'user extra' : ''].filter(Boolean).join(', ')} without impersonating a user`);
      }
      const asks: Ask[] = [];
      const name = wantUser;
      let groups: string[] = [];
      const sa = splitServiceAccount(wantUser);
      if (sa) {
        asks.push({ resource: 'serviceaccounts', subresource: '', group: '', namespace: sa[0], name: sa[1] });
        // a service account's groups are known; given groups replace them
        if (!groupsSpecified) groups = ['system:serviceaccounts', `system:serviceaccounts:${sa[0]}`];
      } else asks.push({ resource: 'users', subresource: '', group: '', namespace: '', name: wantUser });
      if (groupsSpecified) {
        for (const g of splitList(wantGroups!)) {
          asks.push({ resource: 'groups', subresource: '', group: '', namespace: '', name: g });
          groups.push(g);
        }
      }
      const extra: Record<string, string[]> = {};
      for (const [key, values] of extras) {
        for (const v of values) asks.push({ resource: 'userextras', subresource: key, group: AUTHN_GROUP, namespace: '', name: v });
        extra[key] = values;
      }
      if (wantUid) asks.push({ resource: 'uids', subresource: '', group: AUTHN_GROUP, namespace: '', name: wantUid });
      for (const a of asks) {
        const attrs: AuthorizationAttributes = { user: requester, verb: 'impersonate', resourceRequest: true, apiGroup: a.group, resource: a.resource, subresource: a.subresource, namespace: a.namespace, name: a.name, path: req.path };
        // (waits only when a mode had to call out)
        const r = authorizer.decide(attrs);
        const d = r instanceof Promise ? await r : r;
        if (!d.allowed) throw forbiddenError(attrs, d.reason);
      }
      // The impersonated user is authenticated (or, as system:anonymous, unauthenticated)
      // unless the groups asked for say otherwise.
      if (name !== ANONYMOUS.name) {
        if (!groups.includes('system:authenticated') && !groups.includes('system:unauthenticated')) groups.push('system:authenticated');
      } else if (!groups.includes('system:unauthenticated')) groups.push('system:unauthenticated');
      const user: UserInfo = { name, uid: wantUid ?? '', groups, ...(Object.keys(extra).length ? { extra } : {}) };
      req.user = user;
      req.audit?.impersonated(user);
    }
  }
}
