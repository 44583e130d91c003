// watch: a chunked stream of JSON events.
//
//   resourceVersion unset  get state (consistent), then changes: synthetic ADDED first
//   resourceVersion "0"    get state (any), then changes
//   resourceVersion N      start exactly after N: replay from the cache's ring, or from the
//                          shard's revision log when the ring no longer reaches back to N;
//                          410 (an ERROR event in the stream) when N is compacted away
//
// Everything between choosing the start version and registering the watcher runs without
// an await, so no committed event can slip between the replay and the live stream.
import { randomInt } from 'node:crypto';
import { listOptions, timeoutSecondsParam } from '../request/query.js';
import { exactField } from '../request/selectors.js';
import { baseHeaders } from '../http/respond.js';
import { Watcher } from '../../workers/watch/watcher-group.js';
import { frameOf, splitKey, type WatchEvent } from '../../workers/watch/watch-cache.js';
import { eventsBetween } from '../../workers/shard/reader.js';
import { errors } from '../errors.js';
import type { HandlerContext } from './context.js';
import { encodeContextOf, responseRepresentation, streamRepresentation } from './representation.js';
import { streamContentType, type Representation } from '../codec/negotiate.js';
import { valueFrame, watchFramer } from '../codec/representation.js';

function errorFrame(code: number, reason: string, message: string, r: Representation): Buffer {
  const status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
  return valueFrame('ERROR', status, r);
}

export async function handleWatch(c: HandlerContext): Promise<void> {
  const { store, target, info } = c;
  responseRepresentation(c); // kube negotiates the list's type first, then the stream's
  const repr = streamRepresentation(c);
  const frame = watchFramer(repr, encodeContextOf(c, repr));
  const opts = listOptions(c.req);
  const cache = store.cacheOf(target);
  const shard = cache.shard;
  const coord = store.coord;
  const name = info.name || exactField(opts.fields, 'metadata.name') || '';
  const minTimeout = c.limits.minRequestTimeoutSeconds;
  const timeoutSeconds = timeoutSecondsParam(c.req.query) ?? minTimeout + randomInt(Math.max(1, minTimeout));
  const rvParam = opts.resourceVersion;

  let startRv: number;
  if (rvParam === '' || rvParam === '0') {
    if (rvParam === '') await store.ensureLatest(target);
  } else {
    if (!/^[0-9]+$/.test(rvParam)) throw errors.badRequest(`invalid resource version: ${JSON.stringify(rvParam)}`);
    startRv = Number(rvParam);
    if (startRv >= coord.compactedRv(shard)) await store.ensureFresh(target, startRv);
  }

  // ---- from here on, synchronous until the watcher is registered ----
  const watcher = new Watcher({ ns: info.namespace, name, labels: opts.labels, fields: opts.fields, sink: c.res, maxBufferedBytes: c.limits.watchMaxBufferedBytes, frame });
  const headers = baseHeaders(c.req, streamContentType(repr.mediaType));
  if (rvParam === '' || rvParam === '0') {
    startRv = coord.freshRv(shard);
    const items = name ? [cache.items.get(`${info.namespace}/${name}`)].filter((e) => e !== undefined) : cache.list(info.namespace);
    for (const e of items) {
      if (!watcher.matches(e!)) continue;
      const ev: WatchEvent = { rv: e!.rv, type: 'ADDED', entry: e! };
      watcher.outbox.push(frame ? frame(ev, ev.type) : frameOf(ev));
    }
    watcher.rv = startRv;
  } else {
    const compacted = coord.compactedRv(shard);
    if (startRv! < compacted) {
      c.res.startStream(200, headers);
      c.res.cork(() => {
        c.res.write(errorFrame(410, 'Expired', `too old resource version: ${startRv} (${compacted})`, repr));
        c.res.end();
      });
      return;
    }
    watcher.rv = startRv!;
    let replay = cache.eventsAfter(startRv!);
    if (replay === null) {
      // The ring starts after startRv: the older part comes from the revision log.
      const older = eventsBetween(coord.envOf(shard), target.gr, startRv!, cache.startRv).map((s): WatchEvent => {
        const [ns, nm] = splitKey(s.key);
        return { rv: s.rv, type: s.type, entry: { key: s.key, ns, name: nm, rv: s.rv, json: s.json } };
      });
      replay = older.concat(cache.eventsAfter(cache.startRv) ?? []);
    }
    for (const ev of replay) watcher.enqueue(ev);
  }
  c.res.startStream(200, headers);
  // uWS sends the headers with the first chunk; a watch with nothing to replay still owes
  // the client its headers now. Whitespace between JSON documents is skipped by readers.
  // Binary streams (protobuf frames, CBOR sequences) have no such filler, and uWS cannot
  // send headers alone: theirs leave with the first event.
  if (watcher.outbox.length === 0 && repr.mediaType === 'application/json') c.res.cork(() => c.res.write('\n'));
  watcher.flush();
  if (watcher.closed) return;
  cache.watchers.add(watcher);
  const timer = setTimeout(() => watcher.close(), timeoutSeconds * 1000);
  timer.unref();
  watcher.onClose = () => {
    clearTimeout(timer);
    cache.watchers.remove(watcher);
  };
  c.res.onAborted(() => watcher.close());
}
