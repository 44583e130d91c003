// --max-connection-bytes-per-sec: a streamed response (a watch, a log: the long-running
// requests, which is where kube applies the flag: its upgrade-aware proxy of exec, attach
// and port-forward streams) sends at most that many bytes a second. Plain responses are not
// held back, as in kube.
//
// A token bucket of one second's bytes in front of the transport's sink: a chunk the bucket
// covers goes at once; otherwise what the bucket covers goes and the rest waits here, to
// leave in pieces as the bucket refills (write() returns false, as behind a socket's
// backpressure, so a watch slows down or is closed past its buffer budget as for a slow
// client) and leaves when the bucket has refilled, then onDrain runs. Over HTTP/1.1 one
// stream is one connection, so the rate is the connection's; on HTTP/2 each stream has it.
//
// Thread ownership: a ThrottledSink belongs to the transport's thread, as the sink it wraps.
import type { HeaderList, ResponseSink } from './types.js';

/** the piece a waiting chunk leaves in (or a second's bytes, when that is less) */
const PIECE_BYTES = 16 * 1024;

export class ThrottledSink implements ResponseSink {
  /** bytes the bucket holds now (at most one second's worth) */
  private tokens: number;
  private last = performance.now();
  private queue: Uint8Array[] = [];
  private queued = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private ending = false;
  private drainFns: Array<() => void> | null = null;
  private streaming = false;

  constructor(
    private readonly inner: ResponseSink,
    private readonly bytesPerSec: number,
  ) {
    this.tokens = bytesPerSec;
    inner.onDone(() => {
      if (this.timer !== null) clearTimeout(this.timer);
      this.timer = null;
      this.queue = [];
      this.queued = 0;
    });
  }

  get aborted(): boolean {
    return this.inner.aborted;
  }

  get writeQuantum(): number | undefined {
    return this.inner.writeQuantum;
  }

  send(status: number, headers: HeaderList, body: string | Uint8Array): void {
    this.inner.send(status, headers, body);
  }

  sendParts(status: number, headers: HeaderList, parts: Uint8Array[]): void {
    this.inner.sendParts(status, headers, parts);
  }

  startStream(status: number, headers: HeaderList): void {
    this.streaming = true;
    this.inner.startStream(status, headers);
  }

  private refill(): void {
    const now = performance.now();
    this.tokens = Math.min(this.bytesPerSec, this.tokens + ((now - this.last) / 1000) * this.bytesPerSec);
    this.last = now;
  }

  write(chunk: string | Uint8Array): boolean {
    if (!this.streaming) return this.inner.write(chunk);
    let b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (this.queue.length === 0) {
      this.refill();
      if (this.tokens >= b.byteLength) {
        this.tokens -= b.byteLength;
        return this.inner.write(b);
      }
      // the part the bucket covers goes now (a large chunk, a watch's initial events joined
      // into one, must not pass for the price of a second's bytes)
      const now = Math.floor(this.tokens);
      if (now >= this.piece) {
        this.tokens -= now;
        this.inner.write(b.subarray(0, now));
        b = b.subarray(now);
      }
    }
    this.queue.push(b);
    this.queued += b.byteLength;
    this.schedule();
    return false;
  }

  /** the least that leaves in one write while more waits: no flood of tiny writes at a low rate */
  private get piece(): number {
    return Math.max(1, Math.min(this.bytesPerSec, PIECE_BYTES));
  }

  /** The queue's head leaves piece by piece, each once the bucket covers it. */
  private schedule(): void {
    if (this.timer !== null || this.queue.length === 0) return;
    this.refill();
    const need = Math.min(this.queue[0].byteLength, this.piece) - this.tokens;
    const wait = need <= 0 ? 0 : Math.ceil((need / this.bytesPerSec) * 1000);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.pump();
    }, wait);
  }

  private pump(): void {
    this.refill();
    while (this.queue.length > 0 && !this.inner.aborted) {
      const head = this.queue[0];
      const take = Math.min(head.byteLength, Math.floor(this.tokens));
      if (take < Math.min(head.byteLength, this.piece)) break;
      this.tokens -= take;
      this.queued -= take;
      if (take === head.byteLength) this.queue.shift();
      else this.queue[0] = head.subarray(take);
      this.inner.write(take === head.byteLength ? head : head.subarray(0, take));
    }
    if (this.queue.length > 0) {
      this.schedule();
      return;
    }
    if (this.ending) {
      this.ending = false;
      this.inner.end();
      return;
    }
    if (this.drainFns) for (const f of this.drainFns) f();
  }

  end(): void {
    if (this.queue.length > 0) this.ending = true;
    else this.inner.end();
  }

  cork(fn: () => void): void {
    this.inner.cork(fn);
  }

  onAborted(fn: () => void): void {
    this.inner.onAborted(fn);
  }

  onDone(fn: () => void): void {
    this.inner.onDone(fn);
  }

  onDrain(fn: () => void): void {
    (this.drainFns ??= []).push(fn);
    this.inner.onDrain(() => {
      if (this.queue.length === 0) fn();
    });
  }

  bufferedBytes(): number {
    return this.queued + this.inner.bufferedBytes();
  }

  close(): void {
    this.inner.close();
  }

  closeAfterResponse(): void {
    this.inner.closeAfterResponse?.();
  }

  statusSent(): boolean {
    return this.inner.statusSent?.() ?? false;
  }
}
