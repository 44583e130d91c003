// The uWebSockets.js front end: HTTPS/1.1, parsing, and body reading. It turns each request
// into a transport-neutral ApiRequest and ResponseSink and hands them to the filter chain
// as soon as the headers are in; the body is read only when the chain asks for it (see
// BodyReader). It cannot read a client certificate and has no HTTP/2; the node:http2 front
// end covers those, behind the same chain.
//
// What this uWS build (v20.30) refuses before any of our code runs, by closing the
// connection without a response (its limits are compiled in, and it reads no environment
// variable to change them): a header block of more than 48 lines (kubectl impersonating a
// user with more than 38 groups), or too large for one read of the socket (about 64 KiB),
// or of more than 4 KiB when it comes in more than one read (Go's client writes a header
// block in 4 KiB pieces, so a kubectl request with more than 4 KiB of headers is refused
// more often than not); a header line with a bare CR or LF, a control character, a space
// before its colon or a folded continuation; a missing Host, HTTP/1.0, a Content-Length
// that is not a plain number. kube-apiserver (Go's net/http) answers 400 for those, takes
// up to 1 MiB and 4 KiB of headers with any number of lines (431 past it), and takes a
// Content-Length together with Transfer-Encoding: chunked as chunked, which uWS refuses
// too. Framing uWS lets through but Go refuses is refused here (body-framing.ts). The
// node:http2 front end (--client-ca-file) parses with node's llhttp, which answers all of
// these with a status, and takes header blocks as large as Go does.
//
// Thread ownership: the uWS app, its sockets and every ResponseSink made here belong to
// the thread that called startUwsServer (the main thread).
import uws from 'uWebSockets.js';
import type { ApiRequest, HeaderList, RequestObserver, ResponseSink } from './types.js';
import { statusLine } from './types.js';
import { BodyReader, RequestBase, SinkBase, type BodyLimits, type BodySource } from './transport-base.js';
import { BodyBudget } from './body-budget.js';
import { frameOf } from './body-framing.js';
import { ThrottledSink } from './throttle.js';
import { isUpgradeRequest } from './upgrade.js';
import { relayBehavior, relayCarrier } from './uws-websocket-relay.js';

/** uSockets' LIBUS_LISTEN_EXCLUSIVE_PORT listen option */
const LISTEN_EXCLUSIVE_PORT = 1;

/** Node ABI versions the package ships native binaries for (Node 16, 18, 20). */
const NATIVE_ABIS = new Set(['93', '108', '115']);

/**
 * Refuses the package's silent pure-JS fallback: it is slow, and has no SSLApp. The
 * fallback is taken when the Node ABI has no binary or UWS_USE_FALLBACK is set.
 */
export function assertNativeUws(): void {
  const m = uws as unknown as Record<string, unknown>;
  if (!NATIVE_ABIS.has(process.versions.modules) || typeof m.SSLApp !== 'function' || typeof m.us_socket_local_port !== 'function') {
    throw new Error(
      `uWebSockets.js has no native binary for Node ${process.version} (ABI ${process.versions.modules}) and fell back to its slow pure-JS shim; ` +
        'kubeshard refuses to run on it. Use Node 20 (or 18/16).',
    );
  }
}

/** uWS's cork buffer, one per event loop (LoopData::CORK_BUFFER_SIZE) */
const CORK_BUFFER_BYTES = 16 * 1024;
/**
 * The most uWS adds to the cork buffer around one write of ours: a chunk's "\r\n", size in
 * hex and "\r\n"; on the first chunk its mark and Transfer-Encoding headers; end()'s
 * "\r\n0\r\n\r\n". One such overhead is kept free in every cork for the end.
 */
const WRITE_OVERHEAD = 128;
/** what the writes in one cork may add up to, overheads included */
const CORK_BUDGET = CORK_BUFFER_BYTES - WRITE_OVERHEAD;
/** the largest piece of a chunk handed to uWS in one write: one piece always fits a fresh cork */
const MAX_PIECE = CORK_BUDGET - WRITE_OVERHEAD;
/**
 * The largest response that closes its connection (a framing refusal: a line of text): it
 * goes out in one end(body, true), which must fit in one cork with its head.
 */
const MAX_CLOSING_BODY = 8 * 1024;

/**
 * Why a streamed chunk goes to uWS in pieces, each one in a cork that has room for it:
 * this uWS build loses data when a write(), end() or header write on a corked socket does
 * not fit in what is left of the cork buffer and the socket cannot take the cork buffer's
 * contents right then (its send buffer is full). uWS then flushes (or buffers) the cork
 * buffer and silently drops the rest of that write (AsyncSocket::uncork returns on the
 * failed flush without writing or buffering the data it was given), while the chunk header
 * announcing its full size is already out. The client sees a frame cut mid-object followed
 * by the next chunk's header as data: a watch line that does not parse, then a broken
 * chunked stream. tryEnd is not affected (it reports the bytes it took, and the rest is
 * offered again from onWritable), so whole bodies go through it (sendParts).
 */
class UwsSink extends SinkBase implements ResponseSink, BodySource {
  /** a chunk goes to uWS in pieces of at most this size, one cork (one send) each */
  readonly writeQuantum = MAX_PIECE;
  /** true while the uWS request (or data) callback runs: uWS has the socket corked then */
  inHandler = false;
  /** end() was called; the end follows what is queued (see finishEnd) */
  private ending = false;
  /** bytes queued here, not yet handed to uWS */
  private backlog = 0;
  /** pieces (at most MAX_PIECE each) not yet handed to uWS, from queueHead on */
  private queue: Uint8Array[] | null = null;
  private queueHead = 0;
  /** uWS buffered the tail of a write: wait for a writable event before handing it more */
  private blocked = false;
  /** bytes written in the cork this sink opened (a fresh cork starts empty); null outside one */
  private fill: number | null = null;
  private pumpScheduled = false;
  private drainFns: Array<() => void> | null = null;
  private writableHooked = false;
  /** the request body's flow is paused (uWS stops reading the socket) */
  private paused = false;

  constructor(private res: uws.HttpResponse) {
    super();
    res.onAborted(() => {
      this.queue = null;
      this.backlog = 0;
      this.aborting();
    });
  }

  isOpen(): boolean {
    return !this.aborted && !this.done;
  }

  /** uWS accepted the request's WebSocket (uws-websocket-relay.ts): this request is over (101). */
  hijacked(): void {
    this.status = 101;
    this.finish();
  }

  /** The request body's chunks flow (uWS reads the socket) or not. */
  flow(on: boolean): void {
    if (this.aborted || this.done || on !== this.paused) return;
    this.paused = !on;
    if (on) this.res.resume();
    else this.res.pause();
  }

  /**
   * A request refused for its framing, before the chain: Go's plain-text answer, and the
   * connection closed. It leaves after uWS has parsed what it read with the request, not
   * from within: had that read carried more bytes that uWS parsed as another request (the
   * smuggled one), uWS has closed the connection instead, since this request was still
   * unanswered, and the other one never reached us.
   */
  refuseFraming(status: number, text: string): void {
    this.closeAfter = true;
    // (not a request the server handled: Go's server answers it before any handler or metric)
    this.observer = null;
    setImmediate(() => this.sendParts(status, [['Content-Type', 'text/plain; charset=utf-8']], [Buffer.from(text)]));
  }

  private writeHead(status: number, headers: HeaderList): void {
    this.status = status;
    const res = this.res;
    if (status !== 200) res.writeStatus(statusLine(status));
    for (let i = 0; i < headers.length; i++) res.writeHeader(headers[i][0], headers[i][1]);
    const extra = this.req?.responseHeaders;
    if (extra !== undefined) for (let i = 0; i < extra.length; i++) res.writeHeader(extra[i][0], extra[i][1]);
  }

  /**
   * One response whose body is the concatenation of parts (a whole response too: end(body)
   * may lose the body), sent with its Content-Length and without joining the parts: each
   * goes to the socket as far as it takes it, and the rest follows from onWritable (uWS's
   * tryEnd protocol), so a large list is never copied whole.
   */
  sendParts(status: number, headers: HeaderList, parts: Uint8Array[]): void {
    if (this.aborted || this.done) return;
    let total = 0;
    for (const p of parts) total += p.byteLength;
    this.bytes = total;
    const res = this.res;
    let idx = 0;
    let partStart = 0; // the body offset where parts[idx] starts
    // Sends from the current offset on; true once the whole body is out (or the response is gone).
    const pump = (): boolean => {
      while (idx < parts.length) {
        const part = parts[idx];
        const sent = res.getWriteOffset() - partStart;
        const [ok, done] = res.tryEnd(sent > 0 ? part.subarray(sent) : part, total);
        if (done) {
          this.finish();
          return true;
        }
        if (!ok) return false;
        partStart += part.byteLength;
        idx++;
      }
      return true;
    };
    const closing = this.closeAfter && total <= MAX_CLOSING_BODY;
    const tellClose = !closing && this.tellsClose();
    const first = () => {
      this.writeHead(status, headers);
      if (closing) {
        // uWS adds Connection: close, and closes the connection once the response has left;
        // but it leaves the header out when the request said Connection: close itself, where
        // Go's server still says it: added here then.
        if (/\bclose\b/i.test(this.req?.headers['connection'] ?? '')) res.writeHeader('Connection', 'close');
        res.end(parts.length === 1 ? parts[0] : Buffer.concat(parts, total), true);
        this.finish();
        return;
      }
      // (uWS goes on taking the rest of the body from the socket, and the reader drops it)
      if (tellClose) res.writeHeader('Connection', 'close');
      if (total === 0) {
        res.end();
        this.finish();
        return;
      }
      if (!pump()) res.onWritable(() => (this.aborted || this.done ? true : pump()));
    };
    if (this.inHandler) first();
    else res.cork(first);
  }

  startStream(status: number, headers: HeaderList): void {
    if (this.aborted || this.done) return;
    this.streamStarting();
    this.res.cork(() => this.writeHead(status, headers));
  }

  /**
   * A streamed response (a watch) writes through uWS until the socket pushes back; uWS then
   * holds the unsent tail of that one write, and later chunks wait here, counted in
   * backlog, until the socket drains. So bufferedBytes() is what a client has not taken,
   * exactly, and a watcher's budget is checked against it. Every write goes in pieces
   * that fit the cork they are written in (see the class comment); outside a cork, the
   * sink corks each batch of pieces itself.
   *
   * Besides that budget, uWS itself closes the connection (onAborted, no last chunk) when
   * a write could not finish and the socket then stays unwritable for 10 s (its HTTP
   * timeout): a watch client that stops reading for that long is cut before its budget is
   * reached, and resumes from the last version it saw, as from any dropped watch.
   */
  write(chunk: string | Uint8Array): boolean {
    if (this.aborted || this.done || this.ending) return false;
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    const n = b.byteLength;
    if (n === 0) return !this.blocked;
    if (this.queue === null && !this.blocked && !this.inHandler && n <= MAX_PIECE) {
      if (this.fill === null) {
        // the usual watch write: one chunk that fits a fresh cork
        this.res.cork(() => this.writePiece(b));
        return !this.blocked;
      }
      if (this.fill + n + WRITE_OVERHEAD <= CORK_BUDGET) {
        this.fill += n + WRITE_OVERHEAD;
        this.writePiece(b);
        return !this.blocked;
      }
    }
    this.enqueue(b);
    if (this.fill !== null) return false; // cork() pumps when its function returns
    if (this.inHandler) {
      // what uWS already holds in the request's cork is unknown: go on from a cork of our own
      this.schedulePump();
      return false;
    }
    this.pump();
    return !this.blocked && this.queue === null;
  }

  private writePiece(b: Uint8Array): void {
    if (!this.res.write(b)) this.pushedBack();
  }

  /** uWS buffered part of a write: hold further pieces until the socket is writable again. */
  private pushedBack(): void {
    this.blocked = true;
    if (this.writableHooked) return;
    this.writableHooked = true;
    // This uWS build does not drain a response's own buffered tail once a writable handler
    // is registered; an uncork does, hence a cork on every writable event (pump, or empty).
    this.res.onWritable(() => {
      if (this.aborted || this.done) return true;
      this.blocked = false;
      if (this.queue !== null) this.pump();
      else this.res.cork(() => {});
      if (this.ending && this.queue === null) this.finishEnd();
      else if (!this.blocked && this.queue === null && this.drainFns) for (const f of this.drainFns) f();
      return true;
    });
  }

  private enqueue(b: Uint8Array): void {
    const q = (this.queue ??= []);
    for (let off = 0; off < b.byteLength; off += MAX_PIECE) q.push(off === 0 && b.byteLength <= MAX_PIECE ? b : b.subarray(off, off + MAX_PIECE));
    this.backlog += b.byteLength;
  }

  /**
   * Hands queued pieces to uWS, as many to a cork as fit in it, until the socket pushes
   * back (or, with force, all of them: uWS buffers what the socket does not take). Never
   * called inside a cork.
   */
  private pump(force = false): void {
    while (this.queue !== null && (force || !this.blocked) && !this.aborted) {
      this.res.cork(() => {
        const q = this.queue!;
        let fill = 0;
        while (this.queueHead < q.length) {
          const p = q[this.queueHead];
          if (fill + p.byteLength + WRITE_OVERHEAD > CORK_BUDGET) break;
          fill += p.byteLength + WRITE_OVERHEAD;
          this.queueHead++;
          this.backlog -= p.byteLength;
          this.writePiece(p);
          if (this.blocked && !force) break;
        }
        if (this.queueHead === q.length) {
          this.queue = null;
          this.queueHead = 0;
          this.backlog = 0;
        }
      });
    }
  }

  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      if (this.aborted || this.done) return;
      this.pump();
      if (this.ending) this.finishEnd();
    });
  }

  end(): void {
    if (this.aborted || this.done || this.ending) return;
    this.ending = true;
    if (this.inHandler) this.schedulePump();
    else if (this.fill === null) this.finishEnd();
    // inside a cork of ours: cork() ends once its function returns
  }

  /** The end of a stream: what is queued goes out before it (uWS buffers it; the response is over). */
  private finishEnd(): void {
    if (this.aborted || this.done) return;
    this.pump(true);
    this.res.cork(() => this.res.end());
    this.finish();
  }

  cork(fn: () => void): void {
    if (this.aborted) return;
    if (this.fill !== null || this.inHandler) {
      fn();
      return;
    }
    this.res.cork(() => {
      this.fill = 0;
      try {
        fn();
      } finally {
        this.fill = null;
      }
    });
    if (this.aborted || this.done) return;
    if (this.queue !== null && !this.blocked) this.pump();
    if (this.ending) this.finishEnd();
  }

  onDrain(fn: () => void): void {
    (this.drainFns ??= []).push(fn);
  }

  bufferedBytes(): number {
    return this.backlog;
  }

  close(): void {
    if (this.aborted || this.done) return;
    this.res.close();
  }
}

export interface UwsServerOptions {
  host: string;
  port: number;
  certFile: string;
  keyFile: string;
  maxBodyBytes: number;
  /** what the request bodies in flight may hold together (BodyBudget) */
  maxBodyBytesInFlight: number;
  /** the count of that budget, when the front threads share it (BodyBudget.sharedBuffer) */
  bodyBudget?: SharedArrayBuffer;
  handle: (req: ApiRequest, res: ResponseSink) => void;
  /** told of each request's end (the request metrics) */
  observer?: RequestObserver;
  /** TLS 1.2 cipher list and SNI certificates (tls-config.ts uwsTls); BoringSSL's defaults without it */
  tls?: { ssl_ciphers: string; serverNames: Array<{ name: string; certFile: string; keyFile: string }> };
  /**
   * The port is shared with this process's other front threads (SO_REUSEPORT: the kernel
   * spreads connections over them). The main thread makes sure first that no other
   * process holds the port (front/front-threads.ts claimPort).
   */
  sharedPort?: boolean;
  /** --max-connection-bytes-per-sec: a streamed response's byte rate (throttle.ts); 0 or absent for none */
  maxBytesPerSec?: number;
}

export interface RunningServer {
  port: number;
  /** Stops accepting connections. Open responses (watches) are ended by their owners. */
  stopListening(): void;
  /**
   * Closes every connection still open (keep-alive ones too). A front thread other than the
   * main one does this before it ends: a uWS socket still open when its thread is torn down
   * aborts the process.
   */
  closeConnections?(): void;
}

/**
 * One request as the filter chain sees it. The query is parsed only when something reads
 * it, and the peer address (a getpeername syscall) only when something asks for it: most
 * requests need neither.
 */
class UwsRequest extends RequestBase implements ApiRequest {
  private peer?: string;

  constructor(
    method: string,
    path: string,
    rawQuery: string,
    headers: Record<string, string>,
    private sink: UwsSink,
    private res: uws.HttpResponse,
  ) {
    super(method, path, rawQuery, headers);
  }

  get remoteAddress(): string {
    if (this.peer === undefined) {
      // The uWS response object is gone once the response ended.
      this.peer = this.sink.isOpen() ? Buffer.from(this.res.getRemoteAddressAsText()).toString() : '';
    }
    return this.peer;
  }
}

const METHODS: Record<string, string> = { get: 'GET', post: 'POST', put: 'PUT', patch: 'PATCH', delete: 'DELETE', head: 'HEAD', options: 'OPTIONS' };

export function startUwsServer(opts: UwsServerOptions): Promise<RunningServer> {
  assertNativeUws();
  const limits: BodyLimits = { maxBytes: opts.maxBodyBytes, budget: new BodyBudget(opts.maxBodyBytesInFlight, opts.bodyBudget) };
  const ciphers = opts.tls?.ssl_ciphers ? { ssl_ciphers: opts.tls.ssl_ciphers } : {};
  const app = uws.SSLApp({ cert_file_name: opts.certFile, key_file_name: opts.keyFile, ...ciphers });
  // SNI: each name gets its own context, with the same suites (uSockets matches '*.' one label deep, as Go does).
  for (const sni of opts.tls?.serverNames ?? []) app.addServerName(sni.name, { cert_file_name: sni.certFile, key_file_name: sni.keyFile, ...ciphers });
  const serve = (res: uws.HttpResponse, r: uws.HttpRequest, context?: uws.us_socket_context_t) => {
    const m = r.getMethod();
    const method = METHODS[m] ?? m.toUpperCase();
    const path = r.getUrl();
    const rawQuery = r.getQuery() ?? '';
    const headers: Record<string, string> = {};
    r.forEach((k, v) => {
      const prev = headers[k];
      headers[k] = prev === undefined ? v : `${prev}, ${v}`;
    });
    const sink = new UwsSink(res);
    const req = new UwsRequest(method, path, rawQuery, headers, sink, res);
    // The sink reads the request's responseHeaders when it writes the head.
    sink.req = req;
    if (opts.observer) {
      sink.observer = opts.observer;
      sink.startedAt = performance.now();
    }
    const cl = headers['content-length'];
    const te = headers['transfer-encoding'];
    const frame = (cl === undefined || cl === '0') && te === undefined ? 0 : frameOf(cl, te);
    if (typeof frame !== 'number') {
      sink.refuseFraming(frame.status, frame.text);
      return;
    }
    if (frame !== 0) {
      // The chain runs from the headers; the body is read when it asks (the request-body
      // filter). uWS hands over the chunks it parses from here on, wanted or not: they go to
      // the reader, which keeps them only until it knows the request is refused.
      const reader = new BodyReader(req, sink, limits, frame, sink);
      res.onData((ab, isLast) => {
        // uWS neuters the ArrayBuffer when this callback returns: copy it (into Buffer's pool
        // when small, which costs less than a new ArrayBuffer of its own).
        if (ab.byteLength > 0 && reader.accept(ab.byteLength)) reader.push(Buffer.copyBytesFrom(new Uint8Array(ab)));
        if (isLast) reader.end();
      });
    }
    // Still inside uWS's request callback: uWS corks the socket itself, so a response
    // sent synchronously from here leaves without an extra cork.
    // A WebSocket upgrade (uWS's ws route): a connect handler may carry it on to a node's agent.
    if (context !== undefined && isUpgradeRequest(headers)) req.upgrade = relayCarrier(req, sink, res, context, () => sink.hijacked());
    sink.inHandler = true;
    opts.handle(req, opts.maxBytesPerSec ? new ThrottledSink(sink, opts.maxBytesPerSec) : sink);
    sink.inHandler = false;
  };
  // uWS hands a request with a WebSocket key to the ws route's upgrade handler, every other one to any.
  app.ws('/*', relayBehavior((res, r, context) => serve(res, r, context)));
  app.any('/*', (res, r) => serve(res, r));
  return new Promise((resolve, reject) => {
    // LIBUS_LISTEN_EXCLUSIVE_PORT: uWS sets SO_REUSEPORT by default, and two servers on one
    // port would then split the connections between them. Like kube-apiserver, a taken
    // port fails start-up instead.
    // (the native listen takes host, port and options; the bundled typings lack that overload)
    const listen = app.listen as unknown as (this: uws.TemplatedApp, host: string, port: number, options: number, cb: (t: uws.us_listen_socket | false) => void) => void;
    listen.call(app, opts.host, opts.port, opts.sharedPort ? 0 : LISTEN_EXCLUSIVE_PORT, (token) => {
      if (!token) {
        reject(new Error(`failed to listen on ${opts.host}:${opts.port} (address already in use?)`));
        return;
      }
      let listening = true;
      resolve({
        port: uws.us_socket_local_port(token),
        // (once: the graceful shutdown and a front thread's stop may both ask)
        stopListening: () => {
          if (!listening) return;
          listening = false;
          uws.us_listen_socket_close(token);
        },
        // (uWS.js has close(); the bundled typings lack it)
        closeConnections: () => (app as unknown as { close(): void }).close(),
      });
    });
  });
}
