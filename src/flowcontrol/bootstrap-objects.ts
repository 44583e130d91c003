// The configuration kube-apiserver 1.33 puts in place at start: the mandatory exempt and
// catch-all PriorityLevelConfigurations and FlowSchemas, and the suggested ones (system,
// node-high, leader-election, workload-high, workload-low, global-default and their
// FlowSchemas). Names, precedences, shares, lendable percents and queue settings are
// kube's (flowcontrol/bootstrap). Each carries apf.kubernetes.io/autoupdate-spec "true".
//
// The objects are built fresh on every call: callers hand them to the store, which
// mutates what it is given (defaults, metadata).

export const AUTOUPDATE_ANNOTATION = 'apf.kubernetes.io/autoupdate-spec';
const API_VERSION = 'flowcontrol.apiserver.k8s.io/v1';

type Subject = { kind: 'User'; user: { name: string } } | { kind: 'Group'; group: { name: string } } | { kind: 'ServiceAccount'; serviceAccount: { namespace: string; name: string } };

const group = (name: string): Subject => ({ kind: 'Group', group: { name } });
const user = (name: string): Subject => ({ kind: 'User', user: { name } });
const kubeSystemSa = (name: string): Subject => ({ kind: 'ServiceAccount', serviceAccount: { namespace: 'kube-system', name } });

const CONTROLLER_MANAGER = 'system:kube-controller-manager';
const SCHEDULER = 'system:kube-scheduler';

/** every verb, group, resource and namespace, cluster-scoped too; and every non-resource URL */
const everything = () => ({
  resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] }],
  nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
});

const leaseRule = (verbs: string[]) => ({ verbs, apiGroups: ['coordination.k8s.io'], resources: ['leases'], clusterScope: false, namespaces: ['*'] });

function plc(name: string, spec: Record<string, unknown>): any {
  return { apiVersion: API_VERSION, kind: 'PriorityLevelConfiguration', metadata: { name, annotations: { [AUTOUPDATE_ANNOTATION]: 'true' } }, spec };
}

function limited(shares: number, lendablePercent: number, queuing?: { queues: number; handSize: number; queueLengthLimit: number }) {
  return {
    type: 'Limited',
    limited: {
      nominalConcurrencyShares: shares,
      lendablePercent,
      limitResponse: queuing ? { type: 'Queue', queuing } : { type: 'Reject' },
    },
  };
}

function fs(name: string, level: string, precedence: number, distinguisher: 'ByUser' | 'ByNamespace' | '', rules: any[]): any {
  const spec: any = { priorityLevelConfiguration: { name: level }, matchingPrecedence: precedence };
  if (distinguisher) spec.distinguisherMethod = { type: distinguisher };
  spec.rules = rules;
  return { apiVersion: API_VERSION, kind: 'FlowSchema', metadata: { name, annotations: { [AUTOUPDATE_ANNOTATION]: 'true' } }, spec };
}

export function mandatoryPriorityLevels(): any[] {
  return [
    plc('exempt', { type: 'Exempt', exempt: { nominalConcurrencyShares: 0, lendablePercent: 0 } }),
    plc('catch-all', limited(5, 0)),
  ];
}

export function mandatoryFlowSchemas(): any[] {
  return [
    fs('exempt', 'exempt', 1, '', [{ subjects: [group('system:masters')], ...everything() }]),
    fs('catch-all', 'catch-all', 10000, 'ByUser', [{ subjects: [group('system:unauthenticated'), group('system:authenticated')], ...everything() }]),
  ];
}

export function suggestedPriorityLevels(): any[] {
  return [
    plc('system', limited(30, 33, { queues: 64, handSize: 6, queueLengthLimit: 50 })),
    plc('node-high', limited(40, 25, { queues: 64, handSize: 6, queueLengthLimit: 50 })),
    plc('leader-election', limited(10, 0, { queues: 16, handSize: 4, queueLengthLimit: 50 })),
    plc('workload-high', limited(40, 50, { queues: 128, handSize: 6, queueLengthLimit: 50 })),
    plc('workload-low', limited(100, 90, { queues: 128, handSize: 6, queueLengthLimit: 50 })),
    plc('global-default', limited(20, 50, { queues: 128, handSize: 6, queueLengthLimit: 50 })),
  ];
}

export function suggestedFlowSchemas(): any[] {
  const allUsers = [group('system:unauthenticated'), group('system:authenticated')];
  return [
    fs('probes', 'exempt', 2, '', [{ subjects: allUsers, nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/healthz', '/readyz', '/livez'] }] }]),
    fs('system-leader-election', 'leader-election', 100, 'ByUser', [
      { subjects: [user(CONTROLLER_MANAGER), user(SCHEDULER), kubeSystemSa('*')], resourceRules: [leaseRule(['get', 'create', 'update'])] },
    ]),
    fs('endpoint-controller', 'workload-high', 150, 'ByUser', [
      {
        subjects: [user(CONTROLLER_MANAGER), kubeSystemSa('endpoint-controller'), kubeSystemSa('endpointslicemirroring-controller')],
        resourceRules: [{ verbs: ['get', 'create', 'update'], apiGroups: [''], resources: ['endpoints'], clusterScope: false, namespaces: ['*'] }],
      },
    ]),
    fs('workload-leader-election', 'leader-election', 200, 'ByUser', [
      {
        subjects: [kubeSystemSa('*')],
        resourceRules: [{ verbs: ['get', 'create', 'update'], apiGroups: [''], resources: ['endpoints', 'configmaps'], clusterScope: false, namespaces: ['*'] }, leaseRule(['get', 'create', 'update'])],
      },
    ]),
    fs('system-node-high', 'node-high', 400, 'ByUser', [
      {
        subjects: [group('system:nodes')],
        resourceRules: [{ verbs: ['*'], apiGroups: [''], resources: ['nodes', 'nodes/status'], clusterScope: true, namespaces: ['*'] }, leaseRule(['*'])],
      },
    ]),
    fs('system-nodes', 'system', 500, 'ByUser', [{ subjects: [group('system:nodes')], ...everything() }]),
    fs('kube-controller-manager', 'workload-high', 800, 'ByNamespace', [{ subjects: [user(CONTROLLER_MANAGER)], ...everything() }]),
    fs('kube-scheduler', 'workload-high', 800, 'ByNamespace', [{ subjects: [user(SCHEDULER)], ...everything() }]),
    fs('kube-system-service-accounts', 'workload-high', 900, 'ByNamespace', [{ subjects: [kubeSystemSa('*')], ...everything() }]),
    fs('service-accounts', 'workload-low', 9000, 'ByUser', [{ subjects: [group('system:serviceaccounts')], ...everything() }]),
    fs('global-default', 'global-default', 9900, 'ByUser', [{ subjects: allUsers, ...everything() }]),
  ];
}
