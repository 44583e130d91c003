// The bench's native load client (native/loadgen/loadgen.c, through bench/native-load.ts):
// against a real server it must count every request the server answered, and it must
// delimit responses however they are framed and split. Skipped where it cannot be built
// (no cc, or no OpenSSL headers): it is an optional bench tool.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { nativeLoad, nativeLoadgen } from '../bench/native-load.js';
import type { Target } from '../bench/lib.js';
import { request, useServer, type TestServer } from './helpers/server.js';

const available = (await nativeLoadgen()) !== null;

describe.skipIf(!available)('native load client', () => {
  let s: TestServer;
  useServer((x) => (s = x));
  const target = (): Target => ({ url: s.url, token: s.token, stop: async () => {} });

  it('GETs with keep-alive connections, all answered 2xx', async () => {
    const r = (await nativeLoad(target(), { path: '/api/v1/namespaces/default', connections: 2, seconds: 1 }))!;
    expect(r.requests).toBeGreaterThan(0);
    expect(r.non2xx).toBe(0);
    expect(r.errors).toBe(0);
    expect(r.p50).toBeGreaterThan(0);
    expect(r.p99).toBeGreaterThanOrEqual(r.p50);
    expect(r.p90).toBeGreaterThanOrEqual(r.p50);
    expect(r.p99).toBeGreaterThanOrEqual(r.p90);
    expect(r.p999).toBeGreaterThanOrEqual(r.p99);
    // one bucket per whole second of the run, holding every response but the drain's
    expect(r.perSecond).toHaveLength(1);
    expect(r.perSecond[0]).toBeGreaterThan(0);
    expect(r.perSecond[0]).toBeLessThanOrEqual(r.requests);
    expect(r.clientCpuUs).toBeGreaterThan(0);
  });

  it('counts exactly the creates the server made', async () => {
    expect((await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: 'native-load' } })).status).toBe(201);
    const body = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'cm-', labels: { by: 'native-load' } }, data: { payload: 'x'.repeat(1000) } });
    const r = (await nativeLoad(target(), { path: '/api/v1/namespaces/native-load/configmaps', method: 'POST', body, connections: 2, seconds: 1 }))!;
    expect(r.errors).toBe(0);
    expect(r.non2xx).toBe(0);
    const list = (await request(s, 'GET', '/api/v1/namespaces/native-load/configmaps?labelSelector=by%3Dnative-load')).json();
    expect(list.items.length).toBe(r.requests);
  });

  it('delimits responses split anywhere: Content-Length, chunked with extensions and trailers, 1xx, 204, Connection: close', async () => {
    // A TLS server of our own that writes each response in small pieces (each its own TLS
    // record, so the client reads them apart), with the kubeshard server's certificate, and
    // that asks for a client certificate (the CA's, as the client's --cert/--key).
    const certs = join(s.dataDir, 'certs');
    const big = 'y'.repeat(100_000);
    const chunkedBig = Array.from({ length: 25 }, (_, i) => big.slice(i * 4000, (i + 1) * 4000)).map((c) => `${c.length.toString(16)}\r\n${c}\r\n`).join('') + '0\r\n\r\n';
    const responses: Array<{ wire: string; piece: number; status: number; close?: boolean }> = [
      { wire: 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello', piece: 7, status: 200 },
      { wire: 'HTTP/1.1 200 OK\r\ntransfer-ENCODING: Chunked\r\n\r\n5\r\nhello\r\n1A;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: y\r\n\r\n', piece: 3, status: 200 },
      { wire: 'HTTP/1.1 404 Not Found\r\ncontent-LENGTH:  9\r\n\r\nnot found', piece: 1, status: 404 },
      { wire: 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}', piece: 11, status: 201 },
      { wire: 'HTTP/1.1 204 No Content\r\nDate: x\r\n\r\n', piece: 5, status: 204 },
      { wire: `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${chunkedBig}`, piece: 9000, status: 200 },
      { wire: 'HTTP/1.1 500 Oops\r\nConnection: close\r\nContent-Length: 3\r\n\r\nbye', piece: 4, status: 500, close: true },
    ];
    let answered = 0;
    let failed = 0;
    let withCert = 0;
    let next = 0;
    const server = tls.createServer({ cert: readFileSync(join(certs, 'apiserver.crt')), key: readFileSync(join(certs, 'apiserver.key')), requestCert: true, rejectUnauthorized: false }, (sock) => {
      if (sock.getPeerCertificate().subject) withCert++;
      let buf = '';
      sock.on('error', () => {});
      sock.on('data', async (d) => {
        buf += d.toString('latin1');
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        buf = buf.slice(end + 4);
        const r = responses[next++ % responses.length];
        // counted as the response starts: the client waits for every response it has asked for
        answered++;
        if (r.status < 200 || r.status >= 300) failed++;
        for (let i = 0; i < r.wire.length; i += r.piece) {
          sock.write(r.wire.slice(i, i + r.piece), 'latin1');
          if (i % (r.piece * 8) === 0) await new Promise((res) => setImmediate(res));
        }
        if (r.close) sock.end();
      });
    });
    await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
    try {
      const port = (server.address() as AddressInfo).port;
      const t: Target = { url: `https://127.0.0.1:${port}`, token: '', tls: { cert: readFileSync(join(certs, 'ca.crt')), key: readFileSync(join(certs, 'ca.key')) }, stop: async () => {} };
      const r = (await nativeLoad(t, { path: '/x', connections: 3, seconds: 1 }))!;
      expect(r.errors).toBe(0);
      expect(r.requests).toBeGreaterThan(responses.length);
      expect(r.requests).toBe(answered);
      expect(r.non2xx).toBe(failed);
      expect(withCert).toBeGreaterThanOrEqual(3);
    } finally {
      await new Promise((res) => server.close(res));
    }
  });
});
