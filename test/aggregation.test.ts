// API aggregation (issue 20) with a real aggregated server (test/metrics-server.ts, HTTPS,
// metrics.k8s.io/v1beta1) registered as kube registers metrics-server: an APIService, its
// Service and the Service's EndpointSlice. Through kubeshard and the real kubectl:
// `get --raw` of the metrics, `top node` and `top pod`, `api-resources`, `explain`, the
// APIService Available. kubeshard authenticates and authorizes (RBAC) first; the backend sees
// the caller's identity in the request headers over the proxy client certificate, never the
// caller's token, and the proxied request gives its flow-control seat back. Discovery (legacy
// and aggregated) and OpenAPI (v2, v3) include the group; a watch streams through unbuffered;
// bodies and queries pass; the backend's certificate is verified with the caBundle. A stopped
// backend turns the APIService False (FailedDiscoveryCheck) and its requests into 503s, and a
// restarted one brings both back; a missing Service and missing endpoints get kube's reasons,
// and an invalid APIService kube's 422.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import https from 'node:https';
import { request, startServer, until, type TestServer } from './helpers/server.js';
import { kubectl, kubectlOk, kubectlPath } from './helpers/kubectl.js';
import { startMetricsServer, type MetricsServer } from './metrics-server.js';

const dir = mkdtempSync(join(tmpdir(), 'kubeshard-aggr-'));
const ssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });

/** Two authorities, as a cluster has them: one signs the backend's serving certificate, one the aggregator's proxy client certificate. */
function makeCerts(): void {
  for (const ca of ['serving-ca', 'front-proxy-ca']) {
    ssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${ca}.key`]);
    ssl(['req', '-x509', '-new', '-key', `${ca}.key`, '-sha256', '-days', '2', '-subj', `/CN=${ca}`, '-out', `${ca}.crt`]);
  }
  const leaf = (name: string, subj: string, ca: string, ext: string) => {
    ssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`]);
    ssl(['req', '-new', '-key', `${name}.key`, '-subj', subj, '-out', `${name}.csr`]);
    writeFileSync(join(dir, `${name}.ext`), ext);
    ssl(['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-days', '2', '-sha256', '-extfile', `${name}.ext`, '-out', `${name}.crt`]);
  };
  leaf('metrics-server', '/CN=metrics-server', 'serving-ca', 'subjectAltName=DNS:metrics-server.kube-system.svc\nextendedKeyUsage=serverAuth\n');
  leaf('front-proxy-client', '/CN=front-proxy-client', 'front-proxy-ca', 'extendedKeyUsage=clientAuth\n');
}

const file = (n: string) => readFileSync(join(dir, n));
/** kubectl's discovery cache of its own: what an earlier server on the same port left is never read */
const CACHE = ['--cache-dir', join(dir, 'kube-cache')];
let s: TestServer;
let backend: MetricsServer;
let backendPort = 0;
const NODES = ['node-a', 'node-b'];
const PODS = [
  { namespace: 'default', name: 'web-1', containers: ['app'] },
  { namespace: 'default', name: 'web-2', containers: ['app', 'sidecar'] },
];

async function startBackend(): Promise<void> {
  backend = await startMetricsServer({ key: file('metrics-server.key'), cert: file('metrics-server.crt'), requestHeaderCa: file('front-proxy-ca.crt'), allowedNames: ['front-proxy-client'], nodes: NODES, pods: PODS }, backendPort);
  backendPort = backend.port;
}

const ok = async (method: string, path: string, body?: unknown, headers?: Record<string, string>) => {
  const r = await request(s, method, path, body, headers);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.body}`);
  return r;
};

const availableOf = async () => (await ok('GET', '/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io')).json().status?.conditions?.find((c: any) => c.type === 'Available');

beforeAll(async () => {
  kubectlPath();
  makeCerts();
  await startBackend();
  writeFileSync(join(dir, 'tokens.csv'), 'jane-token,jane,jane-uid,"dev,ops"\n');
  s = await startServer({
    args: ['--authorization-mode=RBAC', '--token-auth-file', join(dir, 'tokens.csv'), '--proxy-client-cert-file', join(dir, 'front-proxy-client.crt'), '--proxy-client-key-file', join(dir, 'front-proxy-client.key'), '--enable-aggregator-routing=true'],
    env: { KUBESHARD_AGGREGATOR_RESYNC_MS: '300', KUBESHARD_AGGREGATOR_REFRESH_MS: '500' },
  });
  // What kubectl top needs besides the metrics: the nodes (with allocatable) and the pods.
  for (const n of NODES) {
    await ok('POST', '/api/v1/nodes', { metadata: { name: n } });
    await ok('PATCH', `/api/v1/nodes/${n}/status`, { status: { capacity: { cpu: '4', memory: '8Gi', pods: '110' }, allocatable: { cpu: '4', memory: '8Gi', pods: '110' } } }, { 'content-type': 'application/merge-patch+json' });
  }
  for (const p of PODS) await ok('POST', `/api/v1/namespaces/${p.namespace}/pods`, { metadata: { name: p.name }, spec: { containers: p.containers.map((c) => ({ name: c, image: 'busybox' })) } });
  // metrics-server's registration: a Service without a selector, its EndpointSlice, the APIService.
  await ok('POST', '/api/v1/namespaces/kube-system/services', { metadata: { name: 'metrics-server' }, spec: { ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 4443 }] } });
  await ok('POST', '/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices', {
    metadata: { name: 'metrics-server-x1', labels: { 'kubernetes.io/service-name': 'metrics-server' } },
    addressType: 'IPv4',
    endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
    ports: [{ name: 'https', port: backendPort, protocol: 'TCP' }],
  });
  await ok('POST', '/apis/apiregistration.k8s.io/v1/apiservices', {
    metadata: { name: 'v1beta1.metrics.k8s.io' },
    spec: { group: 'metrics.k8s.io', version: 'v1beta1', service: { name: 'metrics-server', namespace: 'kube-system', port: 443 }, caBundle: file('serving-ca.crt').toString('base64'), groupPriorityMinimum: 100, versionPriority: 100 },
  });
  await until(async () => (await availableOf())?.status === 'True', 20_000);
  // (kubectl caches discovery: it is asked only once the group is in it, resources included)
  await until(async () => {
    const r = await request(s, 'GET', '/apis', undefined, { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' });
    const g = r.json().items.find((i: any) => i.metadata.name === 'metrics.k8s.io');
    return g?.versions?.[0]?.freshness === 'Current' && g.versions[0].resources?.length === 2;
  }, 20_000);
});

afterAll(async () => {
  await s?.stop();
  s?.cleanup();
  await backend?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('API aggregation with a real aggregated server', () => {
  it('the APIService is Available (Passed) and kubectl shows it', async () => {
    const c = await availableOf();
    expect(c).toMatchObject({ type: 'Available', status: 'True', reason: 'Passed', message: 'all checks passed' });
    const out = await kubectlOk(s, [...CACHE, 'get', 'apiservice', 'v1beta1.metrics.k8s.io']);
    expect(out.split('\n')[1]).toMatch(/^v1beta1\.metrics\.k8s\.io\s+kube-system\/metrics-server\s+True\s+/);
  });

  it('kubectl get --raw reaches the backend with the caller identity, over the proxy certificate, without the token', async () => {
    const before = backend.seen.length;
    const out = await kubectlOk(s, [...CACHE, 'get', '--raw', '/apis/metrics.k8s.io/v1beta1/nodes']);
    const list = JSON.parse(out);
    expect(list.kind).toBe('NodeMetricsList');
    expect(list.items.map((i: any) => i.metadata.name)).toEqual(NODES);
    const seen = backend.seen.slice(before).find((r) => r.path === '/apis/metrics.k8s.io/v1beta1/nodes');
    expect(seen).toMatchObject({ user: 'admin', clientCN: 'front-proxy-client' });
    expect(seen!.groups).toEqual(expect.arrayContaining(['system:masters', 'system:authenticated']));
    expect(seen!.authorization).toBeUndefined();
  });

  it('kubectl top node and top pod', async () => {
    const nodes = await kubectlOk(s, [...CACHE, 'top', 'node']);
    const rows = nodes.trim().split('\n');
    expect(rows[0].trim().split(/\s{2,}/)).toEqual(['NAME', 'CPU(cores)', 'CPU(%)', 'MEMORY(bytes)', 'MEMORY(%)']);
    expect(rows.slice(1).map((l) => l.split(/\s+/).slice(0, 3))).toEqual([
      ['node-a', '250m', '6%'],
      ['node-b', '350m', '8%'],
    ]);
    const pods = await kubectlOk(s, [...CACHE, 'top', 'pod', '-n', 'default']);
    expect(pods).toMatch(/^NAME\s+CPU\(cores\)\s+MEMORY\(bytes\)/);
    expect(pods).toMatch(/^web-1\s+10m\s+20Mi/m);
    expect(pods).toMatch(/^web-2\s+31m\s+42Mi/m);
    const containers = await kubectlOk(s, [...CACHE, 'top', 'pod', 'web-2', '-n', 'default', '--containers']);
    expect(containers).toMatch(/web-2\s+sidecar\s+16m\s+21Mi/);
  });

  it('kubectl api-resources lists metrics.k8s.io from aggregated discovery', async () => {
    const out = await kubectlOk(s, [...CACHE, 'api-resources', '--api-group=metrics.k8s.io']);
    const rows = out.trim().split('\n').slice(1).map((l) => l.split(/\s+/));
    expect(rows).toEqual([
      ['nodes', 'metrics.k8s.io/v1beta1', 'false', 'NodeMetrics'],
      ['pods', 'metrics.k8s.io/v1beta1', 'true', 'PodMetrics'],
    ]);
  });

  it('legacy discovery lists the group last (priority 100), and serves /apis/<group>', async () => {
    const groups = (await ok('GET', '/apis')).json().groups;
    expect(groups[groups.length - 1]).toEqual({ name: 'metrics.k8s.io', versions: [{ groupVersion: 'metrics.k8s.io/v1beta1', version: 'v1beta1' }], preferredVersion: { groupVersion: 'metrics.k8s.io/v1beta1', version: 'v1beta1' } });
    expect(groups[0].name).toBe('apiregistration.k8s.io');
    const g = (await ok('GET', '/apis/metrics.k8s.io')).json();
    expect(g).toMatchObject({ kind: 'APIGroup', name: 'metrics.k8s.io', preferredVersion: { version: 'v1beta1' } });
    // /apis/<group>/<version> is the backend's own document, proxied
    expect((await ok('GET', '/apis/metrics.k8s.io/v1beta1')).json().resources.map((r: any) => r.kind)).toEqual(['NodeMetrics', 'PodMetrics']);
  });

  it('OpenAPI v2 and v3 include the backend documents', async () => {
    await until(async () => {
      const v2 = (await ok('GET', '/openapi/v2', undefined, { accept: 'application/json' })).json();
      return v2.definitions['io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics'] && v2.paths['/apis/metrics.k8s.io/v1beta1/nodes'];
    }, 20_000);
    const v2 = (await ok('GET', '/openapi/v2', undefined, { accept: 'application/json' })).json();
    expect(v2.definitions['io.k8s.api.core.v1.Pod']).toBeDefined();
    const root = (await ok('GET', '/openapi/v3')).json();
    const url = root.paths['apis/metrics.k8s.io/v1beta1']?.serverRelativeURL;
    expect(url).toMatch(/^\/openapi\/v3\/apis\/metrics\.k8s\.io\/v1beta1\?hash=[0-9A-F]+$/);
    const doc = (await ok('GET', url)).json();
    expect(doc.components.schemas['io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics']).toBeDefined();
    expect(root.paths['apis/apps/v1']).toBeDefined();
    // the protobuf form client-go asks for carries the merged document too
    const pb = await ok('GET', '/openapi/v2', undefined, { accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' });
    expect(pb.raw.includes(Buffer.from('io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics'))).toBe(true);
    const explain = await kubectlOk(s, [...CACHE, 'explain', 'nodes', '--api-version=metrics.k8s.io/v1beta1']);
    expect(explain).toMatch(/KIND:\s+NodeMetrics/);
  });

  it('a stream from the backend passes through as it comes', async () => {
    const lines: string[] = [];
    let req!: ReturnType<typeof https.request>;
    const status = await new Promise<number>((res, rej) => {
      req = https.request({ host: '127.0.0.1', port: s.port, path: '/apis/metrics.k8s.io/v1beta1/nodes?watch=true', ca: s.ca, headers: { authorization: `Bearer ${s.token}` } }, (r) => {
        res(r.statusCode!);
        let buf = '';
        r.on('data', (c) => {
          buf += c;
          let i;
          while ((i = buf.indexOf('\n')) >= 0) {
            lines.push(buf.slice(0, i));
            buf = buf.slice(i + 1);
          }
        });
        r.on('error', () => {});
      });
      req.on('error', rej);
      req.end();
    });
    try {
      expect(status).toBe(200);
      // events arrive while the backend's response is still open
      await until(() => lines.length >= 3, 10_000);
      expect(JSON.parse(lines[0])).toMatchObject({ type: 'ADDED', object: { kind: 'NodeMetrics' } });
    } finally {
      req.destroy();
    }
  });

  it('kubeshard authorizes first (RBAC); the backend sees the caller as kubeshard knows them', async () => {
    const jane = { authorization: 'Bearer jane-token' };
    const before = backend.seen.length;
    const denied = await request(s, 'GET', '/apis/metrics.k8s.io/v1beta1/nodes', undefined, jane);
    expect(denied.status).toBe(403);
    expect(denied.json().message).toBe('nodes.metrics.k8s.io is forbidden: User "jane" cannot list resource "nodes" in API group "metrics.k8s.io" at the cluster scope');
    expect(backend.seen.slice(before).some((r) => r.user === 'jane')).toBe(false);
    await ok('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', { metadata: { name: 'metrics-reader' }, rules: [{ apiGroups: ['metrics.k8s.io'], resources: ['nodes', 'pods'], verbs: ['get', 'list'] }] });
    await ok('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', { metadata: { name: 'jane-metrics' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'metrics-reader' }, subjects: [{ kind: 'User', name: 'jane', apiGroup: 'rbac.authorization.k8s.io' }] });
    const allowed = await until(async () => {
      const r = await request(s, 'GET', '/apis/metrics.k8s.io/v1beta1/nodes/node-b', undefined, jane);
      return r.status === 200 && r;
    }, 10_000);
    expect(allowed.json()).toMatchObject({ kind: 'NodeMetrics', metadata: { name: 'node-b' } });
    const seen = backend.seen.slice(before).find((r) => r.user === 'jane')!;
    expect(seen).toMatchObject({ path: '/apis/metrics.k8s.io/v1beta1/nodes/node-b', groups: ['dev', 'ops', 'system:authenticated'], clientCN: 'front-proxy-client', authorization: undefined });
    // A proxied request gives its priority-and-fairness seat back once it is on its way (kube's
    // RequestDelegated): while the backend holds a slow one, no seat of jane's level is taken.
    const slow = request(s, 'GET', '/apis/metrics.k8s.io/v1beta1/nodes?delay=3000', undefined, jane);
    await until(() => backend.seen.some((r) => r.user === 'jane' && r.path.includes('delay=3000')), 10_000);
    const executing = (await ok('GET', '/metrics')).body.split('\n').filter((l) => l.startsWith('apiserver_flowcontrol_current_executing_requests{') && !l.includes('priority_level="exempt"'));
    expect(executing.length).toBeGreaterThan(0);
    expect(executing.filter((l) => !l.endsWith(' 0'))).toEqual([]);
    expect((await slow).status).toBe(200);
    // an impersonated request reaches the backend as the impersonated user
    const as = await ok('GET', '/apis/metrics.k8s.io/v1beta1/nodes', undefined, { 'impersonate-user': 'jane' });
    expect(as.json().kind).toBe('NodeMetricsList');
    expect(backend.seen[backend.seen.length - 1]).toMatchObject({ user: 'jane', groups: ['system:authenticated'] });
  });

  it("a client's own X-Remote-* headers never reach the backend: it sees the user kubeshard authenticated", async () => {
    // (this server has no --requestheader-client-ca-file: the headers are nobody's word)
    const before = backend.seen.length;
    const forged = { authorization: 'Bearer jane-token', 'X-Remote-User': 'admin', 'X-Remote-Group': 'system:masters', 'X-Remote-Uid': 'admin-uid', 'X-Remote-Extra-Scopes': 'everything' };
    const r = await request(s, 'GET', '/apis/metrics.k8s.io/v1beta1/nodes/node-a', undefined, forged);
    expect(r.status, r.body).toBe(200);
    const seen = backend.seen.slice(before).filter((x) => x.path === '/apis/metrics.k8s.io/v1beta1/nodes/node-a');
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ user: 'jane', groups: ['dev', 'ops', 'system:authenticated'], extra: {}, clientCN: 'front-proxy-client' });
    // (the uid is the authenticated one too: RemoteRequestHeaderUID is on by default in 1.33)
    expect(seen[0].uid).toBe('jane-uid');
    // and kubeshard itself does not take them either: without a token the forged user is anonymous, refused by RBAC
    const anon = await request(s, 'GET', '/apis/metrics.k8s.io/v1beta1/nodes', undefined, { authorization: '', 'X-Remote-User': 'admin', 'X-Remote-Group': 'system:masters' });
    expect(anon.status).toBe(403);
    expect(anon.json().message).toContain('User "system:anonymous" cannot list resource "nodes"');
    expect(backend.seen.slice(before).some((x) => x.user === 'admin')).toBe(false);
  });

  it('a request kubeshard does not authenticate never reaches the backend', async () => {
    const before = backend.seen.filter((r) => !r.user?.startsWith('system:')).length;
    const r = await request(s, 'GET', '/apis/metrics.k8s.io/v1beta1/nodes', undefined, { authorization: 'Bearer not-a-token' });
    expect(r.status).toBe(401);
    expect(backend.seen.filter((x) => !x.user?.startsWith('system:')).length).toBe(before);
  });

  it('a stopped backend makes the APIService unavailable and its requests 503; a restarted one brings it back', async () => {
    await backend.close();
    const c = await until(async () => {
      const x = await availableOf();
      return x?.status === 'False' && x;
    }, 20_000);
    expect(c.reason).toBe('FailedDiscoveryCheck');
    expect(c.message).toBe(`failing or missing response from https://127.0.0.1:${backendPort}/apis/metrics.k8s.io/v1beta1: Get "https://127.0.0.1:${backendPort}/apis/metrics.k8s.io/v1beta1": dial tcp 127.0.0.1:${backendPort}: connect: connection refused`);
    const r = await request(s, 'GET', '/apis/metrics.k8s.io/v1beta1/nodes');
    expect(r.status).toBe(503);
    expect(r.body).toBe('service unavailable\n');
    const k = await kubectl(s, [...CACHE, 'get', '--raw', '/apis/metrics.k8s.io/v1beta1/nodes']);
    expect(k.code).not.toBe(0);
    expect(k.stderr).toContain('Error from server (ServiceUnavailable): the server is currently unable to handle the request');
    expect((await kubectlOk(s, [...CACHE, 'get', 'apiservice', 'v1beta1.metrics.k8s.io'])).split('\n')[1]).toMatch(/\sFalse \(FailedDiscoveryCheck\)\s/);
    const metrics = (await ok('GET', '/metrics')).body;
    expect(metrics).toContain('aggregator_unavailable_apiservice{name="v1beta1.metrics.k8s.io"} 1');
    expect(metrics).toMatch(/^aggregator_unavailable_apiservice_total\{name="v1beta1\.metrics\.k8s\.io",reason="FailedDiscoveryCheck"\} [1-9]/m);

    await startBackend();
    await until(async () => (await availableOf())?.status === 'True', 20_000);
    expect((await ok('GET', '/metrics')).body).toContain('aggregator_unavailable_apiservice{name="v1beta1.metrics.k8s.io"} 0');
    expect((await ok('GET', '/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/web-1')).json()).toMatchObject({ kind: 'PodMetrics', metadata: { name: 'web-1' } });
  });

  it('reasons of a missing Service and missing endpoints', async () => {
    await ok('POST', '/apis/apiregistration.k8s.io/v1/apiservices', {
      metadata: { name: 'v1alpha1.nothing.example.com' },
      spec: { group: 'nothing.example.com', version: 'v1alpha1', service: { name: 'absent', namespace: 'default' }, insecureSkipTLSVerify: true, groupPriorityMinimum: 100, versionPriority: 100 },
    });
    const cond = async (name: string) => (await ok('GET', `/apis/apiregistration.k8s.io/v1/apiservices/${name}`)).json().status?.conditions?.[0];
    await until(async () => (await cond('v1alpha1.nothing.example.com'))?.reason === 'ServiceNotFound', 10_000);
    expect(await cond('v1alpha1.nothing.example.com')).toMatchObject({ status: 'False', message: 'service/absent in "default" is not present' });
    await ok('POST', '/api/v1/namespaces/default/services', { metadata: { name: 'absent' }, spec: { ports: [{ name: 'https', port: 443 }] } });
    await ok('POST', '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices', {
      metadata: { name: 'absent-1', labels: { 'kubernetes.io/service-name': 'absent' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: false } }],
      ports: [{ name: 'https', port: 1, protocol: 'TCP' }],
    });
    await until(async () => (await cond('v1alpha1.nothing.example.com'))?.reason === 'MissingEndpoints', 10_000);
    expect((await cond('v1alpha1.nothing.example.com')).message).toBe('endpointslices for service/absent in "default" have no addresses with port name "https"');
    // an APIService kube would refuse is refused, with kube's message
    const bad = await request(s, 'POST', '/apis/apiregistration.k8s.io/v1/apiservices', { metadata: { name: 'wrong' }, spec: { group: 'x.example.com', version: 'v1', groupPriorityMinimum: 0, versionPriority: 10 } });
    expect(bad.status).toBe(422);
    expect(bad.json().message).toBe('APIService.apiregistration.k8s.io "wrong" is invalid: [metadata.name: Invalid value: "wrong": must be `spec.version+"."+spec.group`: "v1.x.example.com", spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000]');
    // and a local APIService is Available with reason Local
    await ok('POST', '/apis/apiregistration.k8s.io/v1/apiservices', { metadata: { name: 'v1.local.example.com' }, spec: { group: 'local.example.com', version: 'v1', groupPriorityMinimum: 100, versionPriority: 100 } });
    await until(async () => (await cond('v1.local.example.com'))?.reason === 'Local', 10_000);
    expect(await cond('v1.local.example.com')).toMatchObject({ status: 'True', message: 'Local APIServices are always available' });
  });

  it("the backend's certificate is verified against the caBundle, unless insecureSkipTLSVerify", async () => {
    const register = (name: string, group: string, tls: Record<string, unknown>) =>
      ok('POST', '/apis/apiregistration.k8s.io/v1/apiservices', { metadata: { name }, spec: { group, version: 'v1', service: { name: 'metrics-server', namespace: 'kube-system', port: 443 }, groupPriorityMinimum: 100, versionPriority: 100, ...tls } });
    // another authority's bundle: the check (which does not verify) passes, the proxy refuses the backend
    await register('v1.wrongca.example.com', 'wrongca.example.com', { caBundle: file('front-proxy-ca.crt').toString('base64') });
    await register('v1.insecure.example.com', 'insecure.example.com', { insecureSkipTLSVerify: true });
    for (const name of ['v1.wrongca.example.com', 'v1.insecure.example.com']) {
      await until(async () => (await ok('GET', `/apis/apiregistration.k8s.io/v1/apiservices/${name}`)).json().status?.conditions?.[0]?.reason === 'Passed', 10_000);
    }
    const refused = await request(s, 'GET', '/apis/wrongca.example.com/v1');
    expect(refused.status).toBe(503);
    expect(refused.body).toBe('tls: failed to verify certificate: x509: certificate signed by unknown authority\n');
    const insecure = await request(s, 'GET', '/apis/insecure.example.com/v1');
    expect(insecure.status).toBe(200);
    expect(insecure.json()).toMatchObject({ kind: 'APIResourceList', groupVersion: 'insecure.example.com/v1' });
    // a body goes through as sent, the query as kube re-encodes it (sorted)
    const echo = await request(s, 'POST', '/apis/insecure.example.com/v1/namespaces/default/echoes?z=1&a=b%20c', '{"hello":"world"}');
    expect(echo.status).toBe(201);
    expect(echo.json()).toEqual({ kind: 'Echo', contentType: 'application/json', query: '?a=b+c&z=1', body: '{"hello":"world"}' });
    // a deleted APIService leaves discovery and its requests find nothing
    await ok('DELETE', '/apis/apiregistration.k8s.io/v1/apiservices/v1.insecure.example.com');
    await until(async () => !(await ok('GET', '/apis')).json().groups.some((g: any) => g.name === 'insecure.example.com'), 10_000);
    expect((await request(s, 'GET', '/apis/insecure.example.com/v1')).status).toBe(404);
  });
});
