// The node agent's streaming endpoints (kubelet's /containerLogs, /exec, /attach,
// /portForward), served over the runtime seam (../runtime.ts). The agent's HTTPS server
// (agent-server.ts) authenticates and authorizes a request first, then hands it here:
// plain requests from its 'request' event, upgrades (WebSocket, SPDY) from its 'upgrade'
// event.
//
// What is served (kubelet's server.go and cri/streaming):
// - GET /containerLogs/{ns}/{pod}/{container}: the log as text/plain, streamed while follow
//   lasts (follow, previous, tailLines, sinceSeconds, sinceTime, timestamps, limitBytes);
// - /exec/{ns}/{pod}[/{uid}]/{container}?command=..&input=1&output=1&error=1&tty=1 and
//   /attach/...: a WebSocket with v5.channel.k8s.io or v4.channel.k8s.io (remote-command.ts);
// - /portForward/{ns}/{pod}[/{uid}]: SPDY/3.1 with portforward.k8s.io, over a plain SPDY
//   upgrade or tunneled in a WebSocket ("SPDY/3.1+portforward.k8s.io"; port-forward.ts).
// - exec and attach over a plain SPDY/3.1 upgrade too (v5 and v4 channel protocols;
//   remote-command-spdy.ts): kubectl's fallback when the WebSocket handshake fails.
//
// Thread ownership: the agent's main thread.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { acceptWebSocket, offeredProtocols } from '../../http/ws-adopt.js';
import { RuntimeNotFoundError, type ContainerRef, type ContainerRuntime, type LogOptions, type StreamOptions } from '../runtime.js';
import { CHANNEL_PROTOCOLS, serveChannels, exitStatus } from './remote-command.js';
import { servePortForward } from './port-forward.js';
import { serveSpdyRemoteCommand, SPDY_CHANNEL_PROTOCOLS } from './remote-command-spdy.js';

/** kubectl's WebSocket subprotocol for a SPDY port-forward tunneled in the WebSocket */
export const PORT_FORWARD_TUNNEL_PROTOCOL = 'SPDY/3.1+portforward.k8s.io';
const PORT_FORWARD_PROTOCOL = 'portforward.k8s.io';

/** Whether the path is one of the streaming endpoints (so the server routes it here). */
export function isStreamingPath(path: string): boolean {
  return /^\/(containerLogs|exec|attach|portForward)\//.test(path);
}

interface Target {
  kind: 'containerLogs' | 'exec' | 'attach' | 'portForward';
  ref: ContainerRef;
  query: URLSearchParams;
}

/** The endpoint, pod and container a path names (undefined: not one of the streaming paths' shapes). */
export function parseStreamingPath(url: string): Target | undefined {
  const u = new URL(url, 'https://agent');
  const parts = u.pathname.split('/').slice(1).map((p) => decodeURIComponent(p));
  const kind = parts[0] as Target['kind'];
  const rest = parts.slice(1);
  if (rest.some((p) => p === '')) return undefined;
  switch (kind) {
    case 'containerLogs':
      if (rest.length !== 3) return undefined;
      return { kind, ref: { namespace: rest[0], pod: rest[1], uid: '', container: rest[2] }, query: u.searchParams };
    case 'exec':
    case 'attach':
      if (rest.length === 3) return { kind, ref: { namespace: rest[0], pod: rest[1], uid: '', container: rest[2] }, query: u.searchParams };
      if (rest.length === 4) return { kind, ref: { namespace: rest[0], pod: rest[1], uid: rest[2], container: rest[3] }, query: u.searchParams };
      return undefined;
    case 'portForward':
      if (rest.length === 2 || rest.length === 3) return { kind, ref: { namespace: rest[0], pod: rest[1], uid: rest[2] ?? '', container: '' }, query: u.searchParams };
      return undefined;
  }
  return undefined;
}

const truthy = (v: string | null): boolean => v === '1' || v === 'true';

/** kubelet's remotecommand NewOptions: input, output, error and tty are "1" when asked for (stdin, stdout, stderr also read). */
function streamOptions(q: URLSearchParams): StreamOptions {
  const on = (a: string, b: string) => truthy(q.get(a)) || truthy(q.get(b));
  return { stdin: on('input', 'stdin'), stdout: on('output', 'stdout'), stderr: on('error', 'stderr'), tty: truthy(q.get('tty')) };
}

/** kubelet's PodLogOptions from the /containerLogs query (the API server has validated them). */
export function logOptions(q: URLSearchParams): LogOptions {
  const int = (k: string) => {
    const v = q.get(k);
    return v !== null && /^-?\d+$/.test(v) ? Number(v) : undefined;
  };
  const o: LogOptions = {};
  if (truthy(q.get('follow'))) o.follow = true;
  if (truthy(q.get('previous'))) o.previous = true;
  if (truthy(q.get('timestamps'))) o.timestamps = true;
  const tail = int('tailLines');
  if (tail !== undefined && tail >= 0) o.tailLines = tail;
  const since = int('sinceSeconds');
  if (since !== undefined && since > 0) o.sinceSeconds = since;
  const sinceTime = q.get('sinceTime');
  if (sinceTime && !Number.isNaN(Date.parse(sinceTime))) o.sinceTime = new Date(sinceTime);
  const limit = int('limitBytes');
  if (limit !== undefined && limit > 0) o.limitBytes = limit;
  return o;
}

function answer(res: ServerResponse, status: number, text: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8' }).end(text.endsWith('\n') ? text : `${text}\n`);
}

const failure = (e: unknown): [number, string] => [e instanceof RuntimeNotFoundError ? 404 : 500, e instanceof Error ? e.message : String(e)];

/** A plain request to a streaming path (GET /containerLogs/...; exec without an upgrade gets 400). */
export function serveStreaming(req: IncomingMessage, res: ServerResponse, runtime: ContainerRuntime): void {
  const t = parseStreamingPath(req.url ?? '/');
  if (!t) return answer(res, 404, '404 page not found');
  if (t.kind !== 'containerLogs') return answer(res, 400, 'Upgrade request required');
  if (req.method !== 'GET' && req.method !== 'HEAD') return answer(res, 405, 'Method Not Allowed');
  const opts = logOptions(t.query);
  const abort = new AbortController();
  res.on('close', () => abort.abort());
  runtime.logs(t.ref, opts, abort.signal).then(
    (log) => {
      if (res.destroyed) {
        log.destroy();
        return;
      }
      res.writeHead(200, { 'Content-Type': 'text/plain', 'Transfer-Encoding': 'chunked' });
      res.flushHeaders();
      // kubelet's LimitWriter: limitBytes caps what is sent, whatever the runtime gives
      let left = opts.limitBytes ?? Infinity;
      log.on('data', (chunk: Buffer | string) => {
        let b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
        if (left <= 0) return;
        if (b.length > left) b = b.subarray(0, left);
        left -= b.length;
        if (!res.write(b)) log.pause();
        if (left <= 0) {
          log.destroy();
          res.end();
        }
      });
      res.on('drain', () => log.resume());
      log.on('end', () => res.end());
      log.on('error', () => res.destroy());
      res.on('close', () => log.destroy());
    },
    (e) => answer(res, ...failure(e)),
  );
}

function refuseUpgrade(socket: Duplex, status: string, text: string): void {
  socket.end(`HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
}

/** An upgrade request to a streaming path (exec, attach, portForward over WebSocket or SPDY). */
export function serveStreamingUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, runtime: ContainerRuntime): void {
  const t = parseStreamingPath(req.url ?? '/');
  if (!t) return refuseUpgrade(socket, '404 Not Found', '404 page not found\n');
  if (t.kind === 'containerLogs') return refuseUpgrade(socket, '400 Bad Request', 'upgrade not supported for logs\n');
  const upgrade = (req.headers.upgrade ?? '').toLowerCase();
  if (upgrade === 'websocket') return serveWebSocket(req, socket, head, runtime, t);
  if (upgrade.startsWith('spdy/3.1') && t.kind === 'portForward') return serveSpdyPortForward(req, socket, head, runtime, t);
  if (upgrade.startsWith('spdy/3.1')) return serveSpdyExec(req, socket, head, runtime, t);
  refuseUpgrade(socket, '400 Bad Request', `unable to upgrade: protocol ${JSON.stringify(req.headers.upgrade ?? '')} is not supported for ${t.kind}\n`);
}

const offered = (req: IncomingMessage): string[] => offeredProtocols(req.headers['sec-websocket-protocol']);

function serveWebSocket(req: IncomingMessage, socket: Duplex, head: Buffer, runtime: ContainerRuntime, t: Target): void {
  const supported = t.kind === 'portForward' ? [PORT_FORWARD_TUNNEL_PROTOCOL] : CHANNEL_PROTOCOLS;
  // wsstream's handshake: the client's first protocol that the server speaks
  const key = String(req.headers['sec-websocket-key'] ?? '');
  if (req.method !== 'GET' || String(req.headers['sec-websocket-version']) !== '13' || !/^[+/0-9A-Za-z]{22}==$/.test(key)) {
    return refuseUpgrade(socket, '400 Bad Request', 'Bad Request\n');
  }
  const protocol = offered(req).find((p) => supported.includes(p));
  if (!protocol) {
    return refuseUpgrade(socket, '400 Bad Request', `unable to upgrade: unable to negotiate protocol: client supports ${JSON.stringify(offered(req))}, server supports ${JSON.stringify(supported)}\n`);
  }
  const opts = streamOptions(t.query);
  const command = t.query.getAll('command');
  if (t.kind === 'exec' && command.length === 0) return refuseUpgrade(socket, '400 Bad Request', 'you must specify a command\n');
  if (t.kind !== 'portForward' && !opts.stdin && !opts.stdout && !opts.stderr) return refuseUpgrade(socket, '400 Bad Request', 'you must specify at least 1 of stdin, stdout, stderr\n');
  // exec and attach start before the handshake, so that a missing container is a 404, not a closed socket
  const started = t.kind === 'exec' ? runtime.exec(t.ref, command, opts) : t.kind === 'attach' ? runtime.attach(t.ref, opts) : Promise.resolve(null);
  started.then(
    (session) => {
      if (socket.destroyed) {
        session?.close();
        return;
      }
      // (the handshake is done here, not by ws: see src/http/ws-adopt.ts)
      const ws: WebSocket = acceptWebSocket(key, socket, head, protocol);
      {
        if (session) {
          serveChannels(ws, session, command);
          return;
        }
        const conn = servePortForward(
          t.ref,
          runtime,
          (frame, cb) => {
            if (ws.readyState !== ws.OPEN) return cb?.(new Error('closed'));
            ws.send(frame, { binary: true }, cb);
          },
          () => ws.close(1000),
        );
        ws.on('message', (m: Buffer) => conn.feed(m));
        ws.on('close', () => conn.close());
        ws.on('error', () => ws.terminate());
      }
    },
    (e) => {
      const [status, text] = failure(e);
      refuseUpgrade(socket, status === 404 ? '404 Not Found' : '500 Internal Server Error', `${text}\n`);
    },
  );
}

/** exec and attach over a plain SPDY/3.1 upgrade (remote-command-spdy.ts). */
function serveSpdyExec(req: IncomingMessage, socket: Duplex, head: Buffer, runtime: ContainerRuntime, t: Target): void {
  const versions = String(req.headers['x-stream-protocol-version'] ?? '')
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);
  // kube's negotiateProtocol: the client's first protocol the server speaks
  const protocol = versions.find((v) => SPDY_CHANNEL_PROTOCOLS.includes(v));
  if (!protocol) {
    return refuseUpgrade(socket, '403 Forbidden', `unable to upgrade: unable to negotiate protocol: client supports ${JSON.stringify(versions)}, server supports ${JSON.stringify(SPDY_CHANNEL_PROTOCOLS)}\n`);
  }
  const opts = streamOptions(t.query);
  const command = t.query.getAll('command');
  if (t.kind === 'exec' && command.length === 0) return refuseUpgrade(socket, '400 Bad Request', 'you must specify a command\n');
  if (!opts.stdin && !opts.stdout && !opts.stderr) return refuseUpgrade(socket, '400 Bad Request', 'you must specify at least 1 of stdin, stdout, stderr\n');
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ${protocol}\r\n\r\n`);
  serveSpdyRemoteCommand(socket, head, opts, () => (t.kind === 'exec' ? runtime.exec(t.ref, command, opts) : runtime.attach(t.ref, opts)), command);
}

/** portforward.k8s.io over a plain SPDY/3.1 upgrade (kubectl's fallback, and older clients). */
function serveSpdyPortForward(req: IncomingMessage, socket: Duplex, head: Buffer, runtime: ContainerRuntime, t: Target): void {
  const versions = String(req.headers['x-stream-protocol-version'] ?? '')
    .split(',')
    .map((v) => v.trim());
  if (!versions.includes(PORT_FORWARD_PROTOCOL)) {
    return refuseUpgrade(socket, '403 Forbidden', `unable to upgrade: unable to negotiate protocol: client supports ${JSON.stringify(versions.filter(Boolean))}, server supports ["${PORT_FORWARD_PROTOCOL}"]\n`);
  }
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ${PORT_FORWARD_PROTOCOL}\r\n\r\n`);
  const conn = servePortForward(
    t.ref,
    runtime,
    (frame, cb) => {
      if (socket.destroyed) return cb?.(new Error('closed'));
      socket.write(frame, cb);
    },
    () => socket.end(),
  );
  socket.on('data', (d: Buffer) => conn.feed(d));
  socket.on('close', () => conn.close());
  socket.on('error', () => socket.destroy());
  if (head.length) conn.feed(head);
}

export { exitStatus };
