// The transport-neutral request and response. The uWebSockets.js front end fills these
// in today; a node:http2 front end (client certificates, HTTP/2) fills in the same shapes,
// so the filter chain and the handlers never see which transport carried a request.
import type { RequestInfo } from '../request/request-info.js';
import type { UserInfo } from '../auth/user.js';
import type { UpgradeCarrier } from './upgrade.js';

export interface ApiRequest {
  /** upper-case HTTP method */
  method: string;
  /** the path as sent, without the query string */
  path: string;
  rawQuery: string;
  query: URLSearchParams;
  /** lower-cased header names */
  headers: Record<string, string>;
  /**
   * The request body, once read: null until the request-body filter has read it (after the
   * filters admitted the request), and for a request without one.
   */
  body: Buffer | null;
  /**
   * Reads the body, when the request has one still unread: undefined when there is none or
   * it is already in `body` (the chain goes on synchronously), else a promise that resolves
   * once `body` is set, or to true when the request was answered meanwhile (the client went
   * away). Throws, or rejects, with the Status that refuses the body (413, 429).
   */
  readBody(): Promise<boolean> | undefined;
  remoteAddress: string;
  /** the TLS client certificate's subject, when the transport could read one and verified it */
  clientCert?: {
    commonName: string;
    organizations: string[];
    /** SHA-256 fingerprints (node's fingerprint256) of the verified chain, leaf first: which CA bundle it reached */
    chainFingerprints?: string[];
  };
  /** why the client certificate presented was refused (unknown authority, key usage) */
  clientCertError?: string;
  // Filled in by the filter chain:
  requestInfo?: RequestInfo;
  user?: UserInfo;
  /** The authorizer's decision for another verb on this request's resource (set by the authorization filter). */
  authorize?: (verb: string) => { allowed: boolean; reason: string } | Promise<{ allowed: boolean; reason: string }>;
  /** Warning header values collected while handling the request */
  warnings?: string[];
  /**
   * Headers every response to this request carries, whatever sends it (a handler, an error,
   * a watch): the transport appends them to the headers it is given. Set by filters (the
   * priority-and-fairness headers); a shared list, never mutated once set.
   */
  responseHeaders?: HeaderList;
  /** The request's audit record, when auditing is on and the policy records it (src/http/filters/audit.ts). */
  audit?: AuditHook;
  /**
   * Gives the request's priority-and-fairness seat back before the request ends (set by the
   * flow-control filter): kube's RequestDelegated, for a request proxied to an aggregated
   * server, which limits it itself; and a watch's initialization signal, once it is set up.
   */
  delegated?: () => void;
  /**
   * Seconds of the request's time that apiserver_request_sli_duration_seconds leaves out (kube's
   * latency trackers): time waited in a priority-and-fairness queue and for admission webhooks.
   * Whoever makes the request wait adds to it.
   */
  sliExcludedSeconds?: number;
  /**
   * Set on a watch while the server would end it at shutdown (src/http/lifecycle.ts): the
   * watch handler gives the function that ends it cleanly (kube's ServerShutdownSignal).
   */
  onServerShutdown?: (terminate: () => void) => void;
  /**
   * Set by the front end on a request that asks to switch protocols and that it can carry on
   * to a backend (upgrade.ts): exec, attach and port-forward proxied to a node's agent.
   */
  upgrade?: UpgradeCarrier;
}

/** What the rest of the chain tells the audit record of a request. */
export interface AuditHook {
  /** An audit annotation (the authorization decision, a deprecated API's use). */
  annotate(key: string, value: string): void;
  /** The handler failed with an unexpected error: the record ends at the Panic stage. */
  panicked(err: unknown): void;
  /** The request runs as another user (impersonation): the event keeps both. */
  impersonated(user: UserInfo): void;
}

export type HeaderList = Array<[string, string]>;

/**
 * Told by the transport of each request's end (the request metrics). Every front end
 * reports the same way, so the metrics do not depend on which one carried a request.
 */
export interface RequestObserver {
  /** The response ended (or the client went away after its status was sent); bytes is -1 for a stream. */
  finished(req: ApiRequest, status: number, bytes: number, seconds: number): void;
  /** A long-running response (a watch) began; the function returned is called at its end. */
  streamStarted(req: ApiRequest): () => void;
}

/**
 * Where a handler writes its answer. A plain response is one send(); a watch is
 * startStream() then write()s. write() returns false when the transport buffered the
 * chunk behind backpressure; bufferedBytes() says how much is queued.
 */
export interface ResponseSink {
  readonly aborted: boolean;
  send(status: number, headers: HeaderList, body: string | Uint8Array): void;
  /** send() of the concatenation of parts, without joining them (large lists). */
  sendParts(status: number, headers: HeaderList, parts: Uint8Array[]): void;
  startStream(status: number, headers: HeaderList): void;
  write(chunk: string | Uint8Array): boolean;
  end(): void;
  /** Runs fn with the socket corked, so many writes leave in one syscall / TLS record. */
  cork(fn: () => void): void;
  onAborted(fn: () => void): void;
  /** Called once, when the response has ended, been closed, or the client went away. */
  onDone(fn: () => void): void;
  /** Called once the transport has drained what it buffered behind backpressure. */
  onDrain(fn: () => void): void;
  bufferedBytes(): number;
  /**
   * The pieces a large streamed chunk leaves in, when the transport has such pieces (each
   * one TLS record and one syscall): a writer that batches may send whole pieces first.
   */
  readonly writeQuantum?: number;
  /** Closes the connection abruptly. */
  close(): void;
  /** The connection closes once this response has left (HTTP/1.1 Connection: close; HTTP/2 GOAWAY). */
  closeAfterResponse?(): void;
  /** The status line has gone out (or is on its way): the response can no longer be replaced. */
  statusSent?(): boolean;
}

export const STATUS_TEXT: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  202: '202 Accepted',
  204: '204 No Content',
  301: '301 Moved Permanently',
  304: '304 Not Modified',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  406: '406 Not Acceptable',
  409: '409 Conflict',
  410: '410 Gone',
  413: '413 Request Entity Too Large',
  415: '415 Unsupported Media Type',
  422: '422 Unprocessable Entity',
  429: '429 Too Many Requests',
  431: '431 Request Header Fields Too Large',
  500: '500 Internal Server Error',
  501: '501 Not Implemented',
  503: '503 Service Unavailable',
  504: '504 Gateway Timeout',
};

export function statusLine(code: number): string {
  return STATUS_TEXT[code] ?? `${code} Unknown`;
}
