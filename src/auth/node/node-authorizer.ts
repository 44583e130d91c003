// The Node authorization mode (kube's plugin/pkg/auth/authorizer/node NodeAuthorizer, 1.33
// with AuthorizeNodeWithSelectors on): a user system:node:<name> of group system:nodes may
// read the secrets, config maps, claims, volumes, resource claims and service account
// tokens reachable from its node in the graph (pods bound to it), its own Node (read) and
// Lease, and what kube's NodeRules allow (events, CSRs, ...). Everything else, and every
// other user, gets no opinion, so RBAC after it still decides; the reasons are kube's.
// NodeRestriction admission (src/admission/node-restriction.ts) confines the writes this
// allows broadly (Node updates, mirror pods, pod status).
//
// Thread ownership: the front thread (the graph is kept there from the caches).
import type { AuthorizerMode, AuthorizerResult } from '../authorizer.js';
import type { AuthorizationAttributes, Rules } from '../../http/filters/authorization.js';
import type { UserInfo } from '../user.js';
import { ruleAllows, type PolicyRule } from '../rbac/rules.js';
import { nodeRules } from '../rbac/bootstrap-policy.js';
import type { NodeGraph, VertexType } from './node-graph.js';

export const NODES_GROUP = 'system:nodes';
const NODE_PREFIX = 'system:node:';
const NODE_LEASE_NAMESPACE = 'kube-node-lease';

/** kube's NodeIdentity: the node name of a node user, or null for any other user. */
export function nodeIdentity(u: UserInfo): string | null {
  if (!u.name.startsWith(NODE_PREFIX) || !u.groups.includes(NODES_GROUP)) return null;
  return u.name.slice(NODE_PREFIX.length);
}

const ALLOW: AuthorizerResult = { decision: 'Allow', reason: '' };
const none = (reason = ''): AuthorizerResult => ({ decision: 'NoOpinion', reason });

/** Whether a field selector holds `field=value` (or `field==value`) among its terms. */
function selects(selector: string | undefined, field: string, value: string): boolean {
  if (!selector) return false;
  return selector.split(',').some((t) => {
    const m = /^\s*([^!=\s]+)\s*(==|=)\s*(.*?)\s*$/.exec(t);
    return !!m && m[1] === field && m[3] === value;
  });
}

export class NodeAuthorizer implements AuthorizerMode {
  readonly name = 'Node';
  private rules: PolicyRule[] = nodeRules();

  constructor(private graph: NodeGraph) {}

  /** kube's RulesFor: a node's permissions are not enumerable (incomplete, with kube's error); other users get none from here. */
  rulesFor(user: UserInfo): Rules {
    if (nodeIdentity(user) === null) return { resourceRules: [], nonResourceRules: [], incomplete: false };
    return { resourceRules: [], nonResourceRules: [], incomplete: true, evaluationError: 'node authorizer does not support user rule resolution' };
  }

  authorize(a: AuthorizationAttributes): AuthorizerResult {
    const node = nodeIdentity(a.user);
    if (node === null) return none();
    if (node === '') return none(`unknown node for user "${a.user.name}"`);
    if (a.resourceRequest) {
      switch (`${a.resource}.${a.apiGroup}`) {
        case 'secrets.':
          return this.readNamespaced(node, 'secret', a);
        case 'configmaps.':
          return this.readNamespaced(node, 'configmap', a);
        case 'persistentvolumeclaims.':
          return a.subresource === 'status' ? this.statusUpdate(node, 'pvc', a) : this.get(node, 'pvc', a);
        case 'persistentvolumes.':
          return this.get(node, 'pv', a);
        case 'resourceclaims.resource.k8s.io':
          return this.get(node, 'resourceclaim', a);
        case 'volumeattachments.storage.k8s.io':
          return this.get(node, 'volumeattachment', a);
        case 'serviceaccounts.':
          return this.createToken(node, a);
        case 'leases.coordination.k8s.io':
          return this.nodeNamed(node, a, 'node lease', () =>
            a.namespace !== NODE_LEASE_NAMESPACE ? `can only access leases in the "${NODE_LEASE_NAMESPACE}" system namespace` : null,
          );
        case 'csinodes.storage.k8s.io':
          return this.nodeNamed(node, a, 'CSINode', () => (a.subresource ? 'cannot authorize CSINode subresources' : null));
        case 'resourceslices.resource.k8s.io':
          return this.resourceSlice(node, a);
        case 'nodes.':
          return this.nodeObject(node, a);
        case 'pods.':
          return this.pod(node, a);
      }
    }
    return this.rules.some((r) => ruleAllows(a, r)) ? ALLOW : none();
  }

  /** kube's authorize: a named object the node reaches. */
  private reach(node: string, type: VertexType, a: AuthorizationAttributes): AuthorizerResult {
    if (!a.name) return none('No Object name found');
    return this.graph.hasPathFrom(node, type, a.namespace, a.name) ? ALLOW : none(`no relationship found between node '${node}' and this object`);
  }

  private readNamespaced(node: string, type: VertexType, a: AuthorizationAttributes): AuthorizerResult {
    if (!['get', 'list', 'watch'].includes(a.verb)) return none('can only read resources of this type');
    if (a.subresource) return none('cannot read subresource');
    if (!a.namespace) return none('can only read namespaced object of this type');
    return this.reach(node, type, a);
  }

  private get(node: string, type: VertexType, a: AuthorizationAttributes): AuthorizerResult {
    if (a.verb !== 'get') return none('can only get individual resources of this type');
    if (a.subresource) return none('cannot get subresource');
    return this.reach(node, type, a);
  }

  private statusUpdate(node: string, type: VertexType, a: AuthorizationAttributes): AuthorizerResult {
    if (a.verb !== 'update' && a.verb !== 'patch') return none('can only get/update/patch this type');
    if (a.subresource !== 'status') return none('can only update status subresource');
    return this.reach(node, type, a);
  }

  private createToken(node: string, a: AuthorizationAttributes): AuthorizerResult {
    if (a.verb !== 'create' || !a.name) return none('can only create tokens for individual service accounts');
    if (a.subresource !== 'token') return none('can only create token subresource of serviceaccount');
    return this.reach(node, 'serviceaccount', a);
  }

  /** Leases and CSINodes: the node's own, by name (create is checked by NodeRestriction). */
  private nodeNamed(node: string, a: AuthorizationAttributes, what: string, extra: () => string | null): AuthorizerResult {
    if (!['get', 'create', 'update', 'patch', 'delete'].includes(a.verb)) return none(`can only get, create, update, patch, or delete a ${what}`);
    const e = extra();
    if (e) return none(e);
    if (a.verb !== 'create' && a.name !== node) return none(`can only access ${what} with the same name as the requesting node`);
    return ALLOW;
  }

  private resourceSlice(node: string, a: AuthorizationAttributes): AuthorizerResult {
    if (a.subresource) return none('cannot authorize ResourceSlice subresources');
    switch (a.verb) {
      case 'create':
        return ALLOW;
      case 'get':
      case 'update':
      case 'patch':
      case 'delete':
        return this.reach(node, 'resourceslice', a);
      case 'watch':
      case 'list':
      case 'deletecollection':
        return selects(a.fieldSelector, 'nodeName', node) ? ALLOW : none('can only list/watch/deletecollection resourceslices with nodeName field selector');
      default:
        return none('only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, delete, deletecollection');
    }
  }

  private nodeObject(node: string, a: AuthorizationAttributes): AuthorizerResult {
    if (a.subresource === '') {
      if (['create', 'update', 'patch'].includes(a.verb)) return ALLOW;
      if (['get', 'list', 'watch'].includes(a.verb)) {
        if (a.name === node || (a.verb !== 'get' && !a.name && selects(a.fieldSelector, 'metadata.name', node))) return ALLOW;
        return a.name ? none(`node '${node}' cannot read '${a.name}', only its own Node object`) : none(`node '${node}' cannot read all nodes, only its own Node object`);
      }
    } else if (a.subresource === 'status' && (a.verb === 'update' || a.verb === 'patch')) return ALLOW;
    return none();
  }

  private pod(node: string, a: AuthorizationAttributes): AuthorizerResult {
    switch (a.subresource) {
      case '':
        if (a.verb === 'get') return this.get(node, 'pod', a);
        if (a.verb === 'list' || a.verb === 'watch') {
          if (selects(a.fieldSelector, 'spec.nodeName', node)) return ALLOW;
          if (a.name) return this.reach(node, 'pod', a);
          return none('can only list/watch pods with spec.nodeName field selector');
        }
        if (a.verb === 'create' || a.verb === 'delete') return ALLOW;
        break;
      case 'status':
        if (a.verb === 'update' || a.verb === 'patch') return ALLOW;
        break;
      case 'eviction':
        if (a.verb === 'create') return ALLOW;
        break;
    }
    return none();
  }
}
