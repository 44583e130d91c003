// The storage backend's requests, measured: etcd_request_duration_seconds, etcd_requests_total
// and etcd_request_errors_total by operation and resource type (kube's storage/etcd3/metrics,
// kept for whichever backend is configured, LMDB or etcd), and, with tracing on, a child span
// of the request for each (kube's "Create etcd3", "GuaranteedUpdate etcd3", ... spans).
//
// The backend object is kept (callers hold it, optional methods stay as they are); only the
// request methods are replaced on the instance. Reads served by the cache never reach these.
//
// Thread ownership: the thread whose storage instance it is.
import { WriteRejected, type Storage, type StorageWrite } from './interface.js';
import type { ApiserverMetrics, StorageRequestSeries } from '../metrics/apiserver-metrics.js';
import { childSpan, endSpan, tracingOn } from '../tracing/request-tracing.js';

/** kube's operation label and span name of a conditional write. */
function writeOp(op: StorageWrite): { operation: string; span: string } {
  if (op.type === 'ADDED') return { operation: 'create', span: 'Create etcd3' };
  if (op.type === 'DELETED') return { operation: 'delete', span: 'Delete etcd3' };
  return { operation: 'update', span: 'GuaranteedUpdate etcd3' };
}

function measured<T>(series: StorageRequestSeries, spanName: string, key: string, gr: string, call: () => T | Promise<T>): T | Promise<T> {
  const start = performance.now();
  // (the attributes are only built when spans are made)
  const span = tracingOn() ? childSpan(spanName, key ? { key, resource: gr } : { resource: gr }) : undefined;
  const done = (err?: unknown) => {
    series.duration.observe((performance.now() - start) / 1000);
    // (a refused precondition is an answer, not a failed request: a transaction whose compare
    // failed is no etcd error either)
    const failed = err !== undefined && !(err instanceof WriteRejected);
    if (failed) series.errors++;
    endSpan(span, failed ? err : undefined);
  };
  let r: T | Promise<T>;
  try {
    r = call();
  } catch (err) {
    done(err);
    throw err;
  }
  if (r instanceof Promise) {
    return r.then(
      (v) => {
        done();
        return v;
      },
      (err) => {
        done(err);
        throw err;
      },
    );
  }
  done();
  return r;
}

export function instrumentStorage(storage: Storage, m: ApiserverMetrics): Storage {
  const write = storage.write.bind(storage);
  storage.write = (op, obj) => {
    const w = writeOp(op);
    return measured(m.storageSeries(w.operation, op.gr), w.span, op.key, op.gr, () => write(op, obj)) as ReturnType<Storage['write']>;
  };
  const getAt = storage.getAt.bind(storage);
  storage.getAt = (gr, key, rv) => measured(m.storageSeries('get', gr), 'Get etcd3', key, gr, () => getAt(gr, key, rv));
  const rangeAt = storage.rangeAt.bind(storage);
  storage.rangeAt = (gr, rv, ns, from) => measured(m.storageSeries('list', gr), 'List(recursive=true) etcd3', ns, gr, () => rangeAt(gr, rv, ns, from));
  if (storage.count) {
    const count = storage.count.bind(storage);
    storage.count = (gr) => measured(m.storageSeries('count', gr), 'Count etcd3', '', gr, () => count(gr)) as Promise<number>;
  }
  return storage;
}
