// The authentication and authorization filters, timed: kube's WithAuthentication and
// WithAuthorization record each attempt's result and duration (endpoints/filters/metrics.go).
// Here the filters stay as they are and are wrapped once at start-up. The clock reads are the
// cost (about 30 ns each with a vDSO clock, 100 to 200 ns in a VM without one): authentication,
// the second filter, is timed from the transport's own arrival time (SinkBase.startedAt; the
// request-info filter before it parses a path), so it adds one read; authorization adds two.
//
// Thread ownership: the front thread that runs the chain (the metrics are its own).
import type { Filter, FilterResult } from '../http/filter-chain.js';
import type { ApiRequest } from '../http/types.js';
import { StatusError } from '../errors.js';
import type { ApiserverMetrics } from './apiserver-metrics.js';

type Outcome = 'ok' | 'refused' | 'error';

function timed(filter: Filter, record: (req: ApiRequest, outcome: Outcome, seconds: number) => void, refusedCode: number, fromArrival: boolean): Filter {
  const outcomeOf = (err: unknown): Outcome => (err instanceof StatusError && err.code === refusedCode ? 'refused' : 'error');
  return {
    name: filter.name,
    run(req, res): FilterResult {
      const arrived = fromArrival ? (res as { startedAt?: number }).startedAt : 0;
      const start = arrived ? arrived : performance.now();
      let r: FilterResult;
      try {
        r = filter.run(req, res);
      } catch (err) {
        record(req, outcomeOf(err), (performance.now() - start) / 1000);
        throw err;
      }
      if (r && typeof (r as Promise<unknown>).then === 'function') {
        return (r as Promise<void | boolean>).then(
          (v) => {
            record(req, 'ok', (performance.now() - start) / 1000);
            return v;
          },
          (err) => {
            record(req, outcomeOf(err), (performance.now() - start) / 1000);
            throw err;
          },
        );
      }
      record(req, 'ok', (performance.now() - start) / 1000);
      return r;
    },
  };
}

/** authentication_attempts, authentication_duration_seconds and authenticated_user_requests around the authentication filter. */
export function timedAuthentication(filter: Filter, m: ApiserverMetrics): Filter {
  return timed(
    filter,
    (req, outcome, s) => {
      // (a filter that answered itself, without a user, is no authentication attempt)
      if (outcome === 'ok' && req.user) m.authentication('success', s, req.user.name);
      else if (outcome !== 'ok') m.authentication(outcome === 'refused' ? 'failure' : 'error', s);
    },
    401,
    true,
  );
}

/** authorization_attempts_total and authorization_duration_seconds around the authorization filter. */
export function timedAuthorization(filter: Filter, m: ApiserverMetrics): Filter {
  return timed(filter, (_req, outcome, s) => m.authorization(outcome === 'ok' ? 'allowed' : outcome === 'refused' ? 'denied' : 'error', s), 403, false);
}

/**
 * The flow-control filter (inflight limits or priority and fairness), its refusals counted in
 * apiserver_request_terminations_total (kube's RecordRequestTermination in WithMaxInFlightLimit
 * and WithPriorityAndFairness). No clock read: only a refusal costs anything.
 */
export function countedFlowControl(filter: Filter, terminated: (req: ApiRequest, code: number) => void): Filter {
  const note = (req: ApiRequest, err: unknown) => {
    if (err instanceof StatusError && err.code === 429) terminated(req, 429);
  };
  return {
    name: filter.name,
    run(req, res): FilterResult {
      let r: FilterResult;
      try {
        r = filter.run(req, res);
      } catch (err) {
        note(req, err);
        throw err;
      }
      if (r && typeof (r as Promise<unknown>).then === 'function') {
        return (r as Promise<void | boolean>).catch((err) => {
          note(req, err);
          throw err;
        });
      }
      return r;
    },
  };
}
