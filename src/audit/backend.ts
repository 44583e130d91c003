// How audit events reach their backends, in the three modes kube-apiserver has:
//
//   blocking         the request's thread hands each event to the backend and waits for it
//                    (a log line is written before the response completes);
//   blocking-strict  the same, and a failure to store the RequestReceived event fails the request;
//   batch            events go to a bounded buffer and are written later, in batches, off the
//                    request's path; a full buffer drops the event (logged), never the request.
//
// Truncation (--audit-*-truncate-enabled) sits between the mode and the writer: an event over
// the size limit loses its request and response objects, then is dropped if still too large;
// batches are split to stay under the batch limit.
//
// Thread ownership: everything here runs on the front (main) thread; the batch timers too.
import type { AuditEvent } from './event.js';

/** What a backend's writer does with a batch: true once stored (a promise for a remote one). */
export interface Writer {
  readonly name: string;
  write(events: AuditEvent[]): boolean | Promise<boolean>;
  /** Shutdown is under way: no more waiting between tries (what is in flight may finish). */
  stopRetrying?(): void;
  close(): Promise<void>;
}

/** A backend as the audit filter sees it. */
export interface Backend {
  /** Takes events; false (or a promise of it) when a blocking backend failed to store them. */
  process(events: AuditEvent[]): boolean | Promise<boolean>;
  /** Writes out what is buffered, then closes. */
  shutdown(): Promise<void>;
}

export type Mode = 'batch' | 'blocking' | 'blocking-strict';
export const MODES: readonly Mode[] = ['batch', 'blocking', 'blocking-strict'];

export interface BatchConfig {
  bufferSize: number;
  maxBatchSize: number;
  /** seconds */
  maxBatchWait: number;
  throttleEnable: boolean;
  throttleQPS: number;
  throttleBurst: number;
}

export interface TruncateConfig {
  enabled: boolean;
  maxBatchSize: number;
  maxEventSize: number;
}

export function pluginError(name: string, err: unknown, events: AuditEvent[]): void {
  const msg = err instanceof Error ? err.message : String(err);
  console.error(`E audit: Error in audit plugin '${name}' affecting ${events.length} audit events: ${msg}`);
}

/** The blocking modes: straight to the writer. A writer that throws counts as a failure. */
class BlockingBackend implements Backend {
  constructor(private w: Writer) {}
  process(events: AuditEvent[]): boolean | Promise<boolean> {
    try {
      const r = this.w.write(events);
      if (typeof r === 'boolean') return r;
      return r.catch((e) => {
        pluginError(this.w.name, e, events);
        return false;
      });
    } catch (e) {
      pluginError(this.w.name, e, events);
      return false;
    }
  }
  shutdown(): Promise<void> {
    return this.w.close();
  }
}

/**
 * The batch mode: a bounded buffer, emptied in batches of at most maxBatchSize as soon as
 * one is full, or after maxBatchWait for a partial one. With throttling, batches leave at
 * most throttleQPS per second after a burst of throttleBurst (a token bucket). Remote
 * writers (promises) may have several batches in flight.
 */
export class BufferedBackend implements Backend {
  private buf: AuditEvent[] = [];
  private timer: NodeJS.Timeout | null = null;
  private scheduled = false;
  private tokens: number;
  private lastRefill = Date.now();
  private inflight = new Set<Promise<unknown>>();
  private closed = false;

  constructor(
    private w: Writer,
    private c: BatchConfig,
  ) {
    this.tokens = c.throttleBurst;
  }

  process(events: AuditEvent[]): boolean {
    if (this.closed) return true;
    for (const ev of events) {
      if (this.buf.length >= this.c.bufferSize) {
        pluginError(this.w.name, new Error('audit buffer queue blocked'), [ev]);
        continue;
      }
      this.buf.push(ev);
    }
    if (this.buf.length >= this.c.maxBatchSize) this.schedule(0);
    else if (this.buf.length && !this.timer) this.armTimer();
    return true;
  }

  private schedule(delayMs: number): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const run = () => {
      this.scheduled = false;
      this.flushDue();
    };
    if (delayMs <= 0) setImmediate(run);
    else setTimeout(run, delayMs).unref();
  }

  /** Sends full batches (and, when the wait has run out, the partial one) as the throttle allows. */
  private flushDue(force = false): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    let partialDue = true;
    while (this.buf.length) {
      if (!force && this.buf.length < this.c.maxBatchSize && !partialDue) break;
      if (!force && this.c.throttleEnable && !this.takeToken()) {
        this.schedule(Math.ceil(1000 / this.c.throttleQPS));
        return;
      }
      const batch = this.buf.splice(0, this.c.maxBatchSize);
      partialDue = false;
      this.send(batch);
    }
    if (this.buf.length && !this.timer) this.armTimer();
  }

  /** The wait for a partial batch; it never keeps the process alive (shutdown flushes). */
  private armTimer(): void {
    this.timer = setTimeout(() => this.flushDue(), this.c.maxBatchWait * 1000);
    this.timer.unref();
  }

  private takeToken(): boolean {
    const now = Date.now();
    this.tokens = Math.min(this.c.throttleBurst, this.tokens + ((now - this.lastRefill) / 1000) * this.c.throttleQPS);
    this.lastRefill = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  private send(batch: AuditEvent[]): void {
    try {
      const r = this.w.write(batch);
      if (typeof r !== 'boolean') {
        const p = r.catch((e) => pluginError(this.w.name, e, batch)).finally(() => this.inflight.delete(p));
        this.inflight.add(p);
      }
    } catch (e) {
      pluginError(this.w.name, e, batch);
    }
  }

  async shutdown(): Promise<void> {
    this.closed = true;
    this.flushDue(true);
    this.w.stopRetrying?.();
    await Promise.allSettled([...this.inflight]);
    await this.w.close();
  }
}

/** Truncation in front of a writer (kube's truncate plugin). */
export class TruncatingWriter implements Writer {
  readonly name: string;
  constructor(
    private w: Writer,
    private c: TruncateConfig,
  ) {
    this.name = w.name;
  }

  write(events: AuditEvent[]): boolean | Promise<boolean> {
    const batches: AuditEvent[][] = [];
    let cur: AuditEvent[] = [];
    let curSize = 0;
    for (let ev of events) {
      let size = Buffer.byteLength(JSON.stringify(ev));
      if (size > this.c.maxEventSize) {
        const { requestObject: _a, responseObject: _b, ...rest } = ev;
        ev = { ...rest, annotations: { ...ev.annotations, 'audit.k8s.io/truncated': 'true' } };
        size = Buffer.byteLength(JSON.stringify(ev));
        if (size > this.c.maxEventSize) {
          pluginError(this.w.name, new Error(`event is too large even after truncating: ${size} bytes`), [ev]);
          continue;
        }
      }
      if (cur.length && curSize + size > this.c.maxBatchSize) {
        batches.push(cur);
        cur = [];
        curSize = 0;
      }
      cur.push(ev);
      curSize += size;
    }
    if (cur.length) batches.push(cur);
    const results = batches.map((b) => this.w.write(b));
    if (results.every((r) => typeof r === 'boolean')) return results.every((r) => r);
    return Promise.all(results).then((rs) => rs.every((r) => r));
  }

  stopRetrying(): void {
    this.w.stopRetrying?.();
  }

  close(): Promise<void> {
    return this.w.close();
  }
}

export function backendOf(w: Writer, mode: Mode, batch: BatchConfig, truncate: TruncateConfig): Backend {
  const writer = truncate.enabled ? new TruncatingWriter(w, truncate) : w;
  return mode === 'batch' ? new BufferedBackend(writer, batch) : new BlockingBackend(writer);
}

/** Several backends (log and webhook) as one: stored only when all stored it. */
export class UnionBackend implements Backend {
  constructor(private backends: Backend[]) {}
  process(events: AuditEvent[]): boolean | Promise<boolean> {
    if (this.backends.length === 1) return this.backends[0].process(events);
    const rs = this.backends.map((b) => b.process(events));
    if (rs.every((r) => typeof r === 'boolean')) return rs.every((r) => r);
    return Promise.all(rs).then((all) => all.every((r) => r));
  }
  async shutdown(): Promise<void> {
    await Promise.all(this.backends.map((b) => b.shutdown()));
  }
}
