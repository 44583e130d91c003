import { describe, it, expect } from 'vitest';
import { Catalog } from './catalog.js';
import { apiResourceListDoc } from './discovery.js';

describe('Catalog', () => {
  it('serves GA group-versions by default, and no beta or alpha', () => {
    const gvs = new Catalog().servedGroupVersions().map((g) => g.groupVersion);
    expect(gvs).toContain('v1');
    expect(gvs).toContain('apps/v1');
    expect(gvs).toContain('batch/v1');
    expect(gvs.filter((g) => /alpha|beta/.test(g))).toEqual([]);
    expect(gvs[0]).toBe('v1');
  });
  it('applies --runtime-config', () => {
    expect(new Catalog({ runtimeConfig: 'batch/v1=false' }).lookup('batch', 'v1', 'jobs')).toBeUndefined();
    expect(new Catalog({ runtimeConfig: 'resource.k8s.io/v1beta1' }).lookup('resource.k8s.io', 'v1beta1', 'resourceclaims')).toBeDefined();
    const all = new Catalog({ runtimeConfig: 'api/all=true' }).servedGroupVersions().map((g) => g.groupVersion);
    expect(all).toContain('storagemigration.k8s.io/v1alpha1');
    expect(() => new Catalog({ runtimeConfig: 'nope/v9' })).toThrowError(/unknown/);
    expect(() => new Catalog({ runtimeConfig: 'batch/v1=maybe' })).toThrowError(/invalid value/);
  });
  it('takes resource-level keys, api/ groups of versions and ParseBool values', () => {
    const c = new Catalog({ runtimeConfig: 'batch/v1/cronjobs=false,storage.k8s.io/v1beta1/volumeattributesclasses=1' });
    expect(c.lookup('batch', 'v1', 'jobs')).toBeDefined();
    expect(c.lookup('batch', 'v1', 'cronjobs')).toBeUndefined();
    const sv = c.servedGroupVersions().find((g) => g.groupVersion === 'storage.k8s.io/v1beta1')!;
    expect(sv.resources.map((r) => r.resource)).toEqual(['volumeattributesclasses']);
    expect(new Catalog({ runtimeConfig: 'api/v1/pods=false' }).lookup('', 'v1', 'pods')).toBeUndefined();
    const beta = new Catalog({ runtimeConfig: 'api/beta=true' }).servedGroupVersions().map((g) => g.groupVersion);
    expect(beta).toContain('coordination.k8s.io/v1beta1');
    expect(beta.filter((g) => g.includes('alpha'))).toEqual([]);
    const alpha = new Catalog({ runtimeConfig: 'api/alpha' }).servedGroupVersions().map((g) => g.groupVersion);
    expect(alpha).toContain('coordination.k8s.io/v1alpha2');
    expect(() => new Catalog({ runtimeConfig: 'batch/v1/nothings=true' })).toThrowError(/unknown resource "nothings"/);
    // broad switches first, then group-versions, then resources, whatever the order given
    const gvs = (rc: string) => new Catalog({ runtimeConfig: rc }).servedGroupVersions().map((g) => g.groupVersion);
    expect(gvs('apps/v1=true,api/all=false')).toEqual(['apps/v1']);
    expect(gvs('batch/v1=false,api/all=true')).not.toContain('batch/v1');
    expect(gvs('batch/v1=false,api/all=true')).toContain('storagemigration.k8s.io/v1alpha1');
    const jobsOnly = new Catalog({ runtimeConfig: 'batch/v1/jobs=true,batch/v1=false' });
    expect(jobsOnly.lookup('batch', 'v1', 'jobs')).toBeDefined();
    expect(jobsOnly.lookup('batch', 'v1', 'cronjobs')).toBeUndefined();
    expect(gvs('batch/v1=false,batch/v1=true')).toContain('batch/v1');
    expect(() => new Catalog({ runtimeConfig: 'batch/v1/jobs/x=true' })).toThrowError(/unknown api groupVersion/);
  });
  it('carries the storage version hashes kube-apiserver publishes', () => {
    const c = new Catalog();
    expect(c.lookup('', 'v1', 'configmaps')!.storageVersionHash).toBe('qFsyl6wFWjQ=');
    expect(c.lookup('', 'v1', 'pods')!.storageVersionHash).toBe('xPOwRZ+Yhw8=');
  });
  it('lists core resources with short names and subresources', () => {
    const doc = JSON.parse(apiResourceListDoc(new Catalog(), '', 'v1'));
    const cm = doc.resources.find((r: any) => r.name === 'configmaps');
    expect(cm.shortNames).toEqual(['cm']);
    expect(doc.resources.some((r: any) => r.name === 'pods/status')).toBe(true);
    const ev = doc.resources.find((r: any) => r.name === 'pods/eviction');
    expect(ev).toMatchObject({ group: 'policy', version: 'v1', kind: 'Eviction' });
  });
});
