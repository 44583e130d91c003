// Issue 22, Shutdown: SIGTERM runs kube's graceful termination (src/http/lifecycle.ts,
// server.ts shutdown). During --shutdown-delay-duration /readyz fails while requests are still
// served; then, with --shutdown-send-retry-after, new requests get 429 with Retry-After and
// Connection: close while the request in flight completes; the process exits 0. On each front
// end, and with more than one front thread.
import { describe, it, expect, afterEach } from 'vitest';
import https from 'node:https';
import http2 from 'node:http2';
import { openWatch, request, startServer, until, type Reply, type TestServer } from './helpers/server.js';

let servers: TestServer[] = [];
afterEach(() => {
  for (const s of servers) s.cleanup();
  servers = [];
});

async function start(args: string[]): Promise<TestServer> {
  const s = await startServer({ args });
  servers.push(s);
  return s;
}

/** One request on a connection of its own (no pooling: a refused connection shows as such). */
function fresh(s: TestServer, path: string): Promise<Reply> {
  return request(s, 'GET', path, undefined, {}, new https.Agent({ keepAlive: false, ca: s.ca }));
}

function exited(s: TestServer): Promise<number | null> {
  return new Promise((res) => {
    if (s.proc.exitCode !== null) return res(s.proc.exitCode);
    s.proc.once('exit', (code) => res(code));
  });
}

/** A GET that the server holds for a few seconds before answering: a list at a resource version storage has not reached. */
const SLOW_LIST = '/api/v1/namespaces?resourceVersion=999999999&resourceVersionMatch=NotOlderThan';

const FRONTS: Array<[string, string[]]> = [
  ['uWS', ['--front-end=uws', '--front-threads=1']],
  ['node:http2', ['--front-end=http2']],
  ['uWS with two front threads', ['--front-end=uws', '--front-threads=2']],
];

describe.each(FRONTS)('graceful shutdown with --shutdown-send-retry-after (%s)', (_name, frontArgs) => {
  it('fails readyz during the delay while serving, then 429s new requests while the one in flight completes, and exits 0', async () => {
    const s = await start([...frontArgs, '--shutdown-delay-duration=2s', '--shutdown-send-retry-after']);
    expect((await request(s, 'GET', '/readyz')).status).toBe(200);
    const exit = exited(s);
    s.proc.kill('SIGTERM');

    // the delay: /readyz fails on its shutdown check, everything else is served as before
    const ready = await until(async () => {
      const r = await fresh(s, '/readyz?verbose');
      return r.status === 500 && r;
    });
    expect(ready.body).toContain('[-]shutdown failed: reason withheld\n');
    expect(ready.body.endsWith('readyz check failed\n')).toBe(true);
    expect((await fresh(s, '/livez')).status).toBe(200);
    expect((await fresh(s, '/api/v1/namespaces/default')).status).toBe(200);
    expect((await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'during-delay' } })).status).toBe(201);
    // a request the server holds for a while, in flight when the drain begins
    const slow = fresh(s, SLOW_LIST);
    slow.catch(() => {});

    // the drain: new requests are told to go elsewhere, the connection closed after the answer
    const refused = await until(async () => {
      const r = await fresh(s, '/api/v1/namespaces/default');
      return r.status === 429 && r;
    });
    expect(refused.headers['retry-after']).toBe('5');
    expect(refused.headers['connection']).toBe('close');
    expect(refused.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(refused.body).toBe('The apiserver is shutting down, please try again later.\n');
    // health probes are not refused
    expect((await fresh(s, '/livez')).status).toBe(200);
    // over HTTP/2, which has no Connection header, the 429 comes with a GOAWAY (as Go's server sends for one)
    if (frontArgs.includes('--front-end=http2')) {
      const session = http2.connect(s.url, { ca: s.ca });
      const goaway = new Promise<void>((res) => session.once('goaway', () => res()));
      const h2 = await new Promise<number>((res, rej) => {
        const st = session.request({ ':path': '/api/v1/namespaces/default', authorization: `Bearer ${s.token}` });
        st.on('response', (h) => res(Number(h[':status'])));
        st.on('error', rej);
        st.resume();
        st.end();
      });
      expect(h2).toBe(429);
      await goaway;
      session.destroy();
    }

    // the request in flight got its whole answer (storage's own 504 after its wait), not a reset
    const r = await slow;
    expect(r.status).toBe(504);
    expect(r.json().message).toMatch(/^Timeout: Too large resource version/);

    expect(await exit).toBe(0);
    const log = s.output();
    const order = ['ShutdownInitiated', 'AfterShutdownDelayDuration', 'NotAcceptingNewRequest', 'InFlightRequestsDrained', 'HTTPServerStoppedListening'].map((n) => log.indexOf(`name="${n}"`));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(log).toContain('[graceful-termination] apiserver is exiting');
  }, 60_000);
});

describe('graceful shutdown without --shutdown-send-retry-after', () => {
  it('serves through the delay, then closes the listener while the request in flight completes', async () => {
    const s = await start(['--front-threads=1', '--shutdown-delay-duration=1s']);
    const exit = exited(s);
    // a keep-alive connection opened before, which outlives the listener
    const kept = new https.Agent({ keepAlive: true, ca: s.ca, maxSockets: 1 });
    expect((await request(s, 'GET', '/api/v1/namespaces/default', undefined, {}, kept)).status).toBe(200);
    s.proc.kill('SIGTERM');
    await until(async () => (await fresh(s, '/readyz')).status === 500);
    const slow = fresh(s, SLOW_LIST);
    slow.catch(() => {});
    // the listener closes once the delay is over: new connections are refused
    const err = await until(async () => {
      try {
        await fresh(s, '/api/v1/namespaces/default');
        return false;
      } catch (e) {
        return e as NodeJS.ErrnoException;
      }
    });
    expect(err.code).toBe('ECONNREFUSED');
    // a request on a connection still open is told to retry (kube's WithWaitGroup)
    const onKept = await request(s, 'GET', '/api/v1/namespaces/default', undefined, {}, kept).catch(() => null);
    if (onKept) {
      expect(onKept.status).toBe(503);
      expect(onKept.headers['retry-after']).toBe('1');
      expect(onKept.json()).toMatchObject({ kind: 'Status', message: 'apiserver is shutting down', reason: 'ServiceUnavailable', code: 503 });
    }
    expect((await slow).status).toBe(504);
    expect(await exit).toBe(0);
  }, 60_000);

  it('ends open watches within --shutdown-watch-termination-grace-period, cleanly', async () => {
    const s = await start(['--front-threads=1', '--shutdown-watch-termination-grace-period=20s']);
    const exit = exited(s);
    const w = openWatch(s, '/api/v1/namespaces/default/configmaps?watch=true');
    expect(await w.status).toBe(200);
    expect((await request(s, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'seen' } })).status).toBe(201);
    await until(() => w.events.some((e) => e.object?.metadata?.name === 'seen'));
    s.proc.kill('SIGTERM');
    await until(() => w.ended(), 20_000);
    // the chunked stream ended with its last chunk: every line read parsed as an event
    expect(w.raw().endsWith('\n')).toBe(true);
    expect(await exit).toBe(0);
    expect(s.output()).toMatch(/active watch request\(s\) have drained .*activeWatchesBefore=1 activeWatchesAfter=0/);
  }, 60_000);
});
