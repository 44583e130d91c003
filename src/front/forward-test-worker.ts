// The receiving side's handlers for src/front/forward.test.ts, one per path, and the entry
// that serves them on a worker thread (the test runs them in-process too, on a
// MessageChannel). Compiled to dist/ by tsc: the test starts dist/src/front/forward-test-worker.js.
//
// Thread ownership: the thread that serves them (a test worker, or the test's own).
import { parentPort, workerData } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import type { ApiRequest, ResponseSink } from '../http/types.js';
import { serveForwarded } from './serve-forwarded.js';
import { errors } from '../errors.js';

/** What a handler tells the test (blocked writes, drains, aborts), beside its response. */
export type Report = (event: Record<string, unknown>) => void;

/** A streamed chunk the test can check: its index in the first 4 bytes, then (index & 255) repeated. */
export function streamChunk(i: number, size: number): Buffer {
  const b = Buffer.allocUnsafe(size).fill(i & 255);
  b.writeUInt32BE(i, 0);
  return b;
}

/** The i-th part of a parts answer: about 400 bytes. */
export function listPart(i: number): Buffer {
  return Buffer.from(`{"i":${i},"pad":"${'p'.repeat(380)}"},`);
}

export function testHandler(report: Report, inFlight: () => number): (req: ApiRequest, res: ResponseSink) => void {
  return (req, res) => {
    switch (req.path) {
      case '/echo':
        // as a filter here would set them: they go out with the answer
        req.responseHeaders = [['X-Own', 'here']];
        res.send(200, [
          ['X-Warnings', JSON.stringify(req.warnings ?? [])],
          ['X-Method', req.method],
          ['X-Query', JSON.stringify([...req.query])],
          ['X-Test', req.headers['x-test'] ?? ''],
          ['X-Remote', req.remoteAddress],
          ['X-Cert', req.clientCert ? `${req.clientCert.commonName}/${req.clientCert.organizations.join(',')}` : ''],
          ['X-Cert-Error', req.clientCertError ?? ''],
          ['X-Read-Body', String(req.readBody())],
          ['X-Body-Null', String(req.body === null)],
        ], req.body ?? new Uint8Array(0));
        return;
      case '/text':
        res.send(200, [['Content-Type', 'text/plain; charset=utf-8']], 'héllo, wörld');
        return;
      case '/parts': {
        const n = Number(req.query.get('n'));
        const parts: Uint8Array[] = [];
        for (let i = 0; i < n; i++) parts.push(listPart(i));
        res.sendParts(200, [['Content-Type', 'application/json']], parts);
        return;
      }
      case '/stream': {
        // writes until the sink pushes back, then waits for its drain, as a watcher does
        const chunks = Number(req.query.get('chunks'));
        const size = Number(req.query.get('size'));
        let i = 0;
        const pump = () => {
          while (i < chunks) {
            const ok = res.write(streamChunk(i, size));
            i++;
            if (!ok) {
              report({ event: 'blocked', path: req.path, at: i - 1, buffered: res.bufferedBytes() });
              return;
            }
          }
          report({ event: 'ended', path: req.path, buffered: res.bufferedBytes() });
          res.end();
        };
        res.onDrain(() => {
          report({ event: 'drained', path: req.path, buffered: res.bufferedBytes() });
          pump();
        });
        res.startStream(200, [['Content-Type', 'application/octet-stream']]);
        pump();
        return;
      }
      case '/cork':
        res.startStream(200, []);
        res.cork(() => {
          res.write('a');
          res.write(Buffer.from('bc'));
          res.write('d');
          res.end();
        });
        return;
      case '/watch': {
        // a stream that never ends by itself
        res.startStream(200, [['Content-Type', 'application/json']]);
        let n = 0;
        const timer = setInterval(() => res.write(`{"tick":${n++}}\n`), 2);
        res.onAborted(() => {
          clearInterval(timer);
          report({ event: 'aborted', path: req.path, writeAfter: res.write('late'), aborted: res.aborted });
        });
        res.onDone(() => report({ event: 'done', path: req.path }));
        return;
      }
      case '/hang':
        res.onAborted(() => report({ event: 'aborted', path: req.path }));
        return;
      case '/throw':
        throw errors.badRequest('boom');
      case '/inflight':
        // this request is one of them
        res.send(200, [], String(inFlight() - 1));
        return;
      default:
        res.send(404, [], 'not found');
    }
  };
}

const data = workerData as { forwardTestPort?: MessagePort; forwardTestParent?: boolean } | null;
if (data?.forwardTestPort !== undefined) {
  const port = data.forwardTestPort;
  const server = serveForwarded(port, testHandler((e) => parentPort!.postMessage(e), () => server.inFlight));
} else if (data?.forwardTestParent) {
  // requests over the worker's own port, reports beside them (the sending side ignores those)
  const server = serveForwarded(parentPort!, testHandler((e) => parentPort!.postMessage(e), () => server.inFlight));
}
