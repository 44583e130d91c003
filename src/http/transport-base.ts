// What every front end's request and response share (uws-transport.ts, http2-transport.ts):
// the fields the filter chain fills in, the lazily parsed query, a response's end-of-life
// bookkeeping (done and abort callbacks, the request observer's report), and the reading of
// a request body once the chain has admitted the request (BodyReader). Each transport
// subclasses these and adds its own I/O.
//
// Thread ownership: as the transport's (the thread that runs its server).
import type { ApiRequest, HeaderList, RequestObserver } from './types.js';
import { errors, type StatusError } from '../errors.js';
import type { BodyBudget } from './body-budget.js';

export abstract class RequestBase implements Partial<ApiRequest> {
  body: Buffer | null = null;
  requestInfo?: ApiRequest['requestInfo'];
  user?: ApiRequest['user'];
  warnings?: string[];
  responseHeaders?: HeaderList;
  audit?: ApiRequest['audit'];
  sliExcludedSeconds?: number;
  clientCert?: ApiRequest['clientCert'];
  clientCertError?: string;
  upgrade?: ApiRequest['upgrade'];
  /** the body still to be read, when the request has one (set by the transport) */
  reader: BodyReader | null = null;
  private parsedQuery?: URLSearchParams;

  constructor(
    readonly method: string,
    readonly path: string,
    readonly rawQuery: string,
    readonly headers: Record<string, string>,
  ) {}

  /** parsed only when something reads it: most requests never do */
  get query(): URLSearchParams {
    return (this.parsedQuery ??= new URLSearchParams(this.rawQuery));
  }

  set query(q: URLSearchParams) {
    this.parsedQuery = q;
  }

  readBody(): Promise<boolean> | undefined {
    return this.reader === null ? undefined : this.reader.read();
  }
}

export abstract class SinkBase {
  aborted = false;
  // For the request observer (metrics), set only when there is one.
  observer: RequestObserver | null = null;
  /** the request this answers (its responseHeaders go out with the head; the observer reports it) */
  req: ApiRequest | null = null;
  startedAt = 0;
  protected done = false;
  /** The request's body reader, when it has a body (see bodyUnread). */
  reader: BodyReader | null = null;
  protected status = 0;
  /** the body's size; -1 for a stream */
  protected bytes = -1;
  private streamEnd: (() => void) | null = null;
  // Callback lists are made on first use: most responses (a GET) never register one, and
  // an open watch keeps this object for its whole life.
  private abortFns: Array<() => void> | null = null;
  private doneFns: Array<() => void> | null = null;

  /** The client went away: the abort callbacks, then the end. */
  protected aborting(): void {
    this.aborted = true;
    if (this.abortFns) for (const f of this.abortFns) f();
    this.finish();
  }

  /** The response is over (sent, closed or abandoned): once. */
  protected finish(): void {
    if (this.done) return;
    this.done = true;
    const fns = this.doneFns;
    this.doneFns = null;
    if (fns) for (const f of fns) f();
    // A request whose client left before any status was sent is not reported.
    if (this.observer && this.status !== 0) {
      this.streamEnd?.();
      this.observer.finished(this.req!, this.status, this.bytes, (performance.now() - this.startedAt) / 1000);
    }
  }

  /** A long-running response begins (the observer counts it until its end). */
  protected streamStarting(): void {
    if (this.observer) this.streamEnd = this.observer.streamStarted(this.req!);
  }

  /** The status sent (0 before the head went out): for the request's trace span. */
  get sentStatus(): number {
    return this.status;
  }

  /** The body's size once sent (-1 for a stream): for the request's trace span. */
  get bytesSent(): number {
    return this.bytes;
  }

  /** The response has ended, been closed, or the client went away. */
  get over(): boolean {
    return this.done || this.aborted;
  }

  /** The connection closes right after this response (a request refused for its framing). */
  closeAfter = false;

  /** ResponseSink.closeAfterResponse: the connection closes once this response has left. */
  closeAfterResponse(): void {
    this.closeAfter = true;
  }

  /** ResponseSink.statusSent */
  statusSent(): boolean {
    return this.status !== 0;
  }

  /**
   * The response goes out before the request's body was all read (a refusal from the
   * headers). The transport reads the rest of the body only to drop it: as its framing is
   * known, none of it is ever parsed as a request. Closing at once instead would lose the
   * answer: the client, still sending, would meet a TCP reset (Go's server drains and
   * lingers for the same reason).
   */
  protected bodyUnread(): boolean {
    return this.reader !== null && !this.reader.ended;
  }

  /**
   * As Go's server: with more than 256 KiB of the body still to come, or a length not
   * known, the response says Connection: close (the client stops sending, and does not
   * reuse the connection); a smaller rest is drained and the connection kept.
   */
  protected tellsClose(): boolean {
    return this.reader !== null && !this.reader.ended && this.reader.toCome() > DRAIN_BYTES;
  }

  onAborted(fn: () => void): void {
    (this.abortFns ??= []).push(fn);
  }

  onDone(fn: () => void): void {
    if (this.done) fn();
    else (this.doneFns ??= []).push(fn);
  }

  /** One whole response: the transport's sendParts with one part. */
  send(status: number, headers: HeaderList, body: string | Uint8Array): void {
    this.sendParts(status, headers, [typeof body === 'string' ? Buffer.from(body) : body]);
  }

  /** A response whose body is the parts' concatenation, sent with its Content-Length and without joining them. */
  abstract sendParts(status: number, headers: HeaderList, parts: Uint8Array[]): void;
}

/** What a body reader is held to: --max-request-body-bytes, and the front end's budget of bodies in flight. */
export interface BodyLimits {
  maxBytes: number;
  budget: BodyBudget;
}

/** Where a body's chunks come from: the transport starts (true) and stops (false) their flow. */
export interface BodySource {
  flow(on: boolean): void;
}

/** What Go's server drains of an unread body to keep the connection (its maxPostHandlerReadBytes). */
const DRAIN_BYTES = 256 * 1024;

/**
 * Bytes of a body kept before its request was admitted (while a filter waits: a queue of
 * priority and fairness, a remote audit backend), past which the transport stops reading it
 * if the bodies in flight are over their budget. Not before: pausing and resuming a uWS
 * socket resets one connection in a few (measured: a 400 KiB create whose audit event went
 * to another thread failed one time in ten with ECONNRESET).
 */
const IDLE_BYTES = 64 * 1024;

const IDLE = 0;
const READING = 1;
const DONE = 2;

/**
 * A request body, for either transport. kube-apiserver's filters (authentication, audit,
 * impersonation, flow control, authorization) all run before its handler reads the body;
 * here too the chain runs from the headers, and only its request-body filter (before the
 * router) calls read(): a request refused from its headers costs no memory for its body.
 * The transport feeds chunks in (accept, push, end); a body is charged to the budget from
 * its first byte kept until the response ends, a declared length all at once when reading
 * starts. Past --max-request-body-bytes it is refused with 413, past the budget with 429.
 */
export class BodyReader {
  /** bytes taken so far */
  size = 0;
  /** the transport has seen the body's end */
  ended = false;
  private state = IDLE;
  private parts: Buffer[] = [];
  /** bytes charged to the budget */
  private charged = 0;
  /** why the body is refused, when found before the chain asked for it (a chunked body past the limit) */
  private refusal: StatusError | null = null;
  private settle: ((answered: boolean) => void) | null = null;
  private fail: ((err: unknown) => void) | null = null;

  constructor(
    private readonly req: RequestBase,
    private readonly sink: SinkBase,
    private readonly limits: BodyLimits,
    /** the Content-Length, or -1 when unknown (chunked, HTTP/2) */
    private readonly declared: number,
    private readonly source: BodySource,
  ) {
    req.reader = this;
    sink.reader = this;
    sink.onDone(() => {
      this.limits.budget.give(this.charged);
      this.charged = 0;
      if (this.state === READING) {
        this.state = DONE;
        this.settle!(true);
      }
    });
  }

  /** Bytes of the body not come yet (Infinity when its length is not known). */
  toCome(): number {
    return this.declared < 0 ? Infinity : this.declared - this.size;
  }

  /** The chain wants the body (the request-body filter); see ApiRequest.readBody. */
  read(): Promise<boolean> | undefined {
    if (this.state !== IDLE) return undefined;
    this.state = DONE;
    if (this.refusal) throw this.refusal;
    const { maxBytes, budget } = this.limits;
    if (this.declared > maxBytes) throw errors.tooLarge(maxBytes);
    if (this.declared > this.charged) {
      const rest = this.declared - this.charged;
      if (!budget.take(rest)) throw errors.bodiesInFlight();
      this.charged += rest;
    }
    if (this.ended) {
      this.handOver();
      return undefined;
    }
    this.state = READING;
    this.source.flow(true);
    return new Promise<boolean>((resolve, reject) => {
      this.settle = resolve;
      this.fail = reject;
    });
  }

  /** Counts a chunk of `length` bytes in: false when it is not to be kept (refused, answered, or past a limit). */
  accept(length: number): boolean {
    if (this.state === DONE || this.refusal !== null || this.sink.over) return false;
    this.size += length;
    if (this.size > this.limits.maxBytes) return this.refuse(errors.tooLarge(this.limits.maxBytes));
    if (this.state === IDLE) {
      // in memory already: charged even past the budget, and the flow stops past a little
      // while the budget is spent
      this.limits.budget.force(length);
      this.charged += length;
      if (this.size > IDLE_BYTES && this.limits.budget.used > this.limits.budget.limit) this.source.flow(false);
    } else if (this.size > this.charged) {
      // a body of unknown length, charged as it comes
      const more = this.size - this.charged;
      if (!this.limits.budget.take(more)) return this.refuse(errors.bodiesInFlight());
      this.charged += more;
    }
    return true;
  }

  /** Keeps a chunk accept() let in. */
  push(chunk: Buffer): void {
    this.parts.push(chunk);
  }

  /** The body's last byte has come. */
  end(): void {
    this.ended = true;
    if (this.state === READING) this.handOver();
  }

  private handOver(): void {
    this.state = DONE;
    const p = this.parts;
    this.parts = [];
    if (this.size > 0) this.req.body = p.length === 1 ? p[0] : Buffer.concat(p, this.size);
    const settle = this.settle;
    this.settle = this.fail = null;
    settle?.(false);
  }

  private refuse(err: StatusError): false {
    this.parts = [];
    if (this.state === READING) {
      // The flow goes on and what comes is dropped, so the client reads the refusal and the
      // connection ends cleanly (stopping the socket would leave a kept-alive one hanging).
      this.state = DONE;
      const fail = this.fail!;
      this.settle = this.fail = null;
      fail(err);
    } else {
      // not asked for yet: kept until the chain asks, which it may never do
      this.refusal = err;
      this.source.flow(false);
    }
    return false;
  }
}
