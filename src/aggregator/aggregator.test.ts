import { describe, it, expect } from 'vitest';
import { sortedByGroupAndVersion, viewOf, withCondition, type APIServiceView } from './apiservice.js';
import { Aggregator } from './aggregator.js';
import { convertResourceList, DiscoveryManager, type BackendFetch } from './discovery-manager.js';
import { setAuthProxyHeaders } from './backend-client.js';
import { ResolveError, ServiceResolver } from './service-resolver.js';
import type { OutgoingHttpHeaders } from 'node:http';

const apiService = (name: string, spec: Record<string, unknown>, available = true, rv = '1') => ({
  metadata: { name, resourceVersion: rv },
  spec: { service: { namespace: 'ns', name: 'svc', port: 443 }, ...spec },
  status: { conditions: [{ type: 'Available', status: available ? 'True' : 'False' }] },
});

/** A Cacher stand-in holding the given APIServices. */
function fakeCacher(objs: any[]): any {
  const items = new Map(objs.map((o) => [`/${o.metadata.name}`, { obj: o, json: Buffer.from(JSON.stringify(o)) }]));
  return { cache: () => ({ items }), observe: () => () => {} };
}

const view = (o: any) => viewOf(o) as APIServiceView;

describe('APIService order (SortedByGroupAndVersion)', () => {
  it('groups by priority then name, versions by priority then kube version order', () => {
    const groups = sortedByGroupAndVersion([
      view(apiService('v1.b.io', { group: 'b.io', version: 'v1', groupPriorityMinimum: 100, versionPriority: 10 })),
      view(apiService('v1.a.io', { group: 'a.io', version: 'v1', groupPriorityMinimum: 100, versionPriority: 10 })),
      view(apiService('v1beta1.c.io', { group: 'c.io', version: 'v1beta1', groupPriorityMinimum: 500, versionPriority: 10 })),
      view(apiService('v2.c.io', { group: 'c.io', version: 'v2', groupPriorityMinimum: 400, versionPriority: 10 })),
      view(apiService('v1alpha1.c.io', { group: 'c.io', version: 'v1alpha1', groupPriorityMinimum: 400, versionPriority: 20 })),
    ]);
    expect(groups.map((g) => [g.name, g.priority, g.services.map((s) => s.version)])).toEqual([
      ['c.io', 500, ['v1alpha1', 'v2', 'v1beta1']],
      ['a.io', 100, ['v1']],
      ['b.io', 100, ['v1']],
    ]);
  });

  it('the port defaults to 443 and the caBundle is decoded', () => {
    const v = view({ metadata: { name: 'v1.x.io' }, spec: { group: 'x.io', version: 'v1', service: { namespace: 'n', name: 's' }, caBundle: Buffer.from('PEM').toString('base64') } });
    expect(v.service).toEqual({ namespace: 'n', name: 's', port: 443 });
    expect(v.caBundle!.toString()).toBe('PEM');
    expect(v.available).toBe(false);
  });

  it('a condition keeps its transition time while its status stays', () => {
    const o = { status: { conditions: [{ type: 'Available', status: 'False', lastTransitionTime: 't1', reason: 'A', message: 'a' }] } };
    expect(withCondition(o, { type: 'Available', status: 'False', lastTransitionTime: 't2', reason: 'B', message: 'b' })).toEqual([{ type: 'Available', status: 'False', lastTransitionTime: 't1', reason: 'B', message: 'b' }]);
    expect(withCondition(o, { type: 'Available', status: 'True', lastTransitionTime: 't2', reason: 'Passed', message: 'm' })[0].lastTransitionTime).toBe('t2');
  });
});

describe('merged discovery', () => {
  const local = {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: ['apiregistration.k8s.io', 'apps', 'batch', 'stable.example.com'].map((name) => ({ name, versions: [{ groupVersion: `${name}/v1`, version: 'v1' }], preferredVersion: { groupVersion: `${name}/v1`, version: 'v1' } })),
  };

  it('places each aggregated group by its priority among the local ones, and adds versions to a shared group', () => {
    const agg = new Aggregator(
      fakeCacher([
        apiService('v1beta1.metrics.k8s.io', { group: 'metrics.k8s.io', version: 'v1beta1', groupPriorityMinimum: 100, versionPriority: 100 }),
        apiService('v1.high.io', { group: 'high.io', version: 'v1', groupPriorityMinimum: 17600, versionPriority: 1 }),
        apiService('v2.apps', { group: 'apps', version: 'v2', groupPriorityMinimum: 17800, versionPriority: 1 }),
        // a local APIService (no Service) changes nothing
        { metadata: { name: 'v1.local.io' }, spec: { group: 'local.io', version: 'v1', groupPriorityMinimum: 20000 } },
      ]),
      { get: () => undefined, list: () => [] },
      { enableAggregatorRouting: true },
    );
    (agg as any).reload();
    const merged = JSON.parse(agg.mergeGroupList(Buffer.from(JSON.stringify(local))).toString());
    expect(merged.groups.map((g: any) => g.name)).toEqual(['apiregistration.k8s.io', 'apps', 'high.io', 'batch', 'stable.example.com', 'metrics.k8s.io']);
    expect(merged.groups[1].versions.map((v: any) => v.version)).toEqual(['v1', 'v2']);
    expect(merged.groups[1].preferredVersion.version).toBe('v1');
    expect(agg.proxyFor('metrics.k8s.io', 'v1beta1')?.name).toBe('v1beta1.metrics.k8s.io');
    expect(agg.proxyFor('local.io', 'v1')).toBeUndefined();
    expect(agg.proxyForPath('/apis/high.io/v1')?.name).toBe('v1.high.io');
    expect(agg.proxyForPath('/apis/high.io')).toBeUndefined();
    expect([...agg.groupDocs(new Set(['apps'])).keys()]).toEqual(['/apis/high.io', '/apis/metrics.k8s.io']);
    const aggregated = JSON.parse(agg.mergeAggregated(Buffer.from(JSON.stringify({ kind: 'APIGroupDiscoveryList', items: [{ metadata: { name: 'apps' }, versions: [{ version: 'v1' }] }] }))).toString());
    // (before any fetch: the version is there, with no resources, Stale)
    expect(aggregated.items.map((i: any) => [i.metadata.name, i.versions.map((v: any) => `${v.version}:${v.freshness ?? ''}`)])).toEqual([
      ['apps', ['v1:', 'v2:Stale']],
      ['high.io', ['v1:Stale']],
      ['metrics.k8s.io', ['v1beta1:Stale']],
    ]);
    agg.stop();
  });
});

describe('aggregated discovery of a backend (discoveryManager)', () => {
  it('converts a legacy resource list, subresources under their resource', () => {
    expect(
      convertResourceList([
        { name: 'widgets', singularName: 'widget', namespaced: true, kind: 'Widget', verbs: ['get', 'list'], shortNames: ['wd'] },
        { name: 'widgets/status', namespaced: true, kind: 'Widget', verbs: ['get', 'patch'] },
      ]),
    ).toEqual([
      {
        resource: 'widgets',
        responseKind: { group: '', version: '', kind: 'Widget' },
        scope: 'Namespaced',
        singularResource: 'widget',
        verbs: ['get', 'list'],
        shortNames: ['wd'],
        subresources: [{ subresource: 'status', responseKind: { group: '', version: '', kind: 'Widget' }, verbs: ['get', 'patch'] }],
      },
    ]);
  });

  it('takes the aggregated form, falls back to the legacy one, and keeps what it had, Stale, when the backend fails', async () => {
    let mode: 'aggregated' | 'legacy' | 'down' = 'aggregated';
    const asked: string[] = [];
    const fetch: BackendFetch = async (_s, path) => {
      asked.push(path);
      if (mode === 'down') throw new Error('connection refused');
      if (path === '/apis' && mode === 'aggregated') {
        const doc = { kind: 'APIGroupDiscoveryList', items: [{ metadata: { name: 'x.io' }, versions: [{ version: 'v1', resources: [{ resource: 'things' }], freshness: 'Current' }] }] };
        return { status: 200, headers: { 'content-type': 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList', etag: '"e1"' }, body: Buffer.from(JSON.stringify(doc)) };
      }
      if (path === '/apis') return { status: 200, headers: { 'content-type': 'application/json' }, body: Buffer.from('{"kind":"APIGroupList","groups":[]}') };
      return { status: 200, headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify({ kind: 'APIResourceList', resources: [{ name: 'others', namespaced: false, kind: 'Other', verbs: ['get'] }] })) };
    };
    let changes = 0;
    const dm = new DiscoveryManager(fetch, () => changes++, 60_000);
    const settle = () => new Promise((r) => setTimeout(r, 30));
    dm.update([view(apiService('v1.x.io', { group: 'x.io', version: 'v1' }, true, '1'))]);
    await settle();
    expect(dm.entry('v1.x.io')).toEqual({ version: 'v1', resources: [{ resource: 'things' }], freshness: 'Current' });
    mode = 'legacy';
    dm.update([view(apiService('v1.x.io', { group: 'x.io', version: 'v1' }, true, '2'))]);
    await settle();
    expect(asked.slice(-2)).toEqual(['/apis', '/apis/x.io/v1']);
    expect(dm.entry('v1.x.io').resources.map((r: any) => r.resource)).toEqual(['others']);
    mode = 'aggregated';
    dm.update([view(apiService('v1.x.io', { group: 'x.io', version: 'v1' }, true, '3'))]);
    await settle();
    mode = 'down';
    dm.update([view(apiService('v1.x.io', { group: 'x.io', version: 'v1' }, true, '4'))]);
    await settle();
    expect(dm.entry('v1.x.io')).toEqual({ version: 'v1', resources: [{ resource: 'things' }], freshness: 'Stale' });
    dm.update([]);
    expect(dm.entry('v1.x.io')).toBeUndefined();
    expect(changes).toBeGreaterThanOrEqual(4);
    dm.stop();
  });
});

describe('the proxied identity', () => {
  it('replaces whatever identity headers the client sent', () => {
    const h: OutgoingHttpHeaders = { 'x-remote-user': 'mallory', 'X-Remote-Group': 'system:masters', 'x-remote-extra-scopes': 'all', accept: 'application/json' };
    setAuthProxyHeaders(h, { name: 'jane', groups: ['dev', 'system:authenticated'], extra: { 'example.com/team': ['a', 'b'] } });
    expect(h).toEqual({ accept: 'application/json', 'X-Remote-User': 'jane', 'X-Remote-Group': ['dev', 'system:authenticated'], 'X-Remote-Extra-example.com%2Fteam': ['a', 'b'] });
  });
});

describe('ServiceResolver', () => {
  const objects = (svc: any, slices: any[]) => ({ get: (gr: string) => (gr === 'services' ? svc : undefined), list: () => slices });
  const svc = { metadata: { name: 's', namespace: 'n' }, spec: { type: 'ClusterIP', ports: [{ name: 'https', port: 443 }] } };
  const slice = (ready: boolean, port = 8443) => ({ metadata: { labels: { 'kubernetes.io/service-name': 's' } }, endpoints: [{ addresses: ['10.0.0.1'], conditions: { ready } }], ports: [{ name: 'https', port }] });

  it('routes to a ready endpoint on the port named as the Service port', () => {
    expect(new ServiceResolver(objects(svc, [slice(false, 1), slice(true)]), true).resolve('n', 's', 443)).toEqual({ host: '10.0.0.1', port: 8443 });
  });

  it("refuses with kube's reasons", () => {
    expect(() => new ServiceResolver(objects(undefined, []), true).resolve('n', 's', 443)).toThrow(new ResolveError('service "s" not found'));
    expect(() => new ServiceResolver(objects(svc, []), true).resolve('n', 's', 80)).toThrow('no service port 80 found for service "s"');
    expect(() => new ServiceResolver(objects(svc, [slice(false)]), true).resolve('n', 's', 443)).toThrow('no endpoints available for service "s"');
    const ext = { spec: { type: 'ExternalName', externalName: 'api.example.com' } };
    expect(() => new ServiceResolver(objects(ext, []), true).resolve('n', 's', 443)).toThrow('unsupported service type "ExternalName"');
    // without endpoint routing, an ExternalName Service is dialled by its name (kube's ResolveCluster)
    expect(new ServiceResolver(objects(ext, []), false).resolve('n', 's', 443)).toEqual({ host: 'api.example.com', port: 443 });
  });
});

describe('APIService validation (ValidateAPIService)', () => {
  it("reports kube's errors", async () => {
    const { validateAPIService } = await import('./apiservice-strategy.js');
    expect(validateAPIService({ metadata: { name: 'wrong' }, spec: { group: 'x.io', version: 'v1', groupPriorityMinimum: 0, versionPriority: 1001, caBundle: 'QUJD', insecureSkipTLSVerify: true } })).toEqual([
      { field: 'metadata.name', type: 'FieldValueInvalid', value: 'wrong', detail: 'must be `spec.version+"."+spec.group`: "v1.x.io"' },
      { field: 'spec.groupPriorityMinimum', type: 'FieldValueInvalid', value: 0, detail: 'must be positive and less than 20000' },
      { field: 'spec.versionPriority', type: 'FieldValueInvalid', value: 1001, detail: 'must be positive and less than 1000' },
      { field: 'spec.caBundle', type: 'FieldValueInvalid', value: '3 bytes', detail: 'local APIServices may not have a caBundle' },
      { field: 'spec.insecureSkipTLSVerify', type: 'FieldValueInvalid', value: true, detail: 'local APIServices may not have insecureSkipTLSVerify' },
    ]);
    expect(validateAPIService({ metadata: { name: 'v1.x.io' }, spec: { group: 'x.io', version: 'v1', groupPriorityMinimum: 10, versionPriority: 10, service: { name: '' }, caBundle: 'QUJD', insecureSkipTLSVerify: true } }).map((e) => e.field)).toEqual([
      'spec.service.namespace',
      'spec.service.name',
      'spec.insecureSkipTLSVerify',
    ]);
    expect(validateAPIService({ metadata: { name: 'v1.x.io' }, spec: { group: 'x.io', version: 'v1', groupPriorityMinimum: 10, versionPriority: 10, service: { namespace: 'n', name: 's', port: 443 } } })).toEqual([]);
  });
});

describe('the proxy client certificate', () => {
  it('is read again when its files change, and a bad pair keeps the previous one', async () => {
    const { execFileSync } = await import('node:child_process');
    const { mkdtempSync, writeFileSync, rmSync, utimesSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { loadProxyClientCert } = await import('./backend-client.js');
    const dir = mkdtempSync(join(tmpdir(), 'kubeshard-proxy-cert-'));
    const make = (n: string) => {
      execFileSync('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${n}.key`], { cwd: dir, stdio: 'ignore' });
      execFileSync('openssl', ['req', '-x509', '-new', '-key', `${n}.key`, '-days', '1', '-subj', `/CN=${n}`, '-out', `${n}.crt`], { cwd: dir, stdio: 'ignore' });
    };
    try {
      make('a');
      make('b');
      const cert = join(dir, 'client.crt');
      const key = join(dir, 'client.key');
      const copy = (n: string, at: number) => {
        writeFileSync(cert, execFileSync('cat', [join(dir, `${n}.crt`)]));
        writeFileSync(key, execFileSync('cat', [join(dir, `${n}.key`)]));
        utimesSync(cert, at, at);
        utimesSync(key, at, at);
      };
      copy('a', 1000);
      const src = loadProxyClientCert(cert, key, 0)!;
      const first = src.current()!;
      expect(first.generation).toBe(1);
      copy('b', 2000);
      const second = src.current()!;
      expect(second.generation).toBe(2);
      expect(second.cert.equals(first.cert)).toBe(false);
      // a key that does not match: the rotated pair stays in use
      writeFileSync(key, execFileSync('cat', [join(dir, 'a.key')]));
      utimesSync(key, 3000, 3000);
      expect(src.current()!.generation).toBe(2);
      expect(() => loadProxyClientCert(cert, key)).toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
