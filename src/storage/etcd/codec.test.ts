// kube's etcd value format: protobuf envelopes for built-in kinds, JSON for the
// apiextensions/apiregistration groups (CRDs in v1beta1) and custom resources, resourceVersion
// kept out of the stored bytes and set from mod_revision on reading.
import { describe, expect, it } from 'vitest';
import { StorageDecodeError, decodeFromStorage, encodeForStorage } from './codec.js';
import { crdToV1, crdToV1beta1 } from './crd-v1beta1.js';

const cm = {
  kind: 'ConfigMap',
  apiVersion: 'v1',
  metadata: { name: 'a', namespace: 'ns', uid: 'u-1', resourceVersion: '77', creationTimestamp: '2026-01-02T03:04:05Z', labels: { x: 'y' } },
  data: { k: 'v', e: '' },
};
const core = (resource: string) => ({ group: '', resource });

describe('etcd value codec', () => {
  it('stores a built-in kind as the k8s\\0 protobuf envelope, without its resourceVersion', () => {
    const v = encodeForStorage(core('configmaps'), cm);
    expect(v.subarray(0, 4)).toEqual(Buffer.from('k8s\0'));
    expect(v.includes('77')).toBe(false);
    const d = decodeFromStorage(core('configmaps'), v, 123);
    expect(d.obj).toEqual({ ...cm, metadata: { ...cm.metadata, resourceVersion: '123' } });
    // kind, apiVersion, metadata first, as kubeshard serves it
    expect(d.json.toString().startsWith('{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","uid":"u-1","resourceVersion":"123"')).toBe(true);
  });

  it('stores JSON when asked (--storage-media-type=application/json), and reads either', () => {
    const v = encodeForStorage(core('configmaps'), cm, 'application/json');
    expect(v.toString().endsWith('}\n')).toBe(true);
    expect(JSON.parse(v.toString()).metadata.resourceVersion).toBeUndefined();
    expect(decodeFromStorage(core('configmaps'), v, 5).obj.data).toEqual(cm.data);
  });

  it('keeps a pod template\'s zero creationTimestamp as Go writes it (null)', () => {
    const d = {
      kind: 'Deployment',
      apiVersion: 'apps/v1',
      metadata: { name: 'd', namespace: 'ns' },
      spec: { replicas: 0, selector: { matchLabels: { a: 'b' } }, template: { metadata: { creationTimestamp: null, labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i' }] } } },
    };
    const out = decodeFromStorage({ group: 'apps', resource: 'deployments' }, encodeForStorage({ group: 'apps', resource: 'deployments' }, d), 9).obj;
    expect(out.spec.template.metadata).toEqual({ creationTimestamp: null, labels: { a: 'b' } });
    expect(out.spec.replicas).toBe(0);
  });

  it('stores a custom resource as JSON with its keys sorted, as Go marshals a map', () => {
    const w = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', namespace: 'ns', resourceVersion: '4' }, spec: { z: 1, a: { y: 2, b: 3 } } };
    const v = encodeForStorage({ group: 'example.com', resource: 'widgets' }, w);
    expect(v.toString()).toBe('{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"ns"},"spec":{"a":{"b":3,"y":2},"z":1}}\n');
    const d = decodeFromStorage({ group: 'example.com', resource: 'widgets' }, v, 10);
    expect(d.obj).toEqual({ ...w, metadata: { ...w.metadata, resourceVersion: '10' } });
  });

  it('stores APIServices as JSON in v1', () => {
    const a = { kind: 'APIService', apiVersion: 'apiregistration.k8s.io/v1', metadata: { name: 'v1.apps' }, spec: { group: 'apps', version: 'v1', groupPriorityMinimum: 17800, versionPriority: 15 } };
    const v = encodeForStorage({ group: 'apiregistration.k8s.io', resource: 'apiservices' }, a);
    expect(JSON.parse(v.toString())).toEqual(a);
  });

  it('reads an HPA an older kube stored in autoscaling/v1 as kubeshard keeps it (v2)', () => {
    const h = {
      kind: 'HorizontalPodAutoscaler',
      apiVersion: 'autoscaling/v1',
      metadata: { name: 'h', namespace: 'ns' },
      spec: { scaleTargetRef: { kind: 'Deployment', name: 'd', apiVersion: 'apps/v1' }, minReplicas: 1, maxReplicas: 3, targetCPUUtilizationPercentage: 50 },
    };
    const gr = { group: 'autoscaling', resource: 'horizontalpodautoscalers' };
    const d = decodeFromStorage(gr, Buffer.from(JSON.stringify(h)), 3).obj;
    expect(d.apiVersion).toBe('autoscaling/v2');
    expect(d.spec.metrics).toEqual([{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } } }]);
  });

  it('refuses what it cannot read, with its own error', () => {
    expect(() => decodeFromStorage(core('secrets'), Buffer.from('k8s:enc:aescbc:v1:key1:xxxx'), 1)).toThrow(StorageDecodeError);
    expect(() => decodeFromStorage(core('secrets'), Buffer.from('not json'), 1)).toThrow(StorageDecodeError);
    expect(() => decodeFromStorage(core('secrets'), Buffer.from('k8s\0\x0a\x05garbage'), 1)).toThrow(StorageDecodeError);
  });
});

describe('CustomResourceDefinitions in v1beta1', () => {
  const schema = { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } } };
  const crd = {
    kind: 'CustomResourceDefinition',
    apiVersion: 'apiextensions.k8s.io/v1',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
      scope: 'Namespaced',
      versions: [
        { name: 'v1', served: true, storage: true, schema, subresources: { status: {} }, additionalPrinterColumns: [{ name: 'Size', type: 'integer', jsonPath: '.spec.size' }] },
        { name: 'v2', served: true, storage: false, schema, subresources: { status: {}, scale: { specReplicasPath: '.spec.r', statusReplicasPath: '.status.r' } }, additionalPrinterColumns: [{ name: 'Size', type: 'integer', jsonPath: '.spec.size' }] },
      ],
      conversion: { strategy: 'Webhook', webhook: { clientConfig: { url: 'https://conv.example.com' }, conversionReviewVersions: ['v1'] } },
    },
    status: { storedVersions: ['v1'] },
  };

  it('hoists what every version shares, keeps per version what differs, and comes back the same', () => {
    const b = crdToV1beta1(crd);
    expect(b.apiVersion).toBe('apiextensions.k8s.io/v1beta1');
    expect(b.spec.version).toBe('v1');
    expect(b.spec.validation).toEqual(schema);
    expect(b.spec.additionalPrinterColumns).toEqual([{ name: 'Size', type: 'integer', JSONPath: '.spec.size' }]);
    expect(b.spec.subresources).toBeUndefined();
    expect(b.spec.versions[1].subresources.scale).toBeDefined();
    expect(b.spec.versions[0].schema).toBeUndefined();
    expect(b.spec.conversion).toEqual({ strategy: 'Webhook', webhookClientConfig: { url: 'https://conv.example.com' }, conversionReviewVersions: ['v1'] });
    expect(b.spec.preserveUnknownFields).toBe(false);
    expect(crdToV1(b)).toEqual(crd);
  });

  it('reads an old v1beta1 CRD with no versions list (one version, preserving unknown fields)', () => {
    const old = { kind: 'CustomResourceDefinition', apiVersion: 'apiextensions.k8s.io/v1beta1', metadata: { name: 'a.b.c' }, spec: { group: 'b.c', version: 'v1', names: { plural: 'a', kind: 'A' }, scope: 'Cluster' } };
    const v1 = crdToV1(old);
    expect(v1.spec.versions).toEqual([{ name: 'v1', served: true, storage: true }]);
    expect(v1.spec.preserveUnknownFields).toBe(true);
    expect(v1.spec.version).toBeUndefined();
  });

  it('is what the codec writes for customresourcedefinitions, and reads back as v1', () => {
    const gr = { group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions' };
    const v = encodeForStorage(gr, crd);
    expect(JSON.parse(v.toString()).apiVersion).toBe('apiextensions.k8s.io/v1beta1');
    const d = decodeFromStorage(gr, v, 8).obj;
    expect(d).toEqual({ ...crd, metadata: { ...crd.metadata, resourceVersion: '8' } });
  });
});
