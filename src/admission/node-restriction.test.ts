import { describe, it, expect } from 'vitest';
import { NodeRestriction, forbiddenLabels } from './node-restriction.js';
import type { Attributes } from './plugin.js';

const objs: Record<string, any> = {
  'nodes//n1': { metadata: { name: 'n1', uid: 'uid-n1' } },
  'pods/default/mine': { metadata: { name: 'mine', uid: 'u1' }, spec: { nodeName: 'n1' } },
  'pods/default/theirs': { metadata: { name: 'theirs', uid: 'u2' }, spec: { nodeName: 'n2' } },
};
const plugin = new NodeRestriction({ get: (gr, ns, name) => objs[`${gr}/${ns}/${name}`], list: () => [] });
const n1 = { name: 'system:node:n1', uid: '', groups: ['system:nodes'] };
const at = (a: Partial<Attributes>): Attributes =>
  ({ operation: 'UPDATE', info: {} as any, groupResource: { group: '', resource: 'nodes' }, subresource: '', namespace: '', name: 'n1', obj: {}, old: {}, dryRun: false, user: n1, ...a }) as Attributes;
const run = (a: Partial<Attributes>) => () => plugin.admit(at(a));

describe('NodeRestriction', () => {
  it('leaves other users alone', () => {
    expect(plugin.handles(at({ user: { name: 'bob', uid: '', groups: [] } }))).toBe(false);
    expect(plugin.handles(at({}))).toBe(true);
  });

  it('keeps a node to its own Node, the kubelet labels and its taints', () => {
    expect(run({ name: 'n2' })).toThrow('nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"');
    expect(run({ obj: { metadata: { labels: { 'kubernetes.io/hostname': 'n1', 'example.com/x': 'y', 'node.kubernetes.io/foo': 'z' } } }, old: { metadata: {} } })).not.toThrow();
    expect(run({ obj: { metadata: { labels: { 'node-role.kubernetes.io/control-plane': '' } } }, old: { metadata: {} } })).toThrow('node "n1" is not allowed to modify labels: node-role.kubernetes.io/control-plane');
    expect(run({ obj: { spec: { taints: [] } }, old: { spec: {} } })).toThrow('node "n1" is not allowed to modify taints');
    expect(run({ operation: 'CREATE', name: '', obj: { metadata: { name: 'n1', labels: { 'a.node-restriction.kubernetes.io/x': '1' } } } })).toThrow('node "n1" is not allowed to set the following labels: a.node-restriction.kubernetes.io/x');
    expect(forbiddenLabels(['k8s.io/x', 'kubelet.kubernetes.io/y', 'beta.kubernetes.io/arch', 'foo/bar'])).toEqual(['k8s.io/x']);
  });

  it('lets a node create only mirror pods bound to itself, and write the status of its own pods', () => {
    const pods = { groupResource: { group: '', resource: 'pods' }, namespace: 'default' };
    const mirror = (extra: any = {}) => ({
      metadata: { name: 'm', annotations: { 'kubernetes.io/config.mirror': 'x' }, ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'uid-n1', controller: true }] },
      spec: { nodeName: 'n1', containers: [{ name: 'c' }], ...extra },
    });
    expect(run({ ...pods, operation: 'CREATE', name: '', obj: mirror() })).not.toThrow();
    expect(run({ ...pods, operation: 'CREATE', name: '', obj: { metadata: { name: 'x' }, spec: { nodeName: 'n1' } } })).toThrow('pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods');
    expect(run({ ...pods, operation: 'CREATE', name: '', obj: mirror({ nodeName: 'n2' }) })).toThrow('node "n1" can only create pods with spec.nodeName set to itself');
    expect(run({ ...pods, operation: 'CREATE', name: '', obj: mirror({ volumes: [{ name: 'v', secret: { secretName: 's' } }] }) })).toThrow('node "n1" can not create pods that reference secrets');
    expect(run({ ...pods, subresource: 'status', name: 'theirs', old: objs['pods/default/theirs'], obj: objs['pods/default/theirs'] })).toThrow('node "n1" can only update pod status for pods with spec.nodeName set to itself');
    expect(run({ ...pods, subresource: 'status', name: 'mine', old: objs['pods/default/mine'], obj: objs['pods/default/mine'] })).not.toThrow();
    expect(run({ ...pods, operation: 'DELETE', name: 'theirs' })).toThrow('node "n1" can only delete pods with spec.nodeName set to itself');
  });

  it('keeps a node to its own Lease', () => {
    const lease = { groupResource: { group: 'coordination.k8s.io', resource: 'leases' }, namespace: 'kube-node-lease' };
    expect(run({ ...lease, operation: 'CREATE', name: '', obj: { metadata: { name: 'n1' } } })).not.toThrow();
    expect(run({ ...lease, operation: 'CREATE', name: '', obj: { metadata: { name: 'n2' } } })).toThrow('can only access node lease with the same name as the requesting node');
  });
});
