// The simulated fleet's API client: a small pool of HTTP/2 connections to one API server,
// each carrying many streams (requests and long-lived watches), as client-go's transport
// multiplexes a kubelet's calls over one connection. Thousands of virtual nodes then need
// a few dozen TCP connections, not one per watch.
//
// A connection takes streams up to the server's SETTINGS_MAX_CONCURRENT_STREAMS (or
// --streams-per-connection, the lower); a new one opens when all are full. A connection
// that goes away (GOAWAY, reset) fails its streams: their owners retry on another.
//
// A server that does not offer h2 in ALPN (kubeshard's default uWebSockets.js front end
// speaks HTTP/1.1) is spoken to over HTTP/1.1 keep-alive connections instead, as client-go
// falls back: one connection per open watch, requests sharing the idle ones.
//
// Thread ownership: the fleet's main thread; all state is this object's.
import http2 from 'node:http2';
import https from 'node:https';
import tls from 'node:tls';
import type { WebhookTarget } from '../../auth/webhook-client.js';

const REQUEST_TIMEOUT_MS = 60_000;
/** HTTP/1.1 fallback: the connections requests (not watches) share */
const H1_REQUEST_CONNECTIONS = 64;

interface Conn {
  session: http2.ClientHttp2Session;
  streams: number;
  limit: number;
  dead: boolean;
}

export interface Reply {
  status: number;
  body: string;
  json(): any;
}

export interface WatchHandle {
  close(): void;
}

export class H2Pool {
  private conns: Conn[] = [];
  private origin: string;
  private auth: Record<string, string>;
  /** streams opened, by outcome, for the fleet's figures */
  readonly counts = { requests: 0, failures: 0, watches: 0, badWatchLines: 0 };
  /** failed requests by cause (an error code, or 'no answer'), for the fleet's final counters */
  readonly failuresBy = new Map<string, number>();

  private failed(cause: unknown): void {
    this.counts.failures++;
    const key = (cause as NodeJS.ErrnoException)?.code ?? String(cause);
    this.failuresBy.set(key, (this.failuresBy.get(key) ?? 0) + 1);
  }

  /** 'h2' or 'http/1.1', once negotiated (init) */
  protocol = '';
  private agent: https.Agent | undefined;
  private watchAgent: https.Agent | undefined;

  constructor(
    private readonly target: WebhookTarget,
    private readonly streamsPerConnection: number,
  ) {
    this.origin = target.url.origin;
    this.auth = target.token ? { authorization: `Bearer ${target.token}` } : {};
  }

  private tlsOptions() {
    const t = this.target;
    return { ca: t.ca, cert: t.cert, key: t.key, rejectUnauthorized: !t.insecure && !!t.ca };
  }

  /** Learns from ALPN whether the server speaks HTTP/2 (forceHttp1: never use it). */
  async init(forceHttp1 = false): Promise<void> {
    if (forceHttp1) this.protocol = 'http/1.1';
    else {
      const u = this.target.url;
      this.protocol = await new Promise<string>((resolve, reject) => {
        const sock = tls.connect({ host: u.hostname, port: Number(u.port || 443), servername: /^[\d.]+$|:/.test(u.hostname) ? undefined : u.hostname, ALPNProtocols: ['h2', 'http/1.1'], ...this.tlsOptions() }, () => {
          const p = sock.alpnProtocol || 'http/1.1';
          sock.end();
          resolve(p);
        });
        sock.once('error', reject);
      });
    }
    if (this.protocol !== 'h2') {
      // requests share a bounded set of keep-alive connections (queued beyond it, not a TLS
      // handshake each); every watch holds a connection of its own while it lasts
      this.agent = new https.Agent({ keepAlive: true, maxSockets: H1_REQUEST_CONNECTIONS, maxFreeSockets: H1_REQUEST_CONNECTIONS, ...this.tlsOptions() });
      this.watchAgent = new https.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 256, ...this.tlsOptions() });
    }
  }

  get connections(): number {
    if (this.agent) {
      let n = 0;
      for (const a of [this.agent, this.watchAgent!]) {
        for (const l of Object.values(a.sockets)) n += l?.length ?? 0;
        for (const l of Object.values(a.freeSockets)) n += l?.length ?? 0;
      }
      return n;
    }
    return this.conns.length;
  }

  /** One HTTP/1.1 exchange (the fallback): the response handed to onResponse. */
  private h1(method: string, path: string, headers: Record<string, string | number>, payload: Buffer | undefined, onResponse: (res: import('node:http').IncomingMessage) => void, onError: (err: Error) => void, agent = this.agent): { destroy(): void } {
    const u = this.target.url;
    const req = https.request({ host: u.hostname, port: u.port || 443, method, path, agent, headers: { ...this.auth, accept: 'application/json', ...headers } }, onResponse);
    req.on('error', onError);
    req.end(payload);
    return req;
  }

  private connect(): Conn {
    const session = http2.connect(this.origin, {
      ...this.tlsOptions(),
      // watches of thousands of nodes: generous windows so a burst of events does not stall
      settings: { initialWindowSize: 1 << 20, enablePush: false },
    });
    const c: Conn = { session, streams: 0, limit: this.streamsPerConnection, dead: false };
    session.on('remoteSettings', (s) => {
      if (s.maxConcurrentStreams) c.limit = Math.min(this.streamsPerConnection, s.maxConcurrentStreams);
    });
    const drop = () => {
      c.dead = true;
      this.conns = this.conns.filter((x) => x !== c);
    };
    session.on('goaway', drop);
    session.on('close', drop);
    session.on('error', drop);
    session.setMaxListeners?.(0);
    this.conns.push(c);
    return c;
  }

  private pick(): Conn {
    let best: Conn | undefined;
    for (const c of this.conns) if (!c.dead && c.streams < c.limit && (!best || c.streams < best.streams)) best = c;
    return best ?? this.connect();
  }

  private open(headers: http2.OutgoingHttpHeaders, hasBody = false): { stream: http2.ClientHttp2Stream; conn: Conn } {
    const conn = this.pick();
    conn.streams++;
    // node ends a DELETE's stream at once unless told otherwise: a DeleteOptions body follows
    const stream = conn.session.request({ ...this.auth, accept: 'application/json', ...headers }, { endStream: !hasBody });
    stream.once('close', () => conn.streams--);
    return { stream, conn };
  }

  request(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<Reply> {
    this.counts.requests++;
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    if (this.agent) return this.h1Request(method, path, payload, contentType, true);
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (cause: unknown, err: Error) => {
        if (settled) return;
        settled = true;
        this.failed(cause);
        reject(err);
      };
      let stream: http2.ClientHttp2Stream;
      try {
        stream = this.open({ ':method': method, ':path': path, ...(payload ? { 'content-type': contentType, 'content-length': payload.length } : {}) }, !!payload).stream;
      } catch (err) {
        fail(err, err as Error);
        return;
      }
      let status = 0;
      const chunks: Buffer[] = [];
      stream.setTimeout(REQUEST_TIMEOUT_MS, () => stream.close(http2.constants.NGHTTP2_CANCEL));
      stream.on('response', (h) => (status = Number(h[':status'])));
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('error', (err) => fail(err, err));
      stream.on('close', () => {
        if (!status) {
          fail(`no answer (rst ${stream.rstCode})`, new Error(`${method} ${path}: stream closed without an answer`));
          return;
        }
        if (settled) return;
        settled = true;
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status, body: text, json: () => JSON.parse(text) });
      });
      if (payload) stream.end(payload);
    });
  }

  /** A request over the HTTP/1.1 fallback; a reused keep-alive connection the server closed meanwhile is retried once on a new one. */
  private h1Request(method: string, path: string, payload: Buffer | undefined, contentType: string, retry: boolean): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const req = this.h1(method, path, payload ? { 'content-type': contentType, 'content-length': payload.length } : {}, payload, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, body: text, json: () => JSON.parse(text) });
        });
        res.on('error', (err) => {
          this.failed(err);
          reject(err);
        });
      }, (err) => {
        if (retry && ((err as NodeJS.ErrnoException).code === 'ECONNRESET' || (err as NodeJS.ErrnoException).code === 'EPIPE')) {
          this.h1Request(method, path, payload, contentType, false).then(resolve, reject);
          return;
        }
        this.failed(err);
        reject(err);
      });
      setTimeout(() => req.destroy(), REQUEST_TIMEOUT_MS).unref();
    });
  }

  /**
   * A watch: each event line handed to onEvent; onEnd once when the stream ends for any
   * reason (status: the HTTP status, 0 when there was none).
   */
  watch(path: string, onEvent: (ev: any) => void, onEnd: (status: number) => void): WatchHandle {
    this.counts.watches++;
    let ended = false;
    const end = (status: number) => {
      if (ended) return;
      ended = true;
      onEnd(status);
    };
    // (node's http2 client can emit a stream's first data before its 'response' event: what
    // comes while the status is not known yet is kept and read once it is 200, never dropped,
    // or the next line would begin in the middle of an event)
    const lines = (status: () => number) => {
      let buf = '';
      return (chunk?: string) => {
        const st = status();
        if (st !== 0 && st !== 200) {
          buf = '';
          return;
        }
        if (chunk) buf += chunk;
        if (st !== 200) return;
        let i: number;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (!line.trim()) continue;
          let ev: unknown;
          try {
            ev = JSON.parse(line);
          } catch {
            // a line that is not JSON ends nothing (the next one may be whole), but it is an
            // event lost: counted, and the first few shown
            if (this.counts.badWatchLines++ < 3) console.log(`fleet: a watch line that is not JSON (${line.length} bytes): ${line.slice(0, 120)}`);
            continue;
          }
          onEvent(ev);
        }
      };
    };
    if (this.agent) {
      let code = 0;
      const req = this.h1('GET', path, {}, undefined, (res) => {
        code = res.statusCode ?? 0;
        res.setEncoding('utf8');
        res.on('data', lines(() => code));
        res.on('end', () => end(code));
        res.on('close', () => end(code));
        res.on('error', () => end(code));
      }, () => end(code), this.watchAgent);
      return {
        close: () => {
          ended = true;
          req.destroy();
        },
      };
    }
    let stream: http2.ClientHttp2Stream;
    try {
      stream = this.open({ ':method': 'GET', ':path': path }).stream;
    } catch {
      setImmediate(() => end(0));
      return { close: () => undefined };
    }
    let status = 0;
    stream.setEncoding('utf8');
    const feed = lines(() => status);
    stream.on('response', (h) => {
      status = Number(h[':status']);
      feed();
    });
    stream.on('data', feed);
    stream.on('error', () => end(status));
    stream.on('close', () => end(status));
    stream.end();
    return {
      close: () => {
        ended = true;
        if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
      },
    };
  }

  close(): void {
    this.agent?.destroy();
    this.watchAgent?.destroy();
    for (const c of this.conns) c.session.close();
    this.conns = [];
  }
}
