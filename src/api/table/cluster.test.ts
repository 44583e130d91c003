import { describe, it, expect } from 'vitest';
import { printerFor } from './printers.js';
import { formatHPAMetrics } from './cluster.js';

const NOW = Date.parse('2025-03-03T12:00:00Z');
const m = (name: string, extra: object = {}) => ({ name, creationTimestamp: '2025-03-03T11:00:00Z', ...extra });
const cells = (g: string, r: string, o: any) => printerFor(g, r).row(o, NOW).cells;
const header = (g: string, r: string) => printerFor(g, r).columns.map((c) => c.name);

describe('cluster-level printers', () => {
  it('horizontal pod autoscalers (v2 and v1 shapes)', () => {
    expect(header('autoscaling', 'horizontalpodautoscalers')).toEqual(['Name', 'Reference', 'Targets', 'MinPods', 'MaxPods', 'Replicas', 'Age']);
    const v2 = {
      metadata: m('web'),
      spec: { scaleTargetRef: { kind: 'Deployment', name: 'web' }, minReplicas: 2, maxReplicas: 10, metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } }] },
      status: { currentReplicas: 3, currentMetrics: [{ type: 'Resource', resource: { name: 'cpu', current: { averageUtilization: 45, averageValue: '120m' } } }] },
    };
    expect(cells('autoscaling', 'horizontalpodautoscalers', v2)).toEqual(['web', 'Deployment/web', 'cpu: 45%/80%', '2', 10, 3, '60m']);
    const v1 = { metadata: m('old'), spec: { scaleTargetRef: { kind: 'Deployment', name: 'x' }, maxReplicas: 4, targetCPUUtilizationPercentage: 50 }, status: { currentReplicas: 0 } };
    expect(cells('autoscaling', 'horizontalpodautoscalers', v1)).toEqual(['old', 'Deployment/x', 'cpu: <unknown>/50%', '<unset>', 4, 0, '60m']);
    expect(cells('autoscaling', 'horizontalpodautoscalers', { metadata: m('n'), spec: { scaleTargetRef: { kind: 'StatefulSet', name: 's' }, maxReplicas: 1 } })[2]).toBe('<none>');
  });

  it('formatHPAMetrics: each metric type, averages, and "+ N more..."', () => {
    const specs = [
      { type: 'Pods', pods: { metric: { name: 'qps' }, target: { type: 'AverageValue', averageValue: '10' } } },
      { type: 'Object', object: { target: { type: 'Value', value: '2k' } } },
      { type: 'External', external: { target: { type: 'AverageValue', averageValue: '30' } } },
      { type: 'Resource', resource: { name: 'memory', target: { type: 'AverageValue', averageValue: '1Gi' } } },
    ];
    expect(formatHPAMetrics(specs, [{ type: 'Pods', pods: { current: { averageValue: '7' } } }])).toBe('7/10, <unknown>/2k + 2 more...');
    expect(formatHPAMetrics(specs.slice(2), [])).toBe('<unknown>/30 (avg), memory: <unknown>/1Gi');
    expect(formatHPAMetrics([{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization' } } }], [])).toBe('cpu: <unknown>/<auto>');
  });

  it('resource quotas and limit ranges', () => {
    expect(header('', 'resourcequotas')).toEqual(['Name', 'Age', 'Request', 'Limit']);
    const q = { metadata: m('q'), spec: { hard: { pods: '10', 'limits.cpu': '4', 'requests.memory': '1Gi', 'limits.memory': '2Gi' } }, status: { used: { pods: '3', 'limits.cpu': '500m' } } };
    expect(cells('', 'resourcequotas', q)).toEqual(['q', '60m', 'pods: 3/10, requests.memory: 0/1Gi', 'limits.cpu: 500m/4, limits.memory: 0/2Gi']);
    expect(header('', 'limitranges')).toEqual(['Name', 'Created At']);
    expect(cells('', 'limitranges', { metadata: m('lr') })).toEqual(['lr', '2025-03-03T11:00:00Z']);
  });

  it('API services and component statuses', () => {
    const local = { metadata: m('v1.apps'), spec: { group: 'apps', version: 'v1' }, status: { conditions: [{ type: 'Available', status: 'True', reason: 'Local' }] } };
    expect(cells('apiregistration.k8s.io', 'apiservices', local)).toEqual(['v1.apps', 'Local', 'True', '60m']);
    const remote = { metadata: m('v1beta1.metrics.k8s.io'), spec: { service: { namespace: 'kube-system', name: 'metrics-server' } }, status: { conditions: [{ type: 'Available', status: 'False', reason: 'MissingEndpoints' }] } };
    expect(cells('apiregistration.k8s.io', 'apiservices', remote)).toEqual(['v1beta1.metrics.k8s.io', 'kube-system/metrics-server', 'False (MissingEndpoints)', '60m']);
    expect(header('', 'componentstatuses')).toEqual(['Name', 'Status', 'Message', 'Error']);
    expect(cells('', 'componentstatuses', { metadata: m('etcd-0'), conditions: [{ type: 'Healthy', status: 'True', message: 'ok' }] })).toEqual(['etcd-0', 'Healthy', 'ok', '']);
  });

  it('CSI drivers, nodes, attachments, capacities', () => {
    expect(header('storage.k8s.io', 'csidrivers')).toEqual(['Name', 'AttachRequired', 'PodInfoOnMount', 'StorageCapacity', 'TokenRequests', 'RequiresRepublish', 'Modes', 'Age']);
    expect(cells('storage.k8s.io', 'csidrivers', { metadata: m('csi.x'), spec: { attachRequired: true, podInfoOnMount: false, volumeLifecycleModes: ['Persistent'], tokenRequests: [{ audience: 'a' }, { audience: 'b' }] } })).toEqual(['csi.x', true, false, false, 'a,b', false, 'Persistent', '60m']);
    expect(cells('storage.k8s.io', 'csinodes', { metadata: m('n1'), spec: { drivers: [{ name: 'a' }] } })).toEqual(['n1', 1, '60m']);
    const va = { metadata: m('va'), spec: { attacher: 'csi.x', nodeName: 'n1', source: { persistentVolumeName: 'pv1' } }, status: { attached: true } };
    expect(cells('storage.k8s.io', 'volumeattachments', va)).toEqual(['va', 'csi.x', 'pv1', 'n1', true, '60m']);
    expect(cells('storage.k8s.io', 'csistoragecapacities', { metadata: m('c'), storageClassName: 'fast', capacity: '10Gi' })).toEqual(['c', 'fast', '10Gi', '60m']);
    expect(cells('storage.k8s.io', 'csistoragecapacities', { metadata: m('c'), storageClassName: 'fast' })[2]).toBe('<unset>');
  });

  it('flow schemas and priority levels', () => {
    expect(header('flowcontrol.apiserver.k8s.io', 'flowschemas')).toEqual(['Name', 'PriorityLevel', 'MatchingPrecedence', 'DistinguisherMethod', 'Age', 'MissingPL']);
    const fs = { metadata: m('global-default'), spec: { priorityLevelConfiguration: { name: 'global-default' }, matchingPrecedence: 9900, distinguisherMethod: { type: 'ByUser' } }, status: { conditions: [{ type: 'Dangling', status: 'False' }] } };
    expect(cells('flowcontrol.apiserver.k8s.io', 'flowschemas', fs)).toEqual(['global-default', 'global-default', 9900, 'ByUser', '60m', 'False']);
    expect(cells('flowcontrol.apiserver.k8s.io', 'flowschemas', { metadata: m('x'), spec: { priorityLevelConfiguration: { name: 'exempt' }, matchingPrecedence: 1 } }).slice(3)).toEqual(['<none>', '60m', 'Unknown']);
    const limited = { metadata: m('workload-low'), spec: { type: 'Limited', limited: { nominalConcurrencyShares: 100, limitResponse: { type: 'Queue', queuing: { queues: 128, handSize: 6, queueLengthLimit: 50 } } } } };
    expect(cells('flowcontrol.apiserver.k8s.io', 'prioritylevelconfigurations', limited)).toEqual(['workload-low', 'Limited', 100, 128, 6, 50, '60m']);
    expect(cells('flowcontrol.apiserver.k8s.io', 'prioritylevelconfigurations', { metadata: m('exempt'), spec: { type: 'Exempt', exempt: {} } })).toEqual(['exempt', 'Exempt', '<none>', '<none>', '<none>', '<none>', '60m']);
  });

  it('validating admission policies and bindings', () => {
    const p = { metadata: m('p'), spec: { paramKind: { apiVersion: 'v1', kind: 'ConfigMap' }, validations: [{ expression: 'true' }, { expression: 'true' }] } };
    expect(cells('admissionregistration.k8s.io', 'validatingadmissionpolicies', p)).toEqual(['p', 2, 'v1/ConfigMap', '60m']);
    expect(cells('admissionregistration.k8s.io', 'validatingadmissionpolicies', { metadata: m('q'), spec: {} })).toEqual(['q', 0, '<unset>', '60m']);
    const b = { metadata: m('b'), spec: { policyName: 'p', paramRef: { namespace: 'default', name: 'cfg' } } };
    expect(cells('admissionregistration.k8s.io', 'validatingadmissionpolicybindings', b)).toEqual(['b', 'p', 'default/cfg', '60m']);
    expect(cells('admissionregistration.k8s.io', 'validatingadmissionpolicybindings', { metadata: m('c'), spec: { policyName: 'p' } })[2]).toBe('<unset>');
  });

  it('IP addresses and service CIDRs', () => {
    const ip = { metadata: m('10.96.0.1'), spec: { parentRef: { group: '', resource: 'services', namespace: 'default', name: 'kubernetes' } } };
    expect(cells('networking.k8s.io', 'ipaddresses', ip)).toEqual(['10.96.0.1', 'services/default/kubernetes', '60m']);
    expect(cells('networking.k8s.io', 'servicecidrs', { metadata: m('kubernetes'), spec: { cidrs: ['10.96.0.0/12', 'fd00::/108'] } })).toEqual(['kubernetes', '10.96.0.0/12,fd00::/108', '60m']);
  });
});
