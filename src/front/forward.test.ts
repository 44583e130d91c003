import { describe, it, expect, afterEach, vi } from 'vitest';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { ForwardClient, FORWARD_WINDOW_BYTES, serveForwarded, type ForwardServer } from './forward.js';
import { listPart, streamChunk, testHandler } from './forward-test-worker.js';
import type { ApiRequest, HeaderList, ResponseSink } from '../http/types.js';
import { RequestBase } from '../http/transport-base.js';

const WORKER = fileURLToPath(new URL('../../dist/src/front/forward-test-worker.js', import.meta.url));

/** The client's real response, as a transport's sink would take the calls: recorded. */
class FakeRes implements ResponseSink {
  aborted = false;
  calls: string[] = [];
  status = 0;
  headers: HeaderList = [];
  body: Buffer | null = null;
  parts: number | null = null;
  chunks: Buffer[] = [];
  /** what write() answers: false is a socket pushing back */
  writable = true;
  /** writes that came after the response was over */
  late = 0;
  closed = false;
  ended = false;
  done = false;
  private abortFns: Array<() => void> = [];
  private doneFns: Array<() => void> = [];
  private drainFns: Array<() => void> = [];

  send(status: number, headers: HeaderList, body: string | Uint8Array): void {
    this.calls.push('send');
    this.status = status;
    this.headers = headers;
    this.body = Buffer.from(body);
    this.finish();
  }
  sendParts(status: number, headers: HeaderList, parts: Uint8Array[]): void {
    this.calls.push('sendParts');
    this.status = status;
    this.headers = headers;
    this.parts = parts.length;
    this.body = Buffer.concat(parts);
    this.finish();
  }
  startStream(status: number, headers: HeaderList): void {
    this.calls.push('startStream');
    this.status = status;
    this.headers = headers;
  }
  write(chunk: string | Uint8Array): boolean {
    if (this.done || this.aborted) {
      this.late++;
      return false;
    }
    this.calls.push('write');
    this.chunks.push(Buffer.from(chunk));
    return this.writable;
  }
  end(): void {
    this.calls.push('end');
    this.ended = true;
    this.finish();
  }
  cork(fn: () => void): void {
    fn();
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
    return 0;
  }
  close(): void {
    this.calls.push('close');
    this.closed = true;
    this.abort();
  }
  /** the client goes away */
  abort(): void {
    if (this.aborted || this.done) return;
    this.aborted = true;
    for (const f of this.abortFns) f();
    this.finish();
  }
  /** the socket took what it held */
  drain(): void {
    for (const f of this.drainFns) f();
  }
  header(name: string): string | undefined {
    return this.headers.find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1];
  }
  private finish(): void {
    if (this.done) return;
    this.done = true;
    for (const f of this.doneFns) f();
  }
}

class Req extends RequestBase {
  remoteAddress = '10.1.2.3';
}

function request(method: string, pathAndQuery: string, headers: Record<string, string> = {}, body: Buffer | null = null): ApiRequest {
  const q = pathAndQuery.indexOf('?');
  const r = new Req(method, q < 0 ? pathAndQuery : pathAndQuery.slice(0, q), q < 0 ? '' : pathAndQuery.slice(q + 1), headers);
  r.body = body;
  return r as ApiRequest;
}

type Event = Record<string, unknown>;

interface Setup {
  client: ForwardClient;
  events: Event[];
  /** messages posted each way */
  posted: { toServer: number; toClient: number };
  server?: ForwardServer;
  worker?: Worker;
  serverInFlight(): Promise<number>;
}

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

function countPosts(port: MessagePort, into: { n: number }): void {
  const post = port.postMessage.bind(port);
  port.postMessage = ((v: unknown, t?: readonly ArrayBuffer[]) => {
    into.n++;
    post(v, t as never);
  }) as typeof port.postMessage;
}

/** Both sides on this thread, over a MessageChannel. */
function inProcess(): Setup {
  const { port1, port2 } = new MessageChannel();
  const events: Event[] = [];
  const toServer = { n: 0 };
  const toClient = { n: 0 };
  countPosts(port1, toServer);
  countPosts(port2, toClient);
  const server = serveForwarded(port2, testHandler((e) => events.push(e), () => server.inFlight));
  const client = new ForwardClient(port1);
  cleanups.push(() => {
    port1.close();
    port2.close();
  });
  return {
    client, events, server,
    get posted() {
      return { toServer: toServer.n, toClient: toClient.n };
    },
    serverInFlight: async () => server.inFlight,
  };
}

/** The receiving side on a worker thread (the compiled worker script). */
function onWorker(): Setup {
  if (!existsSync(WORKER)) throw new Error(`${WORKER} is missing: build first (npx tsc -p tsconfig.json)`);
  const { port1, port2 } = new MessageChannel();
  const worker = new Worker(WORKER, { workerData: { forwardTestPort: port2 }, transferList: [port2] });
  const events: Event[] = [];
  worker.on('message', (e: Event) => events.push(e));
  const toServer = { n: 0 };
  countPosts(port1, toServer);
  const client = new ForwardClient(port1);
  cleanups.push(async () => {
    port1.close();
    await worker.terminate();
  });
  return {
    client, events, worker,
    posted: { toServer: 0, toClient: 0 },
    async serverInFlight() {
      const res = new FakeRes();
      client.forward(request('GET', '/inflight'), res);
      await vi.waitFor(() => expect(res.done).toBe(true));
      return Number(res.body!.toString());
    },
  };
}

async function run(client: ForwardClient, req: ApiRequest, res = new FakeRes()): Promise<FakeRes> {
  client.forward(req, res);
  await vi.waitFor(() => expect(res.done).toBe(true), { timeout: 10_000 });
  return res;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each([
  ['in-process', inProcess],
  ['on a worker', onWorker],
])('forwarding (%s)', (_name, setup) => {
  it('carries a request with its body, headers and query, and its answer back', async () => {
    const s = setup();
    // a Buffer that is all of its ArrayBuffer: its bytes move
    const big = Buffer.allocUnsafeSlow(300_000);
    randomBytes(300_000).copy(big);
    const expected = Buffer.from(big);
    const req = request('POST', '/echo?x=1&y=a%20b&x=2', { 'x-test': 'yes', 'content-type': 'application/json' }, big);
    req.clientCert = { commonName: 'alice', organizations: ['dev', 'ops'] };
    req.warnings = ['from a filter'];
    // the real response adds these itself (the transport's part): not carried
    req.responseHeaders = [['Audit-Id', 'abc']];
    const res = await run(s.client, req);
    expect(res.status).toBe(200);
    expect(res.calls).toEqual(['send']);
    expect(res.body!.equals(expected)).toBe(true);
    expect(res.header('X-Method')).toBe('POST');
    expect(JSON.parse(res.header('X-Query')!)).toEqual([['x', '1'], ['y', 'a b'], ['x', '2']]);
    expect(res.header('X-Test')).toBe('yes');
    expect(res.header('X-Remote')).toBe('10.1.2.3');
    expect(res.header('X-Cert')).toBe('alice/dev,ops');
    expect(res.header('X-Read-Body')).toBe('undefined');
    expect(res.header('X-Warnings')).toBe('["from a filter"]');
    expect(res.header('X-Own')).toBe('here');
    expect(res.header('Audit-Id')).toBeUndefined();
    expect(big.byteLength).toBe(0); // transferred, not copied

    // a pooled slice is copied: the pool's other Buffers keep their bytes
    const small = Buffer.from('{"small":true}');
    const neighbour = Buffer.from('neighbour');
    const res2 = await run(s.client, request('PUT', '/echo', {}, small));
    expect(res2.body!.toString()).toBe('{"small":true}');
    expect(small.toString()).toBe('{"small":true}');
    expect(neighbour.toString()).toBe('neighbour');

    // no body, and a certificate refused
    const req3 = request('GET', '/echo');
    req3.clientCertError = 'unknown authority';
    const res3 = await run(s.client, req3);
    expect(res3.header('X-Body-Null')).toBe('true');
    expect(res3.header('X-Cert-Error')).toBe('unknown authority');
    expect(res3.body!.length).toBe(0);

    const res4 = await run(s.client, request('GET', '/text'));
    expect(res4.body!.toString()).toBe('héllo, wörld');
  });

  it('carries sendParts of 10,000 parts in one message', async () => {
    const s = setup();
    const res = await run(s.client, request('GET', '/parts?n=10000'));
    expect(res.calls).toEqual(['sendParts']);
    const expected = Buffer.concat(Array.from({ length: 10_000 }, (_, i) => listPart(i)));
    expect(res.body!.length).toBe(expected.length);
    expect(res.body!.equals(expected)).toBe(true);
  });

  it('holds a stream back past the window until the client takes it, bytes in order', async () => {
    const s = setup();
    const res = new FakeRes();
    res.writable = false; // the client reads nothing yet
    const size = 64 * 1024;
    const chunks = 40;
    s.client.forward(request('GET', `/stream?chunks=${chunks}&size=${size}`), res);
    const firstBlock = Math.floor(FORWARD_WINDOW_BYTES / size); // the write that passes the window
    await vi.waitFor(() => expect(s.events.some((e) => e.event === 'blocked')).toBe(true));
    expect(s.events[0]).toEqual({ event: 'blocked', path: '/stream', at: firstBlock, buffered: (firstBlock + 1) * size });
    await vi.waitFor(() => expect(res.chunks.length).toBe(firstBlock + 1));
    // nothing acknowledged: the handler waits, no more bytes come
    await sleep(50);
    expect(res.chunks.length).toBe(firstBlock + 1);
    expect(s.events.length).toBe(1);
    // the socket drains and takes what comes next
    res.writable = true;
    res.drain();
    await vi.waitFor(() => expect(res.ended).toBe(true), { timeout: 10_000 });
    expect(s.events[1]).toMatchObject({ event: 'drained', buffered: 0 });
    expect(res.calls[0]).toBe('startStream');
    expect(res.calls.at(-1)).toBe('end');
    const all = Buffer.concat(res.chunks);
    expect(all.length).toBe(chunks * size);
    for (let i = 0; i < chunks; i++) expect(all.subarray(i * size, (i + 1) * size).equals(streamChunk(i, size))).toBe(true);
    expect(s.client.inFlight).toBe(0);
    expect(await s.serverInFlight()).toBe(0);
  });

  it('sends the writes of one cork, with the end, as one chunk', async () => {
    const s = setup();
    const res = await run(s.client, request('GET', '/cork'));
    expect(res.calls).toEqual(['startStream', 'write', 'end']);
    expect(Buffer.concat(res.chunks).toString()).toBe('abcd');
  });

  it('tells the other side when the client leaves mid-stream, and writes nothing after', async () => {
    const s = setup();
    const res = new FakeRes();
    s.client.forward(request('GET', '/watch'), res);
    await vi.waitFor(() => expect(res.chunks.length).toBeGreaterThanOrEqual(3));
    res.abort();
    expect(s.client.inFlight).toBe(0);
    await vi.waitFor(() => expect(s.events.some((e) => e.event === 'aborted')).toBe(true));
    expect(s.events.find((e) => e.event === 'aborted')).toEqual({ event: 'aborted', path: '/watch', writeAfter: false, aborted: true });
    await vi.waitFor(() => expect(s.events.some((e) => e.event === 'done')).toBe(true));
    const seen = res.chunks.length;
    await sleep(30);
    expect(res.chunks.length).toBe(seen);
    expect(res.late).toBe(0);
    expect(res.calls.filter((c) => c !== 'write')).toEqual(['startStream']);
    expect(await s.serverInFlight()).toBe(0);
  });

  it('answers a handler that throws with its Status', async () => {
    const s = setup();
    const res = await run(s.client, request('GET', '/throw'));
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body!.toString())).toMatchObject({ kind: 'Status', code: 400, reason: 'BadRequest', message: 'boom' });
  });

  it('leaves no entries behind after many requests of every kind', async () => {
    const s = setup();
    const all: Array<Promise<FakeRes>> = [];
    for (let i = 0; i < 300; i++) {
      const kind = i % 5;
      if (kind === 0) all.push(run(s.client, request('POST', '/echo', {}, Buffer.from(`body ${i}`))));
      else if (kind === 1) all.push(run(s.client, request('GET', '/parts?n=20')));
      else if (kind === 2) all.push(run(s.client, request('GET', '/stream?chunks=3&size=1000')));
      else if (kind === 3) all.push(run(s.client, request('GET', '/cork')));
      else {
        // a client that leaves at once
        const res = new FakeRes();
        s.client.forward(request('GET', '/hang'), res);
        res.abort();
      }
    }
    const done = await Promise.all(all);
    expect(done.every((r) => r.status === 200)).toBe(true);
    expect(s.client.inFlight).toBe(0);
    await vi.waitFor(async () => expect(await s.serverInFlight()).toBe(0));
  });
});

describe('forwarding, the edges', () => {
  it('is one message each way for a plain request', async () => {
    const s = inProcess();
    await run(s.client, request('POST', '/echo', {}, Buffer.from('x')));
    expect(s.posted).toEqual({ toServer: 1, toClient: 1 });
  });

  it('copies a body the audit record still has to read, rather than moving it', async () => {
    const s = inProcess();
    const body = Buffer.allocUnsafeSlow(10_000).fill(7);
    const req = request('POST', '/echo', {}, body);
    req.audit = { annotate() {}, panicked() {}, impersonated() {} };
    const res = await run(s.client, req);
    expect(res.body!.equals(Buffer.alloc(10_000, 7))).toBe(true);
    expect(body.equals(Buffer.alloc(10_000, 7))).toBe(true);
  });

  it('answers 503 for unanswered requests and closes started streams when the receiving thread dies', async () => {
    const s = onWorker();
    const hang1 = new FakeRes();
    const hang2 = new FakeRes();
    const watch = new FakeRes();
    s.client.forward(request('GET', '/hang'), hang1);
    s.client.forward(request('POST', '/hang', {}, Buffer.from('{}')), hang2);
    s.client.forward(request('GET', '/watch'), watch);
    await vi.waitFor(() => expect(watch.chunks.length).toBeGreaterThan(0));
    expect(s.client.inFlight).toBe(3);
    await s.worker!.terminate();
    await vi.waitFor(() => expect([hang1.done, hang2.done, watch.done]).toEqual([true, true, true]));
    for (const r of [hang1, hang2]) {
      expect(r.status).toBe(503);
      expect(r.header('Content-Type')).toBe('application/json');
      expect(JSON.parse(r.body!.toString())).toEqual({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'the thread serving this request stopped before it answered; the request may or may not have been applied',
        reason: 'ServiceUnavailable',
        code: 503,
      });
    }
    expect(watch.closed).toBe(true);
    expect(watch.calls.filter((c) => c !== 'write')).toEqual(['startStream', 'close']);
    expect(s.client.inFlight).toBe(0);
    // and what comes after is answered at once
    const late = await run(s.client, request('GET', '/echo'));
    expect(late.status).toBe(503);
  });

  it('works over a Worker itself, and answers 503 once it exits', async () => {
    if (!existsSync(WORKER)) throw new Error(`${WORKER} is missing: build first (npx tsc -p tsconfig.json)`);
    const worker = new Worker(WORKER, { workerData: { forwardTestParent: true } });
    cleanups.push(() => worker.terminate());
    const client = new ForwardClient(worker);
    const res = await run(client, request('POST', '/echo?a=1', {}, Buffer.from('over the worker')));
    expect(res.body!.toString()).toBe('over the worker');
    const hang = new FakeRes();
    client.forward(request('GET', '/hang'), hang);
    await worker.terminate();
    await vi.waitFor(() => expect(hang.status).toBe(503));
    expect(client.inFlight).toBe(0);
  });

  it('hands requests back when the receiving side stops serving', async () => {
    const s = inProcess();
    const hang = new FakeRes();
    const watch = new FakeRes();
    s.client.forward(request('GET', '/hang'), hang);
    s.client.forward(request('GET', '/watch'), watch);
    await vi.waitFor(() => expect(watch.chunks.length).toBeGreaterThan(0));
    s.server!.close();
    expect(s.server!.inFlight).toBe(0);
    expect(s.events.filter((e) => e.event === 'aborted').map((e) => e.path).sort()).toEqual(['/hang', '/watch']);
    await vi.waitFor(() => expect([hang.done, watch.done]).toEqual([true, true]));
    expect(hang.status).toBe(503);
    expect(watch.closed).toBe(true);
    expect(s.client.inFlight).toBe(0);
  });

  it('stops its requests on the other side when the sending side closes', async () => {
    const s = inProcess();
    const hang = new FakeRes();
    s.client.forward(request('GET', '/hang'), hang);
    await vi.waitFor(() => expect(s.server!.inFlight).toBe(1));
    s.client.close();
    expect(hang.status).toBe(503);
    expect(s.client.inFlight).toBe(0);
    await vi.waitFor(() => expect(s.events).toContainEqual({ event: 'aborted', path: '/hang' }));
    expect(s.server!.inFlight).toBe(0);
  });

  it('aborts the receiving side\'s requests when the sending thread goes away', async () => {
    const { port1, port2 } = new MessageChannel();
    const events: Event[] = [];
    const server = serveForwarded(port2, testHandler((e) => events.push(e), () => server.inFlight));
    const client = new ForwardClient(port1);
    client.forward(request('GET', '/watch'), new FakeRes());
    await vi.waitFor(() => expect(server.inFlight).toBe(1));
    port1.close();
    await vi.waitFor(() => expect(events).toContainEqual({ event: 'aborted', path: '/watch', writeAfter: false, aborted: true }));
    expect(server.inFlight).toBe(0);
  });
});
