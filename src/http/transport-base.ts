// What every front end's request and response share (uws-transport.ts, http2-transport.ts):
// the fields the filter chain fills in, the lazily parsed query, and a response's end-of-life
// bookkeeping (done and abort callbacks, the request observer's report). Each transport
// subclasses these and adds its own I/O.
//
// Thread ownership: as the transport's (the thread that runs its server).
import type { ApiRequest, HeaderList, RequestObserver } from './types.js';
import { errors } from '../errors.js';

export abstract class RequestBase implements Partial<ApiRequest> {
  body: Buffer | null = null;
  requestInfo?: ApiRequest['requestInfo'];
  user?: ApiRequest['user'];
  warnings?: string[];
  responseHeaders?: HeaderList;
  audit?: ApiRequest['audit'];
  clientCert?: ApiRequest['clientCert'];
  clientCertError?: string;
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
}

export abstract class SinkBase {
  aborted = false;
  // For the request observer (metrics), set only when there is one.
  observer: RequestObserver | null = null;
  /** the request this answers (its responseHeaders go out with the head; the observer reports it) */
  req: ApiRequest | null = null;
  startedAt = 0;
  protected done = false;
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

  onAborted(fn: () => void): void {
    (this.abortFns ??= []).push(fn);
  }

  onDone(fn: () => void): void {
    if (this.done) fn();
    else (this.doneFns ??= []).push(fn);
  }

  /** The 413 for a body past --max-request-body-bytes; the connection is closed after it. */
  sendTooLarge(maxBodyBytes: number): void {
    const se = errors.tooLarge(maxBodyBytes);
    this.send(413, [['Content-Type', 'application/json'], ['Connection', 'close']], JSON.stringify(se.toStatus()));
  }

  /** One whole response: the transport's sendParts with one part. */
  send(status: number, headers: HeaderList, body: string | Uint8Array): void {
    this.sendParts(status, headers, [typeof body === 'string' ? Buffer.from(body) : body]);
  }

  /** A response whose body is the parts' concatenation, sent with its Content-Length and without joining them. */
  abstract sendParts(status: number, headers: HeaderList, parts: Uint8Array[]): void;
}

/**
 * A request body gathered chunk by chunk, for either transport. Past maxBytes it is refused
 * once, with a 413 Status on the sink, and later chunks are dropped.
 */
export class BodyCollector {
  /** bytes taken so far */
  size = 0;
  rejected = false;
  private parts: Buffer[] = [];

  constructor(
    private readonly sink: SinkBase,
    private readonly maxBytes: number,
  ) {}

  /** Counts a chunk of `length` bytes in: false once the body is refused (the chunk is then not to be kept). */
  accept(length: number): boolean {
    if (this.rejected) return false;
    this.size += length;
    if (this.size <= this.maxBytes) return true;
    this.rejected = true;
    this.sink.sendTooLarge(this.maxBytes);
    return false;
  }

  /** Keeps a chunk accept() let in. */
  push(chunk: Buffer): void {
    this.parts.push(chunk);
  }

  /** The whole body (one chunk as it came, several joined). */
  body(): Buffer {
    return this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts, this.size);
  }
}
