// The agent's HTTPS API (kubelet's server on port 10250): every request is authenticated
// and authorized first (agent-auth.ts; kubelet's auth filter runs before routing, so an
// unknown path is a 401 before it is a 404), then routed:
//   GET  /healthz[/ping|/log|/syncloop]     health (verbose lists the checks)
//   GET  /pods                             the PodList of the pods bound here
//   GET  /configz                          the configuration in effect (files, drop-ins, flags)
//   POST /checkpoint/{ns}/{pod}/{container} a checkpoint archive (spec 4.10), when the
//                                          ContainerCheckpoint gate is on (else no route: 404)
//   /containerLogs, /exec, /attach, /portForward  the streaming endpoints (./streaming/),
//                                          upgrades through the server's 'upgrade' event
// Plus an unauthenticated healthz listener (kubelet's --healthz-port, 127.0.0.1:10248).
//
// Thread ownership: the agent's main thread.
import https from 'node:https';
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentAuth } from './agent-auth.js';
import { RuntimeNotFoundError, type ContainerRuntime } from './runtime.js';
import { isStreamingPath, serveStreaming, serveStreamingUpgrade } from './streaming/index.js';

export interface AgentServerDeps {
  auth: AgentAuth;
  runtime: ContainerRuntime;
  rootDir: string;
  checkpointEnabled: boolean;
  /** the pods bound here (with the agent's status) */
  pods(): any[];
  /** a pod bound here by namespace and name */
  podByName(namespace: string, name: string): any | undefined;
  /** the sync loop's health (kubelet's syncloop check) */
  syncLoopHealthy(): boolean;
  /** the configuration in effect (kubelet's /configz) */
  configz?: () => unknown;
}

export interface TlsMaterial {
  cert: string | Buffer;
  key: string | Buffer;
  clientCA?: string | Buffer;
}

const text = (res: ServerResponse, code: number, body: string, type = 'text/plain; charset=utf-8') => {
  res.writeHead(code, { 'content-type': type, 'x-content-type-options': 'nosniff', 'content-length': Buffer.byteLength(body) });
  res.end(body);
};

/** kubelet's healthz: ping, log, syncloop. */
function healthz(req: IncomingMessage, res: ServerResponse, path: string, deps: AgentServerDeps): void {
  const checks: Array<[string, boolean]> = [
    ['ping', true],
    ['log', true],
    ['syncloop', deps.syncLoopHealthy()],
  ];
  const one = /^\/healthz\/([^/]+)$/.exec(path);
  if (one) {
    const c = checks.find(([n]) => n === one[1]);
    if (!c) return text(res, 404, '404 page not found\n');
    return c[1] ? text(res, 200, 'ok') : text(res, 500, `internal server error: ${c[0]} failed\n`);
  }
  const failed = checks.filter(([, ok]) => !ok);
  const verbose = new URL(req.url ?? '/', 'https://x').searchParams.has('verbose');
  if (failed.length) {
    const lines = checks.map(([n, ok]) => (ok ? `[+]${n} ok` : `[-]${n} failed: reason withheld`)).join('\n');
    return text(res, 500, `${lines}\nhealthz check failed\n`);
  }
  if (!verbose) return text(res, 200, 'ok');
  text(res, 200, checks.map(([n]) => `[+]${n} ok`).join('\n') + '\nhealthz check passed\n');
}

/** kubelet's checkpoint handler (server.go checkpoint; kubelet.go CheckpointContainer). */
async function checkpoint(req: IncomingMessage, res: ServerResponse, parts: string[], deps: AgentServerDeps): Promise<void> {
  const [namespace, podName, container] = parts;
  const pod = deps.podByName(namespace, podName);
  if (!pod) return text(res, 404, 'pod does not exist');
  const names = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? []), ...(pod.spec?.ephemeralContainers ?? [])].map((c: any) => c.name);
  if (!names.includes(container)) return text(res, 404, `container ${container} does not exist`);
  const q = new URL(req.url ?? '/', 'https://x').searchParams.getAll('timeout');
  let timeout: number | undefined;
  if (q.length) {
    const v = q[q.length - 1];
    if (!/^[+-]?\d+$/.test(v)) return text(res, 404, 'cannot parse value of timeout parameter');
    timeout = Number(v);
  }
  // kubelet's name: checkpoint-<pod full name (name_namespace)>-<container>-<RFC 3339 time>.tar
  const dir = join(deps.rootDir, 'checkpoints');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const location = join(dir, `checkpoint-${podName}_${namespace}-${container}-${stamp}.tar`);
  try {
    await deps.runtime.checkpoint({ namespace, pod: podName, uid: pod.metadata.uid, container }, location, timeout);
  } catch (e) {
    const why = e instanceof RuntimeNotFoundError ? `container ${container} not found` : (e as Error).message;
    return text(res, 500, `checkpointing of ${namespace}/${podName}/${container} failed (${why})`);
  }
  text(res, 200, JSON.stringify({ items: [location] }), 'application/json');
}

async function route(req: IncomingMessage, res: ServerResponse, deps: AgentServerDeps): Promise<void> {
  const path = new URL(req.url ?? '/', 'https://x').pathname;
  const method = req.method ?? 'GET';
  if (path === '/healthz' || path.startsWith('/healthz/')) {
    if (method !== 'GET' && method !== 'HEAD') return text(res, 405, '405: Method Not Allowed');
    return healthz(req, res, path, deps);
  }
  if (path === '/pods' || path === '/pods/') {
    if (method !== 'GET') return text(res, 405, '405: Method Not Allowed');
    return text(res, 200, JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items: deps.pods() }), 'application/json');
  }
  if (path === '/configz' && deps.configz) {
    if (method !== 'GET') return text(res, 405, '405: Method Not Allowed');
    // kubelet's configz: the configuration in effect under the component's key
    return text(res, 200, JSON.stringify({ kubeletconfig: deps.configz() }), 'application/json');
  }
  if (deps.checkpointEnabled && path.startsWith('/checkpoint/')) {
    const parts = path.slice('/checkpoint/'.length).split('/').map(decodeURIComponent);
    if (parts.length === 3 && parts.every((p) => p)) {
      if (method !== 'POST') return text(res, 405, '405: Method Not Allowed');
      return checkpoint(req, res, parts, deps);
    }
  }
  if (isStreamingPath(path)) return serveStreaming(req, res, deps.runtime);
  text(res, 404, '404: Page Not Found');
}

export interface AgentServer {
  server: https.Server;
  healthz?: http.Server;
  close(): Promise<void>;
}

export async function startAgentServer(deps: AgentServerDeps, tls: TlsMaterial, address: string, port: number, healthzAddress: string, healthzPort: number): Promise<AgentServer> {
  const server = https.createServer({ cert: tls.cert, key: tls.key, ca: tls.clientCA, requestCert: true, rejectUnauthorized: false, minVersion: 'TLSv1.2' }, (req, res) => {
    void (async () => {
      const a = await deps.auth.check(req);
      if (!a.ok) return text(res, a.status, a.body);
      await route(req, res, deps);
    })().catch((e) => {
      if (!res.headersSent) text(res, 500, `internal error: ${(e as Error).message}`);
      else res.destroy();
    });
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => {});
    void (async () => {
      const a = await deps.auth.check(req);
      if (!a.ok) {
        const reason = a.status === 401 ? 'Unauthorized' : a.status === 403 ? 'Forbidden' : 'Internal Server Error';
        socket.end(`HTTP/1.1 ${a.status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(a.body)}\r\nConnection: close\r\n\r\n${a.body}`);
        return;
      }
      const path = new URL(req.url ?? '/', 'https://x').pathname;
      if (isStreamingPath(path)) return serveStreamingUpgrade(req, socket, head, deps.runtime);
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 20\r\nConnection: close\r\n\r\n404: Page Not Found');
    })().catch(() => socket.destroy());
  });
  await new Promise<void>((res, rej) => {
    server.once('error', rej);
    server.listen(port, address, () => res());
  });
  let hz: http.Server | undefined;
  if (healthzPort > 0) {
    hz = http.createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path === '/healthz' || path.startsWith('/healthz/')) return healthz(req, res, path, deps);
      text(res, 404, '404 page not found\n');
    });
    await new Promise<void>((res, rej) => {
      hz!.once('error', rej);
      hz!.listen(healthzPort, healthzAddress, () => res());
    });
  }
  return {
    server,
    healthz: hz,
    close: async () => {
      server.closeAllConnections?.();
      await new Promise<void>((r) => server.close(() => r()));
      if (hz) await new Promise<void>((r) => hz!.close(() => r()));
    },
  };
}
