// The uWebSockets.js front end: HTTPS/1.1, parsing, body collection and the size limit.
// It turns each request into a transport-neutral ApiRequest and ResponseSink and hands
// them to the filter chain. It cannot read a client certificate and has no HTTP/2; the
// node:http2 front end covers those, behind the same chain.
//
// Thread ownership: the uWS app, its sockets and every ResponseSink made here belong to
// the thread that called startUwsServer (the main thread).
import uws from 'uWebSockets.js';
import type { ApiRequest, HeaderList, ResponseSink } from './types.js';
import { statusLine } from './types.js';
import { errors } from '../errors.js';

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

class UwsSink implements ResponseSink {
  aborted = false;
  private done = false;
  private backlog = 0;
  private abortFns: Array<() => void> = [];
  private doneFns: Array<() => void> = [];
  private drainFns: Array<() => void> = [];
  private writableHooked = false;

  constructor(private res: uws.HttpResponse) {
    res.onAborted(() => {
      this.aborted = true;
      for (const f of this.abortFns) f();
      this.finish();
    });
  }

  private finish(): void {
    if (this.done) return;
    this.done = true;
    const fns = this.doneFns;
    this.doneFns = [];
    for (const f of fns) f();
  }

  private writeHead(status: number, headers: HeaderList): void {
    this.res.writeStatus(statusLine(status));
    for (const [k, v] of headers) this.res.writeHeader(k, v);
  }

  send(status: number, headers: HeaderList, body: string | Uint8Array): void {
    if (this.aborted || this.done) return;
    this.res.cork(() => {
      this.writeHead(status, headers);
      this.res.end(body);
    });
    this.finish();
  }

  startStream(status: number, headers: HeaderList): void {
    if (this.aborted) return;
    this.res.cork(() => this.writeHead(status, headers));
  }

  write(chunk: string | Uint8Array): boolean {
    if (this.aborted || this.done) return false;
    const ok = this.res.write(chunk);
    if (!ok) {
      this.backlog += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
      if (!this.writableHooked) {
        this.writableHooked = true;
        this.res.onWritable(() => {
          this.backlog = 0;
          for (const f of this.drainFns) f();
          return true;
        });
      }
    }
    return ok;
  }

  end(): void {
    if (this.aborted || this.done) return;
    this.res.end();
    this.finish();
  }

  cork(fn: () => void): void {
    if (this.aborted) return;
    this.res.cork(fn);
  }

  onAborted(fn: () => void): void {
    this.abortFns.push(fn);
  }

  onDone(fn: () => void): void {
    if (this.done) fn();
    else this.doneFns.push(fn);
  }

  onDrain(fn: () => void): void {
    this.drainFns.push(fn);
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
  handle: (req: ApiRequest, res: ResponseSink) => void;
}

export interface RunningServer {
  port: number;
  /** Stops accepting connections. Open responses (watches) are ended by their owners. */
  stopListening(): void;
}

export function startUwsServer(opts: UwsServerOptions): Promise<RunningServer> {
  assertNativeUws();
  const app = uws.SSLApp({ cert_file_name: opts.certFile, key_file_name: opts.keyFile });
  app.any('/*', (res, r) => {
    const method = r.getMethod().toUpperCase();
    const path = r.getUrl();
    const rawQuery = r.getQuery() ?? '';
    const headers: Record<string, string> = {};
    r.forEach((k, v) => {
      headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}`;
    });
    const sink = new UwsSink(res);
    const remoteAddress = Buffer.from(res.getRemoteAddressAsText()).toString();
    const req: ApiRequest = { method, path, rawQuery, query: new URLSearchParams(rawQuery), headers, body: null, remoteAddress };
    const tooLarge = () => {
      const se = errors.tooLarge(opts.maxBodyBytes);
      sink.send(413, [['Content-Type', 'application/json'], ['Connection', 'close']], JSON.stringify(se.toStatus()));
    };
    const cl = headers['content-length'];
    const chunked = (headers['transfer-encoding'] ?? '').includes('chunked');
    const hasBody = (cl !== undefined && cl !== '0') || chunked;
    if (!hasBody) {
      opts.handle(req, sink);
      return;
    }
    if (cl !== undefined && Number(cl) > opts.maxBodyBytes) {
      tooLarge();
      return;
    }
    const parts: Buffer[] = [];
    let total = 0;
    let rejected = false;
    res.onData((ab, isLast) => {
      if (rejected) return;
      total += ab.byteLength;
      if (total > opts.maxBodyBytes) {
        rejected = true;
        tooLarge();
        return;
      }
      // uWS neuters the ArrayBuffer when this callback returns: copy it.
      parts.push(Buffer.from(ab.slice(0)));
      if (isLast) {
        req.body = parts.length === 1 ? parts[0] : Buffer.concat(parts, total);
        opts.handle(req, sink);
      }
    });
  });
  return new Promise((resolve, reject) => {
    app.listen(opts.host, opts.port, (token) => {
      if (!token) {
        reject(new Error(`failed to listen on ${opts.host}:${opts.port}`));
        return;
      }
      resolve({
        port: uws.us_socket_local_port(token),
        stopListening: () => uws.us_listen_socket_close(token),
      });
    });
  });
}
