// The uWS front end never loses or reorders bytes of a streamed response (a watch) or of a
// whole one, however the client reads: a watch line is always one whole JSON document.
//
// A regression test for frames cut mid-object under load: uWS drops the rest of a write
// made on a corked socket when it does not fit in what is left of the cork buffer and the
// socket's send buffer is full at that moment. Readers that pause now and then fill the
// send buffer often; chunks from a few hundred bytes to well past the 16 KiB cork buffer,
// written through sink.cork() as the watch fan-out does and also bare, hit that case
// within seconds when the transport does not guard against it.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import https from 'node:https';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startUwsServer, type RunningServer } from '../src/http/uws-transport.js';
import { ensureServingCert } from '../src/auth/certs.js';
import type { ResponseSink } from '../src/http/types.js';

let dir: string;
let server: RunningServer;
let ca: string;
const streams: ResponseSink[] = [];
/** bodies served whole by /whole/<bytes>: numbered lines, so a loss shows */
const wholeBody = (bytes: number) => lines(0, bytes).buf;

function lines(from: number, bytes: number): { buf: Buffer; next: number } {
  const out: string[] = [];
  let n = from;
  let len = 0;
  while (len < bytes) {
    // strings of varying length: a cut lands inside a string as often as not
    const l = JSON.stringify({ n, pad: 'x'.repeat(40 + ((n * 7919) % 500)) }) + '\n';
    out.push(l);
    len += l.length;
    n++;
  }
  return { buf: Buffer.from(out.join('')), next: n };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'stream-integrity-'));
  const cert = ensureServingCert({ certDir: dir, tlsCertFile: '', tlsPrivateKeyFile: '', bindAddress: '127.0.0.1' });
  ca = cert.caPem;
  server = await startUwsServer({
    host: '127.0.0.1',
    port: 0,
    certFile: cert.certFile,
    keyFile: cert.keyFile,
    maxBodyBytes: 1 << 20,
    handle: (req, sink) => {
      if (req.path.startsWith('/whole/')) {
        sink.send(200, [['Content-Type', 'application/json']], wholeBody(Number(req.path.slice(7))));
        return;
      }
      sink.startStream(200, [['Content-Type', 'application/json']]);
      streams.push(sink);
    },
  });
});
afterAll(() => {
  server?.stopListening();
  for (const s of streams) s.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Reader {
  lines: number;
  bad: string[];
  outOfOrder: number;
  error: string;
  ended: boolean;
}

/** A streaming GET whose reader stops for a few milliseconds now and then. */
function burstyReader(path: string): Reader {
  const r: Reader = { lines: 0, bad: [], outOfOrder: 0, error: '', ended: false };
  let last = -1;
  const req = https.get({ host: '127.0.0.1', port: server.port, path, ca }, (res) => {
    let buf = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => {
      buf += c;
      let j;
      while ((j = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, j);
        buf = buf.slice(j + 1);
        let o: { n?: unknown };
        try {
          o = JSON.parse(line);
        } catch {
          r.bad.push(line.length > 200 ? `${line.slice(0, 80)} … ${line.slice(-80)}` : line);
          continue;
        }
        if (typeof o?.n !== 'number' || o.n <= last) r.outOfOrder++;
        else last = o.n;
        r.lines++;
      }
      if (Math.random() < 0.05) {
        res.pause();
        setTimeout(() => res.resume(), Math.random() * 30);
      }
    });
    res.on('end', () => (r.ended = true));
    res.on('error', (e) => (r.error ||= String(e)));
    res.on('aborted', () => (r.error ||= 'aborted'));
  });
  req.on('error', (e) => (r.error ||= String(e)));
  return r;
}

const until = async (cond: () => boolean, ms: number) => {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
};

describe('uWS transport: streamed bytes arrive whole and in order', () => {
  it('chunks of any size, corked or not, to readers that pause', async () => {
    const readers = Array.from({ length: 4 }, () => burstyReader('/stream'));
    await until(() => streams.length === 4, 5000);
    expect(streams.length).toBe(4);
    let n = 0;
    let chunks = 0;
    const stop = Date.now() + 5000;
    await new Promise<void>((done) => {
      const tick = () => {
        if (Date.now() > stop) return done();
        const size = chunks % 2 === 0 ? 100 + Math.random() * 8000 : 10_000 + Math.random() * 120_000;
        const { buf, next } = lines(n, size);
        n = next;
        const corked = chunks++ % 5 !== 0;
        for (const s of streams) {
          // a reader far behind misses chunks (as a watcher over budget would be closed);
          // what it gets must still be whole lines in order
          if (s.bufferedBytes() > 8 << 20) continue;
          if (corked) s.cork(() => s.write(buf));
          else s.write(buf);
        }
        setTimeout(tick, Math.random() * 3);
      };
      tick();
    });
    for (const s of streams) s.end();
    await until(() => readers.every((r) => r.ended || r.error !== ''), 30_000);
    for (const r of readers) {
      expect(r.bad).toEqual([]);
      expect(r.error).toBe('');
      expect(r.ended).toBe(true);
      expect(r.outOfOrder).toBe(0);
      expect(r.lines).toBeGreaterThan(1000);
    }
  }, 60_000);

  it('whole bodies past the cork buffer, to readers that pause, on kept-alive connections', async () => {
    const agent = new https.Agent({ keepAlive: true, maxSockets: 4, ca });
    const sizes = [20_000, 70_000, 300_000, 1_000_000];
    let ok = 0;
    const bad: string[] = [];
    await Promise.all(
      Array.from({ length: 4 }, async (_, w) => {
        for (let i = 0; i < 12; i++) {
          const size = sizes[(i + w) % sizes.length];
          const body = await new Promise<Buffer>((resolve, reject) => {
            https
              .get({ host: '127.0.0.1', port: server.port, path: `/whole/${size}`, agent }, (res) => {
                const parts: Buffer[] = [];
                res.on('data', (c: Buffer) => {
                  parts.push(c);
                  if (Math.random() < 0.1) {
                    res.pause();
                    setTimeout(() => res.resume(), Math.random() * 20);
                  }
                });
                res.on('end', () => resolve(Buffer.concat(parts)));
                res.on('error', reject);
              })
              .on('error', reject);
          });
          if (body.equals(wholeBody(size))) ok++;
          else bad.push(`${size}: got ${body.length} bytes`);
        }
      }),
    );
    agent.destroy();
    expect(bad).toEqual([]);
    expect(ok).toBe(48);
  }, 60_000);
});
