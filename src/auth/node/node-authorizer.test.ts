import { describe, it, expect } from 'vitest';
import { NodeGraph } from './node-graph.js';
import { NodeAuthorizer, nodeIdentity } from './node-authorizer.js';
import type { AuthorizationAttributes } from '../../http/filters/authorization.js';

const objects: Record<string, any> = {
  'persistentvolumeclaims/default/c1': { spec: { volumeName: 'pv1' } },
  'persistentvolumes//pv1': { spec: { csi: { driver: 'd', nodePublishSecretRef: { name: 'csi-secret', namespace: 'kube-system' } } } },
};
const graph = new NodeGraph({ get: (r, ns, n) => objects[`${r}/${ns}/${n}`] });
const auth = new NodeAuthorizer(graph);
const node = (n: string) => ({ name: `system:node:${n}`, uid: '', groups: ['system:nodes', 'system:authenticated'] });
const attrs = (a: Partial<AuthorizationAttributes>): AuthorizationAttributes => ({
  user: node('n1'), verb: 'get', resourceRequest: true, apiGroup: '', resource: 'secrets', subresource: '', namespace: 'default', name: '', path: '', ...a,
});

graph.setPod({
  metadata: { namespace: 'default', name: 'p1' },
  spec: {
    nodeName: 'n1',
    serviceAccountName: 'sa1',
    imagePullSecrets: [{ name: 'pull' }],
    containers: [{ name: 'c', envFrom: [{ configMapRef: { name: 'cm-env' } }], env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'env-secret', key: 'k' } } }] }],
    volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'c1' } }, { name: 'p', projected: { sources: [{ configMap: { name: 'cm-proj' } }] } }],
  },
});
graph.setPod({ metadata: { namespace: 'default', name: 'p2' }, spec: { nodeName: 'n2', volumes: [{ name: 's', secret: { secretName: 'other' } }] } });

describe('NodeAuthorizer', () => {
  it('knows node users by name and group', () => {
    expect(nodeIdentity(node('n1'))).toBe('n1');
    expect(nodeIdentity({ name: 'system:node:n1', uid: '', groups: [] })).toBeNull();
    expect(auth.authorize(attrs({ user: { name: 'bob', uid: '', groups: [] }, name: 'pull' })).decision).toBe('NoOpinion');
    expect(auth.authorize(attrs({ user: { name: 'system:node:', uid: '', groups: ['system:nodes'] }, name: 'x' })).reason).toBe('unknown node for user "system:node:"');
  });

  it('allows what the pods bound to the node refer to, and nothing else', () => {
    for (const name of ['pull', 'env-secret']) expect(auth.authorize(attrs({ name })).decision, name).toBe('Allow');
    for (const name of ['cm-env', 'cm-proj']) expect(auth.authorize(attrs({ resource: 'configmaps', name })).decision, name).toBe('Allow');
    expect(auth.authorize(attrs({ resource: 'persistentvolumeclaims', name: 'c1' })).decision).toBe('Allow');
    expect(auth.authorize(attrs({ resource: 'persistentvolumes', namespace: '', name: 'pv1' })).decision).toBe('Allow');
    expect(auth.authorize(attrs({ namespace: 'kube-system', name: 'csi-secret' })).decision).toBe('Allow');
    expect(auth.authorize(attrs({ resource: 'serviceaccounts', subresource: 'token', verb: 'create', name: 'sa1' })).decision).toBe('Allow');
    expect(auth.authorize(attrs({ name: 'other' }))).toEqual({ decision: 'NoOpinion', reason: "no relationship found between node 'n1' and this object" });
    expect(auth.authorize(attrs({ user: node('n2'), name: 'other' })).decision).toBe('Allow');
    expect(auth.authorize(attrs({ verb: 'list' })).reason).toBe('No Object name found');
    expect(auth.authorize(attrs({ verb: 'update', name: 'pull' })).reason).toBe('can only read resources of this type');
  });

  it('follows pod changes: a deleted or rebound pod no longer links its objects', () => {
    graph.setPod({ metadata: { namespace: 'default', name: 'p3' }, spec: { nodeName: 'n1', volumes: [{ name: 's', secret: { secretName: 'later' } }] } });
    expect(auth.authorize(attrs({ name: 'later' })).decision).toBe('Allow');
    graph.setPod({ metadata: { namespace: 'default', name: 'p3' }, spec: { nodeName: 'n2', volumes: [{ name: 's', secret: { secretName: 'later' } }] } });
    expect(auth.authorize(attrs({ name: 'later' })).decision).toBe('NoOpinion');
    graph.deletePod('default', 'p3');
    expect(auth.authorize(attrs({ user: node('n2'), name: 'later' })).decision).toBe('NoOpinion');
  });

  it('nodes read only their own Node and Lease; pods by the node field selector; static node rules for the rest', () => {
    expect(auth.authorize(attrs({ resource: 'nodes', namespace: '', name: 'n1' })).decision).toBe('Allow');
    expect(auth.authorize(attrs({ resource: 'nodes', namespace: '', name: 'n2' })).reason).toBe("node 'n1' cannot read 'n2', only its own Node object");
    expect(auth.authorize(attrs({ resource: 'nodes', namespace: '', verb: 'list' })).reason).toBe("node 'n1' cannot read all nodes, only its own Node object");
    expect(auth.authorize(attrs({ resource: 'nodes', namespace: '', verb: 'watch', fieldSelector: 'metadata.name=n1' })).decision).toBe('Allow');
    expect(auth.authorize(attrs({ resource: 'pods', verb: 'list', namespace: '', fieldSelector: 'spec.nodeName=n1' })).decision).toBe('Allow');
    expect(auth.authorize(attrs({ resource: 'pods', verb: 'list', namespace: '' })).reason).toBe('can only list/watch pods with spec.nodeName field selector');
    expect(auth.authorize(attrs({ resource: 'pods', name: 'p1' })).decision).toBe('Allow');
    expect(auth.authorize(attrs({ resource: 'pods', name: 'p2' })).decision).toBe('NoOpinion');
    const lease = { apiGroup: 'coordination.k8s.io', resource: 'leases', namespace: 'kube-node-lease' };
    expect(auth.authorize(attrs({ ...lease, verb: 'update', name: 'n1' })).decision).toBe('Allow');
    expect(auth.authorize(attrs({ ...lease, verb: 'update', name: 'n2' })).reason).toBe('can only access node lease with the same name as the requesting node');
    expect(auth.authorize(attrs({ ...lease, namespace: 'default', name: 'n1' })).reason).toBe('can only access leases in the "kube-node-lease" system namespace');
    expect(auth.authorize(attrs({ apiGroup: 'certificates.k8s.io', resource: 'certificatesigningrequests', namespace: '', verb: 'create' })).decision).toBe('Allow');
    expect(auth.authorize(attrs({ resource: 'events', verb: 'create' })).decision).toBe('Allow');
    expect(auth.authorize(attrs({ resource: 'namespaces', namespace: '', verb: 'delete', name: 'x' })).decision).toBe('NoOpinion');
  });

  it('cannot enumerate a node\'s rules (kube\'s RulesFor)', () => {
    expect(auth.rulesFor(node('n1'))).toMatchObject({ incomplete: true, evaluationError: 'node authorizer does not support user rule resolution' });
    expect(auth.rulesFor({ name: 'bob', uid: '', groups: [] }).incomplete).toBe(false);
  });
});
