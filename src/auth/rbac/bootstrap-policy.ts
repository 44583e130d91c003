// The default RBAC policy kube-apiserver puts in place at start (its rbac/bootstrap-roles
// post-start hook), the part that matters to clients: cluster-admin, the user-facing
// admin/edit/view roles (filled by aggregation from the system:aggregate-to-* roles and any
// role a user labels the same way), discovery, basic-user and public-info-viewer, the
// components' roles (system:node, system:node-proxier, system:kube-controller-manager,
// system:kube-scheduler, system:monitoring, the CSR roles and approvers, every
// system:controller:* role), with their bindings. Every object carries the autoupdate annotation and the bootstrapping label.
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
const named = (verbs: string[], group: string, resources: string[], names: string[]): Rule => ({ apiGroups: [group], resources, resourceNames: names, verbs });
/** kube's eventsRule: what every component needs to record events */
const events = (): Rule => rule(['create', 'patch', 'update'], ['', 'events.k8s.io'], ['events']);

function clusterRole(name: string, rules: Rule[] | null, extra: { labels?: Record<string, string>; aggregateFrom?: string } = {}): any {
  return {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: 'ClusterRole',
    metadata: { name, labels: { ...BOOTSTRAP_LABELS, ...(extra.labels ?? {}) }, annotations: { [AUTOUPDATE_ANNOTATION]: 'true' } },
    ...(extra.aggregateFrom ? { aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [AGGREGATE_TO(extra.aggregateFrom)]: 'true' } }] } } : {}),
    ...(rules ? { rules } : {}),
  };
}

type Subj = { kind: 'Group' | 'User' | 'ServiceAccount'; name: string; namespace?: string };
const user = (name: string): Subj => ({ kind: 'User', name });
const sa = (name: string, namespace = 'kube-system'): Subj => ({ kind: 'ServiceAccount', name, namespace });

function clusterRoleBinding(role: string, groups: Array<string | Subj>, bindingName = role): any {
  return {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: 'ClusterRoleBinding',
    metadata: { name: bindingName, labels: { ...BOOTSTRAP_LABELS }, annotations: { [AUTOUPDATE_ANNOTATION]: 'true' } },
    roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: role },
    subjects: groups.length === 0 ? undefined : groups.map((g) => {
      const x: Subj = typeof g === 'string' ? { kind: 'Group', name: g } : g;
      return x.kind === 'ServiceAccount' ? { kind: x.kind, name: x.name, namespace: x.namespace } : { kind: x.kind, apiGroup: RBAC_GROUP, name: x.name };
    }),
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
    clusterRole('system:monitoring', [urls(['get'], ['/healthz', '/healthz/*', '/livez', '/livez/*', '/metrics', '/metrics/slis', '/readyz', '/readyz/*'])]),
    clusterRole('system:heapster', [rule(READ, '', ['events', 'namespaces', 'nodes', 'pods']), rule(READ, 'extensions', ['deployments'])]),
    clusterRole('system:node', nodeRules()),
    clusterRole('system:node-problem-detector', [rule(['get'], '', ['nodes']), rule(['patch'], '', ['nodes/status']), events()]),
    clusterRole('system:kubelet-api-admin', [
      rule(['get', 'list', 'watch', 'proxy'], '', ['nodes']),
      rule(['*'], '', ['nodes/configz', 'nodes/healthz', 'nodes/log', 'nodes/metrics', 'nodes/pods', 'nodes/proxy', 'nodes/spec', 'nodes/stats']),
    ]),
    clusterRole('system:node-bootstrapper', [rule(['create', 'get', 'list', 'watch'], 'certificates.k8s.io', ['certificatesigningrequests'])]),
    clusterRole('system:kube-aggregator', [rule(READ, '', ['endpoints', 'services'])]),
    clusterRole('system:kube-controller-manager', [
      events(),
      rule(['create'], 'coordination.k8s.io', ['leases']),
      named(['get', 'update'], 'coordination.k8s.io', ['leases'], ['kube-controller-manager']),
      rule(['create'], '', ['secrets', 'serviceaccounts']),
      rule(['delete'], '', ['secrets']),
      rule(['get'], '', ['configmaps', 'namespaces', 'secrets', 'serviceaccounts']),
      rule(['update'], '', ['secrets', 'serviceaccounts']),
      rule(['create'], 'authentication.k8s.io', ['tokenreviews']),
      rule(['create'], 'authorization.k8s.io', ['subjectaccessreviews']),
      rule(['list', 'watch'], '*', ['*']),
      rule(['create'], '', ['serviceaccounts/token']),
    ]),
    clusterRole('system:kube-dns', [rule(['list', 'watch'], '', ['endpoints', 'services']), rule(['list', 'watch'], 'discovery.k8s.io', ['endpointslices'])]),
    clusterRole('system:persistent-volume-provisioner', [
      rule(['create', 'delete', 'get', 'list', 'watch'], '', ['persistentvolumes']),
      rule(['get', 'list', 'update', 'watch'], '', ['persistentvolumeclaims']),
      rule(READ, 'storage.k8s.io', ['storageclasses']),
      rule(['list', 'watch'], '', ['events']),
      events(),
    ]),
    clusterRole('system:certificates.k8s.io:certificatesigningrequests:nodeclient', [rule(['create'], 'certificates.k8s.io', ['certificatesigningrequests/nodeclient'])]),
    clusterRole('system:certificates.k8s.io:certificatesigningrequests:selfnodeclient', [rule(['create'], 'certificates.k8s.io', ['certificatesigningrequests/selfnodeclient'])]),
    clusterRole('system:volume-scheduler', [
      rule(['get', 'list', 'patch', 'update', 'watch'], '', ['persistentvolumes']),
      rule(READ, 'storage.k8s.io', ['storageclasses']),
      rule(['get', 'list', 'patch', 'update', 'watch'], '', ['persistentvolumeclaims']),
    ]),
    ...['kube-apiserver-client', 'kube-apiserver-client-kubelet', 'kubelet-serving', 'legacy-unknown'].map((signer) =>
      clusterRole(`system:certificates.k8s.io:${signer}-approver`, [named(['approve'], 'certificates.k8s.io', ['signers'], [`kubernetes.io/${signer}`])]),
    ),
    clusterRole('system:service-account-issuer-discovery', [urls(['get'], ['/.well-known/openid-configuration', '/.well-known/openid-configuration/', '/openid/v1/jwks', '/openid/v1/jwks/'])]),
    clusterRole('system:node-proxier', [
      rule(['list', 'watch'], '', ['endpoints', 'services']),
      rule(READ, '', ['nodes']),
      events(),
      rule(['list', 'watch'], 'discovery.k8s.io', ['endpointslices']),
    ]),
    clusterRole('system:kube-scheduler', [
      events(),
      rule(['create'], 'coordination.k8s.io', ['leases']),
      named(['get', 'update'], 'coordination.k8s.io', ['leases'], ['kube-scheduler']),
      rule(READ, '', ['nodes']),
      rule(['delete', 'get', 'list', 'watch'], '', ['pods']),
      rule(['create'], '', ['bindings', 'pods/binding']),
      rule(['patch', 'update'], '', ['pods/status']),
      rule(READ, '', ['replicationcontrollers', 'services']),
      rule(READ, ['apps', 'extensions'], ['replicasets']),
      rule(READ, 'apps', ['statefulsets']),
      rule(READ, 'policy', ['poddisruptionbudgets']),
      rule(READ, '', ['persistentvolumeclaims', 'persistentvolumes']),
      rule(['create'], 'authentication.k8s.io', ['tokenreviews']),
      rule(['create'], 'authorization.k8s.io', ['subjectaccessreviews']),
      rule(READ, 'storage.k8s.io', ['csinodes']),
      rule(READ, '', ['namespaces']),
      rule(READ, 'storage.k8s.io', ['csidrivers']),
      rule(READ, 'storage.k8s.io', ['csistoragecapacities']),
    ]),
    ...controllerRoles().map(([name, rules]) => clusterRole(`system:controller:${name}`, rules)),
  ];
}

/**
 * The roles of kube-controller-manager's controllers (kube's bootstrappolicy
 * controller_policy.go), each bound to the controller's ServiceAccount in kube-system.
 */
function controllerRoles(): Array<[string, Rule[]]> {
  return [
    ['attachdetach-controller', [rule(['list', 'watch'], '', ['persistentvolumeclaims', 'persistentvolumes']), rule(['get', 'list', 'watch'], '', ['nodes']), rule(['patch', 'update'], '', ['nodes/status']), rule(['list', 'watch'], '', ['pods']), events(), rule(['create', 'delete', 'get', 'list', 'watch'], 'storage.k8s.io', ['volumeattachments']), rule(['get', 'list', 'watch'], 'storage.k8s.io', ['csidrivers']), rule(['get', 'list', 'watch'], 'storage.k8s.io', ['csinodes'])]],
    ['certificate-controller', [rule(['delete', 'get', 'list', 'watch'], 'certificates.k8s.io', ['certificatesigningrequests']), rule(['update'], 'certificates.k8s.io', ['certificatesigningrequests/approval', 'certificatesigningrequests/status']), named(['approve'], 'certificates.k8s.io', ['signers'], ['kubernetes.io/kube-apiserver-client-kubelet']), named(['approve'], 'certificates.k8s.io', ['signers'], ['kubernetes.io/legacy-unknown']), named(['sign'], 'certificates.k8s.io', ['signers'], ['kubernetes.io/kube-apiserver-client', 'kubernetes.io/kube-apiserver-client-kubelet', 'kubernetes.io/kubelet-serving', 'kubernetes.io/legacy-unknown']), rule(['create'], 'authorization.k8s.io', ['subjectaccessreviews']), events()]],
    ['clusterrole-aggregation-controller', [rule(['escalate', 'get', 'list', 'patch', 'update', 'watch'], RBAC_GROUP, ['clusterroles'])]],
    ['cronjob-controller', [rule(['get', 'list', 'update', 'watch'], 'batch', ['cronjobs']), rule(['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'], 'batch', ['jobs']), rule(['update'], 'batch', ['cronjobs/status']), rule(['update'], 'batch', ['cronjobs/finalizers']), rule(['delete', 'list'], '', ['pods']), events()]],
    ['daemon-set-controller', [rule(['get', 'list', 'watch'], ['apps', 'extensions'], ['daemonsets']), rule(['update'], ['apps', 'extensions'], ['daemonsets/status']), rule(['update'], ['apps', 'extensions'], ['daemonsets/finalizers']), rule(['list', 'watch'], '', ['nodes']), rule(['create', 'delete', 'list', 'patch', 'watch'], '', ['pods']), rule(['create'], '', ['pods/binding']), rule(['create', 'delete', 'list', 'patch', 'update', 'watch'], 'apps', ['controllerrevisions']), events()]],
    ['deployment-controller', [rule(['get', 'list', 'update', 'watch'], ['apps', 'extensions'], ['deployments']), rule(['update'], ['apps', 'extensions'], ['deployments/status']), rule(['update'], ['apps', 'extensions'], ['deployments/finalizers']), rule(['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'], ['apps', 'extensions'], ['replicasets']), rule(['get', 'list', 'update', 'watch'], '', ['pods']), events()]],
    ['disruption-controller', [rule(READ, ['apps', 'extensions'], ['deployments']), rule(READ, ['apps', 'extensions'], ['replicasets']), rule(READ, '', ['replicationcontrollers']), rule(READ, 'policy', ['poddisruptionbudgets']), rule(READ, 'apps', ['statefulsets']), rule(['update'], 'policy', ['poddisruptionbudgets/status']), rule(['get'], '*', ['*/scale']), rule(['patch', 'update'], '', ['pods/status']), events()]],
    ['endpoint-controller', [rule(READ, '', ['pods', 'services']), rule(['create', 'delete', 'get', 'list', 'update'], '', ['endpoints']), rule(['create'], '', ['endpoints/restricted']), events()]],
    ['endpointslice-controller', [rule(READ, '', ['nodes', 'pods', 'services']), rule(['update'], '', ['services/finalizers']), rule(['create', 'delete', 'get', 'list', 'update'], 'discovery.k8s.io', ['endpointslices']), events()]],
    ['endpointslicemirroring-controller', [rule(READ, '', ['endpoints', 'services']), rule(['update'], '', ['endpoints/finalizers', 'services/finalizers']), rule(['create', 'delete', 'get', 'list', 'update'], 'discovery.k8s.io', ['endpointslices']), events()]],
    ['ephemeral-volume-controller', [rule(['get', 'list', 'watch'], '', ['pods']), rule(['update'], '', ['pods/finalizers']), rule(['create', 'get', 'list', 'watch'], '', ['persistentvolumeclaims']), events()]],
    ['expand-controller', [rule(['get', 'list', 'patch', 'update', 'watch'], '', ['persistentvolumes']), rule(['patch', 'update'], '', ['persistentvolumeclaims/status']), rule(['get', 'list', 'watch'], '', ['persistentvolumeclaims']), rule(['get', 'list', 'watch'], 'storage.k8s.io', ['storageclasses']), rule(['get'], '', ['endpoints', 'services']), rule(['get'], '', ['secrets']), events()]],
    ['generic-garbage-collector', [rule(['delete', 'get', 'list', 'patch', 'update', 'watch'], '*', ['*'])]],
    ['horizontal-pod-autoscaler', [rule(['get', 'list', 'watch'], 'autoscaling', ['horizontalpodautoscalers']), rule(['update'], 'autoscaling', ['horizontalpodautoscalers/status']), rule(['get', 'update'], '*', ['*/scale']), rule(['list'], '', ['pods']), rule(['list'], 'metrics.k8s.io', ['pods']), rule(['get', 'list'], 'custom.metrics.k8s.io', ['*']), rule(['get', 'list'], 'external.metrics.k8s.io', ['*']), events()]],
    ['job-controller', [rule(['get', 'list', 'update', 'watch'], 'batch', ['jobs']), rule(['update'], 'batch', ['jobs/status']), rule(['update'], 'batch', ['jobs/finalizers']), rule(['create', 'delete', 'list', 'patch', 'watch'], '', ['pods']), events()]],
    ['namespace-controller', [rule(['delete', 'get', 'list', 'watch'], '', ['namespaces']), rule(['update'], '', ['namespaces/finalize', 'namespaces/status']), rule(['delete', 'deletecollection', 'get', 'list'], '*', ['*'])]],
    ['node-controller', [rule(['delete', 'get', 'list', 'patch', 'update'], '', ['nodes']), rule(['patch', 'update'], '', ['nodes/status']), rule(['patch', 'update'], '', ['pods/status']), rule(['delete', 'list'], '', ['pods']), rule(['get'], '', ['pods']), events()]],
    ['persistent-volume-binder', [rule(['create', 'delete', 'get', 'list', 'update', 'watch'], '', ['persistentvolumes']), rule(['update'], '', ['persistentvolumes/status']), rule(['get', 'list', 'update', 'watch'], '', ['persistentvolumeclaims']), rule(['update'], '', ['persistentvolumeclaims/status']), rule(['get', 'list', 'watch'], '', ['pods']), rule(['get', 'list', 'watch'], 'storage.k8s.io', ['storageclasses']), rule(['create', 'delete', 'get'], '', ['endpoints', 'services']), rule(['get'], '', ['secrets']), rule(['get', 'list'], '', ['nodes']), rule(['watch'], '', ['events']), events()]],
    ['pod-garbage-collector', [rule(['delete', 'list', 'watch'], '', ['pods']), rule(['get', 'list', 'watch'], '', ['nodes']), rule(['patch'], '', ['pods/status'])]],
    ['pv-protection-controller', [rule(['get', 'list', 'update', 'watch'], '', ['persistentvolumes']), events()]],
    ['pvc-protection-controller', [rule(['get', 'list', 'update', 'watch'], '', ['persistentvolumeclaims']), rule(['get', 'list', 'watch'], '', ['pods']), events()]],
    ['replicaset-controller', [rule(['get', 'list', 'update', 'watch'], ['apps', 'extensions'], ['replicasets']), rule(['update'], ['apps', 'extensions'], ['replicasets/status']), rule(['update'], ['apps', 'extensions'], ['replicasets/finalizers']), rule(['create', 'delete', 'list', 'patch', 'watch'], '', ['pods']), events()]],
    ['replication-controller', [rule(['get', 'list', 'update', 'watch'], '', ['replicationcontrollers']), rule(['update'], '', ['replicationcontrollers/status']), rule(['update'], '', ['replicationcontrollers/finalizers']), rule(['create', 'delete', 'list', 'patch', 'watch'], '', ['pods']), events()]],
    ['resourcequota-controller', [rule(['list', 'watch'], '*', ['*']), rule(['update'], '', ['resourcequotas/status']), events()]],
    ['root-ca-cert-publisher', [rule(['create', 'update'], '', ['configmaps']), events()]],
    ['route-controller', [rule(['list', 'watch'], '', ['nodes']), rule(['patch'], '', ['nodes/status']), events()]],
    ['service-account-controller', [rule(['create'], '', ['serviceaccounts']), events()]],
    ['service-cidrs-controller', [rule(['get', 'list', 'patch', 'update', 'watch'], 'networking.k8s.io', ['servicecidrs']), rule(['patch', 'update'], 'networking.k8s.io', ['servicecidrs/finalizers']), rule(['patch', 'update'], 'networking.k8s.io', ['servicecidrs/status']), rule(['get', 'list', 'watch'], 'networking.k8s.io', ['ipaddresses']), events()]],
    ['service-controller', [rule(READ, '', ['services']), rule(['patch', 'update'], '', ['services/status']), rule(['list', 'watch'], '', ['nodes']), events()]],
    ['statefulset-controller', [rule(['list', 'watch'], '', ['pods']), rule(['get', 'list', 'watch'], 'apps', ['statefulsets']), rule(['update'], 'apps', ['statefulsets/status']), rule(['update'], 'apps', ['statefulsets/finalizers']), rule(['create', 'delete', 'get', 'patch', 'update'], '', ['pods']), rule(['create', 'delete', 'list', 'patch', 'update', 'watch'], 'apps', ['controllerrevisions']), rule(['create', 'get'], '', ['persistentvolumeclaims']), events()]],
    ['ttl-controller', [rule(['list', 'patch', 'update', 'watch'], '', ['nodes']), events()]],
    ['ttl-after-finished-controller', [rule(['delete', 'get', 'list', 'watch'], 'batch', ['jobs']), events()]],
    ['legacy-service-account-token-cleaner', [rule(['get'], '', ['configmaps']), rule(['delete', 'patch'], '', ['secrets'])]],
    ['validatingadmissionpolicy-status-controller', [rule(['get', 'list', 'watch'], 'admissionregistration.k8s.io', ['validatingadmissionpolicies']), rule(['get', 'patch', 'update'], 'admissionregistration.k8s.io', ['validatingadmissionpolicies/status']), events()]],
  ];
}

export function bootstrapClusterRoleBindings(): any[] {
  return [
    clusterRoleBinding('cluster-admin', ['system:masters']),
    clusterRoleBinding('system:basic-user', ['system:authenticated']),
    clusterRoleBinding('system:discovery', ['system:authenticated']),
    clusterRoleBinding('system:public-info-viewer', ['system:authenticated', 'system:unauthenticated']),
    clusterRoleBinding('system:monitoring', ['system:monitoring']),
    clusterRoleBinding('system:node-proxier', [user('system:kube-proxy')]),
    clusterRoleBinding('system:kube-controller-manager', [user('system:kube-controller-manager')]),
    clusterRoleBinding('system:kube-dns', [sa('kube-dns')]),
    clusterRoleBinding('system:kube-scheduler', [user('system:kube-scheduler')]),
    clusterRoleBinding('system:volume-scheduler', [user('system:kube-scheduler')]),
    // kube binds system:node to no one: nodes are authorized by the Node mode
    clusterRoleBinding('system:node', []),
    clusterRoleBinding('system:service-account-issuer-discovery', ['system:serviceaccounts']),
    ...controllerRoles().map(([name]) => clusterRoleBinding(`system:controller:${name}`, [sa(name)])),
  ];
}

// The namespaced part of the default policy (kube's bootstrappolicy NamespaceRoles and
// NamespaceRoleBindings): the front proxy's configuration readable by the delegating
// components, the leader-locking roles of the controller manager and the scheduler, and the
// kube-system / kube-public roles of the bootstrap signer, the cloud provider and the token
// cleaner, each bound to its component. Same metadata as the cluster-wide objects.

function role(namespace: string, name: string, rules: Rule[]): any {
  return {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: 'Role',
    metadata: { name, namespace, labels: { ...BOOTSTRAP_LABELS }, annotations: { [AUTOUPDATE_ANNOTATION]: 'true' } },
    rules,
  };
}

function roleBinding(namespace: string, roleName: string, subjects: Subj[], bindingName = roleName): any {
  return {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: 'RoleBinding',
    metadata: { name: bindingName, namespace, labels: { ...BOOTSTRAP_LABELS }, annotations: { [AUTOUPDATE_ANNOTATION]: 'true' } },
    roleRef: { apiGroup: RBAC_GROUP, kind: 'Role', name: roleName },
    subjects: subjects.map((x) => (x.kind === 'ServiceAccount' ? { kind: x.kind, name: x.name, namespace: x.namespace } : { kind: x.kind, apiGroup: RBAC_GROUP, name: x.name })),
  };
}

/** The default Roles, kube-system's first then kube-public's, in kube's order. */
export function bootstrapNamespaceRoles(): any[] {
  const sys = 'kube-system';
  return [
    role(sys, 'extension-apiserver-authentication-reader', [named(READ, '', ['configmaps'], ['extension-apiserver-authentication'])]),
    role(sys, 'system:controller:bootstrap-signer', [rule(READ, '', ['secrets'])]),
    role(sys, 'system:controller:cloud-provider', [rule(['create', 'get', 'list', 'watch'], '', ['configmaps'])]),
    role(sys, 'system:controller:token-cleaner', [rule(['get', 'list', 'watch', 'delete'], '', ['secrets']), events()]),
    role(sys, 'system::leader-locking-kube-controller-manager', [
      rule(['watch'], '', ['configmaps']),
      named(['get', 'update'], '', ['configmaps'], ['kube-controller-manager']),
      rule(['get', 'watch', 'list', 'create', 'update'], 'coordination.k8s.io', ['leases']),
    ]),
    role(sys, 'system::leader-locking-kube-scheduler', [rule(['watch'], '', ['configmaps']), named(['get', 'update'], '', ['configmaps'], ['kube-scheduler'])]),
    role('kube-public', 'system:controller:bootstrap-signer', [rule(READ, '', ['configmaps']), named(['update'], '', ['configmaps'], ['cluster-info']), events()]),
  ];
}

/** The default RoleBindings, in kube's order. */
export function bootstrapNamespaceRoleBindings(): any[] {
  const sys = 'kube-system';
  return [
    roleBinding(sys, 'extension-apiserver-authentication-reader', [user('system:kube-controller-manager'), user('system:kube-scheduler')], 'system::extension-apiserver-authentication-reader'),
    roleBinding(sys, 'system::leader-locking-kube-controller-manager', [user('system:kube-controller-manager'), sa('kube-controller-manager'), sa('leader-election-controller')]),
    roleBinding(sys, 'system::leader-locking-kube-scheduler', [user('system:kube-scheduler'), sa('kube-scheduler')]),
    roleBinding(sys, 'system:controller:bootstrap-signer', [sa('bootstrap-signer')]),
    roleBinding(sys, 'system:controller:cloud-provider', [sa('cloud-provider')]),
    roleBinding(sys, 'system:controller:token-cleaner', [sa('token-cleaner')]),
    roleBinding('kube-public', 'system:controller:bootstrap-signer', [sa('bootstrap-signer')]),
  ];
}
