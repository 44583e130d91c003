// Carrying a request that one thread admitted to another thread's pipeline, and its answer
// back (issues 17 and 18): the building block of several front threads, and of moving a
// heavy request (a create of a 1.5 MB object) off the thread that holds its connection.
//
// The sending side, ForwardClient, runs on the thread that holds the client's connection:
// once the request's body is read, forward() posts the request as the transport saw it
// (method, path, query, headers, body, client address and certificate) and plays the
// messages that come back onto the real response. The receiving side (serveForwarded, in
// serve-forwarded.ts) runs the request through its own filter chain from the headers: the
// chain's results here (user, request info, authorization) are not carried, as computing
// them again is cheap and keeps the message plain data.
//
// What happens at the edges:
// - the client goes away: the other side is told; its sink is marked aborted and runs its
//   abort callbacks; nothing more reaches the real response;
// - a stream's client reads slowly: bytes are acknowledged only once the real response
//   took them, so the other side's write() returns false past FORWARD_WINDOW_BYTES (a
//   watch slows down, or is closed past its own budget, as behind a real socket);
// - the other thread stops (its port closes) or stops serving: a request whose status was
//   not sent gets a 503 Status, a started stream has its connection closed.
//
// Thread ownership: a ForwardClient belongs to the thread that holds the connections (its
// map of requests in flight, the acknowledgements to send); the receiving thread sees only
// its messages.
import type { ApiRequest, ResponseSink } from '../http/types.js';
import { sendError } from '../http/respond.js';
import { errors } from '../errors.js';
import {
  ABORT, ACK, CLOSE, END, GONE, REQUEST, SEND, SEND_PARTS, START, WRITE,
  copyOut, ownedOrCopy, postTransferring,
  type ForwardPort, type RequestMessage, type ToClient,
} from './forward-protocol.js';

export { FORWARD_WINDOW_BYTES, type ForwardPort } from './forward-protocol.js';
export { serveForwarded, RemoteSink, type ForwardServer } from './serve-forwarded.js';

/** A request carried to the other thread, until its response ends or its client leaves. */
interface InFlight {
  readonly req: ApiRequest;
  readonly res: ResponseSink;
  /** the status went out (a stream was started): a failure can only close the connection */
  started: boolean;
  /** stream bytes the real response holds behind backpressure, acknowledged once it drains */
  held: number;
  drainHooked: boolean;
}

export class ForwardClient {
  private readonly requests = new Map<number, InFlight>();
  private nextId = 1;
  private closed = false;
  /** acknowledgements gathered in this turn of the loop: id, bytes, id, bytes, ... */
  private acks: number[] = [];
  private ackScheduled = false;

  constructor(private readonly port: ForwardPort) {
    port.on('message', this.onMessage);
    port.on('close', this.onClose);
    // a Worker given as the port ends with 'exit' (a MessagePort into it closes then)
    port.on('exit', this.onClose);
  }

  /** requests forwarded whose response has not ended and whose client is still there */
  /** the other side is gone (its port closed, or close() was called): every forward now fails at once */
  get isClosed(): boolean {
    return this.closed;
  }

  get inFlight(): number {
    return this.requests.size;
  }

  /**
   * Carries req, whose body is read already (req.body, or null), to the other thread, and
   * plays its answer onto res. The body's bytes move to the other thread when the Buffer
   * is the whole of its ArrayBuffer (req.body is then left empty); a pooled slice is
   * copied, and so is a body the audit record still has to read at the response.
   */
  forward(req: ApiRequest, res: ResponseSink): void {
    if (res.aborted) return;
    if (this.closed) {
      answerStopped(req, res, false);
      return;
    }
    const id = this.nextId++;
    const f: InFlight = { req, res, started: false, held: 0, drainHooked: false };
    this.requests.set(id, f);
    // The client left, or this thread ended the response itself: the other side stops.
    // Not when a message from the other side ended it (the entry is gone by then).
    const gone = () => {
      if (this.requests.get(id) !== f) return;
      this.requests.delete(id);
      this.port.postMessage({ t: ABORT, id });
    };
    res.onAborted(gone);
    res.onDone(gone);

    const body = req.body;
    const ab = body === null ? null : req.audit !== undefined ? copyOut(body) : ownedOrCopy(body);
    const m: RequestMessage = {
      t: REQUEST,
      id,
      method: req.method,
      path: req.path,
      rawQuery: req.rawQuery,
      headers: req.headers,
      body: ab,
      remoteAddress: req.remoteAddress,
    };
    if (req.clientCert !== undefined) m.clientCert = req.clientCert;
    if (req.clientCertError !== undefined) m.clientCertError = req.clientCertError;
    if (req.warnings !== undefined && req.warnings.length > 0) m.warnings = req.warnings;
    postTransferring(this.port, m, ab);
  }

  /**
   * Stops forwarding: the other side is told to drop every request in flight, and each is
   * answered as if the other thread had stopped. The port is left open (its owner closes it).
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.port.off('message', this.onMessage);
    this.port.off('close', this.onClose);
    this.port.off('exit', this.onClose);
    for (const id of this.requests.keys()) this.port.postMessage({ t: ABORT, id });
    this.failAll();
  }

  private readonly onClose = (): void => {
    this.closed = true;
    this.port.off('message', this.onMessage);
    this.port.off('close', this.onClose);
    this.port.off('exit', this.onClose);
    this.acks = [];
    this.failAll();
  };

  private failAll(): void {
    const all = [...this.requests.values()];
    this.requests.clear();
    for (const f of all) answerStopped(f.req, f.res, f.started);
  }

  private readonly onMessage = (m: ToClient): void => {
    // the other direction's messages (one port may carry requests both ways)
    if (!(m.t >= SEND)) return;
    const f = this.requests.get(m.id);
    // a response to a request whose client left
    if (f === undefined) return;
    const res = f.res;
    try {
      switch (m.t) {
        case SEND:
          this.requests.delete(m.id);
          res.send(m.status, m.headers, Buffer.from(m.body));
          return;
        case SEND_PARTS:
          this.requests.delete(m.id);
          res.sendParts(m.status, m.headers, [Buffer.from(m.body)]);
          return;
        case START:
          f.started = true;
          res.startStream(m.status, m.headers);
          return;
        case WRITE:
          if (m.end) {
            this.requests.delete(m.id);
            res.write(Buffer.from(m.chunk));
            res.end();
          } else {
            this.played(m.id, f, res.write(Buffer.from(m.chunk)), m.chunk.byteLength);
          }
          return;
        case END:
          this.requests.delete(m.id);
          res.end();
          return;
        case CLOSE:
          this.requests.delete(m.id);
          res.close();
          return;
        case GONE:
          this.requests.delete(m.id);
          answerStopped(f.req, res, f.started);
          return;
      }
    } catch (err) {
      // A response the transport cannot write must not end this thread's message loop:
      // the connection is closed and the other side told, as the filter chain does.
      console.error(`E ${f.req.method} ${f.req.path}: a forwarded response failed, connection closed: ${(err as Error)?.message ?? err}`);
      if (this.requests.get(m.id) === f) {
        this.requests.delete(m.id);
        this.port.postMessage({ t: ABORT, id: m.id });
      }
      closeQuietly(res);
    }
  };

  /**
   * A chunk of n bytes went to the real response: acknowledged now if it took it, else
   * once it drains (a write that returns true means the transport is under its mark, so
   * what it held before is acknowledged with it).
   */
  private played(id: number, f: InFlight, took: boolean, n: number): void {
    if (took) {
      const all = f.held + n;
      f.held = 0;
      this.ack(id, all);
      return;
    }
    f.held += n;
    if (f.drainHooked) return;
    f.drainHooked = true;
    f.res.onDrain(() => {
      if (this.requests.get(id) !== f || f.held === 0) return;
      const held = f.held;
      f.held = 0;
      this.ack(id, held);
    });
  }

  /** Acknowledgements leave together, one message per turn of this thread's loop for every stream. */
  private ack(id: number, n: number): void {
    this.acks.push(id, n);
    if (this.ackScheduled) return;
    this.ackScheduled = true;
    setImmediate(() => {
      this.ackScheduled = false;
      if (this.acks.length === 0) return;
      const acks = this.acks;
      this.acks = [];
      this.port.postMessage({ t: ACK, acks });
    });
  }
}

/** The other thread will not answer: a 503 Status, or, when the status went out already, a closed connection. */
function answerStopped(req: ApiRequest, res: ResponseSink, started: boolean): void {
  if (res.aborted) return;
  if (started) {
    closeQuietly(res);
    return;
  }
  try {
    sendError(req, res, errors.servingThreadStopped());
  } catch {
    closeQuietly(res);
  }
}

function closeQuietly(res: ResponseSink): void {
  try {
    res.close();
  } catch {
    // the response is gone already
  }
}
