// A lean HTTP/1.1 load client: N keep-alive TLS connections, one request in flight on each
// (no pipelining, like autocannon's default and like client-go), the request bytes built
// once, and responses delimited by Content-Length or chunked framing without parsing the
// body. On a 2-core machine autocannon's own CPU use caps what it can measure; this client
// costs a fraction of it, so it shows more of the server's capacity. Both are reported.
import tls from 'node:tls';
import { GO_TLS13_CIPHERS, authLine, type LoadResult, type Target } from './lib.js';
import { percentile } from './watch-load.js';

export interface RawLoadOptions {
  path: string;
  method?: string;
  body?: string;
  connections: number;
  seconds: number;
  contentType?: string;
}

/** The bytes of one request, head and body: built once, sent again and again (also by the native client). */
export function buildRequest(t: Target, opts: Pick<RawLoadOptions, 'path' | 'method' | 'body' | 'contentType'>): Buffer {
  const u = new URL(t.url);
  const body = opts.body ? Buffer.from(opts.body) : undefined;
  const head = `${opts.method ?? 'GET'} ${opts.path} HTTP/1.1\r\nHost: ${u.host}\r\n${authLine(t)}Accept: application/json\r\n` + (body ? `Content-Type: ${opts.contentType ?? 'application/json'}\r\nContent-Length: ${body.length}\r\n` : '') + '\r\n';
  return body ? Buffer.concat([Buffer.from(head), body]) : Buffer.from(head);
}

export async function rawLoad(t: Target, opts: RawLoadOptions): Promise<LoadResult> {
  const u = new URL(t.url);
  const request = buildRequest(t, opts);
  let requests = 0;
  let non2xx = 0;
  let errors = 0;
  const latencies: number[] = [];
  /** responses per second of the run (1 s buckets) */
  const perSecond = new Array<number>(Math.max(1, Math.floor(opts.seconds))).fill(0);
  const startedAt = performance.now();
  const end = Date.now() + opts.seconds * 1000;
  let session: Buffer | undefined;
  // Every socket decrypts into this one buffer (net's onread): no Buffer and no stream
  // machinery per read. A response that arrives whole (the usual case) is read in place;
  // only the bytes of one that spans reads are copied out.
  const readBuf = Buffer.allocUnsafe(256 * 1024);
  await Promise.all(
    Array.from({ length: opts.connections }, () =>
      new Promise<void>((resolve) => {
        const sock = tls.connect({
          host: u.hostname,
          port: Number(u.port || 443),
          rejectUnauthorized: false,
          ciphers: GO_TLS13_CIPHERS,
          ...t.tls,
          session,
          onread: {
            buffer: readBuf,
            callback: (n: number) => {
              onData(readBuf.subarray(0, n));
              keep();
            },
          },
        } as tls.ConnectionOptions);
        sock.once('session', (s) => (session ??= s));
        // Response bytes are kept as a list of chunks: a large body (a list) arrives in
        // many chunks, and joining them on every arrival would cost the client O(n²).
        let chunks: Buffer[] = [];
        let have = 0;
        let need = -1; // total bytes of the response being read, once its headers are in
        let sentAt = 0;
        const send = () => {
          if (Date.now() >= end) {
            sock.end();
            resolve();
            return;
          }
          sentAt = performance.now();
          sock.write(request);
        };
        const done = (status: number) => {
          requests++;
          if (status < 200 || status >= 300) non2xx++;
          const now = performance.now();
          if (latencies.length < 200_000) latencies.push(now - sentAt);
          const sec = Math.floor((now - startedAt) / 1000);
          if (sec < perSecond.length) perSecond[sec]++;
        };
        let status = 0;
        let chunkedBody = false;
        sock.on('secureConnect', send);
        const onData = (d: Buffer) => {
          chunks.push(d);
          have += d.length;
          for (;;) {
            if (need < 0) {
              const buf = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, have);
              chunks = [buf];
              const h = buf.indexOf('\r\n\r\n');
              if (h < 0) return;
              const headers = buf.subarray(0, h).toString('latin1');
              status = Number(headers.slice(9, 12));
              const cl = /content-length:\s*(\d+)/i.exec(headers);
              chunkedBody = !cl;
              need = cl ? h + 4 + Number(cl[1]) : 0;
            }
            if (chunkedBody) {
              // The terminating chunk is at the very end of what arrived so far.
              const last = chunks[chunks.length - 1];
              const tail = last.length >= 7 ? last.subarray(last.length - 7) : Buffer.concat(chunks, have).subarray(Math.max(0, have - 7));
              if (tail.toString('latin1') !== '\r\n0\r\n\r\n') return;
              need = have;
            }
            if (have < need) return;
            const rest = have - need;
            const all = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, have);
            chunks = rest > 0 ? [all.subarray(need)] : [];
            have = rest;
            need = -1;
            done(status);
            send();
            if (have === 0) return;
          }
        };
        // What is kept for the next read must not stay in the shared read buffer.
        const keep = () => {
          for (let i = 0; i < chunks.length; i++) if (chunks[i].buffer === readBuf.buffer) chunks[i] = Buffer.from(chunks[i]);
        };
        sock.on('error', () => {
          errors++;
          resolve();
        });
        sock.on('close', () => resolve());
      }),
    ),
  );
  latencies.sort((a, b) => a - b);
  const p = (q: number) => percentile(latencies, q, true);
  return { requests, rps: requests / opts.seconds, p50: p(50), p90: p(90), p99: p(99), p999: p(99.9), perSecond, non2xx, errors };
}
