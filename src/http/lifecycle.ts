// The graceful shutdown's per-thread state and its filter, after kube's lifecycle signals
// (genericapiserver.go preparedGenericAPIServer.RunWithContext) and the filters that read
// them (filters/with_retry_after.go WithRetryAfter, filters/waitgroup.go WithWaitGroup,
// filters/watch_termination.go WithWatchTerminationDuringShutdown).
//
// The signals, in kube's order:
//   ShutdownInitiated       SIGTERM: /readyz's shutdown check fails; everything is still served
//   NotAcceptingNewRequest  --shutdown-delay-duration later (and the pre-shutdown hooks done):
//                           with --shutdown-send-retry-after, every new request but health
//                           checks and /metrics is answered 429 (Retry-After: 5, Connection:
//                           close); without it the listener closes, and a new request on a
//                           connection still open is answered 503 (Retry-After: 1)
//   InFlightRequestsDrained the non-long-running requests in flight have ended, and the watches
//                           too (ended by the server then, at least 200 a second) within
//                           --shutdown-watch-termination-grace-period when that is set
// server.ts runs the sequence (the listener, the audit backend, storage last); each front
// thread has one of these and drains its own requests (front/front-threads.ts).
//
// Thread ownership: a ServerLifecycle and its filter belong to the front thread that made
// them; the main thread tells the other threads of each signal by message.
import type { Filter } from './filter-chain.js';
import type { ApiRequest, ResponseSink } from './types.js';
import type { RequestInfo } from '../request/request-info.js';
import { sendJson } from './respond.js';

/** kube-apiserver's long-running requests (its BasicLongRunningRequestCheck): no timeout, not drained. */
const LONG_RUNNING_VERBS = new Set(['watch', 'proxy']);
const LONG_RUNNING_SUBRESOURCES = new Set(['attach', 'exec', 'proxy', 'log', 'portforward']);

export function isLongRunning(info: RequestInfo): boolean {
  return LONG_RUNNING_VERBS.has(info.verb) || (info.isResourceRequest && LONG_RUNNING_SUBRESOURCES.has(info.subresource));
}

/** Paths never refused during the drain: health probes and scrapes (kube's pathPrefixesExemptFromRetryAfter). */
const EXEMPT_PREFIXES = ['/readyz', '/livez', '/healthz', '/metrics'];

/** kube's isRequestExemptFromRetryAfter: the probes and scrapes, and the server's own loopback client. */
export function exemptFromRetryAfter(req: ApiRequest): boolean {
  if ((req.headers['user-agent'] ?? '').startsWith('kube-apiserver/')) return true;
  for (const p of EXEMPT_PREFIXES) if (req.path.startsWith(p)) return true;
  return false;
}

/** WithRetryAfter's answer: Go's http.Error text (a trailing newline), status 429. */
const RETRY_AFTER_TEXT = 'The apiserver is shutting down, please try again later.\n';
/** WithWaitGroup's answer: a 503 Status, JSON whatever the Accept. */
const WAIT_GROUP_STATUS = JSON.stringify({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message: 'apiserver is shutting down',
  reason: 'ServiceUnavailable',
  code: 503,
}) + '\n';

export interface LifecycleOptions {
  sendRetryAfter: boolean;
  /**
   * The longest the drain waits for the non-long-running requests (each is answered by
   * --request-timeout, so this is a backstop for a response that never reports its end).
   */
  drainLimitMs?: number;
  /** --shutdown-watch-termination-grace-period in ms; 0: watches are neither ended nor waited for */
  watchGraceMs: number;
  log?: (m: string) => void;
}

/** A watch open on this thread, and how to end it (set by its handler; else its response is ended). */
interface OpenWatch {
  res: ResponseSink;
  terminate?: () => void;
}

export class ServerLifecycle {
  /** ShutdownInitiated: /readyz fails */
  shutdownInitiated = false;
  /** NotAcceptingNewRequest: the drain has begun */
  notAccepting = false;
  /** non-long-running requests counted in and not yet answered (kube's NonLongRunningRequestWaitGroup) */
  private inFlight = 0;
  /** the watches open (kube's WatchRequestWaitGroup) */
  private watches = new Set<OpenWatch>();
  private drainWaiters: Array<() => void> = [];
  private watchWaiters: Array<() => void> = [];

  constructor(readonly opts: LifecycleOptions) {}

  get inFlightRequests(): number {
    return this.inFlight;
  }

  get openWatches(): number {
    return this.watches.size;
  }

  /** The filter, placed right after request-info (kube's chain has these outside authentication). */
  filter(): Filter {
    return {
      name: 'lifecycle',
      run: (req, res) => {
        if (this.notAccepting && this.opts.sendRetryAfter && !exemptFromRetryAfter(req)) {
          refuseWithRetryAfter(res);
          return true;
        }
        const info = req.requestInfo!;
        if (isLongRunning(info)) {
          if (info.verb !== 'watch' || this.opts.watchGraceMs <= 0) return;
          // (WithWatchTerminationDuringShutdown, there only with a grace period)
          if (this.notAccepting) {
            refuseShuttingDown(req, res);
            return true;
          }
          const w: OpenWatch = { res };
          this.watches.add(w);
          req.onServerShutdown = (terminate) => (w.terminate = terminate);
          res.onDone(() => {
            this.watches.delete(w);
            if (this.watches.size === 0) flush(this.watchWaiters);
          });
          return;
        }
        if (this.notAccepting) {
          if (exemptFromRetryAfter(req)) return;
          refuseShuttingDown(req, res);
          return true;
        }
        this.inFlight++;
        res.onDone(() => {
          if (--this.inFlight === 0) flush(this.drainWaiters);
        });
      },
    };
  }

  initiate(): void {
    this.shutdownInitiated = true;
  }

  /**
   * NotAcceptingNewRequest, then the drain: resolves once the non-long-running requests in
   * flight have ended and, with a grace period, the watches (ended here) too or the grace
   * period is over.
   */
  async stopAccepting(): Promise<void> {
    this.shutdownInitiated = true;
    this.notAccepting = true;
    const log = this.opts.log ?? (() => {});
    let gaveUp = false;
    const requests =
      this.inFlight === 0
        ? Promise.resolve()
        : new Promise<void>((r) => {
            const limit = this.opts.drainLimitMs;
            const t = limit === undefined ? undefined : setTimeout(() => ((gaveUp = true), r()), limit);
            this.drainWaiters.push(() => {
              if (t !== undefined) clearTimeout(t);
              r();
            });
          });
    const watches = this.endWatches();
    await requests;
    if (gaveUp) log(`[graceful-termination] ${this.inFlight} in-flight non long-running request(s) did not drain within ${this.opts.drainLimitMs! / 1000}s`);
    else log('[graceful-termination] in-flight non long-running request(s) have drained');
    await watches;
  }

  /**
   * kube's WatchRequestWaitGroup.Wait with its rate limiter: the open watches are ended at
   * count/grace a second, and at least 200 a second, and waited for up to the grace period.
   */
  private async endWatches(): Promise<void> {
    const grace = this.opts.watchGraceMs;
    const log = this.opts.log ?? (() => {});
    if (grace <= 0) {
      log('[graceful-termination] not going to wait for active watch request(s) to drain');
      return;
    }
    const before = this.watches.size;
    const perSecond = Math.max(200, before / (grace / 1000));
    const queue = [...this.watches];
    const gap = 1000 / perSecond;
    const started = Date.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const next = () => {
      const w = queue.shift();
      if (!w) return;
      try {
        if (w.terminate) w.terminate();
        else w.res.end();
      } catch {
        // a response that cannot end cleanly is left to its connection
      }
      if (queue.length > 0) timer = setTimeout(next, gap);
    };
    next();
    await new Promise<void>((resolve) => {
      if (this.watches.size === 0) return resolve();
      const deadline = setTimeout(resolve, Math.max(0, grace - (Date.now() - started)));
      this.watchWaiters.push(() => {
        clearTimeout(deadline);
        resolve();
      });
    });
    if (timer !== undefined) clearTimeout(timer);
    log(`[graceful-termination] active watch request(s) have drained duration=${grace / 1000}s activeWatchesBefore=${before} activeWatchesAfter=${this.watches.size}`);
  }
}

function flush(fns: Array<() => void>): void {
  const all = fns.splice(0);
  for (const f of all) f();
}

/** WithRetryAfter's 429: plain text, Retry-After: 5, and the connection closed after it. */
export function refuseWithRetryAfter(res: ResponseSink): void {
  if (res.aborted) return;
  res.closeAfterResponse?.();
  res.send(429, [['Content-Type', 'text/plain; charset=utf-8'], ['X-Content-Type-Options', 'nosniff'], ['Retry-After', '5']], RETRY_AFTER_TEXT);
}

/** WithWaitGroup's 503 (waitGroupWriteRetryAfterToResponse): a Status with Retry-After: 1. */
function refuseShuttingDown(req: ApiRequest, res: ResponseSink): void {
  sendJson(req, res, 503, WAIT_GROUP_STATUS, [['Retry-After', '1'], ['X-Content-Type-Options', 'nosniff']]);
}
