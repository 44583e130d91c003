// The priority-and-fairness filter (--enable-priority-and-fairness, on by default as in
// kube-apiserver 1.33): every authenticated request is classified into a FlowSchema and
// priority level (classifier.ts), and its responses carry the X-Kubernetes-PF-* headers
// with both objects' uids, whatever answers it, a 429 included.
//
// Thread ownership: the front thread owns all of it (the classifier's cache and config).
import type { Filter } from '../http/filter-chain.js';
import type { Coordinator } from '../coordinator/coordinator.js';
import type { Store, ResourceTarget } from '../registry/store.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import { Classifier } from './classifier.js';

/**
 * Long-running requests other than watches (kube's long-running check: the proxy verb, and
 * the attach, exec, log, portforward and proxy subresources) bypass flow control entirely,
 * as in kube: not classified, no headers, no seat.
 */
const LONG_RUNNING_SUBRESOURCES = new Set(['attach', 'exec', 'log', 'portforward', 'proxy']);

export interface ApfOptions {
  /** what limits the requests once classified (the inflight limiter until seats come) */
  limit?: Filter;
}

export class PriorityAndFairness {
  readonly classifier: Classifier;

  constructor(
    coord: Coordinator,
    store: Store,
    fsT: ResourceTarget,
    plT: ResourceTarget,
    private opts: ApfOptions = {},
  ) {
    const objects = (t: ResourceTarget) => [...store.cacheOf(t).items.values()].map((e) => entryObject(e)).filter((o) => o && !o.metadata?.deletionTimestamp);
    this.classifier = new Classifier(() => ({ schemas: objects(fsT), levels: objects(plT) }));
    coord.observe((cache) => {
      if (cache.gr === fsT.gr || cache.gr === plT.gr) this.classifier.invalidate();
    });
  }

  filter(): Filter {
    const classifier = this.classifier;
    const limit = this.opts.limit;
    return {
      name: 'flow-control',
      run: (req, res) => {
        const info = req.requestInfo!;
        if (info.verb === 'proxy' || (info.subresource !== '' && info.isResourceRequest && LONG_RUNNING_SUBRESOURCES.has(info.subresource))) return;
        const c = classifier.classify(req.user!, info);
        if (c !== null) req.responseHeaders = c.headers;
        return limit?.run(req, res);
      },
    };
  }
}
