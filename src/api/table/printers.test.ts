import { describe, it, expect } from 'vitest';
import { printerFor } from './printers.js';
import { scalePrinter } from './apps.js';

const NOW = Date.parse('2025-03-03T12:00:00Z');
const m = (name: string, extra: object = {}) => ({ name, namespace: 'default', creationTimestamp: '2025-03-01T09:00:00Z', ...extra });
const cells = (group: string, resource: string, obj: any) => printerFor(group, resource).row(obj, NOW).cells;
const header = (group: string, resource: string) => printerFor(group, resource).columns.map((c) => (c.priority ? `${c.name}*` : c.name));
const tpl = { spec: { containers: [{ name: 'nginx', image: 'nginx:1.27' }, { name: 'log', image: 'busybox' }] } };

describe('column sets and cells of the common kinds', () => {
  it('nodes', () => {
    expect(header('', 'nodes')).toEqual(['Name', 'Status', 'Roles', 'Age', 'Version', 'Internal-IP*', 'External-IP*', 'OS-Image*', 'Kernel-Version*', 'Container-Runtime*']);
    const node = {
      metadata: m('node-1', { namespace: undefined, labels: { 'node-role.kubernetes.io/control-plane': '', 'node-role.kubernetes.io/worker': '', 'kubernetes.io/role': 'infra' } }),
      spec: { unschedulable: true },
      status: {
        conditions: [{ type: 'MemoryPressure', status: 'False' }, { type: 'Ready', status: 'True' }],
        addresses: [{ type: 'Hostname', address: 'node-1' }, { type: 'InternalIP', address: '192.168.0.10' }],
        nodeInfo: { kubeletVersion: 'v1.33.1', osImage: 'Debian GNU/Linux 12', kernelVersion: '6.1.0', containerRuntimeVersion: 'containerd://1.7.24' },
      },
    };
    expect(cells('', 'nodes', node)).toEqual(['node-1', 'Ready,SchedulingDisabled', 'control-plane,infra,worker', '2d3h', 'v1.33.1', '192.168.0.10', '<none>', 'Debian GNU/Linux 12', '6.1.0', 'containerd://1.7.24']);
    expect(cells('', 'nodes', { metadata: m('n2'), status: {} }).slice(1, 3)).toEqual(['Unknown', '<none>']);
    expect(cells('', 'nodes', { metadata: m('n3'), status: { conditions: [{ type: 'Ready', status: 'Unknown' }] } })[1]).toBe('NotReady');
  });

  it('namespaces', () => {
    expect(header('', 'namespaces')).toEqual(['Name', 'Status', 'Age']);
    expect(cells('', 'namespaces', { metadata: m('team-a'), status: { phase: 'Active' } })).toEqual(['team-a', 'Active', '2d3h']);
  });

  it('services: cluster IP, external IP, ports', () => {
    expect(header('', 'services')).toEqual(['Name', 'Type', 'Cluster-IP', 'External-IP', 'Port(s)', 'Age', 'Selector*']);
    const svc = { metadata: m('web'), spec: { type: 'ClusterIP', clusterIP: '10.96.0.15', clusterIPs: ['10.96.0.15'], ports: [{ port: 80, protocol: 'TCP', targetPort: 8080 }], selector: { app: 'web' } } };
    expect(cells('', 'services', svc)).toEqual(['web', 'ClusterIP', '10.96.0.15', '<none>', '80/TCP', '2d3h', 'app=web']);
    const lb = { metadata: m('lb'), spec: { type: 'LoadBalancer', clusterIPs: ['10.96.0.16'], ports: [{ port: 80, protocol: 'TCP', nodePort: 30080 }, { port: 443, protocol: 'TCP', nodePort: 30001 }] }, status: { loadBalancer: {} } };
    expect(cells('', 'services', lb).slice(1, 5)).toEqual(['LoadBalancer', '10.96.0.16', '<pending>', '80:30080/TCP,443:30001/TCP']);
    lb.status = { loadBalancer: { ingress: [{ ip: '203.0.113.9' }, { hostname: 'lb.example.com' }] } } as any;
    expect(cells('', 'services', lb)[3]).toBe('203.0.113.9,lb.example.com');
    const ext = { metadata: m('db'), spec: { type: 'ExternalName', externalName: 'db.example.com' } };
    expect(cells('', 'services', ext).slice(1, 5)).toEqual(['ExternalName', '<none>', 'db.example.com', '<none>']);
    const headless = { metadata: m('h'), spec: { clusterIP: 'None', ports: [{ port: 53, protocol: 'UDP' }], externalIPs: ['1.2.3.4'] } };
    expect(cells('', 'services', headless).slice(1, 7)).toEqual(['ClusterIP', 'None', '1.2.3.4', '53/UDP', '2d3h', '<none>']);
  });

  it('endpoints', () => {
    expect(header('', 'endpoints')).toEqual(['Name', 'Endpoints', 'Age']);
    const ep = {
      metadata: m('web'),
      subsets: [{ addresses: [{ ip: '10.1.0.1' }, { ip: '10.1.0.2' }], ports: [{ name: 'http', port: 8080 }, { name: 'https', port: 8443 }] }],
    };
    expect(cells('', 'endpoints', ep)).toEqual(['web', '10.1.0.1:8080,10.1.0.2:8080,10.1.0.1:8443 + 1 more...', '2d3h']);
    expect(cells('', 'endpoints', { metadata: m('none') })[1]).toBe('<none>');
    expect(cells('', 'endpoints', { metadata: m('hl'), subsets: [{ addresses: [{ ip: 'fd00::1' }] }] })[1]).toBe('fd00::1');
  });

  it('configmaps, secrets, serviceaccounts, leases', () => {
    expect(header('', 'configmaps')).toEqual(['Name', 'Data', 'Age']);
    expect(cells('', 'configmaps', { metadata: m('cfg'), data: { a: '1', b: '2' }, binaryData: { c: 'AA==' } })).toEqual(['cfg', 3, '2d3h']);
    expect(header('', 'secrets')).toEqual(['Name', 'Type', 'Data', 'Age']);
    expect(cells('', 'secrets', { metadata: m('tls'), type: 'kubernetes.io/tls', data: { 'tls.crt': 'x', 'tls.key': 'y' } })).toEqual(['tls', 'kubernetes.io/tls', 2, '2d3h']);
    expect(header('', 'serviceaccounts')).toEqual(['Name', 'Secrets', 'Age']);
    expect(cells('', 'serviceaccounts', { metadata: m('default') })).toEqual(['default', 0, '2d3h']);
    expect(header('coordination.k8s.io', 'leases')).toEqual(['Name', 'Holder', 'Age']);
    expect(cells('coordination.k8s.io', 'leases', { metadata: m('kube-scheduler'), spec: { holderIdentity: 'cp-1_abc' } })).toEqual(['kube-scheduler', 'cp-1_abc', '2d3h']);
  });

  it('events, core and events.k8s.io', () => {
    expect(header('', 'events')).toEqual(['Last Seen', 'Type', 'Reason', 'Object', 'Subobject*', 'Source*', 'Message', 'First Seen*', 'Count*', 'Name*']);
    const ev = {
      metadata: m('web-0.1827'),
      involvedObject: { kind: 'Pod', name: 'web-0', fieldPath: 'spec.containers{nginx}' },
      reason: 'Pulled',
      message: 'Container image "nginx" already present on machine\n',
      source: { component: 'kubelet', host: 'node-1' },
      firstTimestamp: '2025-03-03T11:00:00Z',
      lastTimestamp: '2025-03-03T11:55:00Z',
      count: 4,
      type: 'Normal',
    };
    expect(cells('', 'events', ev)).toEqual(['5m', 'Normal', 'Pulled', 'pod/web-0', 'spec.containers{nginx}', 'kubelet, node-1', 'Container image "nginx" already present on machine', '60m', 4, 'web-0.1827']);
    const v1 = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: m('x.1'),
      eventTime: '2025-03-03T11:59:00.000000Z',
      reportingController: 'example.com/ctl',
      reportingInstance: 'ctl-1',
      action: 'Sync',
      reason: 'Synced',
      regarding: { kind: 'Deployment', name: 'web' },
      note: 'done',
      type: 'Normal',
    };
    expect(cells('events.k8s.io', 'events', v1)).toEqual(['60s', 'Normal', 'Synced', 'deployment/web', '', 'example.com/ctl, ctl-1', 'done', '60s', 1, 'x.1']);
    const series = { ...ev, series: { count: 9, lastObservedTime: '2025-03-03T11:59:30.000000Z' } };
    expect(cells('', 'events', series).slice(0, 1).concat(cells('', 'events', series)[8])).toEqual(['30s', 9]);
  });

  it('deployments, replicasets, statefulsets, daemonsets', () => {
    expect(header('apps', 'deployments')).toEqual(['Name', 'Ready', 'Up-to-date', 'Available', 'Age', 'Containers*', 'Images*', 'Selector*']);
    const dep = { metadata: m('web'), spec: { replicas: 3, selector: { matchLabels: { app: 'web' } }, template: tpl }, status: { replicas: 3, readyReplicas: 2, updatedReplicas: 3, availableReplicas: 2 } };
    expect(cells('apps', 'deployments', dep)).toEqual(['web', '2/3', 3, 2, '2d3h', 'nginx,log', 'nginx:1.27,busybox', 'app=web']);
    expect(cells('apps', 'deployments', { metadata: m('new'), spec: { template: tpl } }).slice(1, 4)).toEqual(['0/1', 0, 0]);

    expect(header('apps', 'replicasets')).toEqual(['Name', 'Desired', 'Current', 'Ready', 'Age', 'Containers*', 'Images*', 'Selector*']);
    const rs = { metadata: m('web-5d8f'), spec: { replicas: 3, selector: { matchLabels: { app: 'web', 'pod-template-hash': '5d8f' } }, template: tpl }, status: { replicas: 3, readyReplicas: 1 } };
    expect(cells('apps', 'replicasets', rs)).toEqual(['web-5d8f', 3, 3, 1, '2d3h', 'nginx,log', 'nginx:1.27,busybox', 'app=web,pod-template-hash=5d8f']);

    expect(header('apps', 'statefulsets')).toEqual(['Name', 'Ready', 'Age', 'Containers*', 'Images*']);
    expect(cells('apps', 'statefulsets', { metadata: m('db'), spec: { replicas: 2, template: tpl }, status: { readyReplicas: 2 } })).toEqual(['db', '2/2', '2d3h', 'nginx,log', 'nginx:1.27,busybox']);

    expect(header('apps', 'daemonsets')).toEqual(['Name', 'Desired', 'Current', 'Ready', 'Up-to-date', 'Available', 'Node Selector', 'Age', 'Containers*', 'Images*', 'Selector*']);
    const ds = {
      metadata: m('agent'),
      spec: { selector: { matchLabels: { app: 'agent' } }, template: { spec: { nodeSelector: { 'kubernetes.io/os': 'linux' }, containers: [{ name: 'agent', image: 'agent:2' }] } } },
      status: { desiredNumberScheduled: 3, currentNumberScheduled: 3, numberReady: 2, updatedNumberScheduled: 3, numberAvailable: 2 },
    };
    expect(cells('apps', 'daemonsets', ds)).toEqual(['agent', 3, 3, 2, 3, 2, 'kubernetes.io/os=linux', '2d3h', 'agent', 'agent:2', 'app=agent']);
  });

  it('jobs and cronjobs', () => {
    expect(header('batch', 'jobs')).toEqual(['Name', 'Status', 'Completions', 'Duration', 'Age', 'Containers*', 'Images*', 'Selector*']);
    const job = {
      metadata: m('pi'),
      spec: { completions: 1, parallelism: 1, selector: { matchLabels: { 'batch.kubernetes.io/controller-uid': 'u1' } }, template: { spec: { containers: [{ name: 'pi', image: 'perl:5.34' }] } } },
      status: { startTime: '2025-03-03T11:00:00Z', completionTime: '2025-03-03T11:00:42Z', succeeded: 1, conditions: [{ type: 'SuccessCriteriaMet', status: 'True' }, { type: 'Complete', status: 'True' }] },
    };
    expect(cells('batch', 'jobs', job)).toEqual(['pi', 'Complete', '1/1', '42s', '2d3h', 'pi', 'perl:5.34', 'batch.kubernetes.io/controller-uid=u1']);
    const running = { metadata: m('work'), spec: { parallelism: 3, template: tpl }, status: { startTime: '2025-03-03T11:57:00Z', succeeded: 1 } };
    expect(cells('batch', 'jobs', running).slice(1, 4)).toEqual(['Running', '1/1 of 3', '3m']);
    const suspended = { metadata: m('s'), spec: { completions: 5, template: tpl }, status: { conditions: [{ type: 'Suspended', status: 'True' }] } };
    expect(cells('batch', 'jobs', suspended).slice(1, 4)).toEqual(['Suspended', '0/5', '']);
    const failed = { metadata: m('f', { deletionTimestamp: '2025-03-03T11:00:00Z' }), spec: { template: tpl }, status: { conditions: [{ type: 'Failed', status: 'True' }] } };
    expect(cells('batch', 'jobs', failed)[1]).toBe('Failed');

    expect(header('batch', 'cronjobs')).toEqual(['Name', 'Schedule', 'Timezone', 'Suspend', 'Active', 'Last Schedule', 'Age', 'Containers*', 'Images*', 'Selector*']);
    const cj = { metadata: m('hello'), spec: { schedule: '*/5 * * * *', suspend: false, jobTemplate: { spec: { template: { spec: { containers: [{ name: 'hello', image: 'busybox' }] } } } } }, status: { active: [{ name: 'hello-1' }], lastScheduleTime: '2025-03-03T11:55:00Z' } };
    expect(cells('batch', 'cronjobs', cj)).toEqual(['hello', '*/5 * * * *', '<none>', 'False', 1, '5m', '2d3h', 'hello', 'busybox', '<none>']);
    expect(cells('batch', 'cronjobs', { metadata: m('x'), spec: { schedule: '@daily', timeZone: 'Etc/UTC' } }).slice(2, 6)).toEqual(['Etc/UTC', '<unset>', 0, '<none>']);
  });

  it('the scale subresource', () => {
    expect(scalePrinter.columns.map((c) => [c.name, c.type, c.format])).toEqual([['Name', 'string', ''], ['Desired', 'integer', ''], ['Available', 'integer', ''], ['Age', 'string', '']]);
    const scale = { kind: 'Scale', apiVersion: 'autoscaling/v1', metadata: m('web'), spec: { replicas: 5 }, status: { replicas: 3, selector: 'app=web' } };
    expect(scalePrinter.row(scale, NOW).cells).toEqual(['web', 5, 3, '2d3h']);
  });

  it('kinds without a column set get Name and Created At', () => {
    const p = printerFor('rbac.authorization.k8s.io', 'roles');
    expect(p.columns.map((c) => [c.name, c.type, c.format])).toEqual([['Name', 'string', 'name'], ['Created At', 'date', '']]);
    expect(p.row({ metadata: m('reader', { creationTimestamp: '2025-03-01T09:00:00.000Z' }) }, NOW).cells).toEqual(['reader', '2025-03-01T09:00:00Z']);
    expect(p.row({ metadata: { name: 'x' } }, NOW).cells).toEqual(['x', '0001-01-01T00:00:00Z']);
  });
});
