// watch: a chunked stream of JSON events (spec 4.6, 6.1).
//
//   resourceVersion unset  get state (consistent), then changes: synthetic ADDED first
//   resourceVersion "0"    get state (any), then changes
//   resourceVersion N      start exactly after N: replay from the cache's ring, or from
//                          storage's revision history when the ring no longer reaches back
//                          to N (the cache layer chooses: Cacher.replay);
//                          410 (an ERROR event in the stream) when N is compacted away
//   sendInitialEvents=true (with resourceVersionMatch=NotOlderThan): the state at least as
//                          new as N (or consistent, when N is unset) as ADDED events, then a
//                          BOOKMARK annotated k8s.io/initial-events-end (if bookmarks were
//                          asked for), then changes
//   sendInitialEvents=false: no synthetic events; N unset or "0" starts at the newest version
//
// As kube's cacher: with sendInitialEvents=true the watch waits for N (up to 3 s) and, when it
// is not reached, answers 200 with the 504 "Timeout: Too large resource version" as an ERROR
// event (newErrWatcher), not as an HTTP error; a plain watch from a future N is not waited
// for and simply skips events up to N. timeoutSeconds unset or 0 picks a random timeout in
// [--min-request-timeout, 2x). With the WatchList gate on, a watch from "" or "0" that names
// neither sendInitialEvents nor resourceVersionMatch defaults to sendInitialEvents=true with
// NotOlderThan (SetListOptionsDefaults); with it off we still serve sendInitialEvents, which
// kube 1.33 would refuse with 422 (README, --feature-gates).
//
// Everything between choosing the start version and registering the watcher runs without
// an await (with a backend that reads history from memory, as LMDB does), so no committed
// event can slip between the replay and the live stream.
import { apiserverMetrics } from '../metrics/apiserver-metrics.js';
import { randomInt } from 'node:crypto';
import { listOptions, timeoutSecondsParam } from '../request/query.js';
import { exactField } from '../request/selectors.js';
import { validateListOptions } from '../request/list-options.js';
import { convertFieldSelector, selectableFields } from '../request/field-labels.js';
import { baseHeaders } from '../http/respond.js';
import type { HeaderList } from '../http/types.js';
import { Watcher, wantBookmarks } from '../../workers/watch/watcher-group.js';
import { entryAs, entryObject, initialFrames, type WatchEvent } from '../../workers/watch/watch-cache.js';
import { decodeProblem } from '../registry/corrupt-objects.js';
import { errors, StatusError } from '../errors.js';
import { features } from '../features.js';
import { parseRv } from '../registry/store.js';
import { hasView, readyViews, viewOf } from '../registry/conversion.js';
import type { CacheEntry } from '../../workers/watch/watch-cache.js';
import { CompactedError } from '../storage/interface.js';
import { apiVersionOf, type HandlerContext } from './context.js';
import { encodeContextOf, responseRepresentation, streamRepresentation } from './representation.js';
import { streamContentType, type Representation } from '../codec/negotiate.js';
import { valueFrame, watchFramer, type EntryOf } from '../codec/representation.js';

function errorFrame(code: number, reason: string, message: string, r: Representation): Buffer {
  const status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
  return valueFrame('ERROR', status, r);
}

/** A watch that is one ERROR event carrying err's whole Status, then ends (kube's errWatcher). */
function endWithError(c: HandlerContext, headers: HeaderList, err: StatusError, r: Representation): void {
  c.res.startStream(200, headers);
  c.res.cork(() => {
    c.res.write(valueFrame('ERROR', err.toStatus(), r));
    c.res.end();
  });
}

function webhookPrepare(conv: NonNullable<HandlerContext['target']['conv']>) {
  return (ev: WatchEvent, as: string): Promise<void> | undefined => {
    const e = entryAs(ev, as as WatchEvent['type']) as CacheEntry;
    return hasView(conv, e) ? undefined : readyViews(conv, [e]);
  };
}

function webhookFields(conv: NonNullable<HandlerContext['target']['conv']>, selectorGr: string) {
  return {
    fieldsOf: (e: CacheEntry) => selectableFields(selectorGr, entryObject(viewOf(conv, e))),
    prepareMatch: (ev: WatchEvent): Promise<void> | undefined => {
      const todo = [ev.entry, ev.prev].filter((e): e is CacheEntry => !!e && !hasView(conv, e));
      return todo.length ? readyViews(conv, todo) : undefined;
    },
  };
}

export async function handleWatch(c: HandlerContext): Promise<void> {
  const { store, target, info } = c;
  responseRepresentation(c); // kube negotiates the list's type first, then the stream's
  const repr = streamRepresentation(c);
  // the frames are made from cache events: a DELETED by selector carries the state it left
  const frame = watchFramer(repr, encodeContextOf(c, repr), ((ev, type) => entryAs(ev as WatchEvent, type)) as EntryOf);
  const opts = listOptions(c.req);
  if (features.enabled('WatchList') && opts.sendInitialEvents === undefined && opts.resourceVersionMatch === '' && (opts.resourceVersion === '' || opts.resourceVersion === '0')) {
    // metainternalversion.SetListOptionsDefaults, applied before validation as kube does
    opts.sendInitialEvents = true;
    opts.resourceVersionMatch = 'NotOlderThan';
  }
  validateListOptions(opts, true);
  const fields = convertFieldSelector(target.selectorGr ?? target.gr, opts.fields);
  if (info.name && fields) {
    // A watch of one named object (the /watch/ path form) may narrow it further by fields,
    // but not name another object (ListResource's hasName check).
    if (exactField(fields, 'metadata.name') !== info.name) throw errors.badRequest("fieldSelector metadata.name doesn't match requested name");
  }
  const cache = store.cacheOf(target);
  const gr = target.gr;
  const storage = store.storage;
  const name = info.name || exactField(fields, 'metadata.name') || '';
  const minTimeout = c.limits.minRequestTimeoutSeconds;
  // 0 is "unset" for kube (a random timeout); a negative value ends the watch at once, there too.
  const asked = timeoutSecondsParam(c.req.query);
  const timeoutSeconds = asked !== undefined && asked !== 0 ? asked : minTimeout + randomInt(Math.max(1, minTimeout));
  const rvParam = opts.resourceVersion;
  const legacyStart = rvParam === '' || rvParam === '0';
  // Synthetic ADDED events: asked for explicitly, or implied by an unset / "0" version.
  const initial = opts.sendInitialEvents ?? legacyStart;

  const startRv = legacyStart ? 0 : parseRv(rvParam);
  const headers = baseHeaders(c.req, streamContentType(repr.mediaType));
  try {
    if (rvParam === '') await store.ensureLatest(target);
    else if (initial && !legacyStart) await store.ensureFresh(target, startRv);
  } catch (err) {
    // Past parsing, kube's watch reports what goes wrong inside the stream.
    if (err instanceof StatusError && err.code === 504) return endWithError(c, headers, err, repr);
    throw err;
  }

  // ---- from here on, synchronous until the watcher is registered (with a backend that
  // reads history from memory, as LMDB does; one that answers later is awaited where noted) ----
  const watcher = new Watcher({
    gr: target.gr,
    ns: info.namespace,
    name,
    labels: opts.labels,
    fields,
    sink: c.res,
    maxBufferedBytes: c.limits.watchMaxBufferedBytes,
    frame,
    valueFrame: frame ? (type, value) => valueFrame(type, value, repr) : undefined,
    bookmarks: opts.allowWatchBookmarks,
    apiVersion: apiVersionOf(target),
    kind: target.info.kind,
    freshRv: () => storage.freshRv(gr),
    // A CRD's conversion webhook converts each event's object before its frame is made.
    prepare: target.conv?.webhook ? webhookPrepare(target.conv) : undefined,
    // ...and its field selector reads the request version's fields on the converted objects
    ...(target.conv?.webhook && fields ? webhookFields(target.conv, target.selectorGr!) : {}),
    // (the kind's counter is found once per watch, not per event)
    counter: apiserverMetrics.watchEventCounter(target.info.group, target.info.version, target.info.kind),
  });
  if (initial) {
    const at = storage.freshRv(gr);
    let current = store.currentEntries(target, info.namespace, name);
    // (a backend read over the network, with the type's cache off: see below for the caveat)
    if (current instanceof Promise) current = await current;
    const conv = target.conv;
    if (conv?.webhook) {
      // The initial objects go to the webhook in one review; each event below waits on it
      // (readyViews finds them under way) rather than calling for itself.
      const todo = (fields ? current : current.filter((e) => watcher.matches(e))).filter((e) => !hasView(conv, e));
      // (a failure is each event's: the watch ends at the first)
      if (todo.length) readyViews(conv, todo, true).catch(() => undefined);
    }
    for (const e of current) {
      // (a webhook's events are matched and framed once converted, in order)
      if (target.conv?.webhook) {
        watcher.enqueue({ rv: e.rv, type: 'ADDED', entry: e } as WatchEvent);
        continue;
      }
      if (!watcher.matches(e)) continue;
      if (frame) watcher.outbox.push(frame({ rv: e.rv, type: 'ADDED', entry: e } as WatchEvent, 'ADDED'));
      else initialFrames(e, watcher.outbox);
    }
    watcher.rv = at;
    if (opts.sendInitialEvents) watcher.bookmark(true);
  } else if (legacyStart) {
    watcher.rv = storage.freshRv(gr);
  } else {
    const expired = (compacted: number): void => {
      c.res.startStream(200, headers);
      c.res.cork(() => {
        // The cacher words it with both versions; with the resource's cache off kube's watch
        // comes from etcd, whose compaction error reads differently.
        const message = cache.capacity > 0 ? `too old resource version: ${startRv} (${compacted})` : 'The resourceVersion for the provided watch is too old.';
        c.res.write(errorFrame(410, 'Expired', message, repr));
        c.res.end();
      });
    };
    const compacted = storage.compactedRv(gr);
    if (startRv < compacted) return expired(compacted);
    // A version not reached yet is fine: events up to it are skipped as they arrive.
    watcher.rv = startRv;
    // From the ring, else from storage's history then the ring (the cache layer chooses).
    let replay;
    try {
      replay = store.cacher.replay(gr, startRv, watcher.filtered);
      if (replay instanceof Promise) replay = await replay;
    } catch (e) {
      // compacted since compactedRv() was asked (another replica's compactor on etcd)
      if (e instanceof CompactedError) return expired(e.compactedRv);
      throw e;
    }
    if (!Array.isArray(replay)) {
      // Stored bytes that cannot be decoded end the watch with an error, as kube's watch does;
      // they never reach the client.
      const bad = replay.corrupt;
      c.res.startStream(200, headers);
      c.res.cork(() => {
        c.res.write(errorFrame(500, 'InternalError', `Internal error occurred: ${decodeProblem(bad)}`, repr));
        c.res.end();
      });
      return;
    }
    for (const ev of replay) watcher.enqueue(ev);
  }
  c.res.startStream(200, headers);
  // uWS sends the headers with the first chunk; a watch with nothing to replay still owes
  // the client its headers now. Whitespace between JSON documents is skipped by readers.
  // Binary streams (protobuf frames, CBOR sequences) have no such filler, and uWS cannot
  // send headers alone: theirs leave with the first event.
  if (watcher.outbox.length === 0 && repr.mediaType === 'application/json') c.res.cork(() => c.res.write('\n'));
  watcher.flushInitial();
  if (watcher.closed) return;
  cache.watchers.add(watcher);
  // set up: the watch gives its priority-and-fairness seats back (kube's watch initialization signal)
  c.req.delegated?.();
  wantBookmarks(watcher);
  const timer = setTimeout(() => {
    // kube-apiserver gives a bookmark as a watch times out, so the client resumes from it
    watcher.bookmark();
    watcher.flush();
    watcher.close();
  }, timeoutSeconds * 1000);
  timer.unref();
  watcher.onClose = () => {
    clearTimeout(timer);
    cache.watchers.remove(watcher);
  };
  c.res.onAborted(() => watcher.close());
  // The graceful shutdown ends the watch (src/http/lifecycle.ts), as kube's watch server
  // returns on its ServerShutdownSignal: what is queued goes out, then the stream's end.
  c.req.onServerShutdown?.(() => {
    watcher.flush();
    watcher.close();
  });
}
