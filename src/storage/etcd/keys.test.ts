// kube's etcd key layout (kube-apiserver's storage factory resource prefixes).
import { describe, expect, it } from 'vitest';
import { objectKey, parseObjectKey, rangePrefix, resourcePrefix, storageFactsOf } from './keys.js';

describe('etcd keys', () => {
  it('puts objects where kube-apiserver puts them', () => {
    const k = (g: string, r: string, ns: string | undefined, n: string) => objectKey('/registry', g, r, ns, n);
    expect(k('', 'configmaps', 'default', 'cm1')).toBe('/registry/configmaps/default/cm1');
    expect(k('', 'namespaces', undefined, 'default')).toBe('/registry/namespaces/default');
    // the compiled-in exceptions
    expect(k('', 'services', 'default', 'svc')).toBe('/registry/services/specs/default/svc');
    expect(k('', 'endpoints', 'default', 'svc')).toBe('/registry/services/endpoints/default/svc');
    expect(k('', 'nodes', undefined, 'n1')).toBe('/registry/minions/n1');
    expect(k('', 'replicationcontrollers', 'ns', 'rc')).toBe('/registry/controllers/ns/rc');
    expect(k('networking.k8s.io', 'ingresses', 'ns', 'in')).toBe('/registry/ingress/ns/in');
    // the group is not part of the key of kube-apiserver's own resources
    expect(k('apps', 'deployments', 'ns', 'd')).toBe('/registry/deployments/ns/d');
    expect(k('flowcontrol.apiserver.k8s.io', 'flowschemas', undefined, 'fs')).toBe('/registry/flowschemas/fs');
    expect(k('coordination.k8s.io', 'leases', 'kube-system', 'l')).toBe('/registry/leases/kube-system/l');
    expect(k('autoscaling', 'horizontalpodautoscalers', 'ns', 'h')).toBe('/registry/horizontalpodautoscalers/ns/h');
    // events.k8s.io events are core events
    expect(k('events.k8s.io', 'events', 'ns', 'e')).toBe('/registry/events/ns/e');
    // the group-prefixed servers, and custom resources
    expect(k('apiextensions.k8s.io', 'customresourcedefinitions', undefined, 'widgets.example.com')).toBe('/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com');
    expect(k('apiregistration.k8s.io', 'apiservices', undefined, 'v1.apps')).toBe('/registry/apiregistration.k8s.io/apiservices/v1.apps');
    expect(k('example.com', 'widgets', 'default', 'w1')).toBe('/registry/example.com/widgets/default/w1');
    expect(resourcePrefix('example.com', 'widgets')).toBe('example.com/widgets');
  });

  it('joins the prefix as Go path.Join does', () => {
    expect(objectKey('registry', '', 'configmaps', 'a', 'b')).toBe('registry/configmaps/a/b');
    expect(objectKey('/custom/', '', 'configmaps', 'a', 'b')).toBe('/custom/configmaps/a/b');
    expect(objectKey('', '', 'configmaps', 'a', 'b')).toBe('/configmaps/a/b');
  });

  it('ranges end with a slash, so that one resource does not take another', () => {
    expect(rangePrefix('/registry', '', 'services')).toBe('/registry/services/specs/');
    expect(rangePrefix('/registry', '', 'configmaps', 'ns1')).toBe('/registry/configmaps/ns1/');
    expect(parseObjectKey('/registry/configmaps/ns1/a', '/registry/configmaps/', true)).toEqual({ namespace: 'ns1', name: 'a' });
    expect(parseObjectKey('/registry/minions/n1', '/registry/minions/', false)).toEqual({ name: 'n1' });
    expect(parseObjectKey('/registry/configmaps/ns1', '/registry/configmaps/', true)).toBeUndefined();
  });

  it('refuses names that are not one path segment', () => {
    expect(() => objectKey('/registry', '', 'configmaps', 'ns', '..')).toThrow(/invalid name/);
    expect(() => objectKey('/registry', '', 'configmaps', 'ns', 'a/b')).toThrow(/invalid name/);
    expect(() => objectKey('/registry', '', 'configmaps', 'n%s', 'a')).toThrow(/invalid namespace/);
  });

  it('knows kube 1.33\'s storage versions', () => {
    expect(storageFactsOf('autoscaling', 'horizontalpodautoscalers').storageApiVersion).toBe('autoscaling/v2');
    expect(storageFactsOf('flowcontrol.apiserver.k8s.io', 'flowschemas').storageApiVersion).toBe('flowcontrol.apiserver.k8s.io/v1');
    expect(storageFactsOf('events.k8s.io', 'events')).toMatchObject({ storageGroup: '', storageResource: 'events', storageApiVersion: 'v1' });
    expect(storageFactsOf('networking.k8s.io', 'servicecidrs').storageApiVersion).toBe('networking.k8s.io/v1beta1');
    expect(storageFactsOf('example.com', 'widgets').builtin).toBe(false);
  });
});
