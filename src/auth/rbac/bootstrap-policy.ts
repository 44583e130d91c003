// The default RBAC policy kube-apiserver puts in place at start (its rbac/bootstrap-roles
// post-start hook), the part that matters to clients: cluster-admin, the user-facing
// admin/edit/view roles (filled by aggregation from the system:aggregate-to-* roles and any
// role a user labels the same way), discovery, basic-user and public-info-viewer, with their
// bindings. Every object carries the autoupdate annotation and the bootstrapping label.
import { RBAC_GROUP } from './resolver.js';

export const AUTOUPDATE_ANNOTATION = 'rbac.authorization.kubernetes.io/autoupdate';
const BOOTSTRAP_LABELS = { 'kubernetes.io/bootstrapping': 'rbac-defaults' };
export const AGGREGATE_TO = (role: string) => `${RBAC_GROUP}/aggregate-to-${role}`;

const READ = ['get', 'list', 'watch'];
const WRITE = ['create', 'delete', 'deletecollection', 'patch', 'update'];
const ALL = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

type Rule = { apiGroups?: string[]; resources?: string[]; resourceNames?: string[]; nonResourceURLs?: string[]; verbs: string[] };
const rule = (verbs: string[], group: string | string[], resources: string[]): Rule => ({ apiGroups: Array.isArray(group) ? group : [group], resources, verbs });
const urls = (verbs: string[], paths: string[]): Rule => ({ nonResourceURLs: paths, verbs });

function clusterRole(name: string, rules: Rule[] | null, extra: { labels?: Record<string, string>; aggregateFrom?: string } = {}): any {
  return {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: 'ClusterRole',
    metadata: { name, labels: { ...BOOTSTRAP_LABELS, ...(extra.labels ?? {}) }, annotations: { [AUTOUPDATE_ANNOTATION]: 'true' } },
    ...(extra.aggregateFrom ? { aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [AGGREGATE_TO(extra.aggregateFrom)]: 'true' } }] } } : {}),
    ...(rules ? { rules } : {}),
  };
}

function clusterRoleBinding(role: string, groups: string[]): any {
  return {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: 'ClusterRoleBinding',
    metadata: { name: role, labels: { ...BOOTSTRAP_LABELS }, annotations: { [AUTOUPDATE_ANNOTATION]: 'true' } },
    roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: role },
    subjects: groups.map((name) => ({ kind: 'Group', apiGroup: RBAC_GROUP, name })),
  };
}

/**
 * What every node may do (kube's bootstrappolicy NodeRules): the rules of the system:node
 * role, and the Node authorizer's static rules for what its graph does not subdivide.
 */
export function nodeRules(): Rule[] {
  return [
    rule(['create'], 'authentication.k8s.io', ['tokenreviews']),
    rule(['create'], 'authorization.k8s.io', ['localsubjectaccessreviews', 'subjectaccessreviews']),
    rule(READ, '', ['services']),
    rule(['create', 'get', 'list', 'watch'], '', ['nodes']),
    rule(['patch', 'update'], '', ['nodes/status']),
    rule(['patch', 'update'], '', ['nodes']),
    rule(['create', 'patch', 'update'], ['', 'events.k8s.io'], ['events']),
    rule(READ, '', ['pods']),
    rule(['create', 'delete'], '', ['pods']),
    rule(['patch', 'update'], '', ['pods/status']),
    rule(['create'], '', ['pods/eviction']),
    rule(READ, '', ['configmaps', 'secrets']),
    rule(['get'], '', ['persistentvolumeclaims', 'persistentvolumes']),
    rule(['get'], '', ['endpoints']),
    rule(['create', 'get', 'list', 'watch'], 'certificates.k8s.io', ['certificatesigningrequests']),
    rule(['create', 'delete', 'get', 'patch', 'update'], 'coordination.k8s.io', ['leases']),
    rule(['get'], 'storage.k8s.io', ['volumeattachments']),
    rule(['create'], '', ['serviceaccounts/token']),
    rule(['get', 'patch', 'update'], '', ['persistentvolumeclaims/status']),
    rule(READ, 'storage.k8s.io', ['csidrivers']),
    rule(['create', 'delete', 'get', 'patch', 'update'], 'storage.k8s.io', ['csinodes']),
    rule(READ, 'node.k8s.io', ['runtimeclasses']),
  ];
}

export function bootstrapClusterRoles(): any[] {
  return [
    clusterRole('cluster-admin', [rule(['*'], '*', ['*']), urls(['*'], ['*'])]),
    clusterRole('admin', null, { aggregateFrom: 'admin' }),
    clusterRole('edit', null, { aggregateFrom: 'edit', labels: { [AGGREGATE_TO('admin')]: 'true' } }),
    clusterRole('view', null, { aggregateFrom: 'view', labels: { [AGGREGATE_TO('edit')]: 'true' } }),
    clusterRole('system:aggregate-to-admin', [rule(['create'], 'authorization.k8s.io', ['localsubjectaccessreviews']), rule(ALL, RBAC_GROUP, ['rolebindings', 'roles'])], {
      labels: { [AGGREGATE_TO('admin')]: 'true' },
    }),
    clusterRole(
      'system:aggregate-to-edit',
      [
        rule(READ, '', ['pods/attach', 'pods/exec', 'pods/portforward', 'pods/proxy', 'secrets', 'services/proxy']),
        rule(['impersonate'], '', ['serviceaccounts']),
        rule(WRITE, '', ['pods', 'pods/attach', 'pods/exec', 'pods/portforward', 'pods/proxy']),
        rule(['create'], '', ['pods/eviction']),
        rule(WRITE, '', ['configmaps', 'events', 'persistentvolumeclaims', 'replicationcontrollers', 'replicationcontrollers/scale', 'secrets', 'serviceaccounts', 'services', 'services/proxy']),
        rule(['create'], '', ['serviceaccounts/token']),
        rule(WRITE, 'apps', ['daemonsets', 'deployments', 'deployments/rollback', 'deployments/scale', 'replicasets', 'replicasets/scale', 'statefulsets', 'statefulsets/scale']),
        rule(WRITE, 'autoscaling', ['horizontalpodautoscalers']),
        rule(WRITE, 'batch', ['cronjobs', 'jobs']),
        rule(WRITE, 'extensions', ['daemonsets', 'deployments', 'deployments/rollback', 'deployments/scale', 'ingresses', 'networkpolicies', 'replicasets', 'replicasets/scale', 'replicationcontrollers/scale']),
        rule(WRITE, 'policy', ['poddisruptionbudgets']),
        rule(WRITE, 'networking.k8s.io', ['ingresses', 'networkpolicies']),
        rule(ALL, 'coordination.k8s.io', ['leases']),
      ],
      { labels: { [AGGREGATE_TO('edit')]: 'true' } },
    ),
    clusterRole(
      'system:aggregate-to-view',
      [
        rule(READ, '', ['configmaps', 'endpoints', 'persistentvolumeclaims', 'persistentvolumeclaims/status', 'pods', 'replicationcontrollers', 'replicationcontrollers/scale', 'serviceaccounts', 'services', 'services/status']),
        rule(READ, '', ['bindings', 'events', 'limitranges', 'namespaces/status', 'pods/log', 'pods/status', 'replicationcontrollers/status', 'resourcequotas', 'resourcequotas/status']),
        rule(READ, '', ['namespaces']),
        rule(READ, 'discovery.k8s.io', ['endpointslices']),
        rule(READ, 'apps', ['controllerrevisions', 'daemonsets', 'daemonsets/status', 'deployments', 'deployments/scale', 'deployments/status', 'replicasets', 'replicasets/scale', 'replicasets/status', 'statefulsets', 'statefulsets/scale', 'statefulsets/status']),
        rule(READ, 'autoscaling', ['horizontalpodautoscalers', 'horizontalpodautoscalers/status']),
        rule(READ, 'batch', ['cronjobs', 'cronjobs/status', 'jobs', 'jobs/status']),
        rule(READ, 'extensions', ['daemonsets', 'daemonsets/status', 'deployments', 'deployments/scale', 'deployments/status', 'ingresses', 'ingresses/status', 'networkpolicies', 'replicasets', 'replicasets/scale', 'replicasets/status', 'replicationcontrollers/scale']),
        rule(READ, 'policy', ['poddisruptionbudgets', 'poddisruptionbudgets/status']),
        rule(READ, 'networking.k8s.io', ['ingresses', 'ingresses/status', 'networkpolicies']),
      ],
      { labels: { [AGGREGATE_TO('view')]: 'true' } },
    ),
    clusterRole('system:discovery', [urls(['get'], ['/api', '/api/*', '/apis', '/apis/*', '/healthz', '/livez', '/openapi', '/openapi/*', '/readyz', '/version', '/version/'])]),
    clusterRole('system:basic-user', [rule(['create'], 'authorization.k8s.io', ['selfsubjectaccessreviews', 'selfsubjectrulesreviews']), rule(['create'], 'authentication.k8s.io', ['selfsubjectreviews'])]),
    clusterRole('system:public-info-viewer', [urls(['get'], ['/healthz', '/livez', '/readyz', '/version', '/version/'])]),
    clusterRole('system:auth-delegator', [rule(['create'], 'authentication.k8s.io', ['tokenreviews']), rule(['create'], 'authorization.k8s.io', ['subjectaccessreviews'])]),
  ];
}

export function bootstrapClusterRoleBindings(): any[] {
  return [
    clusterRoleBinding('cluster-admin', ['system:masters']),
    clusterRoleBinding('system:basic-user', ['system:authenticated']),
    clusterRoleBinding('system:discovery', ['system:authenticated']),
    clusterRoleBinding('system:public-info-viewer', ['system:authenticated', 'system:unauthenticated']),
  ];
}
