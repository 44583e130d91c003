import { describe, expect, it } from 'vitest';
import { FILTERS, scoreNodes, feasibleNodesToFind, filterNode, fitErrorMessage, leastAllocatedScore, podRequests, readResources, type NodeInfo, type PodFacts } from './plugins.js';
import { matchingTolerations, minTolerationMs, toleratesTaint } from './taints.js';

function node(name: string, o: Partial<NodeInfo> = {}): NodeInfo {
  return { name, labels: {}, taints: [], unschedulable: false, allocatable: readResources({ cpu: '2', memory: '4Gi', pods: '110' }), requested: new Map(), nonZeroRequested: new Map(), podCount: 0, ...o };
}
function facts(spec: any): PodFacts {
  const pod = { spec };
  return { pod, tolerations: spec.tolerations ?? [], requests: podRequests(pod), nonZero: podRequests(pod, true) };
}

describe('pod requests (kube resource helpers)', () => {
  it('sums containers, takes the larger init container need, counts sidecars and overhead', () => {
    const r = podRequests({
      spec: {
        containers: [{ resources: { requests: { cpu: '100m', memory: '64Mi' } } }, { resources: { requests: { cpu: '200m' } } }],
        initContainers: [{ restartPolicy: 'Always', resources: { requests: { cpu: '50m' } } }, { resources: { requests: { cpu: '1', memory: '1Gi' } } }],
        overhead: { cpu: '10m' },
      },
    });
    // containers 300m + sidecar 50m = 350m; the init container needs 1 + 50m sidecar = 1050m
    expect(r.get('cpu')).toBe(1060);
    expect(r.get('memory')).toBe(1024 ** 3);
  });
  it('non-zero defaults for scoring', () => {
    const r = podRequests({ spec: { containers: [{}] } }, true);
    expect(r.get('cpu')).toBe(100);
    expect(r.get('memory')).toBe(200 * 1024 * 1024);
  });
});

describe('filters', () => {
  it('NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit, each with kube\'s reason', () => {
    expect(filterNode(node('a', { unschedulable: true }), facts({}))?.reasons).toEqual(['node(s) were unschedulable']);
    expect(filterNode(node('a', { unschedulable: true }), facts({ tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }] }))).toBeUndefined();
    const tainted = node('a', { taints: [{ key: 'node.kubernetes.io/unreachable', effect: 'NoSchedule' }] });
    expect(filterNode(tainted, facts({}))?.reasons).toEqual(['node(s) had untolerated taint {node.kubernetes.io/unreachable: }']);
    expect(filterNode(node('a', { taints: [{ key: 'x', value: 'y', effect: 'PreferNoSchedule' }] }), facts({}))).toBeUndefined();
    expect(filterNode(node('a', { labels: { disk: 'hdd' } }), facts({ nodeSelector: { disk: 'ssd' } }))?.reasons).toEqual(["node(s) didn't match Pod's node affinity/selector"]);
    const aff = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'disk', operator: 'In', values: ['ssd'] }] }, { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['b'] }] }] } } };
    expect(filterNode(node('a', { labels: { disk: 'hdd' } }), facts({ affinity: aff }))).toBeDefined();
    expect(filterNode(node('b', { labels: { disk: 'hdd' } }), facts({ affinity: aff }))).toBeUndefined();
    const big = facts({ containers: [{ resources: { requests: { cpu: '3', memory: '8Gi', 'example.com/gpu': '1' } } }] });
    expect(filterNode(node('a'), big)).toEqual({ reasons: ['Insufficient cpu', 'Insufficient memory', 'Insufficient example.com/gpu'], resolvable: true });
    expect(filterNode(node('a', { podCount: 110 }), facts({}))?.reasons).toEqual(['Too many pods']);
  });

  it("run in kube's order, the first refusal being the node's", () => {
    expect(FILTERS.map(([name]) => name)).toEqual(['NodeUnschedulable', 'TaintToleration', 'NodeAffinity', 'NodeResourcesFit']);
    const everything = node('a', { unschedulable: true, taints: [{ key: 'k', effect: 'NoExecute' }], labels: {}, podCount: 110 });
    const p = facts({ nodeSelector: { x: 'y' } });
    expect(filterNode(everything, p)?.reasons).toEqual(['node(s) were unschedulable']);
    expect(filterNode({ ...everything, unschedulable: false }, p)?.reasons).toEqual(['node(s) had untolerated taint {k: }']);
    expect(filterNode({ ...everything, unschedulable: false, taints: [] }, p)?.reasons).toEqual(["node(s) didn't match Pod's node affinity/selector"]);
    expect(filterNode({ ...everything, unschedulable: false, taints: [], labels: { x: 'y' } }, p)?.reasons).toEqual(['Too many pods']);
  });

  it("kube's FitError message", () => {
    const msg = fitErrorMessage(3, [
      { reasons: ['Insufficient cpu'], resolvable: true },
      { reasons: ['node(s) had untolerated taint {node.kubernetes.io/unreachable: }'], resolvable: false },
      { reasons: ['node(s) had untolerated taint {node.kubernetes.io/unreachable: }'], resolvable: false },
    ]);
    expect(msg).toBe(
      '0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {node.kubernetes.io/unreachable: }. preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.',
    );
  });

  it('scores: PreferNoSchedule taints not tolerated and preferred node affinity weigh as in kube', () => {
    const plain = node('plain');
    const soft = node('soft', { taints: [{ key: 'k', effect: 'PreferNoSchedule' }] });
    const [a, b] = scoreNodes([plain, soft], facts({}));
    expect(a).toBeGreaterThan(b);
    const [c, d] = scoreNodes([plain, soft], facts({ tolerations: [{ key: 'k', operator: 'Exists' }] }));
    expect(c).toBe(d);
    const ssd = node('ssd', { labels: { disk: 'ssd' } });
    const pref = { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 50, preference: { matchExpressions: [{ key: 'disk', operator: 'In', values: ['ssd'] }] } }] } };
    const [e, f] = scoreNodes([plain, ssd], facts({ affinity: pref }));
    expect(f).toBeGreaterThan(e);
  });

  it('least allocated prefers the emptier node; nodes to score as kube adapts them', () => {
    const p = facts({ containers: [{ resources: { requests: { cpu: '500m', memory: '1Gi' } } }] });
    const busy = node('busy', { nonZeroRequested: readResources({ cpu: '1', memory: '2Gi' }) });
    expect(leastAllocatedScore(node('idle'), p)).toBeGreaterThan(leastAllocatedScore(busy, p));
    expect(feasibleNodesToFind(50)).toBe(50);
    expect(feasibleNodesToFind(5000)).toBe(500);
    expect(feasibleNodesToFind(100_000)).toBe(5000);
  });
});

describe('tolerations (kube ToleratesTaint, getMinTolerationTime)', () => {
  it('matches by key, value, operator and effect', () => {
    const t = { key: 'k', value: 'v', effect: 'NoExecute' };
    expect(toleratesTaint({ key: 'k', value: 'v' }, t)).toBe(true);
    expect(toleratesTaint({ key: 'k', value: 'w' }, t)).toBe(false);
    expect(toleratesTaint({ key: 'k', operator: 'Exists', effect: 'NoSchedule' }, t)).toBe(false);
    expect(toleratesTaint({ operator: 'Exists' }, t)).toBe(true);
  });
  it('the shortest tolerationSeconds of the tolerations used; forever without; now when not all tolerated', () => {
    const taints = [{ key: 'a', effect: 'NoExecute' }, { key: 'b', effect: 'NoExecute' }];
    const m = matchingTolerations(taints, [{ key: 'a', operator: 'Exists', tolerationSeconds: 30 }, { key: 'b', operator: 'Exists', tolerationSeconds: 10 }]);
    expect(m.all).toBe(true);
    expect(minTolerationMs(m.used)).toBe(10_000);
    expect(minTolerationMs(matchingTolerations(taints, [{ operator: 'Exists' }]).used)).toBe(-1);
    expect(matchingTolerations(taints, [{ key: 'a', operator: 'Exists' }]).all).toBe(false);
  });
});
