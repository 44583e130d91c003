// The receiving side of a forwarded request (src/front/forward.ts): a thread runs, in its
// own pipeline, requests another thread admitted and holds the connection of. Each request
// is rebuilt from its message (headers, body and the transport's facts about the client);
// the filter chain then runs from the headers as for a request of its own (authentication
// and authorization are cheap; their results are not carried over). The answer goes back
// through a RemoteSink, a ResponseSink whose calls become messages.
//
// Thread ownership: the receiving thread (the one serveForwarded is called on) owns the map
// of sinks and every RemoteSink; the sending thread sees only their messages.
import type { ApiRequest, HeaderList, ResponseSink } from '../http/types.js';
import { RequestBase, SinkBase } from '../http/transport-base.js';
import { sendError } from '../http/respond.js';
import {
  ABORT, ACK, CLOSE, END, FORWARD_WINDOW_BYTES, GONE, REQUEST, SEND, SEND_PARTS, START, WRITE,
  copyOut, joinOut, ownedOrCopy, postTransferring,
  type ForwardPort, type RequestMessage, type ToServer, type WriteMessage,
} from './forward-protocol.js';

/** A request as the sending thread's transport read it; its body is in already, so readBody() is undefined. */
class ForwardedRequest extends RequestBase implements ApiRequest {
  readonly remoteAddress: string;

  constructor(m: RequestMessage) {
    super(m.method, m.path, m.rawQuery, m.headers);
    this.remoteAddress = m.remoteAddress;
    // a view of the transferred bytes: no copy
    this.body = m.body === null ? null : Buffer.from(m.body);
    if (m.warnings !== undefined) this.warnings = m.warnings;
    if (m.clientCert !== undefined) this.clientCert = m.clientCert;
    if (m.clientCertError !== undefined) this.clientCertError = m.clientCertError;
  }
}

/**
 * A ResponseSink whose answer is played, by the sending thread, onto the client's real
 * response. A plain answer is one message; a stream is START, then a message per write
 * (or per cork), then its end.
 *
 * Backpressure: the sending thread acknowledges a stream's bytes once its real response
 * took them (write() returned true, or the response drained). Past FORWARD_WINDOW_BYTES
 * unacknowledged, write() returns false and bufferedBytes() says how many; the onDrain
 * callbacks run once acknowledgements bring them back under the window. The bytes are
 * posted all the same (as a real transport buffers what the socket refuses): slowing down
 * is the writer's part, as for any sink.
 */
export class RemoteSink extends SinkBase implements ResponseSink {
  /** stream bytes posted and not acknowledged yet */
  private unacked = 0;
  /** a write returned false: onDrain is owed once the window has room */
  private blocked = false;
  private started = false;
  /** end() was called inside a cork: the stream ends with the cork's message */
  private ending = false;
  private corked = false;
  /** the writes of the open cork, posted as one chunk when it closes */
  private batch: Uint8Array[] | null = null;
  private batchBytes = 0;
  private drainFns: Array<() => void> | null = null;

  constructor(
    private readonly port: ForwardPort,
    readonly id: number,
    private readonly forget: (id: number) => void,
  ) {
    super();
  }

  /** a stream was started (a failure then closes the connection: its status is sent) */
  get streaming(): boolean {
    return this.started;
  }

  protected override finish(): void {
    if (this.done) return;
    this.forget(this.id);
    super.finish();
  }

  /**
   * One message. A string is encoded once and its bytes move; bytes a handler passes may
   * be shared (an object's cached encoding, a watch frame many watchers send), so they are
   * copied into a buffer of their own, which moves: one copy, where a structured clone
   * would make two.
   */
  override send(status: number, headers: HeaderList, body: string | Uint8Array): void {
    this.flush();
    if (this.over) return;
    const body2 = typeof body === 'string' ? ownedOrCopy(Buffer.from(body)) : copyOut(body);
    this.status = status;
    this.bytes = body2.byteLength;
    postTransferring(this.port, { t: SEND, id: this.id, status, headers: this.withOwn(headers), body: body2 }, body2);
    this.finish();
  }

  /**
   * One message holding the parts joined. Measured with bench/forward-parts.ts (a worker
   * answering the main thread one list at a time, on this 2-core machine shared with other
   * builds, load 5-9: figures per answer, then the main thread's part of them):
   *   10,000 parts of ~400 B  joined and transferred  1.1-1.3 ms  (0.5 ms on the main thread)
   *                           each part transferred   27-43 ms    (6.5-8.5 ms)
   *                           cloned as they are      2.7-3.4 ms  (2.1 ms)
   *   3 parts of 1 MiB        joined and transferred  0.4-0.8 ms  (0.2-0.5 ms)
   *                           each part transferred   0.4-1.7 ms  (0.2-1.2 ms)
   *                           cloned as they are      0.2-1.4 ms  (0.2-0.7 ms)
   * Joining wins by far for many parts and ties, within the noise, for a few large ones.
   * It costs one copy of the bytes, which the parts need anyway (a handler's parts are
   * cached encodings, never moved), made on this thread rather than the connection's.
   */
  override sendParts(status: number, headers: HeaderList, parts: Uint8Array[]): void {
    this.flush();
    if (this.over) return;
    let total = 0;
    for (const p of parts) total += p.byteLength;
    const body = joinOut(parts, total);
    this.status = status;
    this.bytes = total;
    postTransferring(this.port, { t: SEND_PARTS, id: this.id, status, headers: this.withOwn(headers), body }, body);
    this.finish();
  }

  startStream(status: number, headers: HeaderList): void {
    this.flush();
    if (this.over || this.started) return;
    this.started = true;
    this.status = status;
    this.port.postMessage({ t: START, id: this.id, status, headers: this.withOwn(headers) });
  }

  /**
   * The headers with the ones this thread's filters set for every response to the request
   * (req.responseHeaders), as a transport adds them. The sending thread's real response
   * adds its own request's list in turn; a chain here that repeats the sending thread's
   * audit or flow control would thus send their headers twice.
   */
  private withOwn(headers: HeaderList): HeaderList {
    const own = this.req?.responseHeaders;
    return own === undefined ? headers : headers.concat(own);
  }

  write(chunk: string | Uint8Array): boolean {
    if (this.over || this.ending) return false;
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    const n = b.byteLength;
    if (n > 0) {
      this.unacked += n;
      if (this.corked) {
        // Kept by reference until the cork closes, within the caller's own cork function:
        // joined and copied then, in one buffer.
        (this.batch ??= []).push(b);
        this.batchBytes += n;
      } else {
        const ab = typeof chunk === 'string' ? ownedOrCopy(b) : copyOut(b);
        postTransferring(this.port, { t: WRITE, id: this.id, chunk: ab, end: false } satisfies WriteMessage, ab);
      }
    }
    if (this.unacked > FORWARD_WINDOW_BYTES) {
      this.blocked = true;
      return false;
    }
    return true;
  }

  end(): void {
    if (this.over || this.ending) return;
    this.ending = true;
    // inside a cork: the cork's one message carries the end
    if (!this.corked) this.flush();
  }

  /** Runs fn, then posts the writes it made as one chunk (with the end, when fn ended the stream). */
  cork(fn: () => void): void {
    if (this.aborted) return;
    if (this.corked) {
      fn();
      return;
    }
    this.corked = true;
    try {
      fn();
    } finally {
      this.corked = false;
      this.flush();
    }
  }

  /** What the open cork gathered, and the end once asked for: posted now. */
  private flush(): void {
    if (this.over) return;
    const batch = this.batch;
    if (batch !== null) {
      this.batch = null;
      const ab = joinOut(batch, this.batchBytes);
      this.batchBytes = 0;
      postTransferring(this.port, { t: WRITE, id: this.id, chunk: ab, end: this.ending } satisfies WriteMessage, ab);
    } else if (this.ending) {
      this.port.postMessage({ t: END, id: this.id });
    }
    if (this.ending) this.finish();
  }

  onDrain(fn: () => void): void {
    (this.drainFns ??= []).push(fn);
  }

  /** Nothing while under the window: those bytes are in flight, as a socket's kernel buffer is not counted either. */
  bufferedBytes(): number {
    return this.unacked > FORWARD_WINDOW_BYTES ? this.unacked : 0;
  }

  /** The client's connection is closed; here, as a transport's close leads to, the abort callbacks then the end. */
  close(): void {
    if (this.over) return;
    this.batch = null;
    this.port.postMessage({ t: CLOSE, id: this.id });
    this.aborting();
  }

  /** The sending thread's response took n more bytes. */
  acknowledged(n: number): void {
    this.unacked -= n;
    if (this.blocked && this.unacked <= FORWARD_WINDOW_BYTES && !this.over) {
      this.blocked = false;
      if (this.drainFns) for (const f of this.drainFns) f();
    }
  }

  /** The client went away (or the sending thread did): the abort callbacks, then the end. */
  abandon(): void {
    if (this.over) return;
    this.batch = null;
    this.aborting();
  }
}

export interface ForwardServer {
  /** requests received and not yet answered, ended or abandoned */
  readonly inFlight: number;
  /** Stops serving: every request in flight is handed back unanswered (the sending side answers 503, or closes a started stream). */
  close(): void;
}

/**
 * Serves the requests forwarded over port with handle (the filter chain's handle, as a
 * transport calls it). The port is not closed by close(): its owner closes it.
 */
export function serveForwarded(port: ForwardPort, handle: (req: ApiRequest, res: ResponseSink) => void): ForwardServer {
  const sinks = new Map<number, RemoteSink>();
  const forget = (id: number) => sinks.delete(id);

  const onMessage = (m: ToServer) => {
    switch (m.t) {
      case REQUEST: {
        const req = new ForwardedRequest(m);
        const res = new RemoteSink(port, m.id, forget);
        res.req = req;
        sinks.set(m.id, res);
        try {
          handle(req, res);
        } catch (err) {
          // the chain answers its own failures; this is a handle that throws anyway
          failed(req, res, err);
        }
        return;
      }
      case ABORT:
        sinks.get(m.id)?.abandon();
        return;
      case ACK: {
        const a = m.acks;
        for (let i = 0; i < a.length; i += 2) sinks.get(a[i])?.acknowledged(a[i + 1]);
        return;
      }
      default:
      // the other direction's messages, when one port carries requests both ways
    }
  };

  // The sending thread stopped: nobody is left to answer.
  const onClose = () => {
    for (const s of [...sinks.values()]) s.abandon();
    sinks.clear();
  };

  port.on('message', onMessage);
  port.on('close', onClose);
  return {
    get inFlight() {
      return sinks.size;
    },
    close() {
      port.off('message', onMessage);
      port.off('close', onClose);
      for (const s of [...sinks.values()]) {
        port.postMessage({ t: GONE, id: s.id });
        s.abandon();
      }
      sinks.clear();
    },
  };
}

function failed(req: ApiRequest, res: RemoteSink, err: unknown): void {
  if (res.over) return;
  try {
    if (res.streaming) res.close();
    else sendError(req, res, err);
  } catch {
    res.close();
  }
}
