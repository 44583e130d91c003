// A lean HTTP/1.1 load client: N keep-alive TLS connections, one request in flight on each
// (no pipelining, like autocannon's default and like client-go), the request bytes built
// once, and responses delimited by Content-Length or chunked framing without parsing the
// body. On a 2-core machine autocannon's own CPU use caps what it can measure; this client
// costs a fraction of it, so it shows more of the server's capacity. Both are reported.
import tls from 'node:tls';
import type { LoadResult, Target } from './lib.js';
import { percentile } from './watch-load.js';

export async function rawLoad(t: Target, opts: { path: string; method?: string; body?: string; connections: number; seconds: number; contentType?: string }): Promise<LoadResult> {
  const u = new URL(t.url);
  const body = opts.body ? Buffer.from(opts.body) : undefined;
  const head = `${opts.method ?? 'GET'} ${opts.path} HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${t.token}\r\nAccept: application/json\r\n` + (body ? `Content-Type: ${opts.contentType ?? 'application/json'}\r\nContent-Length: ${body.length}\r\n` : '') + '\r\n';
  const request = body ? Buffer.concat([Buffer.from(head), body]) : Buffer.from(head);
  let requests = 0;
  let non2xx = 0;
  let errors = 0;
  const latencies: number[] = [];
  const end = Date.now() + opts.seconds * 1000;
  let session: Buffer | undefined;
  await Promise.all(
    Array.from({ length: opts.connections }, () =>
      new Promise<void>((resolve) => {
        const sock = tls.connect({ host: u.hostname, port: Number(u.port || 443), rejectUnauthorized: false, session });
        sock.once('session', (s) => (session ??= s));
        let buf: Buffer = Buffer.alloc(0);
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
        sock.on('secureConnect', send);
        sock.on('data', (d: Buffer) => {
          buf = buf.length ? Buffer.concat([buf, d]) : d;
          for (;;) {
            const h = buf.indexOf('\r\n\r\n');
            if (h < 0) return;
            const headers = buf.subarray(0, h).toString('latin1');
            const status = Number(headers.slice(9, 12));
            let total: number;
            const cl = /content-length:\s*(\d+)/i.exec(headers);
            if (cl) total = h + 4 + Number(cl[1]);
            else {
              const term = buf.indexOf('\r\n0\r\n\r\n', h);
              if (term < 0) return;
              total = term + 7;
            }
            if (buf.length < total) return;
            buf = buf.subarray(total);
            requests++;
            if (status < 200 || status >= 300) non2xx++;
            if (latencies.length < 200_000) latencies.push(performance.now() - sentAt);
            send();
          }
        });
        sock.on('error', () => {
          errors++;
          resolve();
        });
        sock.on('close', () => resolve());
      }),
    ),
  );
  return { requests, rps: requests / opts.seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), non2xx, errors };
}
