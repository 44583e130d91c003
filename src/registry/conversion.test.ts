import { describe, expect, it } from 'vitest';
import { conversionOf, HPA_BEHAVIOR, HPA_CONDITIONS, HPA_CURRENT_METRICS, HPA_METRICS, viewOf } from './conversion.js';
import { catalogData } from '../api/catalog-data.js';
import type { ResourceInfo } from '../api/catalog-types.js';

const info = (group: string, version: string, resource: string): ResourceInfo => catalogData.find((g) => g.group === group && g.version === version)!.resources.find((r) => r.resource === resource)!;
const hpaV1 = conversionOf(info('autoscaling', 'v1', 'horizontalpodautoscalers'))!;
const events = conversionOf(info('events.k8s.io', 'v1', 'events'))!;

const v2 = {
  kind: 'HorizontalPodAutoscaler',
  apiVersion: 'autoscaling/v2',
  metadata: { name: 'h', namespace: 'default', annotations: { keep: 'me' } },
  spec: {
    scaleTargetRef: { kind: 'Deployment', name: 'web', apiVersion: 'apps/v1' },
    minReplicas: 2,
    maxReplicas: 9,
    metrics: [
      { type: 'Pods', pods: { metric: { name: 'qps' }, target: { type: 'AverageValue', averageValue: '10' } } },
      { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 65 } } },
      { type: 'Object', object: { describedObject: { kind: 'Ingress', name: 'main', apiVersion: 'networking.k8s.io/v1' }, target: { type: 'Value', value: '2k' }, metric: { name: 'rps' } } },
      { type: 'External', external: { metric: { name: 'queue', selector: { matchLabels: { q: 'a' } } }, target: { type: 'AverageValue', averageValue: '30' } } },
      { type: 'ContainerResource', containerResource: { name: 'memory', target: { type: 'Utilization', averageUtilization: 70 }, container: 'app' } },
    ],
    behavior: {
      scaleUp: { stabilizationWindowSeconds: 0, selectPolicy: 'Max', policies: [{ type: 'Pods', value: 4, periodSeconds: 15 }] },
      scaleDown: { stabilizationWindowSeconds: 300, selectPolicy: 'Min', policies: [{ type: 'Percent', value: 10, periodSeconds: 60 }] },
    },
  },
  status: {
    observedGeneration: 3,
    currentReplicas: 2,
    desiredReplicas: 3,
    currentMetrics: [{ type: 'Resource', resource: { name: 'cpu', current: { averageValue: '120m', averageUtilization: 40 } } }],
    conditions: [{ type: 'AbleToScale', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z', reason: 'ReadyForNewScale', message: 'ok' }],
  },
};

describe('autoscaling v2 <-> v1 HorizontalPodAutoscaler', () => {
  it('keeps the CPU utilization target as a field and everything else in annotations', () => {
    const v1 = hpaV1.fromStorage(v2);
    expect(v1.apiVersion).toBe('autoscaling/v1');
    expect(v1.spec).toEqual({ scaleTargetRef: v2.spec.scaleTargetRef, minReplicas: 2, maxReplicas: 9, targetCPUUtilizationPercentage: 65 });
    expect(v1.status).toEqual({ observedGeneration: 3, currentReplicas: 2, desiredReplicas: 3, currentCPUUtilizationPercentage: 40 });
    expect(v1.metadata.annotations.keep).toBe('me');
    expect(JSON.parse(v1.metadata.annotations[HPA_METRICS])).toEqual([
      { type: 'Pods', pods: { metricName: 'qps', targetAverageValue: '10' } },
      { type: 'Object', object: { target: { kind: 'Ingress', name: 'main', apiVersion: 'networking.k8s.io/v1' }, metricName: 'rps', targetValue: '2k' } },
      { type: 'External', external: { metricName: 'queue', metricSelector: { matchLabels: { q: 'a' } }, targetAverageValue: '30' } },
      { type: 'ContainerResource', containerResource: { name: 'memory', targetAverageUtilization: 70, container: 'app' } },
    ]);
    expect(JSON.parse(v1.metadata.annotations[HPA_CURRENT_METRICS])).toEqual([{ type: 'Resource', resource: { name: 'cpu', currentAverageUtilization: 40, currentAverageValue: '120m' } }]);
    expect(JSON.parse(v1.metadata.annotations[HPA_CONDITIONS])).toEqual(v2.status.conditions);
    // the behavior as kube marshals its internal type: Go field names
    expect(JSON.parse(v1.metadata.annotations[HPA_BEHAVIOR]).ScaleDown).toEqual({ StabilizationWindowSeconds: 300, SelectPolicy: 'Min', Policies: [{ Type: 'Percent', Value: 10, PeriodSeconds: 60 }] });
    // the input (a shared cache parse) is untouched
    expect(v2.metadata.annotations).toEqual({ keep: 'me' });
  });

  it('round-trips v2 -> v1 -> v2 (the CPU metric moves after the others, as kube orders them)', () => {
    const back = hpaV1.toStorage(hpaV1.fromStorage(v2));
    expect(back.apiVersion).toBe('autoscaling/v2');
    expect(back.metadata).toEqual(v2.metadata);
    const others = v2.spec.metrics.filter((m) => m.type !== 'Resource');
    expect(back.spec.metrics).toEqual([...others, v2.spec.metrics[1]]);
    expect(back.spec.behavior).toEqual(v2.spec.behavior);
    expect(back.status).toEqual(v2.status);
  });

  it('a v1 object without a target stores the implicit 80% CPU; an empty status reads as zero replicas', () => {
    const v1 = { apiVersion: 'autoscaling/v1', kind: 'HorizontalPodAutoscaler', metadata: { name: 'x' }, spec: { scaleTargetRef: { kind: 'Deployment', name: 'web' }, maxReplicas: 3 } };
    const stored = hpaV1.toStorage(v1);
    expect(stored.spec.metrics).toEqual([{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } }]);
    expect(stored.status).toBeUndefined();
    expect(stored.metadata.annotations).toBeUndefined();
    const read = hpaV1.fromStorage(stored);
    expect(read.spec.targetCPUUtilizationPercentage).toBe(80);
    expect(read.status).toEqual({ currentReplicas: 0, desiredReplicas: 0 });
  });
});

describe('core/v1 <-> events.k8s.io/v1 Event', () => {
  const core = {
    kind: 'Event',
    apiVersion: 'v1',
    metadata: { name: 'e', namespace: 'default' },
    involvedObject: { kind: 'Pod', namespace: 'default', name: 'p' },
    reason: 'Pulled',
    message: 'pulled',
    source: { component: 'kubelet', host: 'n1' },
    firstTimestamp: '2026-01-01T00:00:00Z',
    lastTimestamp: '2026-01-01T00:00:05Z',
    count: 3,
    type: 'Normal',
    eventTime: null,
    reportingComponent: '',
    reportingInstance: '',
  };
  it('maps the fields, in the Go types order, dropping empty omitempty fields', () => {
    const e = events.fromStorage(core);
    expect(Object.keys(e)).toEqual(['kind', 'apiVersion', 'metadata', 'eventTime', 'reason', 'regarding', 'note', 'type', 'deprecatedSource', 'deprecatedFirstTimestamp', 'deprecatedLastTimestamp', 'deprecatedCount']);
    expect(e).toMatchObject({ apiVersion: 'events.k8s.io/v1', regarding: core.involvedObject, note: 'pulled', deprecatedSource: core.source, deprecatedCount: 3, eventTime: null });
    expect(events.toStorage(e)).toEqual(core);
  });
  it('events.k8s.io reportingController is core reportingComponent', () => {
    const stored = events.toStorage({ apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: { name: 'n' }, eventTime: '2026-01-01T00:00:00.000000Z', reportingController: 'c/x', reportingInstance: 'i', action: 'A', reason: 'R', regarding: {} });
    expect(stored).toMatchObject({ apiVersion: 'v1', reportingComponent: 'c/x', reportingInstance: 'i', action: 'A', involvedObject: {}, source: {}, firstTimestamp: null, lastTimestamp: null });
  });
});

describe('views', () => {
  it('are memoized per entry and version, and field-identical versions only change apiVersion', () => {
    const vap = conversionOf(info('admissionregistration.k8s.io', 'v1beta1', 'validatingadmissionpolicies'))!;
    expect(vap.storageApiVersion).toBe('admissionregistration.k8s.io/v1');
    const obj = { kind: 'ValidatingAdmissionPolicy', apiVersion: 'admissionregistration.k8s.io/v1', metadata: { name: 'p' }, spec: { failurePolicy: 'Fail' } };
    const e = { key: '/p', ns: '', name: 'p', rv: 5, json: Buffer.from(JSON.stringify(obj)) };
    const v = viewOf(vap, e);
    expect(viewOf(vap, e)).toBe(v);
    expect(JSON.parse(v.json.toString())).toEqual({ ...obj, apiVersion: 'admissionregistration.k8s.io/v1beta1' });
    expect(v.rv).toBe(5);
    expect(conversionOf(info('autoscaling', 'v2', 'horizontalpodautoscalers'))).toBeUndefined();
    expect(conversionOf(info('', 'v1', 'events'))).toBeUndefined();
  });
});

describe('storage facts in the catalog', () => {
  it('names one storage per group-resource, and every served version reports its hash', () => {
    const v1 = info('autoscaling', 'v1', 'horizontalpodautoscalers');
    const v2 = info('autoscaling', 'v2', 'horizontalpodautoscalers');
    expect(v1.storageVersion).toBe('autoscaling/v2');
    expect(v2.storageVersion).toBeUndefined();
    expect(v1.storageVersionHash).toBe(v2.storageVersionHash);
    const ev = info('events.k8s.io', 'v1', 'events');
    expect([ev.storageVersion, ev.storageResource]).toEqual(['v1', 'events']);
    expect(ev.storageVersionHash).toBe(info('', 'v1', 'events').storageVersionHash);
    const gr = new Map<string, Set<string>>();
    for (const g of catalogData) {
      for (const r of g.resources) {
        if (!r.storageVersionHash) continue;
        const key = r.storageResource ?? (r.group ? `${r.resource}.${r.group}` : r.resource);
        if (!gr.has(key)) gr.set(key, new Set());
        gr.get(key)!.add(r.storageVersionHash);
      }
    }
    for (const [key, hashes] of gr) expect(hashes.size, key).toBe(1);
  });
});

describe('resource.k8s.io v1beta2 and v1alpha3 <-> stored v1beta1', () => {
  const claimB2 = conversionOf(info('resource.k8s.io', 'v1beta2', 'resourceclaims'))!;
  const tmplB2 = conversionOf(info('resource.k8s.io', 'v1beta2', 'resourceclaimtemplates'))!;
  const sliceB2 = conversionOf(info('resource.k8s.io', 'v1beta2', 'resourceslices'))!;
  const sliceA3 = conversionOf(info('resource.k8s.io', 'v1alpha3', 'resourceslices'))!;
  const stored = {
    kind: 'ResourceClaim',
    apiVersion: 'resource.k8s.io/v1beta1',
    metadata: { name: 'c' },
    spec: { devices: { requests: [{ name: 'gpu', deviceClassName: 'gpu.example.com', allocationMode: 'ExactCount', count: 2 }, { name: 'any', firstAvailable: [{ name: 'a', deviceClassName: 'x' }] }] } },
  };
  it('nests a request under exactly, unless it lists firstAvailable, and round-trips', () => {
    const b2 = claimB2.fromStorage(stored);
    expect(b2.spec.devices.requests).toEqual([
      { name: 'gpu', exactly: { deviceClassName: 'gpu.example.com', allocationMode: 'ExactCount', count: 2 } },
      { name: 'any', firstAvailable: [{ name: 'a', deviceClassName: 'x' }] },
    ]);
    expect(claimB2.toStorage(b2)).toEqual(stored);
    const t = { kind: 'ResourceClaimTemplate', apiVersion: 'resource.k8s.io/v1beta1', metadata: { name: 't' }, spec: { spec: stored.spec } };
    expect(tmplB2.fromStorage(t).spec.spec.devices.requests[0].exactly.count).toBe(2);
    expect(tmplB2.toStorage(tmplB2.fromStorage(t))).toEqual(t);
  });
  it('flattens a slice device for v1beta2 and unwraps capacities for v1alpha3', () => {
    const slice = { kind: 'ResourceSlice', apiVersion: 'resource.k8s.io/v1beta1', metadata: { name: 's' }, spec: { driver: 'd', pool: { name: 'p', resourceSliceCount: 1, generation: 1 }, allNodes: true, devices: [{ name: 'g0', basic: { attributes: { model: { string: 'x' } }, capacity: { mem: { value: '8Gi' } } } }] } };
    expect(sliceB2.fromStorage(slice).spec.devices).toEqual([{ name: 'g0', attributes: { model: { string: 'x' } }, capacity: { mem: { value: '8Gi' } } }]);
    expect(sliceB2.toStorage(sliceB2.fromStorage(slice))).toEqual(slice);
    expect(sliceA3.fromStorage(slice).spec.devices[0].basic.capacity).toEqual({ mem: '8Gi' });
    expect(sliceA3.toStorage(sliceA3.fromStorage(slice))).toEqual(slice);
  });
});
