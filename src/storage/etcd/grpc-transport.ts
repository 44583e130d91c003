// A lean gRPC client transport over node:http2, for the etcd client (client.ts): unary calls
// and bidirectional streams, one HTTP/2 session per endpoint.
//
// Why not @grpc/grpc-js: a CPU profile of kubeshard creating ~3,700 objects/s on etcd spent
// about a third of its busy CPU inside grpc-js (its call stack of interceptors, load-balancing
// and subchannel calls, Metadata objects converted to and from headers, extra buffers and
// ticks per call). etcd needs none of that: one fixed set of methods, no metadata, no
// compression, no name resolution. Here a unary call is one http2 request with a prebuilt header
// object, one `end(frame)` of the protobuf bytes behind the 5-byte gRPC prefix, and the
// response frames read straight from the DATA chunks (bench/README.md, "etcd client (issue 19)").
//
// What it keeps of gRPC's channel semantics (grpc-js's, which the client was written against):
// - calls wait while the session connects and are sent once the server's SETTINGS arrived; a
//   failed connection fails them with UNAVAILABLE and `neverSent` (nothing left this process
//   for that server, so a mutating call may go to another endpoint), then the channel retries
//   with backoff (100 ms doubling to 2 s) in the background; calls made during the backoff fail
//   at once the same way, as grpc-js fails calls on a channel in TRANSIENT_FAILURE;
// - a session lost ('close', 'error', its socket's 'error', or a GOAWAY with an error) fails its
//   calls in flight with UNAVAILABLE (they may have been applied); a graceful GOAWAY lets the streams the server took
//   finish and fails the others (refused, so `neverSent`); either way the next call opens a new
//   session;
// - HTTP/2 PINGs every keepaliveMs while calls are open, the session dropped when one is not
//   answered in time (etcd's server policy refuses pings when no stream is open);
// - a deadline per call sent as grpc-timeout and enforced here too (RST_STREAM CANCEL and
//   DEADLINE_EXCEEDED), since a silent peer never answers;
// - no message size limit, and large stream and connection windows so a big range response is
//   not paced by HTTP/2's 64 KiB default windows.
//
// Thread ownership: a channel, its sessions and its calls belong to the thread that created the
// channel (the EtcdClient's); every callback runs on it.
import http2 from 'node:http2';
import type { ClientHttp2Session, ClientHttp2Stream, IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http2';
import protobuf from 'protobufjs';

/** gRPC status codes (grpc/doc/statuscodes.md). */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

/** A failed call: its gRPC status, the server's (decoded) message, and whether the request can have reached the server. */
export class GrpcError extends Error {
  constructor(
    readonly code: number,
    readonly details: string,
    /** the request never left for the server (no connection, or refused by it unprocessed): safe to send elsewhere */
    readonly neverSent = false,
  ) {
    super(details);
    this.name = 'GrpcError';
  }
}

const {
  NGHTTP2_CANCEL,
  NGHTTP2_REFUSED_STREAM,
  NGHTTP2_ENHANCE_YOUR_CALM,
  NGHTTP2_INADEQUATE_SECURITY,
} = http2.constants;

/** a stream and connection window large enough that one big response is not paced by round trips */
const STREAM_WINDOW = 4 << 20;
const SESSION_WINDOW = 16 << 20;
/** HTTP/2 client stream ids are odd 31-bit numbers: a session is replaced well before it runs out */
const MAX_STREAMS_PER_SESSION = 1_000_000_000;
const BACKOFF_MIN_MS = 100;
const BACKOFF_MAX_MS = 2000;

/** The protobufjs side of a message type: enough to encode a request. */
export interface Encoder {
  encode(message: any, writer?: protobuf.Writer): protobuf.Writer;
}

/**
 * A request message as one gRPC frame (flag 0, big-endian length, the protobuf bytes), encoded
 * in place behind 5 reserved bytes: no copy of the message after protobufjs wrote it.
 */
export function encodeFrame(type: Encoder, message: any): Buffer {
  // fixed32(0) and a one-byte varint 0 reserve the 5 prefix bytes; the length goes in after
  const w = type.encode(message, protobuf.Writer.create().fixed32(0).uint32(0));
  const b = w.finish(true) as Buffer;
  b.writeUInt32BE(b.length - 5, 1);
  return b;
}

/** A method's path and its request headers, built once (per timeout for deadline-bound calls). */
export class Method {
  private readonly timed = new Map<number, OutgoingHttpHeaders>();
  /** headers of a call without a deadline (the watch stream) */
  readonly untimed: OutgoingHttpHeaders;
  constructor(readonly path: string) {
    this.untimed = { ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' };
  }
  headers(timeoutMs: number | undefined): OutgoingHttpHeaders {
    if (timeoutMs === undefined) return this.untimed;
    let h = this.timed.get(timeoutMs);
    if (!h) {
      // grpc-timeout: at most 8 digits and a unit
      const t = timeoutMs < 1e8 ? `${Math.max(1, Math.ceil(timeoutMs))}m` : `${Math.ceil(timeoutMs / 1000)}S`;
      h = { ...this.untimed, 'grpc-timeout': t };
      this.timed.set(timeoutMs, h);
    }
    return h;
  }
}

// ---- frames -------------------------------------------------------------------------------

/** Where a FrameReader puts the messages it completes. */
export interface FrameSink {
  message(msg: Buffer): void;
}

/**
 * Splits a stream of DATA chunks into gRPC messages: a message can span chunks and a chunk can
 * hold several messages. A message inside one chunk is a view on it (no copy); one spread over
 * chunks is gathered into a buffer of its exact size (one copy).
 */
export class FrameReader {
  /** a prefix split across chunks (allocated only then) */
  private head: Buffer | undefined = undefined;
  private headLen = 0;
  private body: Buffer | undefined = undefined;
  private bodyPos = 0;
  /** set when a frame cannot be read (a compressed message: no encoding was offered) */
  error: string | undefined = undefined;

  push(chunk: Buffer, sink: FrameSink): void {
    let off = 0;
    const n = chunk.length;
    while (off < n && this.error === undefined) {
      if (this.body === undefined) {
        let flag: number;
        let len: number;
        if (this.headLen === 0 && n - off >= 5) {
          flag = chunk[off];
          len = chunk.readUInt32BE(off + 1);
          off += 5;
        } else {
          const k = Math.min(5 - this.headLen, n - off);
          this.head ??= Buffer.allocUnsafe(5);
          chunk.copy(this.head, this.headLen, off, off + k);
          this.headLen += k;
          off += k;
          if (this.headLen < 5) return;
          this.headLen = 0;
          flag = this.head[0];
          len = this.head.readUInt32BE(1);
        }
        if (flag !== 0) {
          this.error = `received a message with compression flag ${flag}, but no compression was negotiated`;
          return;
        }
        if (n - off >= len) {
          const msg = chunk.subarray(off, off + len);
          off += len;
          sink.message(msg);
          continue;
        }
        this.body = Buffer.allocUnsafe(len);
        this.bodyPos = 0;
      }
      const k = Math.min(this.body.length - this.bodyPos, n - off);
      chunk.copy(this.body, this.bodyPos, off, off + k);
      this.bodyPos += k;
      off += k;
      if (this.bodyPos === this.body.length) {
        const msg = this.body;
        this.body = undefined;
        sink.message(msg);
      }
    }
  }

  /** A message was cut off by the end of the stream. */
  get partial(): boolean {
    return this.headLen > 0 || this.body !== undefined;
  }
}

/** grpc-message is percent-encoded UTF-8 (gRPC over HTTP/2, "Responses"). */
export function decodeGrpcMessage(s: string | string[] | undefined): string {
  if (s === undefined) return '';
  const v = Array.isArray(s) ? s.join(',') : s;
  if (!v.includes('%')) return v;
  try {
    return decodeURIComponent(v);
  } catch {
    return v;
  }
}

/** The status of a response without grpc-status, from its HTTP status (grpc's http-grpc-status-mapping). */
export function statusFromHttp(httpStatus: number): number {
  switch (httpStatus) {
    case 400:
      return GrpcStatus.INTERNAL;
    case 401:
      return GrpcStatus.UNAUTHENTICATED;
    case 403:
      return GrpcStatus.PERMISSION_DENIED;
    case 404:
      return GrpcStatus.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return GrpcStatus.UNAVAILABLE;
    default:
      return GrpcStatus.UNKNOWN;
  }
}

// ---- sessions and calls -------------------------------------------------------------------

/** One HTTP/2 session and what the channel tracks about it. */
interface Conn {
  session: ClientHttp2Session;
  /** the server's SETTINGS arrived: calls go out on it */
  ready: boolean;
  /** lost (closed, errored, or its connection failed) */
  dead: boolean;
  /** the calls open on it (pings are sent only while there are some; a lost session fails them) */
  calls: Set<Call>;
  /** streams without a deadline timer open on it: the session keeps the process alive while there are some */
  untimedStreams: number;
  /** requests made on it (for the stream-id limit) */
  requests: number;
  error: Error | undefined;
  connectTimer: NodeJS.Timeout | undefined;
  pingTimer: NodeJS.Timeout | undefined;
  pingWait: NodeJS.Timeout | undefined;
}

/** What a bidirectional stream's owner hears: each message, then one end (null: status OK). */
export interface StreamHandlers {
  message(msg: Buffer): void;
  end(err: GrpcError | null): void;
}

const CALL = Symbol('grpc call');
type TaggedStream = ClientHttp2Stream & { [CALL]: Call };

/**
 * One call, unary (body set, result through resolve/reject) or a bidi stream (handlers). The
 * http2 stream's listeners are shared functions that find the call through a symbol on the
 * stream, so a call costs no closures of its own.
 */
class Call implements FrameSink {
  stream: ClientHttp2Stream | undefined = undefined;
  conn: Conn | undefined = undefined;
  timer: NodeJS.Timeout | undefined = undefined;
  readonly reader = new FrameReader();
  httpStatus = 0;
  status = -1;
  statusMessage = '';
  streamError: Error | undefined = undefined;
  response: Buffer | undefined = undefined;
  extraResponses = false;
  cancelled = false;
  done = false;
  /** stream messages written before the call was started */
  pending: Buffer[] | undefined = undefined;
  halfClosed = false;
  resolve: ((b: Buffer) => void) | undefined = undefined;
  reject: ((e: GrpcError) => void) | undefined = undefined;

  constructor(
    readonly channel: GrpcChannel,
    readonly headers: OutgoingHttpHeaders,
    /** the framed request of a unary call */
    readonly body: Buffer | undefined,
    readonly handlers: StreamHandlers | undefined,
  ) {}

  message(msg: Buffer): void {
    if (this.handlers) {
      if (!this.done) this.handlers.message(msg);
    } else if (this.response === undefined) this.response = msg;
    else this.extraResponses = true;
  }

  finish(err: GrpcError | null): void {
    if (this.done) return;
    this.done = true;
    if (this.timer) clearTimeout(this.timer);
    const conn = this.conn;
    if (conn) {
      conn.calls.delete(this);
      if (this.handlers && this.timer === undefined && --conn.untimedStreams === 0) conn.session.unref();
    }
    // a stream's end is always heard after the call that opened or cancelled it has returned
    if (this.handlers) process.nextTick(endStream, this.handlers, err);
    else if (err) this.reject!(err);
    else this.resolve!(this.response!);
  }

  /** The outcome once the http2 stream has closed. */
  closed(rstCode: number): void {
    if (this.done) return;
    if (this.reader.error !== undefined) return this.finish(new GrpcError(GrpcStatus.INTERNAL, this.reader.error));
    if (this.status >= 0) {
      if (this.status !== GrpcStatus.OK) return this.finish(new GrpcError(this.status, this.statusMessage || `status ${this.status}`));
      if (this.reader.partial) return this.finish(new GrpcError(GrpcStatus.INTERNAL, 'the response ended inside a message'));
      if (!this.handlers && (this.response === undefined || this.extraResponses)) {
        return this.finish(new GrpcError(GrpcStatus.INTERNAL, this.extraResponses ? 'more than one message in a unary response' : 'no message in a unary response'));
      }
      return this.finish(null);
    }
    if (this.cancelled) return this.finish(new GrpcError(GrpcStatus.CANCELLED, 'cancelled'));
    // refused before the server processed it (a GOAWAY's higher streams, or REFUSED_STREAM)
    if (rstCode === NGHTTP2_REFUSED_STREAM) return this.finish(new GrpcError(GrpcStatus.UNAVAILABLE, 'the server refused the stream unprocessed', true));
    const conn = this.conn!;
    if (conn.dead || conn.session.destroyed) {
      const why = conn.error?.message ?? this.streamError?.message ?? 'the connection closed';
      return this.finish(new GrpcError(GrpcStatus.UNAVAILABLE, `connection lost: ${why}`));
    }
    if (this.httpStatus && this.httpStatus !== 200) return this.finish(new GrpcError(statusFromHttp(this.httpStatus), `HTTP status ${this.httpStatus}`));
    const code =
      rstCode === NGHTTP2_CANCEL
        ? GrpcStatus.CANCELLED
        : rstCode === NGHTTP2_ENHANCE_YOUR_CALM
          ? GrpcStatus.RESOURCE_EXHAUSTED
          : rstCode === NGHTTP2_INADEQUATE_SECURITY
            ? GrpcStatus.PERMISSION_DENIED
            : GrpcStatus.INTERNAL;
    this.finish(new GrpcError(code, rstCode ? `stream reset with HTTP/2 code ${rstCode}` : this.streamError?.message ?? 'the stream ended without a status'));
  }

  /** Cancels the call (its owner's cancel() or the deadline): RST_STREAM CANCEL, and the outcome now. */
  abort(err: GrpcError): void {
    if (this.done) return;
    this.cancelled = true;
    if (this.stream) this.stream.close(NGHTTP2_CANCEL);
    else this.channel.unqueue(this);
    this.finish(err);
  }
}

function endStream(h: StreamHandlers, err: GrpcError | null): void {
  h.end(err);
}

// the http2 stream listeners, shared by every call (`this` is the stream)
function onResponse(this: TaggedStream, headers: IncomingHttpHeaders): void {
  const c = this[CALL];
  c.httpStatus = headers[':status'] as unknown as number;
  // a trailers-only response: the status comes with the headers
  const s = headers['grpc-status'];
  if (s !== undefined) {
    c.status = Number(s);
    c.statusMessage = decodeGrpcMessage(headers['grpc-message']);
  }
}
function onData(this: TaggedStream, chunk: Buffer): void {
  const c = this[CALL];
  c.reader.push(chunk, c);
  // a frame that cannot be read: the rest of the stream cannot be either
  if (c.reader.error !== undefined) c.abort(new GrpcError(GrpcStatus.INTERNAL, c.reader.error));
}
function onTrailers(this: TaggedStream, trailers: IncomingHttpHeaders): void {
  const c = this[CALL];
  const s = trailers['grpc-status'];
  c.status = s === undefined ? GrpcStatus.UNKNOWN : Number(s);
  c.statusMessage = s === undefined ? 'trailers without grpc-status' : decodeGrpcMessage(trailers['grpc-message']);
}
/** The response is complete (trailers in): the call's outcome is known even if this side is still open. */
function onEnd(this: TaggedStream): void {
  const c = this[CALL];
  c.closed(0);
  // a stream the server ended while this side still writes: release it (RST_STREAM NO_ERROR)
  if (!this.closed && !this.writableFinished) this.close();
}
function onStreamError(this: TaggedStream, err: Error): void {
  this[CALL].streamError = err;
}
function onStreamClose(this: TaggedStream): void {
  this[CALL].closed(this.rstCode ?? 0);
}
function onDeadline(c: Call): void {
  if (!c.stream) {
    // still waiting for a connection: nothing was sent
    c.abort(new GrpcError(GrpcStatus.UNAVAILABLE, `No connection established within the deadline${c.channel.lastError ? ` (last error: ${c.channel.lastError})` : ''}`, true));
    return;
  }
  c.abort(new GrpcError(GrpcStatus.DEADLINE_EXCEEDED, 'deadline exceeded'));
}

export interface ChannelOptions {
  /** PEM contents for https:// endpoints */
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  /** HTTP/2 ping interval while calls are open (default 10s; etcd refuses pings more often than every 5s) */
  keepaliveMs?: number;
  /** how long a ping may go unanswered before the session is dropped (default max(1s, keepaliveMs/2)) */
  keepaliveTimeoutMs?: number;
  /** how long a connection attempt (TCP, TLS, the server's SETTINGS) may take (default 20s) */
  connectTimeoutMs?: number;
}

/** A bidirectional stream: messages written are gRPC frames (encodeFrame). */
export interface BidiStream {
  write(frame: Buffer): void;
  /** half-close: no more messages from this side */
  end(): void;
  /** RST_STREAM CANCEL; the handlers' end gets CANCELLED */
  cancel(): void;
}

/**
 * The calls to one endpoint (http://host:port for h2c, https://host:port for TLS), over one
 * HTTP/2 session at a time.
 */
export class GrpcChannel {
  private conn: Conn | undefined = undefined;
  private readonly waiting: Call[] = [];
  private readyWaiters: Array<{ resolve: () => void; reject: (e: Error) => void; timer: NodeJS.Timeout }> = [];
  private backoffMs = BACKOFF_MIN_MS;
  private retryTimer: NodeJS.Timeout | undefined = undefined;
  /** why the last connection failed or was lost ('' when none did) */
  lastError = '';
  private closed = false;
  private readonly connectOptions: http2.SecureClientSessionOptions;
  private readonly keepaliveMs: number;
  private readonly keepaliveTimeoutMs: number;
  private readonly connectTimeoutMs: number;

  constructor(
    readonly origin: string,
    opts: ChannelOptions = {},
  ) {
    this.keepaliveMs = opts.keepaliveMs ?? 10_000;
    this.keepaliveTimeoutMs = opts.keepaliveTimeoutMs ?? Math.max(1000, Math.floor(this.keepaliveMs / 2));
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 20_000;
    this.connectOptions = {
      settings: { enablePush: false, initialWindowSize: STREAM_WINDOW },
      // bursts of large writes wait in the session for etcd's flow-control window
      maxSessionMemory: 64,
    };
    if (origin.startsWith('https:')) Object.assign(this.connectOptions, { ca: opts.ca, cert: opts.cert, key: opts.key, ALPNProtocols: ['h2'] });
  }

  /** connecting, ready, in backoff after a failure, or idle (never used, or closed) */
  get state(): 'idle' | 'connecting' | 'ready' | 'failure' {
    if (this.conn) return this.conn.ready ? 'ready' : 'connecting';
    return this.retryTimer ? 'failure' : 'idle';
  }

  /** A unary call: the framed request, the response message's bytes. */
  unary(method: Method, frame: Buffer, timeoutMs: number): Promise<Buffer> {
    const call = new Call(this, method.headers(timeoutMs), frame, undefined);
    const p = new Promise<Buffer>((resolve, reject) => {
      call.resolve = resolve;
      call.reject = reject;
    });
    call.timer = setTimeout(onDeadline, timeoutMs, call);
    this.dispatch(call);
    return p;
  }

  /** A bidirectional stream, with a deadline over its whole life when timeoutMs is given. */
  stream(method: Method, handlers: StreamHandlers, timeoutMs?: number): BidiStream {
    const call = new Call(this, method.headers(timeoutMs), undefined, handlers);
    if (timeoutMs !== undefined) call.timer = setTimeout(onDeadline, timeoutMs, call);
    this.dispatch(call);
    return {
      write: (frame: Buffer) => {
        if (call.done || call.halfClosed) return;
        if (call.stream) call.stream.write(frame);
        else (call.pending ??= []).push(frame);
      },
      end: () => {
        if (call.done || call.halfClosed) return;
        call.halfClosed = true;
        if (call.stream) call.stream.end();
      },
      cancel: () => call.abort(new GrpcError(GrpcStatus.CANCELLED, 'cancelled')),
    };
  }

  /** Resolves once a session is ready (connecting if needed), through failures and backoff; rejects at the timeout. */
  waitForReady(timeoutMs: number): Promise<void> {
    if (this.closed) return Promise.reject(new GrpcError(GrpcStatus.CANCELLED, 'channel closed'));
    if (this.conn?.ready) return Promise.resolve();
    if (!this.conn && !this.retryTimer) this.connect();
    return new Promise((resolve, reject) => {
      const w = {
        resolve,
        reject,
        timer: setTimeout(() => {
          const i = this.readyWaiters.indexOf(w);
          if (i >= 0) this.readyWaiters.splice(i, 1);
          reject(new GrpcError(GrpcStatus.UNAVAILABLE, `No connection established within ${timeoutMs}ms${this.lastError ? ` (last error: ${this.lastError})` : ''}`, true));
        }, timeoutMs),
      };
      this.readyWaiters.push(w);
    });
  }

  /** Closes the session once its open calls are done; calls still waiting for a connection fail with CANCELLED. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const err = new GrpcError(GrpcStatus.CANCELLED, 'channel closed', true);
    for (const c of this.waiting.splice(0)) c.finish(err);
    for (const w of this.readyWaiters.splice(0)) {
      clearTimeout(w.timer);
      w.reject(err);
    }
    const conn = this.conn;
    this.conn = undefined;
    if (conn) {
      if (conn.ready) conn.session.close();
      else conn.session.destroy();
    }
  }

  private dispatch(call: Call): void {
    const conn = this.conn;
    if (conn?.ready) return this.start(call, conn);
    if (this.closed) return call.finish(new GrpcError(GrpcStatus.CANCELLED, 'channel closed', true));
    if (!conn && this.retryTimer) {
      // in backoff after a failed connection: fail now, as grpc-js does in TRANSIENT_FAILURE
      return call.finish(new GrpcError(GrpcStatus.UNAVAILABLE, `No connection established (last error: ${this.lastError})`, true));
    }
    this.waiting.push(call);
    if (!conn) this.connect();
  }

  /** A call leaves the queue of calls waiting for a connection (its deadline or cancel). */
  unqueue(call: Call): void {
    const i = this.waiting.indexOf(call);
    if (i >= 0) this.waiting.splice(i, 1);
  }

  private start(call: Call, conn: Conn): void {
    call.conn = conn;
    conn.calls.add(call);
    if (++conn.requests >= MAX_STREAMS_PER_SESSION) this.retire(conn);
    if (call.handlers && call.timer === undefined && conn.untimedStreams++ === 0) conn.session.ref();
    let s: ClientHttp2Stream;
    try {
      s = conn.session.request(call.headers);
    } catch (e) {
      call.finish(new GrpcError(GrpcStatus.UNAVAILABLE, `No connection established: ${(e as Error).message}`, true));
      return;
    }
    call.stream = s;
    (s as TaggedStream)[CALL] = call;
    s.on('response', onResponse);
    s.on('data', onData);
    s.on('trailers', onTrailers);
    s.on('end', onEnd);
    s.on('error', onStreamError);
    s.on('close', onStreamClose);
    if (call.body) s.end(call.body);
    else {
      if (call.pending) for (const f of call.pending.splice(0)) s.write(f);
      if (call.halfClosed) s.end();
    }
  }

  private connect(): void {
    if (this.closed) return;
    const session = http2.connect(this.origin, this.connectOptions);
    const conn: Conn = {
      session,
      ready: false,
      dead: false,
      calls: new Set(),
      untimedStreams: 0,
      requests: 0,
      error: undefined,
      connectTimer: undefined,
      pingTimer: undefined,
      pingWait: undefined,
    };
    this.conn = conn;
    // the calls' deadline timers keep the process alive while they run; an idle session does not
    session.unref();
    conn.connectTimer = setTimeout(() => {
      conn.error = new Error(`connecting to ${this.origin} timed out after ${this.connectTimeoutMs}ms`);
      session.destroy(conn.error);
    }, this.connectTimeoutMs);
    conn.connectTimer.unref();
    session.once('remoteSettings', () => this.onReady(conn));
    session.on('goaway', (code: number) => {
      // no new calls on it; the graceful case lets the streams it took finish, the others end refused
      if (this.conn === conn) {
        this.conn = undefined;
        this.lastError = `the server sent GOAWAY (HTTP/2 code ${code})`;
        if (conn.ready) this.connect();
      }
    });
    session.on('error', (err: Error) => {
      conn.error ??= err;
    });
    session.on('close', () => this.lost(conn));
    // node destroys the session on a socket error but, when the TLS peer refused the handshake
    // (etcd without our client certificate), never emits the session's 'error' or 'close'
    session.socket.on('error', (err: Error) => {
      conn.error ??= err;
      this.lost(conn);
    });
  }

  private onReady(conn: Conn): void {
    if (conn.dead || this.conn !== conn) return;
    conn.ready = true;
    if (conn.connectTimer) clearTimeout(conn.connectTimer);
    conn.connectTimer = undefined;
    this.backoffMs = BACKOFF_MIN_MS;
    this.lastError = '';
    try {
      conn.session.setLocalWindowSize(SESSION_WINDOW);
    } catch {
      // a session closing under us: its close handler does the rest
    }
    conn.pingTimer = setInterval(() => this.ping(conn), this.keepaliveMs);
    conn.pingTimer.unref();
    for (const c of this.waiting.splice(0)) this.start(c, conn);
    for (const w of this.readyWaiters.splice(0)) {
      clearTimeout(w.timer);
      w.resolve();
    }
  }

  private ping(conn: Conn): void {
    if (conn.dead || conn.calls.size === 0 || conn.pingWait) return;
    const wait = setTimeout(() => {
      conn.error = new Error(`keepalive ping not answered within ${this.keepaliveTimeoutMs}ms`);
      conn.session.destroy(conn.error);
    }, this.keepaliveTimeoutMs);
    wait.unref();
    conn.pingWait = wait;
    try {
      conn.session.ping(() => {
        clearTimeout(wait);
        conn.pingWait = undefined;
      });
    } catch {
      clearTimeout(wait);
      conn.pingWait = undefined;
    }
  }

  /** A session near the stream-id limit: new calls go to a new one, this one closes when its calls are done. */
  private retire(conn: Conn): void {
    if (this.conn !== conn) return;
    this.conn = undefined;
    this.connect();
    conn.session.close();
  }

  private lost(conn: Conn): void {
    if (conn.dead) return;
    conn.dead = true;
    if (!conn.session.destroyed) conn.session.destroy();
    if (conn.connectTimer) clearTimeout(conn.connectTimer);
    if (conn.pingTimer) clearInterval(conn.pingTimer);
    if (conn.pingWait) clearTimeout(conn.pingWait);
    const why = conn.error?.message ?? 'the connection closed';
    if (conn.calls.size) {
      // the calls in flight may have been applied; node would fail their streams too, but not
      // always promptly (a TLS socket error leaves them open), so they fail here
      const err = new GrpcError(GrpcStatus.UNAVAILABLE, `connection lost: ${why}`);
      // (those whose status had arrived end with it)
      for (const c of [...conn.calls]) {
        if (c.status >= 0) c.closed(0);
        else c.finish(err);
      }
    }
    if (this.conn !== conn) return;
    this.conn = undefined;
    if (this.closed) return;
    this.lastError = why;
    if (conn.ready) {
      // a working session was lost: its calls in flight fail from their streams' close; try again now
      this.connect();
      return;
    }
    // the connection could not be established: nothing was sent on it
    const err = new GrpcError(GrpcStatus.UNAVAILABLE, `No connection established: ${why}`, true);
    for (const c of this.waiting.splice(0)) c.finish(err);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.connect();
    }, this.backoffMs);
    this.retryTimer.unref();
    this.backoffMs = Math.min(this.backoffMs * 2, BACKOFF_MAX_MS);
  }
}
