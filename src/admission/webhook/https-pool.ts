// A lean HTTP/1.1-over-TLS client for webhook calls: kept-alive TLS sockets per address, one
// request at a time on each, the request written as one buffer and the answer parsed from the
// socket's bytes (status line, Content-Length or chunked body). Node's http client (agent,
// ClientRequest, IncomingMessage streams) costs several times more CPU per call than the
// call's TLS and syscalls; a webhook call is on the path of every write it intercepts, so this
// does only what a webhook POST needs. A socket reused from the pool that fails before any
// byte of the answer is retried once on a fresh connection (the server may have closed it
// while idle, as Go's transport retries such requests).
//
// Thread ownership: the front thread; each pool owns its sockets.
import tls from 'node:tls';

/** How long an idle socket is kept (Go's transport keeps them 90 s). */
const IDLE_MS = 90_000;

export interface PoolResponse {
  status: number;
  headers: Map<string, string>;
  body: Buffer;
}

export interface PoolRequest {
  host: string;
  port: number;
  /** TLS server name (undefined for an IP address: checked against the IP SANs) */
  servername?: string;
  /** the request line and headers, without Content-Length and the final CRLF */
  head: string;
  body: Buffer | string;
  /** bytes of answer at most */
  maxBytes: number;
  /** the whole call's time limit */
  timeoutMs: number;
}

/** The call outlived its time limit (Go's context deadline). */
export class DeadlineExceeded extends Error {
  constructor() {
    super('context deadline exceeded');
  }
}

interface Conn {
  socket: tls.TLSSocket;
  key: string;
  /** the request in flight */
  pending?: Pending;
  /** bytes read of the current answer */
  buf: Buffer[];
  len: number;
  dead: boolean;
}

interface Pending {
  resolve: (r: PoolResponse) => void;
  reject: (e: any) => void;
  maxBytes: number;
  /** any byte of the answer seen */
  started: boolean;
  reused: boolean;
  retry?: () => void;
  timer?: NodeJS.Timeout;
}

export class HttpsPool {
  private idle = new Map<string, Conn[]>();
  private all = new Set<Conn>();
  private closed = false;
  /** one TLS context per pool (the CA parsed once, not per connection) */
  private readonly context: tls.SecureContext;
  /** the last TLS session per address, to resume it on the next connection (a cheaper handshake) */
  private readonly sessions = new Map<string, Buffer>();

  constructor(ca?: string) {
    this.context = tls.createSecureContext(ca ? { ca } : {});
  }

  request(r: PoolRequest): Promise<PoolResponse> {
    // head and body encoded straight into one buffer (one socket write, no intermediate copy)
    const size = typeof r.body === 'string' ? Buffer.byteLength(r.body, 'utf8') : r.body.length;
    const head = `${r.head}Content-Length: ${size}\r\n\r\n`;
    const payload = Buffer.allocUnsafe(head.length + size);
    const at = payload.write(head, 0, 'latin1');
    if (typeof r.body === 'string') payload.write(r.body, at, 'utf8');
    else r.body.copy(payload, at);
    const deadline = Date.now() + r.timeoutMs;
    return new Promise((resolve, reject) => this.send(r, payload, resolve, reject, true, deadline));
  }

  private send(r: PoolRequest, payload: Buffer, resolve: (x: PoolResponse) => void, reject: (e: any) => void, mayRetry: boolean, deadline: number): void {
    const key = `${r.host}|${r.port}|${r.servername ?? ''}`;
    let conn: Conn | undefined;
    const list = this.idle.get(key);
    while (list && list.length) {
      const c = list.pop()!;
      if (!c.dead && !c.socket.destroyed) {
        conn = c;
        break;
      }
    }
    const reused = !!conn;
    if (!conn) conn = this.connect(r, key);
    else {
      conn.socket.setTimeout(0);
      conn.socket.ref();
    }
    const p: Pending = { resolve, reject, maxBytes: r.maxBytes, started: false, reused };
    if (reused && mayRetry) p.retry = () => this.send(r, payload, resolve, reject, false, deadline);
    const c = conn;
    p.timer = setTimeout(() => {
      p.retry = undefined;
      this.fail(c, new DeadlineExceeded());
    }, Math.max(0, deadline - Date.now()));
    conn.pending = p;
    conn.buf = [];
    conn.len = 0;
    conn.socket.write(payload);
  }

  private connect(r: PoolRequest, key: string): Conn {
    const socket = tls.connect({ host: r.host, port: r.port, servername: r.servername, secureContext: this.context, session: this.sessions.get(key), ALPNProtocols: ['http/1.1'] });
    socket.setNoDelay(true);
    socket.on('session', (session: Buffer) => {
      if (this.sessions.size > 256) this.sessions.clear();
      this.sessions.set(key, session);
    });
    const conn: Conn = { socket, key, buf: [], len: 0, dead: false };
    this.all.add(conn);
    socket.on('data', (d: Buffer) => this.onData(conn, d));
    socket.on('error', (e) => this.fail(conn, e));
    socket.on('close', () => {
      // an answer whose body runs to the end of the connection ends here
      const p = conn.pending;
      if (p?.started) {
        const res = parseResponse(conn.buf.length === 1 ? conn.buf[0] : Buffer.concat(conn.buf), true);
        if (res && !(res instanceof Error)) {
          conn.pending = undefined;
          clearTimeout(p.timer);
          this.all.delete(conn);
          conn.dead = true;
          p.resolve(res);
          return;
        }
      }
      this.fail(conn, Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
    });
    socket.on('timeout', () => socket.destroy());
    return conn;
  }

  private fail(conn: Conn, e: any): void {
    conn.dead = true;
    this.all.delete(conn);
    const p = conn.pending;
    conn.pending = undefined;
    if (!conn.socket.destroyed) conn.socket.destroy();
    if (!p) return;
    clearTimeout(p.timer);
    if (p.retry && !p.started) p.retry();
    else p.reject(e);
  }

  private onData(conn: Conn, d: Buffer): void {
    const p = conn.pending;
    if (!p) {
      // bytes nobody asked for: the connection is not usable
      this.fail(conn, new Error('unsolicited response'));
      return;
    }
    p.started = true;
    conn.buf.push(d);
    conn.len += d.length;
    if (conn.len > p.maxBytes) {
      this.fail(conn, new Error(`response body exceeds ${p.maxBytes} bytes`));
      return;
    }
    const all = conn.buf.length === 1 ? conn.buf[0] : Buffer.concat(conn.buf);
    conn.buf = [all];
    const res = parseResponse(all);
    if (res === undefined) return;
    if (res instanceof Error) {
      this.fail(conn, res);
      return;
    }
    conn.pending = undefined;
    clearTimeout(p.timer);
    conn.buf = [];
    conn.len = 0;
    const keep = (res.headers.get('connection') ?? '').toLowerCase() !== 'close' && !this.closed;
    if (keep) {
      // an idle socket keeps neither the process alive nor itself past the idle limit
      conn.socket.setTimeout(IDLE_MS);
      conn.socket.unref();
      const list = this.idle.get(conn.key);
      if (list) list.push(conn);
      else this.idle.set(conn.key, [conn]);
    } else {
      conn.dead = true;
      this.all.delete(conn);
      conn.socket.end();
    }
    p.resolve(res);
  }

  close(): void {
    this.closed = true;
    for (const c of this.all) {
      c.dead = true;
      if (!c.pending) c.socket.destroy();
    }
    this.idle.clear();
  }
}

const CRLFCRLF = Buffer.from('\r\n\r\n');

/** The whole answer in buf, undefined while incomplete, or an Error for bytes that are not HTTP/1.1. */
export function parseResponse(buf: Buffer, eof = false): PoolResponse | Error | undefined {
  const end = buf.indexOf(CRLFCRLF);
  if (end < 0) return buf.length > 64 * 1024 ? new Error('malformed HTTP response: headers too large') : undefined;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]);
  if (!m) return new Error(`malformed HTTP response ${JSON.stringify(lines[0].slice(0, 64))}`);
  const status = Number(m[1]);
  const headers = new Map<string, string>();
  for (let i = 1; i < lines.length; i++) {
    const c = lines[i].indexOf(':');
    if (c > 0) headers.set(lines[i].slice(0, c).trim().toLowerCase(), lines[i].slice(c + 1).trim());
  }
  // an interim 100 Continue: skip it
  if (status === 100) {
    const rest = parseResponse(buf.subarray(end + 4), eof);
    return rest;
  }
  const start = end + 4;
  if ((headers.get('transfer-encoding') ?? '').toLowerCase().includes('chunked')) {
    const parts: Buffer[] = [];
    let at = start;
    for (;;) {
      const eol = buf.indexOf('\r\n', at);
      if (eol < 0) return undefined;
      const size = parseInt(buf.subarray(at, eol).toString('latin1').split(';')[0].trim(), 16);
      if (!Number.isFinite(size) || size < 0) return new Error('malformed HTTP response: bad chunk size');
      if (size === 0) {
        // trailers end with an empty line
        const fin = buf.indexOf(CRLFCRLF, eol);
        if (fin < 0 && !(buf.length >= eol + 4 && buf.subarray(eol, eol + 4).equals(CRLFCRLF))) return undefined;
        return { status, headers, body: Buffer.concat(parts) };
      }
      if (buf.length < eol + 2 + size + 2) return undefined;
      parts.push(buf.subarray(eol + 2, eol + 2 + size));
      at = eol + 2 + size + 2;
    }
  }
  const cl = headers.get('content-length');
  if (cl !== undefined) {
    const n = Number(cl);
    if (!Number.isInteger(n) || n < 0) return new Error('malformed HTTP response: bad Content-Length');
    if (buf.length < start + n) return undefined;
    return { status, headers, body: buf.subarray(start, start + n) };
  }
  if (status === 204 || status === 304) return { status, headers, body: Buffer.alloc(0) };
  // no length: the body runs to the end of the connection
  if (!eof) return undefined;
  headers.set('connection', 'close');
  return { status, headers, body: buf.subarray(start) };
}
