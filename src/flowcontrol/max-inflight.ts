// The inflight limits (--max-requests-inflight, --max-mutating-requests-inflight).
// Long-running requests (watches) do not hold a seat; system:masters is exempt, as the
// exempt priority level of priority-and-fairness makes it. Over the limit: 429 with
// Retry-After and a plain-text body, as kube-apiserver answers (http.Error).
//
// The limits are the server's, whatever front thread a request reaches (issue 18): the two
// counts are words of the shared seat table (shared-seats.ts), taken by compare-and-swap below
// the limit. No queues here, so nothing waits on another thread. As kube's max-inflight
// filter, it feeds the executing series of read_vs_write_current_requests (each kind's
// requests over its limit; the server's, seat-timing.ts) at each take and release.
//
// Thread ownership: each front thread has its own InflightLimiter; the counts are every front
// thread's (Atomics only).
import type { Filter } from '../http/filter-chain.js';
import { TooManyRequestsError } from '../errors.js';
import { SharedSeats } from './shared-seats.js';

export interface InflightOptions {
  maxReadonly: number;
  maxMutating: number;
}

const MUTATING = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

export class InflightLimiter {
  /** `seats`: the table the front threads share; without one, this thread's own (as in unit tests) */
  constructor(
    readonly opts: InflightOptions,
    private readonly seats: SharedSeats = new SharedSeats(),
  ) {}

  /** read_vs_write_current_requests, for /metrics (the main thread's: the statistics are the server's) */
  readWrite(): ReturnType<SharedSeats['rw']['histograms']> {
    return this.seats.rw.histograms(performance.now());
  }

  filter(): Filter {
    // (only when this filter is the server's: priority and fairness sets its own denominators)
    this.seats.rw.setDenominators(performance.now(), this.opts.maxReadonly, this.opts.maxMutating, 1);
    return {
      name: 'flow-control',
      run: (req, res) => {
        const info = req.requestInfo!;
        if (info.verb === 'watch') return;
        if (req.user?.groups.includes('system:masters')) return;
        const mutating = MUTATING.has(info.verb);
        const limit = mutating ? this.opts.maxMutating : this.opts.maxReadonly;
        if (limit <= 0) return;
        if (!this.seats.tryTakeInflight(mutating, limit)) throw new TooManyRequestsError('concurrency-limit');
        this.seats.rw.note(performance.now(), mutating, 1, 0);
        res.onDone(() => this.seats.addInflight(mutating, -1, performance.now()));
      },
    };
  }
}
