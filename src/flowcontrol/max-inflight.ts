// The inflight limits (--max-requests-inflight, --max-mutating-requests-inflight).
// Long-running requests (watches) do not hold a seat; system:masters is exempt, as the
// exempt priority level of priority-and-fairness makes it. Over the limit: 429 with
// Retry-After and a plain-text body, as kube-apiserver answers (http.Error).
import type { Filter } from '../http/filter-chain.js';
import { TooManyRequestsError } from '../errors.js';

export interface InflightOptions {
  maxReadonly: number;
  maxMutating: number;
}

const MUTATING = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

export class InflightLimiter {
  readonly = 0;
  mutating = 0;
  constructor(readonly opts: InflightOptions) {}

  filter(): Filter {
    return {
      name: 'flow-control',
      run: (req, res) => {
        const info = req.requestInfo!;
        if (info.verb === 'watch') return;
        if (req.user?.groups.includes('system:masters')) return;
        const mutating = MUTATING.has(info.verb);
        const limit = mutating ? this.opts.maxMutating : this.opts.maxReadonly;
        if (limit <= 0) return;
        if ((mutating ? this.mutating : this.readonly) >= limit) {
          throw new TooManyRequestsError('concurrency-limit');
        }
        if (mutating) this.mutating++;
        else this.readonly++;
        res.onDone(() => {
          if (mutating) this.mutating--;
          else this.readonly--;
        });
      },
    };
  }
}
