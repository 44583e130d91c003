// The messages of a forwarded request (src/front/forward.ts) between the thread that holds
// the client's connection (the sending side, ForwardClient) and the thread whose pipeline
// runs the request (the receiving side, serveForwarded). Many requests share one port, each
// under a numeric id that the sending side picks; the two directions use disjoint message
// types, so one port may carry forwarded requests both ways.
//
// The hot path is one message each way for a plain request. Bytes (the request body, a
// response body, a stream's chunks) travel as transferred ArrayBuffers, never cloned and
// never as JSON: a structured clone copies the bytes twice (into the serializer, then out
// of it) and a view's whole backing store with them, where a transfer moves them.
//
// Thread ownership: none (constants and pure functions).
import type { HeaderList } from '../http/types.js';

/**
 * The bytes of a stream sent and not yet acknowledged past which the receiving side's
 * write() returns false: a watch then slows down, as it does behind a real socket's
 * backpressure. Large enough that a stream to a client that keeps up never waits for
 * acknowledgements (they come back within a turn of the sending thread's loop).
 */
export const FORWARD_WINDOW_BYTES = 1024 * 1024;

// Sending side to receiving side.
export const REQUEST = 1;
/** the client went away */
export const ABORT = 2;
/** stream bytes the real response took: pairs of id and byte count, for every stream at once */
export const ACK = 3;

// Receiving side to sending side.
export const SEND = 11;
export const SEND_PARTS = 12;
export const START = 13;
/** a stream's chunk (the writes of one cork, joined), perhaps with the stream's end */
export const WRITE = 14;
export const END = 15;
export const CLOSE = 16;
/** the receiving side stopped serving this request without an answer (it was closed) */
export const GONE = 17;

export interface RequestMessage {
  t: typeof REQUEST;
  id: number;
  method: string;
  path: string;
  rawQuery: string;
  headers: Record<string, string>;
  body: ArrayBuffer | null;
  remoteAddress: string;
  clientCert?: { commonName: string; organizations: string[] };
  clientCertError?: string;
  /** Warning values the sending thread's filters collected (a copy: the handler here adds its own) */
  warnings?: string[];
}

export interface AbortMessage {
  t: typeof ABORT;
  id: number;
}

export interface AckMessage {
  t: typeof ACK;
  /** id, bytes, id, bytes, ... */
  acks: number[];
}

export type ToServer = RequestMessage | AbortMessage | AckMessage;

export interface SendMessage {
  t: typeof SEND | typeof SEND_PARTS;
  id: number;
  status: number;
  headers: HeaderList;
  body: ArrayBuffer;
}

export interface StartMessage {
  t: typeof START;
  id: number;
  status: number;
  headers: HeaderList;
}

export interface WriteMessage {
  t: typeof WRITE;
  id: number;
  chunk: ArrayBuffer;
  end: boolean;
}

export interface IdMessage {
  t: typeof END | typeof CLOSE | typeof GONE;
  id: number;
}

export type ToClient = SendMessage | StartMessage | WriteMessage | IdMessage;

/**
 * What the two sides need of a port: a MessagePort (its 'close' says the other side is
 * gone), a Worker or the worker's parentPort ('exit' says so for a Worker), or a test double.
 */
export interface ForwardPort {
  postMessage(value: unknown, transferList?: readonly ArrayBuffer[]): void;
  on(event: 'message', listener: (value: any) => void): unknown;
  on(event: 'close' | 'exit', listener: () => void): unknown;
  off(event: 'message', listener: (value: any) => void): unknown;
  off(event: 'close' | 'exit', listener: () => void): unknown;
}

/** A fresh ArrayBuffer holding exactly the view's bytes (not zero-filled first). */
export function copyOut(view: Uint8Array): ArrayBuffer {
  const n = view.byteLength;
  if (n === 0) return new ArrayBuffer(0);
  const b = Buffer.allocUnsafeSlow(n);
  b.set(view);
  return b.buffer as ArrayBuffer;
}

/**
 * The view's ArrayBuffer when the view is all of it (its bytes move to the other thread,
 * and the view is left detached); else a copy of just its bytes. A pooled Buffer (any
 * Buffer.from or allocUnsafe under 4 KiB) is a slice of an 8 KiB pool that other Buffers
 * share: transferring it would take their bytes away too.
 */
export function ownedOrCopy(view: Uint8Array): ArrayBuffer {
  const ab = view.buffer;
  if (view.byteOffset === 0 && view.byteLength === ab.byteLength && ab.byteLength > 0 && !(ab instanceof SharedArrayBuffer)) return ab as ArrayBuffer;
  return copyOut(view);
}

/** The concatenation of the chunks, in a fresh ArrayBuffer of exactly their size. */
export function joinOut(chunks: Uint8Array[], total: number): ArrayBuffer {
  if (chunks.length === 1) return copyOut(chunks[0]);
  const b = Buffer.allocUnsafeSlow(total);
  let off = 0;
  for (const c of chunks) {
    b.set(c, off);
    off += c.byteLength;
  }
  return b.buffer as ArrayBuffer;
}

/**
 * Posts a message that transfers `ab`. Some ArrayBuffers cannot be detached (memory a
 * native module lent, a WebAssembly memory): those go as a copy instead.
 */
export function postTransferring(port: ForwardPort, msg: RequestMessage | SendMessage | WriteMessage, ab: ArrayBuffer | null): void {
  if (ab === null || ab.byteLength === 0) {
    port.postMessage(msg);
    return;
  }
  try {
    port.postMessage(msg, [ab]);
  } catch (err) {
    if ((err as Error)?.name !== 'DataCloneError') throw err;
    const copy = copyOut(new Uint8Array(ab));
    if (msg.t === WRITE) msg.chunk = copy;
    else msg.body = copy;
    port.postMessage(msg, [copy]);
  }
}
