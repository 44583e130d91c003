// The defaulters agree with the declarative defaults the catalog's v3 facts carry (the
// +default markers of kube 1.33's types), wherever a kind of issue #4 embeds such a type.
import { describe, it, expect } from 'vitest';
import { definitions } from '../../api/schema.js';
import { declaredDefaults } from './common.js';
import { defaultPod, defaultPodTemplate } from './pod.js';
import { defaultPv, defaultService } from './core.js';

const info = { kind: 'Pod', version: 'v1' };

describe('declared (v3) defaults', () => {
  it('every volume source of a Pod and of a PersistentVolume gets its declared defaults', () => {
    for (const [holder, build, read] of [
      ['io.k8s.api.core.v1.Volume', (k: string) => ({ spec: { containers: [], volumes: [{ name: 'v', [k]: {} }] } }), (o: any, k: string) => o.spec.volumes[0][k]],
      ['io.k8s.api.core.v1.PersistentVolumeSpec', (k: string) => ({ spec: { [k]: {} } }), (o: any, k: string) => o.spec[k]],
    ] as const) {
      let checked = 0;
      for (const [k, p] of Object.entries(definitions[holder].p ?? {})) {
        if (!p.r) continue;
        const want = declaredDefaults(p.r);
        if (want.length === 0) continue;
        const obj: any = build(k);
        if (holder.endsWith('Volume')) defaultPod(obj, info);
        else defaultPv(obj);
        for (const [field, value] of want) expect(read(obj, k)[field], `${holder}.${k}.${field}`).toEqual(value);
        checked++;
      }
      // azureDisk, iscsi, rbd and scaleIO carry declared defaults in 1.33
      expect(checked).toBe(4);
    }
  });

  it('container and service ports default their protocol as declared; a template container too', () => {
    expect(declaredDefaults('io.k8s.api.core.v1.ContainerPort')).toEqual([['protocol', 'TCP']]);
    expect(declaredDefaults('io.k8s.api.core.v1.ServicePort')).toEqual([['protocol', 'TCP']]);
    const tmpl: any = { spec: { containers: [{ name: 'c', image: 'x', ports: [{ containerPort: 1 }] }] } };
    defaultPodTemplate(tmpl, info);
    expect(tmpl.spec.containers[0].ports[0].protocol).toBe('TCP');
    const svc: any = { spec: { ports: [{ port: 1 }] } };
    defaultService(svc);
    expect(svc.spec.ports[0].protocol).toBe('TCP');
  });

  it('a value the client gave is kept', () => {
    const pod: any = { spec: { containers: [], volumes: [{ name: 'v', rbd: { pool: 'mine', monitors: ['m'], image: 'i' } }] } };
    defaultPod(pod, info);
    expect(pod.spec.volumes[0].rbd).toEqual({ pool: 'mine', monitors: ['m'], image: 'i', user: 'admin', keyring: '/etc/ceph/keyring' });
  });
});

describe('map keys that name inherited members (issue 17)', () => {
  it('stringData keys __proto__ and toString fold into data as keys, not as data\'s prototype', async () => {
    const { defaultSecret } = await import('./core.js');
    const secret: any = JSON.parse('{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"__proto__":"a","toString":"b"}}');
    defaultSecret(secret, { kind: 'Secret', version: 'v1', group: '' } as any);
    expect(Object.getPrototypeOf(secret.data)).toBe(Object.prototype);
    expect(JSON.stringify(secret.data)).toBe('{"__proto__":"YQ==","toString":"Yg=="}');
  });

  it('a LimitRange max named toString becomes the default (an own key, not the inherited member)', async () => {
    const { defaultLimitRange } = await import('./other.js');
    const lr: any = { spec: { limits: [{ type: 'Container', max: { toString: '1' } }] } };
    defaultLimitRange(lr);
    expect(lr.spec.limits[0].default).toEqual({ toString: '1' });
    expect(lr.spec.limits[0].defaultRequest).toEqual({ toString: '1' });
  });
});
