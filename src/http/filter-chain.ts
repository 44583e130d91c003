// The filter chain: an ordered list of filters that every request passes, whatever
// transport carried it. The order is kube-apiserver's, and it matters:
//
//   1. request-info     parse the path into verb/resource/namespace/name (everything after needs it)
//   2. authentication   who is calling; a bad credential is 401 here, before anything else runs
//   3. audit            (when auditing is on) records see the authenticated user
//   4. impersonation    act as another user (Impersonate-* headers): after authentication, before authorization
//   5. flow-control     inflight limits and priority-and-fairness: rejects (429) before any real work
//   6. authorization    may the (possibly impersonated) user do this verb on this resource
//   7. request-body     only now is the body read: everything above decides from the headers
//   8. handler          the router, then the verb's handler
//
// The transport hands a request over as soon as its headers are in; filters 1-6 never see
// its body. A filter returns true when it has answered the request itself; it throws a
// StatusError to reject it. Filters are synchronous where they can be: a request without a
// body that is served from the cache passes the whole chain synchronously.
import type { ApiRequest, ResponseSink } from './types.js';
import { sendError } from './respond.js';

export type FilterResult = void | boolean | Promise<void | boolean>;

export interface Filter {
  readonly name: string;
  run(req: ApiRequest, res: ResponseSink): FilterResult;
}

export class FilterChain {
  constructor(readonly filters: Filter[]) {}

  /**
   * Runs the filters synchronously for as long as they answer synchronously; only a filter
   * (or handler) that returns a promise makes the rest of the chain asynchronous. A GET
   * served from the cache thus leaves within uWS's request callback, with no promise made.
   */
  handle(req: ApiRequest, res: ResponseSink): void {
    try {
      this.from(req, res, 0);
    } catch (err) {
      fail(req, res, err);
    }
  }

  private from(req: ApiRequest, res: ResponseSink, i: number): void {
    const filters = this.filters;
    for (; i < filters.length; i++) {
      const r = filters[i].run(req, res);
      if (r === true) return;
      if (r && typeof (r as Promise<unknown>).then === 'function') {
        const next = i + 1;
        (r as Promise<void | boolean>).then(
          (v) => {
            if (v === true) return;
            try {
              this.from(req, res, next);
            } catch (err) {
              fail(req, res, err);
            }
          },
          (err) => fail(req, res, err),
        );
        return;
      }
    }
  }
}

/**
 * A request's failure, answered as its Status. Should answering it fail too (a response
 * the transport cannot write), the connection is closed: as kube-apiserver recovers a
 * handler's panic, one request never takes the process down with it.
 */
function fail(req: ApiRequest, res: ResponseSink, err: unknown): void {
  try {
    sendError(req, res, err);
  } catch (again) {
    console.error(`E ${req.method} ${req.path}: the error answer failed too, connection closed: ${(again as Error)?.message ?? again}`);
    try {
      res.close();
    } catch {
      // the response is gone already
    }
  }
}
