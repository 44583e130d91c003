// Requests that switch protocols (Connection: Upgrade): kubectl's exec, attach and
// port-forward (a WebSocket, or SPDY/3.1), which the server carries on to a node's agent as
// kube's UpgradeAwareHandler does. Each front end says how it can carry one (ApiRequest.upgrade):
// - node:http2 (HTTP/1.1 'upgrade' event): the request goes to the agent as it came and the
//   two connections are joined byte for byte, whatever the protocol (pipeUpgrade below);
// - uWebSockets.js: uWS owns its sockets, so it accepts the WebSocket itself once the agent
//   has accepted the same request, and relays messages (uws-websocket-relay.ts); a SPDY
//   upgrade cannot be taken over there and is answered as a plain request.
// Either front end can also accept a client's WebSocket itself (accept below) for the
// handlers that terminate it rather than carry it on: the exec and attach stream translator
// and the port-forward tunnel of src/kubelet/ (kube's StreamTranslatorHandler and
// TunnelingHandler), which speak SPDY/3.1 to the node as a real kubelet wants.
// Also the sink of a request that came through the 'upgrade' event but is answered as an
// ordinary one (an error, or a path that is no connect subresource): HTTP/1.1 on the raw
// socket, then the connection closes.
//
// Thread ownership: the thread of the front end that made the socket.
import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import tls, { type ConnectionOptions } from 'node:tls';
import type { Duplex, Readable } from 'node:stream';
import type { ApiRequest, HeaderList, ResponseSink } from './types.js';
import { statusLine } from './types.js';
import { SinkBase } from './transport-base.js';
import type { WebSocket } from 'ws';
import { errors, type StatusError } from '../errors.js';
import { dialError } from '../kubelet/kubelet-client.js';
import { acceptWebSocket } from './ws-adopt.js';

export interface UpgradeTarget {
  url: URL;
  tls: ConnectionOptions;
}

export interface UpgradeCarrier {
  /** the Upgrade header, lower-cased ('websocket', 'spdy/3.1') */
  readonly protocol: string;
  /**
   * Sends the request on to the target and joins the client to it. Rejects, with nothing
   * sent to the client yet, when the target cannot be reached (the caller answers the error).
   */
  proxy(target: UpgradeTarget): Promise<void>;
  /**
   * A WebSocket request only: completes the handshake here with the protocol chosen ('' for
   * none) and gives the server's side of the connection (undefined: the client is gone, or
   * its handshake is not a valid one, which has then been answered 400).
   */
  accept(protocol: string): ServedWebSocket | undefined;
}

/** The server's side of a client's WebSocket accepted by the front end (binary messages). */
export interface ServedWebSocket {
  readonly protocol: string;
  /** sends one binary message (dropped once the connection is closing) */
  send(data: Buffer): void;
  /** what was sent and is not yet written to the client */
  bufferedAmount(): number;
  /** a close frame, then the connection ends once the client answers (or soon after) */
  close(code?: number, reason?: string): void;
  /** stops reading the client's messages, where the front end can (uWS cannot: what comes is buffered) */
  pause(): void;
  resume(): void;
  onMessage(fn: (data: Buffer, binary: boolean) => void): void;
  /** the client's side has taken what was buffered (see bufferedAmount) */
  onDrain(fn: () => void): void;
  /** the connection is over, either way (once) */
  onClose(fn: () => void): void;
}

/** RFC 6455 4.2.1's checks of a client's handshake that the server makes itself. */
export function validWebSocketHandshake(method: string, headers: Record<string, string>): boolean {
  return method === 'GET' && headers['sec-websocket-version'] === '13' && /^[+/0-9A-Za-z]{22}==$/.test(headers['sec-websocket-key'] ?? '');
}

/** A ws WebSocket (the server's side, on a socket of our own) as a ServedWebSocket. */
export function servedWs(ws: WebSocket, socket: Duplex): ServedWebSocket {
  let closed = false;
  const closers: Array<() => void> = [];
  ws.on('close', () => {
    if (closed) return;
    closed = true;
    for (const f of closers) f();
  });
  ws.on('error', () => ws.terminate());
  return {
    protocol: ws.protocol,
    send: (data) => {
      if (ws.readyState === ws.OPEN) ws.send(data, { binary: true });
    },
    bufferedAmount: () => ws.bufferedAmount,
    close: (code = 1000, reason = '') => {
      if (ws.readyState !== ws.OPEN) return;
      ws.close(code, reason);
      // a client that does not answer the close frame loses the connection
      setTimeout(() => {
        if (ws.readyState !== ws.CLOSED) ws.terminate();
      }, 10_000).unref();
    },
    pause: () => ws.pause(),
    resume: () => ws.resume(),
    onMessage: (fn) => ws.on('message', (data: Buffer, binary: boolean) => fn(data, binary)),
    onDrain: (fn) => socket.on('drain', fn),
    onClose: (fn) => (closed ? fn() : closers.push(fn)),
  };
}

/** The node:http2 front end's accept: the handshake on the socket of the 'upgrade' event. */
export function acceptOnSocket(req: ApiRequest, socket: Duplex, head: Buffer, protocol: string, sink: ResponseSink, joined: () => void): ServedWebSocket | undefined {
  if (socket.destroyed) return undefined;
  if (!validWebSocketHandshake(req.method, req.headers)) {
    sink.send(400, [['Content-Type', 'text/plain; charset=utf-8']], Buffer.from('Bad Request\n'));
    return undefined;
  }
  joined();
  return servedWs(acceptWebSocket(req.headers['sec-websocket-key']!, socket, head, protocol), socket);
}

/** the most of a node's refusal of an upgrade (its answer other than 101) that is read: a Status, never more */
export const REFUSAL_MAX_BYTES = 1 << 20;

/** A node's refusal of an upgrade passed to the client as the node wrote it (status, content type, body); then done(). */
export function passRefusal(answer: IncomingMessage, sink: ResponseSink, done: () => void = () => {}): void {
  readRefusal(
    answer,
    (body) => {
      const ct = answer.headers['content-type'];
      sink.send(answer.statusCode ?? 500, ct ? [['Content-Type', String(ct)]] : [], body);
      done();
    },
    () => {
      sink.close();
      done();
    },
  );
}

/**
 * A node's refusal of an upgrade, read whole up to REFUSAL_MAX_BYTES (the answer is
 * destroyed past it): done(body) at its end, failed() when it breaks or is too large.
 */
export function readRefusal(answer: Readable, done: (body: Buffer) => void, failed: () => void): void {
  const chunks: Buffer[] = [];
  let n = 0;
  answer.on('data', (c: Buffer) => {
    n += c.length;
    if (n > REFUSAL_MAX_BYTES) return answer.destroy(new Error('refusal too large'));
    chunks.push(c);
  });
  answer.on('end', () => done(Buffer.concat(chunks)));
  answer.on('error', failed);
}

/** Whether the request asks to switch protocols. */
export function isUpgradeRequest(headers: Record<string, string>): boolean {
  return headers.upgrade !== undefined && /(^|,)\s*upgrade\s*(,|$)/i.test(headers.connection ?? '');
}

/** Request headers that are the client's own to the server, never passed on (credentials were checked here). */
const NOT_FORWARDED = /^(authorization|proxy-authorization|impersonate-.*|host|content-length|transfer-encoding|x-forwarded-for)$/;

/** The headers sent on to the backend: the client's, less its credentials, plus X-Forwarded-For (kube's CloneRequest and AppendForwardedForHeader). */
export function forwardedHeaders(req: ApiRequest, skip?: RegExp): HeaderList {
  const out: HeaderList = [];
  for (const k in req.headers) if (!NOT_FORWARDED.test(k) && !skip?.test(k)) out.push([k, req.headers[k]]);
  const prior = req.headers['x-forwarded-for'];
  const peer = req.remoteAddress;
  if (peer || prior) out.push(['x-forwarded-for', prior ? (peer ? `${prior}, ${peer}` : prior) : peer]);
  return out;
}

/** kube's "error dialing backend" for a connection to the target that failed. */
export function dialFailure(e: NodeJS.ErrnoException, url: URL): StatusError {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return errors.dialingBackend(e.syscall ? `dial tcp ${url.host}: ${dialError(e, host)}` : e.message);
}

/** Connects to the target: TLS (HTTP/1.1) for https, TCP for http (a proxied pod or service). */
export function connectTarget(target: UpgradeTarget): Promise<Duplex> {
  const host = target.url.hostname.replace(/^\[|\]$/g, '');
  const secure = target.url.protocol === 'https:';
  const port = Number(target.url.port || (secure ? 443 : 80));
  return new Promise((resolve, reject) => {
    const s = secure ? tls.connect({ ...target.tls, host, port, ALPNProtocols: ['http/1.1'] }) : net.connect({ host, port });
    const onError = (e: NodeJS.ErrnoException) => reject(dialFailure(e, target.url));
    s.once('error', onError);
    s.once(secure ? 'secureConnect' : 'connect', () => {
      s.off('error', onError);
      resolve(s);
    });
  });
}

/**
 * UpgradeAwareHandler on a socket of our own: the request line and headers go to the target,
 * then bytes flow both ways until either side ends. The target's answer, 101 or not, reaches
 * the client as the target wrote it.
 */
export async function pipeUpgrade(req: ApiRequest, socket: Duplex, head: Buffer, target: UpgradeTarget, joined: () => void): Promise<void> {
  const backend = await connectTarget(target);
  if (socket.destroyed) {
    backend.destroy();
    return;
  }
  let text = `${req.method} ${target.url.pathname}${target.url.search} HTTP/1.1\r\nHost: ${target.url.host}\r\n`;
  for (const [k, v] of forwardedHeaders(req)) text += `${k}: ${v}\r\n`;
  backend.write(`${text}\r\n`);
  if (head.length) backend.write(head);
  joined();
  backend.pipe(socket);
  socket.pipe(backend);
  backend.on('error', () => socket.destroy());
  socket.on('error', () => backend.destroy());
  backend.on('close', () => socket.destroy());
  socket.on('close', () => backend.destroy());
}

/** A response written as HTTP/1.1 on a socket taken from the server by its 'upgrade' event; the connection closes after it. */
export class RawSocketSink extends SinkBase implements ResponseSink {
  private chunked = false;

  constructor(
    private socket: Duplex,
    private headerValue: (v: string) => string,
  ) {
    super();
    this.startedAt = performance.now();
    socket.on('close', () => {
      if (!this.done) this.aborting();
    });
    socket.on('error', () => socket.destroy());
  }

  /** The connection now belongs to a proxied upgrade: this request is over (101). */
  hijacked(): void {
    this.status = 101;
    this.finish();
  }

  private head(status: number, headers: HeaderList, extra: string): void {
    this.status = status;
    let h = `HTTP/1.1 ${statusLine(status)}\r\n`;
    const put = (k: string, v: string) => {
      if (/^(connection|content-length|transfer-encoding)$/i.test(k)) return;
      h += `${k}: ${this.headerValue(v)}\r\n`;
    };
    for (const [k, v] of headers) put(k, v);
    for (const [k, v] of this.req?.responseHeaders ?? []) put(k, v);
    this.socket.write(`${h}Date: ${new Date().toUTCString()}\r\nConnection: close\r\n${extra}\r\n`);
  }

  sendParts(status: number, headers: HeaderList, parts: Uint8Array[]): void {
    if (this.aborted || this.done) return;
    let total = 0;
    for (const p of parts) total += p.byteLength;
    this.bytes = total;
    this.head(status, headers, `Content-Length: ${total}\r\n`);
    for (const p of parts) this.socket.write(p);
    this.socket.end();
    this.finish();
  }

  startStream(status: number, headers: HeaderList): void {
    if (this.aborted || this.done) return;
    this.streamStarting();
    this.chunked = true;
    this.head(status, headers, 'Transfer-Encoding: chunked\r\n');
  }

  write(chunk: string | Uint8Array): boolean {
    if (this.aborted || this.done || !this.chunked) return false;
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (b.byteLength === 0) return true;
    this.socket.write(`${b.byteLength.toString(16)}\r\n`);
    this.socket.write(b);
    return this.socket.write('\r\n');
  }

  end(): void {
    if (this.aborted || this.done) return;
    if (this.chunked) this.socket.end('0\r\n\r\n');
    else this.socket.end();
    this.finish();
  }

  cork(fn: () => void): void {
    this.socket.cork();
    try {
      fn();
    } finally {
      this.socket.uncork();
    }
  }

  onDrain(fn: () => void): void {
    this.socket.on('drain', fn);
  }

  bufferedBytes(): number {
    return this.socket.writableLength;
  }

  close(): void {
    this.socket.destroy();
  }
}
