// Issue 17, items 6 and 7, at the transport: request smuggling and header limits, and bodies
// read only after the filter chain has admitted their request, within a budget. Measured
// with raw TLS sockets against the front end the suite runs on (uWS, or node:http2 with
// KUBESHARD_TEST_FRONT=http2), plus a node:http2 server for what only it can do.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import tls from 'node:tls';
import http2 from 'node:http2';
import { mkdtempSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request, until, useServer, type TestServer } from './helpers/server.js';
import { kubectl } from './helpers/kubectl.js';

const CM = '/api/v1/namespaces/default/configmaps';
const HTTP2 = process.env.KUBESHARD_TEST_FRONT === 'http2';

interface Conn {
  socket: tls.TLSSocket;
  /** everything read so far */
  text(): string;
  closed: Promise<void>;
  isClosed(): boolean;
}

function connect(s: TestServer): Promise<Conn> {
  return new Promise((resolve, reject) => {
    let text = '';
    let closed = false;
    const socket = tls.connect({ host: '127.0.0.1', port: s.port, ca: s.ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] }, () =>
      resolve({ socket, text: () => text, closed: closedP, isClosed: () => closed }),
    );
    const closedP = new Promise<void>((res) => socket.on('close', () => ((closed = true), res())));
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('error', (e) => (closed ? undefined : text.length === 0 && !socket.readyState ? reject(e) : undefined));
  });
}

/** Sends the bytes on a new connection; what came back once it closed (or after waitMs). */
async function exchange(s: TestServer, bytes: string | Buffer, waitMs = 3000): Promise<{ text: string; closed: boolean }> {
  const c = await connect(s);
  c.socket.write(bytes);
  await Promise.race([c.closed, new Promise((r) => setTimeout(r, waitMs))]);
  const out = { text: c.text(), closed: c.isClosed() };
  c.socket.destroy();
  return out;
}

/** The status codes of the responses read (a response may follow a body on the same line). */
const statuses = (text: string) => [...text.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1]));

function rssBytes(s: TestServer): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${s.proc.pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

function cmBody(name: string, size = 0): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: size ? { big: 'x'.repeat(size) } : { a: '1' } });
}

describe('request smuggling and header limits (item 6)', () => {
  let s: TestServer;
  useServer((x) => (s = x));

  it('conflicting Content-Length headers are 400 Bad Request, and the connection closes', async () => {
    const body = cmBody('dup-cl');
    const r = await exchange(s, `POST ${CM} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nContent-Length: ${body.length + 40}\r\n\r\n${body}`);
    expect(statuses(r.text)).toEqual([400]);
    expect(r.closed).toBe(true);
    expect((await request(s, 'GET', `${CM}/dup-cl`)).status).toBe(404);
  });

  it('bytes past the first Content-Length never run as a request of their own', async () => {
    const smuggled = cmBody('smuggled');
    const inner = `POST ${CM} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nContent-Type: application/json\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}`;
    const outer = cmBody('outer');
    const r = await exchange(
      s,
      `POST ${CM} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nContent-Type: application/json\r\nContent-Length: ${outer.length}\r\nContent-Length: ${outer.length + inner.length}\r\n\r\n${outer}${inner}`,
    );
    // node answers 400; uWS, which has already parsed the smuggled bytes as a request by the
    // time the first one is refused, closes the connection instead: either way nothing runs.
    expect(statuses(r.text).every((c) => c === 400)).toBe(true);
    expect(r.closed).toBe(true);
    expect((await request(s, 'GET', `${CM}/smuggled`)).status).toBe(404);
    expect((await request(s, 'GET', `${CM}/outer`)).status).toBe(404);
  });

  it('repeated Content-Length headers that agree are one', async () => {
    const body = cmBody('same-cl');
    const r = await exchange(s, `POST ${CM} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    // (as Go does; node's parser refuses any repeat, which is safe too)
    expect(statuses(r.text)).toEqual([HTTP2 ? 400 : 201]);
  });

  it('a Transfer-Encoding other than chunked is refused, and nothing runs', async () => {
    const body = cmBody('te-gzip');
    const r = await exchange(s, `POST ${CM} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n${body}`);
    // Go's 501; uWS, which has parsed the body as the next request by then, closes the connection itself
    if (HTTP2) expect(statuses(r.text)).toEqual([501]);
    else expect(statuses(r.text).every((c) => c === 501)).toBe(true);
    if (HTTP2) expect(r.text).toContain('\r\n\r\nUnsupported transfer encoding');
    expect(r.closed).toBe(true);
    expect((await request(s, 'GET', `${CM}/te-gzip`)).status).toBe(404);
  });

  it('a chunked body is read', async () => {
    const body = cmBody('chunked');
    const half = body.length >> 1;
    const chunk = (b: string) => `${b.length.toString(16)}\r\n${b}\r\n`;
    const r = await exchange(s, `POST ${CM} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunk(body.slice(0, half))}${chunk(body.slice(half))}0\r\n\r\n`);
    expect(statuses(r.text)).toEqual([201]);
  });

  it('a header value with a bare CR or LF never runs the request', async () => {
    for (const bad of ['a\rb', 'a\nb']) {
      const body = cmBody('crlf');
      const r = await exchange(s, `POST ${CM} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nX-Bad: ${bad}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`, 1000);
      // node answers 400 (as Go); this uWS build never hands such a request over, and closes
      // the connection after its 10 s idle time without a response.
      if (HTTP2) expect(r.text).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n[^]*\r\n\r\n400 Bad Request$/);
      else expect(statuses(r.text)).toEqual([]);
      expect((await request(s, 'GET', `${CM}/crlf`)).status).toBe(404);
    }
  });

  it('kubectl impersonating a user with 38 groups is served (the most the uWS front takes)', async () => {
    const groups = Array.from({ length: 38 }, (_, i) => `--as-group=group-${i}`);
    const r = await kubectl(s, ['auth', 'whoami', '-o', 'json', '--as=jane', ...groups]);
    expect(r.code, r.stderr).toBe(0);
    const review = JSON.parse(r.stdout);
    expect(review.status.userInfo.username).toBe('jane');
    expect(review.status.userInfo.groups).toContain('group-37');
  });

  // What this uWS build refuses before our code runs, by dropping the connection (see the
  // head of src/http/uws-transport.ts): measured here, so that a change of build shows.
  it.skipIf(HTTP2)('uWS: 48 header lines are served, 49 get no response (its compiled-in limit)', async () => {
    // Host, Authorization and Connection, and n - 3 more (anonymous is off under AlwaysAllow)
    const lines = (n: number) => Array.from({ length: n - 3 }, (_, i) => `X-H${i}: v\r\n`).join('');
    const auth = `Authorization: Bearer ${s.token}\r\n`;
    const ok = await exchange(s, `GET /readyz HTTP/1.1\r\nHost: x\r\n${auth}${lines(48)}Connection: close\r\n\r\n`);
    expect(statuses(ok.text)).toEqual([200]);
    const over = await exchange(s, `GET /readyz HTTP/1.1\r\nHost: x\r\n${auth}${lines(49)}Connection: close\r\n\r\n`, 500);
    expect(statuses(over.text)).toEqual([]);
  });

  it.skipIf(HTTP2)('uWS: a header block that comes in two reads is served up to 4 KiB, not past it', async () => {
    const split = async (size: number) => {
      const c = await connect(s);
      c.socket.on('error', () => {});
      c.socket.write(`GET /readyz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nX-Big: ${'a'.repeat(size >> 1)}`);
      await new Promise((r) => setTimeout(r, 200));
      c.socket.write(`${'b'.repeat(size >> 1)}\r\nConnection: close\r\n\r\n`);
      await Promise.race([c.closed, new Promise((r) => setTimeout(r, 1000))]);
      c.socket.destroy();
      return statuses(c.text());
    };
    expect(await split(3000)).toEqual([200]);
    expect(await split(5000)).toEqual([]);
  });
});

describe('--front-end=http2: kube\'s header limits without client certificates (item 6)', () => {
  let s: TestServer;
  useServer((x) => (s = x), { args: HTTP2 ? [] : ['--front-end=http2'] });

  it('a Warning that carries a client\'s non-Latin-1 text goes out as its UTF-8 bytes, and the server serves on', async () => {
    // (node's writeHead threw on it, and the error path threw again: one request ended the process)
    for (const path of ['', '?fieldValidation=Warn']) {
      const r = await request(s, 'POST', `${CM}${path}`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `warn-euro${path ? '-2' : ''}` }, data: { a: '1' }, 'spéc€\u0001😀': 1 });
      expect(r.status).toBe(201);
      const w = String(r.headers.warning);
      expect(Buffer.from(w, 'latin1').toString('utf8')).toContain('spéc€');
    }
    expect((await request(s, 'GET', '/readyz')).status).toBe(200);
  });

  it('60 header lines and 8 KiB of headers split over two writes are served', async () => {
    const lines = Array.from({ length: 60 }, (_, i) => `X-H${i}: v\r\n`).join('');
    const many = await exchange(s, `GET /readyz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\n${lines}Connection: close\r\n\r\n`);
    expect(statuses(many.text)).toEqual([200]);
    const c = await connect(s);
    c.socket.write(`GET /readyz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nX-Big: ${'a'.repeat(4096)}`);
    await new Promise((r) => setTimeout(r, 200));
    c.socket.write(`${'b'.repeat(4096)}\r\nConnection: close\r\n\r\n`);
    await Promise.race([c.closed, new Promise((r) => setTimeout(r, 3000))]);
    c.socket.destroy();
    expect(statuses(c.text())).toEqual([200]);
  });
});

describe('header limits of the node:http2 front end (item 6)', () => {
  let s: TestServer;
  useServer((x) => (s = x), { args: HTTP2 ? [] : ['--client-ca-file', CA_FILE()] });

  const groupHeaders = (n: number) => Array.from({ length: n }, (_, i) => `Impersonate-Group: group-${i}\r\n`).join('');

  it('HTTP/1.1: 300 impersonated groups are served; a header block past 1 MiB and 4 KiB is 431', async () => {
    const body = JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
    const who = await exchange(
      s,
      `POST /apis/authentication.k8s.io/v1/selfsubjectreviews HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nImpersonate-User: jane\r\n${groupHeaders(300)}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(statuses(who.text)).toEqual([201]);
    expect(who.text).toContain('"group-299"');
    // Go reads 4 KiB past its 1 MiB before it answers 431 (measured on kube-apiserver 1.24)
    const block = (n: number) => exchange(s, `GET /readyz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nX-Big: ${'a'.repeat(n)}\r\nConnection: close\r\n\r\n`);
    expect(statuses((await block((1 << 20) + 3800)).text)).toEqual([200]);
    expect(statuses((await block((1 << 20) + 4200)).text)).toEqual([431]);
  });

  it('kubectl (HTTP/2) impersonating a user with 300 groups is served', async () => {
    const groups = Array.from({ length: 300 }, (_, i) => `--as-group=group-${i}-${'x'.repeat(40)}`);
    const r = await kubectl(s, ['auth', 'whoami', '-o', 'json', '--as=jane', ...groups]);
    expect(r.code, r.stderr).toBe(0);
    const got = JSON.parse(r.stdout).status.userInfo.groups;
    expect(got).toHaveLength(301);
    expect(got).toContain(`group-299-${'x'.repeat(40)}`);
  });
});

describe('bodies on the node:http2 front end over HTTP/2 (item 7)', () => {
  let s: TestServer;
  useServer((x) => (s = x), { args: HTTP2 ? [] : ['--client-ca-file', CA_FILE()] });

  it('an upload refused from its headers is answered at once, and its stream reset', async () => {
    const session = http2.connect(`https://127.0.0.1:${s.port}`, { ca: s.ca, servername: 'localhost' });
    session.on('error', () => {});
    try {
      const stream = session.request({ ':method': 'POST', ':path': CM, authorization: 'Bearer not-a-token', 'content-type': 'application/json', 'content-length': String(3 << 20) });
      stream.on('error', () => {});
      stream.write(Buffer.alloc(256 * 1024, 'x'));
      const status = await new Promise<number>((resolve) => stream.on('response', (h) => resolve(Number(h[':status']))));
      expect(status).toBe(401);
      await until(() => stream.closed, 5000);
      // the session serves on
      const ok = session.request({ ':path': '/readyz', authorization: `Bearer ${s.token}` });
      const code = await new Promise<number>((resolve) => ok.on('response', (h) => resolve(Number(h[':status']))));
      ok.resume();
      expect(code).toBe(200);
    } finally {
      session.close();
    }
  });
});

describe('bodies are read only once the chain admitted the request (item 7)', () => {
  let s: TestServer;
  useServer((x) => (s = x), { args: ['--anonymous-auth=true', '--authorization-mode=RBAC'] });

  it('slow uploads refused from their headers (401, 403) are answered at once, and their bodies not kept', async () => {
    const N = 100;
    const SENT = 2 << 20;
    const before = rssBytes(s);
    const conns = await Promise.all(Array.from({ length: N }, () => connect(s)));
    const chunk = Buffer.alloc(SENT, 'x');
    conns.forEach((c, i) => {
      c.socket.on('error', () => {});
      const auth = i % 2 ? 'Authorization: Bearer not-a-token\r\n' : '';
      // 3 MiB declared, 2 MiB sent, the rest never
      c.socket.write(`POST ${CM} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: ${3 << 20}\r\n\r\n`);
      c.socket.write(chunk);
    });
    try {
      await until(() => conns.every((c) => statuses(c.text()).length > 0), 20_000);
      conns.forEach((c, i) => expect(statuses(c.text())).toEqual([i % 2 ? 401 : 403]));
      // the client is told not to go on (node's HTTP/1.1 drops the rest and keeps the connection)
      if (!HTTP2) for (const c of conns) expect(c.text()).toMatch(/^Connection: close\r$/im);
      // What the bodies sent would have cost, 200 MiB, is not held. (uWS drops what comes
      // after the answer as it reads it; node reads the rest of each body into buffers it
      // drops, which its garbage collector takes back in its own time.)
      await new Promise((r) => setTimeout(r, 500));
      const grown = rssBytes(s) - before;
      expect(grown, `RSS grew ${(grown / 2 ** 20).toFixed(1)} MiB`).toBeLessThan((HTTP2 ? 100 : 32) << 20);
    } finally {
      for (const c of conns) c.socket.destroy();
    }
    // the server serves on
    expect((await request(s, 'GET', '/readyz')).status).toBe(200);
  }, 60_000);

  it('a small body refused from the headers is drained, and the connection kept (as Go keeps it up to 256 KiB)', async () => {
    const c = await connect(s);
    try {
      const body = cmBody('small-refused');
      c.socket.write(`POST ${CM} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer not-a-token\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      await until(() => statuses(c.text()).length === 1, 5000);
      expect(c.text()).not.toMatch(/^Connection: close/im);
      c.socket.write(`GET /readyz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\n\r\n`);
      await until(() => statuses(c.text()).length === 2, 5000);
      expect(statuses(c.text())).toEqual([401, 200]);
    } finally {
      c.socket.destroy();
    }
  });

  it('an anonymous body past --max-request-body-bytes is refused for who sends it (403), as kube checks the size in its handler', async () => {
    const r = await exchange(s, `POST ${CM} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${10 << 20}\r\n\r\n{`, 2000);
    expect(statuses(r.text)).toEqual([403]);
  });

  it('an authorized body past the limit is 413; a large one within it is read whole', async () => {
    const big = await exchange(s, `POST ${CM} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nContent-Type: application/json\r\nContent-Length: ${10 << 20}\r\n\r\n{`, 2000);
    expect(statuses(big.text)).toEqual([413]);
    expect(big.text).toContain('Request entity too large: limit is 3145728');
    // a chunked one, refused once past the limit as it comes
    const c = await connect(s);
    c.socket.on('error', () => {});
    c.socket.write(`POST ${CM} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`);
    const piece = 'x'.repeat(256 * 1024);
    for (let i = 0; i < 14 && statuses(c.text()).length === 0; i++) {
      c.socket.write(`${piece.length.toString(16)}\r\n${piece}\r\n`);
      await new Promise((r) => setTimeout(r, 20));
    }
    await until(() => statuses(c.text()).length > 0, 5000);
    expect(statuses(c.text())).toEqual([413]);
    c.socket.destroy();
    const ok = await request(s, 'POST', CM, cmBody('large', 1_000_000));
    expect(ok.status).toBe(201);
    expect((await request(s, 'GET', `${CM}/large`)).json().data.big.length).toBe(1_000_000);
  });
});

describe('the budget of request bodies in flight (item 7)', () => {
  let s: TestServer;
  // the default --max-request-body-bytes: a budget of 64 such bodies, 192 MiB
  const MAX = 3 << 20;
  useServer((x) => (s = x));

  it('admitted bodies past the budget are 429 with Retry-After; the budget comes back when they end', async () => {
    const N = 70;
    const conns = await Promise.all(Array.from({ length: N }, () => connect(s)));
    try {
      for (const c of conns) {
        c.socket.on('error', () => {});
        // each declares the largest body, and sends a little of it
        c.socket.write(`POST ${CM} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nContent-Type: application/json\r\nContent-Length: ${MAX}\r\n\r\n{`);
      }
      await until(() => conns.filter((c) => statuses(c.text()).length > 0).length >= N - 64, 20_000);
      await new Promise((r) => setTimeout(r, 300));
      const refused = conns.filter((c) => statuses(c.text()).length > 0);
      expect(refused.length).toBe(N - 64);
      for (const c of refused) {
        expect(statuses(c.text())).toEqual([429]);
        expect(c.text()).toMatch(/^Retry-After: 1\r$/im);
        expect(c.text()).toContain('"reason":"TooManyRequests"');
      }
    } finally {
      for (const c of conns) c.socket.destroy();
    }
    // once those clients are gone, a body is taken again
    await until(async () => (await request(s, 'POST', CM, cmBody('after-budget'))).status === 201, 10_000);
  }, 60_000);
});

/** A client CA for a node:http2 server (its --client-ca-file): any will do, no client certificate is used here. */
function CA_FILE(): string {
  const d = mkdtempSync(join(tmpdir(), 'kubeshard-hardening-ca-'));
  execFileSync('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ca.key'], { cwd: d, stdio: 'ignore' });
  execFileSync('openssl', ['req', '-x509', '-new', '-key', 'ca.key', '-days', '2', '-subj', '/CN=hardening-ca', '-out', 'ca.crt'], { cwd: d, stdio: 'ignore' });
  return join(d, 'ca.crt');
}
