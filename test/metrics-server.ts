// A small aggregated API server for the tests: metrics.k8s.io/v1beta1 as metrics-server
// serves it (NodeMetrics, PodMetrics, list and get), its discovery (legacy only: the
// aggregator falls back to /apis/<group>/<version>), and a minimal OpenAPI v2 and v3. Like a
// real aggregated server it trusts the identity headers (X-Remote-User, X-Remote-Group,
// X-Remote-Extra-*) only over a client certificate signed by the request-header CA with an
// allowed common name, and answers 401 otherwise. Each request it answers is recorded.
// `?watch=true` on nodes streams one event at once and then one per `tick` (metrics-server
// has no watch; this one has, to show that a stream passes through the proxy unbuffered).
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';

export interface SeenRequest {
  method: string;
  path: string;
  user?: string;
  uid?: string;
  groups: string[];
  extra: Record<string, string[]>;
  authorization?: string;
  clientCN?: string;
}

export interface MetricsServerOptions {
  key: Buffer | string;
  cert: Buffer | string;
  /** the CA of the aggregator's proxy client certificate (kube's --requestheader-client-ca-file) */
  requestHeaderCa: Buffer | string;
  /** kube's --requestheader-allowed-names */
  allowedNames: string[];
  nodes: string[];
  pods: Array<{ namespace: string; name: string; containers: string[] }>;
}

export interface MetricsServer {
  port: number;
  seen: SeenRequest[];
  close(): Promise<void>;
}

const GV = 'metrics.k8s.io/v1beta1';
const PREFIX = '/apis/metrics.k8s.io/v1beta1';

const resourceList = {
  kind: 'APIResourceList',
  apiVersion: 'v1',
  groupVersion: GV,
  resources: [
    { name: 'nodes', singularName: '', namespaced: false, kind: 'NodeMetrics', verbs: ['get', 'list'] },
    { name: 'pods', singularName: '', namespaced: true, kind: 'PodMetrics', verbs: ['get', 'list'] },
  ],
};

const openApiV2 = {
  swagger: '2.0',
  info: { title: 'metrics-server', version: 'v0.7' },
  paths: {
    [`${PREFIX}/nodes`]: { get: { operationId: 'listMetricsV1beta1NodeMetrics', responses: { '200': { description: 'OK', schema: { $ref: '#/definitions/io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetricsList' } } } } },
    [`${PREFIX}/namespaces/{namespace}/pods`]: { get: { operationId: 'listMetricsV1beta1NamespacedPodMetrics', responses: { '200': { description: 'OK', schema: { $ref: '#/definitions/io.k8s.metrics.pkg.apis.metrics.v1beta1.PodMetricsList' } } } } },
  },
  definitions: {
    'io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics': { type: 'object', properties: { timestamp: { type: 'string', format: 'date-time' }, window: { type: 'string' }, usage: { type: 'object', additionalProperties: { type: 'string' } } }, 'x-kubernetes-group-version-kind': [{ group: 'metrics.k8s.io', version: 'v1beta1', kind: 'NodeMetrics' }] },
    'io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetricsList': { type: 'object', properties: { items: { type: 'array', items: { $ref: '#/definitions/io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics' } } } },
    'io.k8s.metrics.pkg.apis.metrics.v1beta1.PodMetricsList': { type: 'object', properties: { items: { type: 'array', items: { type: 'object' } } } },
  },
};

const nodeMetricsRef = { $ref: '#/components/schemas/io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics' };
const openApiV3Doc = JSON.stringify({
  openapi: '3.0.0',
  info: { title: 'metrics-server', version: 'v0.7' },
  paths: {
    // (kubectl explain finds a resource's kind through its get operation)
    [`${PREFIX}/nodes/{name}`]: {
      get: {
        description: 'read the specified NodeMetrics',
        operationId: 'readMetricsV1beta1NodeMetrics',
        responses: { '200': { description: 'OK', content: { 'application/json': { schema: nodeMetricsRef } } } },
        'x-kubernetes-action': 'get',
        'x-kubernetes-group-version-kind': { group: 'metrics.k8s.io', version: 'v1beta1', kind: 'NodeMetrics' },
      },
      parameters: [{ name: 'name', in: 'path', description: 'name of the NodeMetrics', required: true, schema: { type: 'string', uniqueItems: true } }],
    },
  },
  components: {
    schemas: {
      'io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics': {
        description: 'NodeMetrics sets resource usage metrics of a node.',
        ...openApiV2.definitions['io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics'],
      },
    },
  },
});

function send(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function status(res: ServerResponse, code: number, reason: string, message: string): void {
  send(res, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
}

export function startMetricsServer(o: MetricsServerOptions, port = 0): Promise<MetricsServer> {
  const seen: SeenRequest[] = [];
  const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const nodeMetrics = (name: string, i: number) => ({ metadata: { name, creationTimestamp: now(), labels: {} }, timestamp: now(), window: '10.5s', usage: { cpu: `${250 + i * 100}m`, memory: `${512 + i * 256}Mi` } });
  const podMetrics = (p: MetricsServerOptions['pods'][number], i: number) => ({
    metadata: { name: p.name, namespace: p.namespace, creationTimestamp: now(), labels: {} },
    timestamp: now(),
    window: '10.5s',
    containers: p.containers.map((c, j) => ({ name: c, usage: { cpu: `${10 + i * 5 + j}m`, memory: `${20 + i}Mi` } })),
  });
  const timers = new Set<NodeJS.Timeout>();

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'https://x');
    const sock = req.socket as TLSSocket;
    const peer = sock.authorized ? sock.getPeerCertificate() : undefined;
    const cn = peer && typeof peer.subject?.CN === 'string' ? peer.subject.CN : undefined;
    const extra: Record<string, string[]> = {};
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      const k = req.rawHeaders[i].toLowerCase();
      if (k.startsWith('x-remote-extra-')) (extra[decodeURIComponent(k.slice('x-remote-extra-'.length))] ??= []).push(req.rawHeaders[i + 1]);
    }
    const groups: string[] = [];
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) if (req.rawHeaders[i].toLowerCase() === 'x-remote-group') groups.push(req.rawHeaders[i + 1]);
    const user = req.headers['x-remote-user'] as string | undefined;
    seen.push({ method: req.method ?? '', path: url.pathname + url.search, user, uid: req.headers['x-remote-uid'] as string | undefined, groups, extra, authorization: req.headers['authorization'], clientCN: cn });
    // The request-header authenticator: the headers count only over a trusted client certificate.
    if (!cn || !o.allowedNames.includes(cn) || !user) return status(res, 401, 'Unauthorized', 'Unauthorized');
    // A write to another group's "echoes": the body and its type, sent back (the proxy forwards bodies).
    if (req.method === 'POST' && /^\/apis\/[^/]+\/[^/]+\/(namespaces\/[^/]+\/)?echoes$/.test(url.pathname)) {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => send(res, 201, { kind: 'Echo', contentType: req.headers['content-type'], query: url.search, body: Buffer.concat(parts).toString('utf8') }));
      return;
    }
    if (req.method !== 'GET') return status(res, 405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
    const p = url.pathname.replace(/\/$/, '');
    if (p === '/apis') return send(res, 200, { kind: 'APIGroupList', apiVersion: 'v1', groups: [{ name: 'metrics.k8s.io', versions: [{ groupVersion: GV, version: 'v1beta1' }], preferredVersion: { groupVersion: GV, version: 'v1beta1' } }] });
    if (p === '/apis/metrics.k8s.io') return send(res, 200, { kind: 'APIGroup', apiVersion: 'v1', name: 'metrics.k8s.io', versions: [{ groupVersion: GV, version: 'v1beta1' }], preferredVersion: { groupVersion: GV, version: 'v1beta1' } });
    if (p === PREFIX) return send(res, 200, resourceList);
    if (p === '/openapi/v2') return send(res, 200, openApiV2);
    if (p === '/openapi/v3') return send(res, 200, { paths: { 'apis/metrics.k8s.io/v1beta1': { serverRelativeURL: '/openapi/v3/apis/metrics.k8s.io/v1beta1?hash=ABC' } } });
    if (p === '/openapi/v3/apis/metrics.k8s.io/v1beta1') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(openApiV3Doc);
    }
    if (p === `${PREFIX}/nodes` && url.searchParams.get('watch') === 'true') {
      // A stream: one event now, one per tick, until the client leaves.
      res.writeHead(200, { 'content-type': 'application/json' });
      let n = 0;
      const tick = () => res.write(JSON.stringify({ type: 'ADDED', object: { kind: 'NodeMetrics', apiVersion: GV, ...nodeMetrics(o.nodes[n % o.nodes.length], n++) } }) + '\n');
      tick();
      const t = setInterval(tick, 200);
      timers.add(t);
      res.on('close', () => {
        clearInterval(t);
        timers.delete(t);
      });
      return;
    }
    if (p === `${PREFIX}/nodes`) {
      // ?delay=ms: a slow answer (a request that stays in flight a while)
      const delay = Number(url.searchParams.get('delay') ?? 0);
      const answer = () => send(res, 200, { kind: 'NodeMetricsList', apiVersion: GV, metadata: {}, items: o.nodes.map(nodeMetrics) });
      if (!delay) return answer();
      const t = setTimeout(() => {
        timers.delete(t);
        answer();
      }, delay);
      timers.add(t);
      return;
    }
    let m = new RegExp(`^${PREFIX}/nodes/([^/]+)$`).exec(p);
    if (m) {
      const i = o.nodes.indexOf(m[1]);
      return i < 0 ? status(res, 404, 'NotFound', `nodemetrics.metrics.k8s.io "${m[1]}" not found`) : send(res, 200, { kind: 'NodeMetrics', apiVersion: GV, ...nodeMetrics(m[1], i) });
    }
    m = new RegExp(`^${PREFIX}(?:/namespaces/([^/]+))?/pods(?:/([^/]+))?$`).exec(p);
    if (m) {
      const [, ns, name] = m;
      const pods = o.pods.map((x, i) => ({ x, i })).filter(({ x }) => (!ns || x.namespace === ns) && (!name || x.name === name));
      if (name) return pods.length ? send(res, 200, { kind: 'PodMetrics', apiVersion: GV, ...podMetrics(pods[0].x, pods[0].i) }) : status(res, 404, 'NotFound', `podmetrics.metrics.k8s.io "${name}" not found`);
      return send(res, 200, { kind: 'PodMetricsList', apiVersion: GV, metadata: {}, items: pods.map(({ x, i }) => podMetrics(x, i)) });
    }
    // Any other group-version: an empty resource list (an APIService of another group pointed here passes its check).
    m = /^\/apis\/([^/]+)\/([^/]+)$/.exec(p);
    if (m) return send(res, 200, { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: `${m[1]}/${m[2]}`, resources: [] });
    status(res, 404, 'NotFound', 'the server could not find the requested resource');
  };

  const server = https.createServer({ key: o.key, cert: o.cert, ca: o.requestHeaderCa, requestCert: true, rejectUnauthorized: false }, handle);
  return new Promise((resolve) => {
    server.listen(port, '127.0.0.1', () => {
      const addr = server.address();
      resolve({
        port: typeof addr === 'object' && addr ? addr.port : port,
        seen,
        close: () =>
          new Promise<void>((r) => {
            for (const t of timers) clearTimeout(t);
            server.close(() => r());
            server.closeAllConnections();
          }),
      });
    });
  });
}
