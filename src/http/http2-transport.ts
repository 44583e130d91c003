// The node:http2 front end: HTTP/2 and HTTP/1.1 (ALPN decides) over one TLS port, with the
// client certificates uWebSockets.js cannot read. The server serves through it when
// --client-ca-file is given (X509 client certificate authentication, spec 5.2); otherwise
// through uWS, which is faster. It fills in the same ApiRequest and ResponseSink as the uWS
// front end and hands them to the same filter chain, so nothing past it knows which one
// carried a request. It also serves when --tls-min-version asks for anything but TLS 1.2,
// which uWS's BoringSSL context cannot (see tls-config.ts).
//
// Client certificates: the TLS layer asks for one and verifies it against the client CA
// bundle, but lets a connection without one (or with a bad one) in: bearer tokens and
// anonymous requests are still served. A verified certificate whose extended key usage
// does not include client authentication counts as a bad one, as in kube-apiserver's x509
// authenticator; a bad one fails authentication unless a token authenticates the request.
//
// Thread ownership: the server, its sessions and every sink made here belong to the thread
// that called startHttp2Server (the main thread).
import { apiserverMetrics } from '../metrics/apiserver-metrics.js';
import http2 from 'node:http2';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ClientCaSource } from '../auth/dynamic-ca-file.js';
import type { TLSSocket, PeerCertificate, DetailedPeerCertificate, TlsOptions } from 'node:tls';
import { readFileSync } from 'node:fs';
import type { ApiRequest, HeaderList, RequestObserver, ResponseSink } from './types.js';
import type { RunningServer } from './uws-transport.js';
import { BodyReader, RequestBase, SinkBase, type BodyLimits, type BodySource } from './transport-base.js';
import { BodyBudget } from './body-budget.js';
import { ThrottledSink } from './throttle.js';
import { acceptOnSocket, pipeUpgrade, RawSocketSink } from './upgrade.js';
import type { Duplex } from 'node:stream';

export interface Http2ServerOptions {
  host: string;
  port: number;
  certFile: string;
  keyFile: string;
  /**
   * The authorities client certificates are verified against: --client-ca-file and
   * --requestheader-client-ca-file together, as kube's dynamic serving CA bundle unions them
   * (none asks for no certificate). Each authenticator then checks the chain reaches its
   * own bundle (ApiRequest.clientCert.chainFingerprints). When a file changes, new
   * connections are verified against its new bundle (the server's TLS context is replaced).
   */
  clientCa?: ClientCaSource;
  /** minimum version, cipher suites, SNI (tls-config.ts nodeTls); node's defaults without it */
  tls?: TlsOptions;
  maxBodyBytes: number;
  /** what the request bodies in flight may hold together (BodyBudget) */
  maxBodyBytesInFlight: number;
  /** the count of that budget, when the front threads share it (BodyBudget.sharedBuffer) */
  bodyBudget?: SharedArrayBuffer;
  /** SETTINGS_MAX_CONCURRENT_STREAMS (--http2-max-streams-per-connection; 0: the runtime's default) */
  maxStreams: number;
  /** --goaway-chance: an HTTP/2 request ends its connection gracefully with this probability */
  goawayChance: number;
  handle: (req: ApiRequest, res: ResponseSink) => void;
  observer?: RequestObserver;
  /** --max-connection-bytes-per-sec: a streamed response's byte rate (throttle.ts); 0 or absent for none */
  maxBytesPerSec?: number;
}

type Req = IncomingMessage | http2.Http2ServerRequest;
// Http2ServerResponse follows http.ServerResponse's API (writeHead, write, end, 'drain'):
// the sink is written against the latter.
type Res = ServerResponse;

/** extended key usages a client certificate may carry: TLS client authentication, or any */
const CLIENT_AUTH_EKU = new Set(['1.3.6.1.5.5.7.3.2', '2.5.29.37.0']);
/**
 * Go's http.DefaultMaxHeaderBytes (1 MiB), which kube-apiserver keeps. Go's HTTP/1 server
 * reads 4096 bytes past it before answering 431 (request line included), and its HTTP/2
 * server advertises 320 more (32 bytes of accounting for ten header fields).
 */
const MAX_HEADER_BYTES = 1 << 20;
const MAX_HEADER_BYTES_H1 = MAX_HEADER_BYTES + 4096;
const MAX_HEADER_LIST_SIZE_H2 = MAX_HEADER_BYTES + 10 * 32;
/**
 * Header lines a request may carry: as many as fit in MAX_HEADER_BYTES (Go counts bytes
 * only). node's defaults would cut them short: the HTTP/1 parser drops those past 2000
 * silently, and HTTP/2 refuses a stream past 128 (an impersonating client's many groups).
 */
const MAX_HEADER_PAIRS = MAX_HEADER_BYTES / 32;
/** Go's answers to requests its server cannot read, by node's parser error (status line, body). */
const BAD_REQUEST: [string, string] = ['400 Bad Request', '400 Bad Request'];
const PARSE_ERRORS: Record<string, [string, string]> = {
  HPE_HEADER_OVERFLOW: ['431 Request Header Fields Too Large', '431 Request Header Fields Too Large'],
  HPE_INVALID_TRANSFER_ENCODING: ['501 Not Implemented', 'Unsupported transfer encoding'],
};
/** HTTP/1 connection headers that HTTP/2 forbids */
const H1_ONLY = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection']);

const asList = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

interface ClientIdentity {
  cert?: ApiRequest['clientCert'];
  error?: string;
}

/**
 * A connection's client identity, read once: the certificate is the connection's, and
 * getPeerCertificate builds a new object from it on every call (an HTTP/2 connection
 * carries many requests). One object per connection also lets the authentication filter
 * and the authorizer's memo see the same user on each of its requests.
 */
const identities = new WeakMap<TLSSocket, ClientIdentity>();
function connectionIdentity(socket: TLSSocket): ClientIdentity {
  let id = identities.get(socket);
  if (id === undefined) identities.set(socket, (id = clientIdentity(socket)));
  return id;
}

/** The verified client certificate's identity, or why the one presented is refused; nothing when none was sent. */
function clientIdentity(socket: TLSSocket): ClientIdentity {
  const peer: DetailedPeerCertificate | Record<string, never> = socket.getPeerCertificate(true);
  if (!peer || Object.keys(peer).length === 0) return {};
  if (!socket.authorized) return { error: `verifying certificate failed: ${String(socket.authorizationError ?? 'unknown authority')}` };
  const eku = (peer as PeerCertificate & { ext_key_usage?: string[] }).ext_key_usage;
  if (eku && !eku.some((u) => CLIENT_AUTH_EKU.has(u))) return { error: 'verifying certificate failed: incompatible key usage' };
  const subject = peer.subject ?? ({} as PeerCertificate['subject']);
  const cn = asList(subject.CN as string | string[] | undefined)[0] ?? '';
  return { cert: { commonName: cn, organizations: asList(subject.O as string | string[] | undefined), chainFingerprints: chainFingerprints(peer as DetailedPeerCertificate) } };
}

/**
 * The SHA-256 fingerprints of the chain OpenSSL verified, leaf to trust anchor: an
 * authenticator whose bundle holds one of them would have verified the chain itself (the
 * handshake trusts the union of the bundles, each authenticator only its own).
 */
function chainFingerprints(leaf: DetailedPeerCertificate): string[] {
  const out: string[] = [];
  for (let c: DetailedPeerCertificate | undefined = leaf; c && Object.keys(c).length; c = c.issuerCertificate) {
    out.push(c.fingerprint256);
    if (c.issuerCertificate === c || out.length > 16) break; // a self-signed root points at itself
  }
  return out;
}

/** The TLS socket under a request, for HTTP/1.1 and HTTP/2 alike. */
function tlsSocketOf(req: Req): TLSSocket {
  const s = (req as http2.Http2ServerRequest).stream?.session?.socket ?? req.socket;
  return s as TLSSocket;
}

class NodeRequest extends RequestBase implements ApiRequest {
  constructor(
    method: string,
    path: string,
    rawQuery: string,
    headers: Record<string, string>,
    readonly remoteAddress: string,
  ) {
    super(method, path, rawQuery, headers);
  }
}

/**
 * A header value as node takes it: node refuses (throws on) any character outside tab,
 * 0x20-0x7e and 0x80-0xff, where Go's server writes a string's UTF-8 bytes as they are.
 * Values can carry a client's text (a Warning names an unknown field, as kube's does), so a
 * value with other characters goes out as its UTF-8 bytes, as Go's, and a control
 * character (which Go's clients refuse) as a space: never an exception that ends the process.
 */
export function headerValue(v: string): string {
  if (!/[^\t\x20-\x7e]/.test(v)) return v;
  return Buffer.from(v, 'utf8').toString('latin1').replace(/[\x00-\x08\x0a-\x1f\x7f]/g, ' ');
}

/**
 * A response through node's compatibility API (http.ServerResponse or Http2ServerResponse),
 * and the source of its request's body: node reads no more of it than its stream buffer
 * (and HTTP/2's flow-control window) holds until the reader asks for it.
 */
class NodeSink extends SinkBase implements ResponseSink, BodySource {
  private listening = false;

  constructor(
    private res: Res,
    private readonly h2: boolean,
    private readonly request: Req,
  ) {
    super();
    this.startedAt = performance.now();
    res.on('finish', () => this.finish());
    res.on('close', () => {
      if (!this.done && !res.writableFinished) this.aborting();
      else this.finish();
    });
  }

  private head(status: number, headers: HeaderList, extra?: Record<string, string | number>): void {
    this.status = status;
    const out: Record<string, string | string[] | number> = {};
    const put = (k: string, raw: string) => {
      const key = k.toLowerCase();
      if (this.h2 && H1_ONLY.has(key)) return;
      const v = headerValue(raw);
      const prev = out[key];
      out[key] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [String(prev), v];
    };
    for (const [k, v] of headers) put(k, v);
    const more = this.req?.responseHeaders;
    if (more) for (const [k, v] of more) put(k, v);
    if (extra) Object.assign(out, extra);
    if (this.closeAfter) {
      // HTTP/1.1: node ends the connection after a response that says Connection: close.
      // HTTP/2 has no such header: a GOAWAY once the response has left, as Go's server
      // does for one (kube's WithRetryAfter relies on that).
      if (!this.h2) out['connection'] = 'close';
      else {
        const session = (this.res as unknown as http2.Http2ServerResponse).stream.session;
        this.res.once('finish', () => {
          if (session && !session.closed) session.close();
        });
      }
    }
    if (this.h2 && this.bodyUnread()) {
      // The rest of the body is not wanted: the stream is reset with NO_ERROR once the
      // response has left, as Go's server does. (HTTP/1.1: node reads the rest of an unread
      // body to drop it once the response has ended, and keeps the connection.)
      const stream = (this.res as unknown as http2.Http2ServerResponse).stream;
      this.res.once('finish', () => {
        if (!stream.closed) stream.close(http2.constants.NGHTTP2_NO_ERROR);
      });
    }
    this.res.writeHead(status, out as never);
  }

  flow(on: boolean): void {
    const r = this.request;
    if (!on) {
      r.pause();
      return;
    }
    if (!this.listening) {
      this.listening = true;
      const reader = this.reader!;
      r.on('data', (chunk: Buffer) => {
        if (reader.accept(chunk.length)) reader.push(chunk);
      });
      r.on('end', () => reader.end());
    }
    r.resume();
  }

  sendParts(status: number, headers: HeaderList, parts: Uint8Array[]): void {
    if (this.aborted || this.done) return;
    let total = 0;
    for (const p of parts) total += p.byteLength;
    this.bytes = total;
    this.head(status, headers, { 'content-length': total });
    for (let i = 0; i < parts.length - 1; i++) this.res.write(parts[i]);
    if (parts.length) this.res.end(parts[parts.length - 1]);
    else this.res.end();
  }

  startStream(status: number, headers: HeaderList): void {
    if (this.aborted || this.done) return;
    this.streamStarting();
    this.head(status, headers);
    // the status and headers go now: a watch may wait long for its first event
    this.res.flushHeaders();
  }

  write(chunk: string | Uint8Array): boolean {
    if (this.aborted || this.done) return false;
    return this.res.write(chunk);
  }

  end(): void {
    if (this.aborted || this.done) return;
    this.res.end();
  }

  cork(fn: () => void): void {
    // HTTP/1.1: many writes leave in one syscall and TLS record; HTTP/2 frames them itself.
    const socket = this.h2 ? null : this.res.socket;
    socket?.cork();
    try {
      fn();
    } finally {
      socket?.uncork();
    }
  }

  onDrain(fn: () => void): void {
    this.res.on('drain', fn);
  }

  bufferedBytes(): number {
    const r = this.res as ServerResponse & { stream?: { writableLength: number } };
    return r.stream?.writableLength ?? r.writableLength;
  }

  close(): void {
    if (this.done) return;
    if (this.h2) (this.res as unknown as http2.Http2ServerResponse).stream.close(http2.constants.NGHTTP2_CANCEL);
    else this.res.socket?.destroy();
  }
}

/** Request headers as the chain expects them: lower-case names, HTTP/2 pseudo-headers left out, repeats joined. */
function headersOf(req: Req): Record<string, string> {
  const out: Record<string, string> = {};
  const raw = req.headers as Record<string, string | string[] | undefined>;
  for (const k in raw) {
    if (k.charCodeAt(0) === 0x3a /* : */) continue;
    const v = raw[k];
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

export function startHttp2Server(opts: Http2ServerOptions): Promise<RunningServer> {
  const context = { cert: readFileSync(opts.certFile), key: readFileSync(opts.keyFile), ...opts.tls };
  const server = http2.createSecureServer({
    ...context,
    allowHTTP1: true,
    ...(opts.clientCa ? { requestCert: true, rejectUnauthorized: false, ca: opts.clientCa.pems() } : {}),
    // header blocks up to Go's http.DefaultMaxHeaderBytes (1 MiB), as kube-apiserver takes them
    settings: { maxHeaderListSize: MAX_HEADER_LIST_SIZE_H2, ...(opts.maxStreams > 0 ? { maxConcurrentStreams: opts.maxStreams } : {}) },
    maxHeaderListPairs: MAX_HEADER_PAIRS,
  });
  // A changed client CA file (kube's dynamic client CA): handshakes from now on trust the
  // new bundles; connections already open keep what they were verified with, and the
  // authenticators check each request's chain against the bundles of now.
  opts.clientCa?.onChange(() => server.setSecureContext({ ...context, ca: opts.clientCa!.pems() }));
  // (the HTTP/1.1 side reads its limits from the server object: node's default is 16 KiB)
  (server as unknown as { maxHeaderSize: number }).maxHeaderSize = MAX_HEADER_BYTES_H1;
  (server as unknown as { maxHeadersCount: number }).maxHeadersCount = 0;
  const limits: BodyLimits = { maxBytes: opts.maxBodyBytes, budget: new BodyBudget(opts.maxBodyBytesInFlight, opts.bodyBudget) };
  // A request node's HTTP/1 parser refuses never reaches us: it is answered as Go's server
  // answers one it cannot read (plain text, the connection closed).
  server.on('clientError', (err: NodeJS.ErrnoException, socket: import('node:stream').Duplex) => {
    // (llhttp refuses a Content-Length beside Transfer-Encoding with the same code as an
    // unknown encoding; Go takes the body as chunked: 400 says what node did)
    const both = /Content-Length/i.test(String((err as { reason?: string }).reason ?? ''));
    const answer = both ? BAD_REQUEST : (PARSE_ERRORS[err.code ?? ''] ?? (err.code?.startsWith('HPE_') ? BAD_REQUEST : undefined));
    if (answer === undefined || !socket.writable) {
      socket.destroy();
      return;
    }
    socket.end(`HTTP/1.1 ${answer[0]}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n${answer[1]}`);
  });
  // A failed TLS handshake: kube counts Go's "TLS handshake error from" log lines
  // (apiserver_tls_handshake_errors_total); node tells it as an event.
  server.on('tlsClientError', () => apiserverMetrics.tlsHandshakeError());
  // Idle keep-alive connections stay open as long as the client wants (watches are long).
  server.setTimeout(0);
  // The connections and HTTP/2 sessions open, for the graceful shutdown's last step.
  const sockets = new Set<import('node:tls').TLSSocket>();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('secureConnection', (sock: import('node:tls').TLSSocket) => {
    sockets.add(sock);
    sock.once('close', () => sockets.delete(sock));
  });
  server.on('session', (s: http2.ServerHttp2Session) => {
    sessions.add(s);
    s.once('close', () => sessions.delete(s));
  });
  server.on('request', (r: Req, w: Res | http2.Http2ServerResponse) => {
    const h2 = r.httpVersionMajor === 2;
    const url = r.url ?? '/';
    const q = url.indexOf('?');
    const socket = tlsSocketOf(r);
    const req = new NodeRequest((r.method ?? 'GET').toUpperCase(), q < 0 ? url : url.slice(0, q), q < 0 ? '' : url.slice(q + 1), headersOf(r), socket.remoteAddress ?? '');
    const id = connectionIdentity(socket);
    if (id.cert) req.clientCert = id.cert;
    else if (id.error) req.clientCertError = id.error;
    const sink = new NodeSink(w as Res, h2, r);
    // kube's probabilistic GOAWAY: the GOAWAY goes out now, ahead of this response, so
    // the client opens its next requests on a new connection (maybe to another server);
    // this request and those already in flight on the connection complete.
    if (h2 && opts.goawayChance > 0 && Math.random() < opts.goawayChance) {
      const session = (r as http2.Http2ServerRequest).stream.session;
      if (session && !session.closed) session.close();
    }
    sink.req = req;
    if (opts.observer) sink.observer = opts.observer;
    // A request with a body goes to the chain at once, and its body is read when the chain
    // asks (the request-body filter). node has checked the framing (its parser answers a
    // bad one), so a body is there when HTTP/1.1 declares one or an HTTP/2 stream did not
    // end with its headers. One without goes once node has ended it, as it always has: a
    // watch handed over from within the 'request' event made the other watchers of a slow
    // one starve on this front (test/watch-limits.test.ts with KUBESHARD_TEST_FRONT=http2;
    // the cause inside node's HTTP/1 server was not found).
    const cl = req.headers['content-length'];
    const hasBody = h2 ? !(r as http2.Http2ServerRequest).stream.endAfterHeaders : (cl !== undefined && cl !== '0') || req.headers['transfer-encoding'] !== undefined;
    const out = opts.maxBytesPerSec ? new ThrottledSink(sink, opts.maxBytesPerSec) : sink;
    if (hasBody) {
      new BodyReader(req, sink, limits, cl !== undefined ? Number(cl) : -1, sink);
      opts.handle(req, out);
    } else {
      r.on('end', () => opts.handle(req, out));
      // flowing, as before bodies were read on demand: left paused, its 'end' came late
      // under load, and the slow-watcher test's other watchers starved one run in two
      r.resume();
      r.resume();
    }
    r.on('error', () => sink.close());
  });
  // An HTTP/1.1 request with Connection: Upgrade (kubectl's exec, attach, port-forward): it
  // runs the same chain on the raw socket; a connect handler carries it on to the node's
  // agent byte for byte (upgrade.ts), anything else is answered as usual and the
  // connection closed.
  server.on('upgrade', (r: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = r.url ?? '/';
    const q = url.indexOf('?');
    const tlsSocket = socket as TLSSocket;
    const req = new NodeRequest((r.method ?? 'GET').toUpperCase(), q < 0 ? url : url.slice(0, q), q < 0 ? '' : url.slice(q + 1), headersOf(r), tlsSocket.remoteAddress ?? '');
    const id = connectionIdentity(tlsSocket);
    if (id.cert) req.clientCert = id.cert;
    else if (id.error) req.clientCertError = id.error;
    const sink = new RawSocketSink(socket, headerValue);
    sink.req = req;
    if (opts.observer) sink.observer = opts.observer;
    req.upgrade = {
      protocol: (req.headers.upgrade ?? '').toLowerCase(),
      proxy: (target) => pipeUpgrade(req, socket, head, target, () => sink.hijacked()),
      accept: (protocol) => acceptOnSocket(req, socket, head, protocol, sink, () => sink.hijacked()),
    };
    opts.handle(req, sink);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: opts.host, port: opts.port, exclusive: true }, () => {
      server.off('error', reject);
      const addr = server.address();
      resolve({
        port: typeof addr === 'object' && addr ? addr.port : opts.port,
        // As Go's Server.Shutdown begins: no new connections, idle HTTP/1.1 ones closed
        // (node's close does that with allowHTTP1), a GOAWAY on each HTTP/2 session; the
        // requests in flight go on.
        stopListening: () => {
          if (server.listening) server.close();
          for (const s of sessions) if (!s.closed) s.close();
        },
        closeConnections: () => {
          for (const s of sessions) if (!s.destroyed) s.destroy();
          for (const sock of sockets) sock.destroy();
        },
      });
    });
  });
}
