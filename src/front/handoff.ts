// Which thread runs a request that a front thread admitted (issues 17 and 18). Two kinds of
// request leave the thread that holds their connection, after authorization and the body's
// read (filter-chain.ts), through the forwarding of forward.ts:
//
// - the writes whose state is the main thread's alone (MAIN_THREAD_WRITES: the allocators of
//   Service addresses and ports, the namespace lifecycle's finalization) go from another
//   front thread to the main thread;
// - a write with a large body, or an update, patch or delete of a large object
//   (--large-request-offload-bytes, 256 KiB by default) goes to
//   the bulk thread: decoding, validating, tracking the fields of and encoding a 1.5 MB
//   object with 100,000 keys takes a thread 0.3-0.5 s, which other requests on the thread
//   that holds the connection would otherwise wait out. The bulk thread is a front thread
//   without a listener (started at the first such request, so a server that never sees
//   one never pays for its caches), and only ever serves these.
//
// The receiving thread runs the request through its own chain from the headers again
// (authentication and authorization are cheap), without flow control and audit: the
// sending thread holds the request's seat and writes its audit record, as it answers it.
//
// Thread ownership: one filter per thread; its clients belong to that thread.
import type { Filter } from '../http/filter-chain.js';
import type { ApiRequest, ResponseSink } from '../http/types.js';
import type { ForwardClient } from './forward.js';
import { groupResourceKey } from '../api/targets.js';

/** Group-resources whose writes only the main thread runs (its allocators and controllers hold their state). */
export const MAIN_THREAD_WRITES: ReadonlySet<string> = new Set(['services', 'namespaces', 'ipaddresses.networking.k8s.io', 'servicecidrs.networking.k8s.io']);

const WRITES = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);
/**
 * Subresources whose "writes" store nothing: they are carried on to a node's agent or a
 * proxied backend, by the thread that holds the connection (an upgrade cannot leave it).
 */
const CONNECT_SUBRESOURCES = new Set(['exec', 'attach', 'portforward', 'proxy', 'log']);
/** the verbs whose body is an object to decode, check and store */
const BODY_WRITES = new Set(['create', 'update', 'patch']);

export interface HandoffOptions {
  /** on a front thread other than the main one: the main thread, for MAIN_THREAD_WRITES */
  toMain?: ForwardClient;
  /** the bulk thread, for writes with large bodies (started on first use); absent on the bulk thread itself */
  toBulk?: () => ForwardClient | Promise<ForwardClient>;
  /** a body at least this large goes to the bulk thread (0: none does) */
  largeBytes: number;
  /**
   * The stored size of the object an update, patch or delete names (0 when unknown): a
   * small patch of a large object decodes, patches, checks and encodes all of it.
   */
  storedBytes?: (req: ApiRequest) => number;
}

export function handoffFilter(o: HandoffOptions): Filter {
  return {
    name: 'handoff',
    run: (req: ApiRequest, res: ResponseSink) => {
      const info = req.requestInfo!;
      if (!info.isResourceRequest || !WRITES.has(info.verb) || CONNECT_SUBRESOURCES.has(info.subresource)) return;
      if (o.toMain && MAIN_THREAD_WRITES.has(groupResourceKey(info.apiGroup, info.resource))) {
        o.toMain.forward(req, res);
        return true;
      }
      if (!o.toBulk || o.largeBytes <= 0) return;
      const large = (BODY_WRITES.has(info.verb) && (req.body?.length ?? 0) >= o.largeBytes) || (info.verb !== 'create' && info.name !== '' && (o.storedBytes?.(req) ?? 0) >= o.largeBytes);
      if (!large) return;
      const bulk = o.toBulk();
      if (!('then' in bulk)) {
        bulk.forward(req, res);
        return true;
      }
      return bulk.then((client) => {
        if (!res.aborted) client.forward(req, res);
        return true;
      });
    },
  };
}
