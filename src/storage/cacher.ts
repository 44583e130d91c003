// The cache layer above any storage backend (kube's Cacher, apiserver/pkg/storage/cacher):
// one ResourceCache per group-resource (current objects, ring of recent events, watchers),
// the objects kept aside because their stored bytes cannot be decoded, and the in-process
// observers (controllers). It is fed by the backend's committed-change feed (ChangeSink):
// every change is applied to its type's cache as it comes, and at the end of each batch the
// watchers and then the observers get the batch's events. The backend answers its writes
// only after that, so a client reads its own write back from the cache.
//
// A backend that keeps no index of current objects of its own (LMDB) reads it from here
// and loads the caches itself at start-up (CacheAccess, Storage.attachCaches); any other
// delivers its current state through load() as it starts.
//
// Thread ownership: a Cacher, its caches and its watchers belong to the front thread that
// made it, the thread its backend runs its feed on.
import { ResourceCache, firstKeyAtOrAfter, splitKey, type WatchEvent } from '../../workers/watch/watch-cache.js';
import { looksLikeObjectAt } from '../../workers/watch/load-caches.js';
import type { CacheAccess, ChangeSink, ChangeType, CorruptObject, CurrentState, Storage, StoredEvent, StoredObject } from './interface.js';

export interface CacherOptions {
  /** ring capacity of each resource type's watch cache; per-type overrides (0 disables) */
  watchCacheCapacity: number;
  watchCacheSizes: Record<string, number>;
}

/** A cheap check that stored bytes are a JSON object: '{' first and '}' last (no full parse on the hot paths). */
export function looksLikeObject(b: Buffer): boolean {
  return looksLikeObjectAt(b, 0, b.length);
}

export class Cacher implements ChangeSink, CacheAccess {
  private readonly byGr = new Map<string, ResourceCache>();
  /** objects whose stored bytes cannot be decoded, per type: key -> version and bytes */
  private readonly corrupt = new Map<string, Map<string, CorruptObject>>();
  /** (replaced, never mutated: an observer removed during a batch does not disturb its loop) */
  private observers: Array<(cache: ResourceCache, events: WatchEvent[]) => void> = [];
  /** the current batch's events, per type, in version order (end() hands them on) */
  private batch = new Map<ResourceCache, WatchEvent[]>();

  constructor(
    readonly storage: Storage,
    private readonly opts: CacherOptions,
  ) {}

  /** Subscribes to the backend's feed, lets it load the caches if it does, and starts it. */
  async start(): Promise<void> {
    this.storage.subscribe(this);
    this.storage.attachCaches?.(this);
    await this.storage.start();
  }

  /** Closes every watcher, then the backend. */
  async close(): Promise<void> {
    for (const c of this.byGr.values()) c.watchers.closeAll();
    await this.storage.close();
  }

  // ---------------------------------------------------------------- the feed (ChangeSink)

  change(type: ChangeType, gr: string, key: string, rv: number, bytes: Buffer, obj: any): void {
    const cache = this.cache(gr);
    if (!obj && !looksLikeObject(bytes)) {
      // bytes this server cannot read (another writer's format, a key it cannot decrypt):
      // kept aside as corrupt (KEP-3926); a live object that became unreadable leaves the
      // cache as a deletion, the way a list will no longer show it
      if (type === 'DELETED') {
        this.corrupt.get(gr)?.delete(key);
        return;
      }
      const prev = cache.items.get(key);
      this.markCorrupt(gr, key, rv, bytes);
      if (!prev) return;
      type = 'DELETED';
      bytes = prev.json;
    }
    const ev = cache.apply(type, key, rv, bytes, obj);
    cache.eventsReceived++;
    // a commit supersedes a stored version kept aside as corrupt (an unsafe delete of it,
    // made on any front thread, or a new object under its name)
    if (this.corrupt.size > 0) this.corrupt.get(gr)?.delete(key);
    let list = this.batch.get(cache);
    if (!list) this.batch.set(cache, (list = []));
    list.push(ev);
  }

  load(gr: string, key: string, rv: number, bytes: Buffer, at: number): void {
    const cache = this.cache(gr);
    // the ring holds every later event: a watch from `at` on replays from it, one from before reads storage
    if (cache.startRv < at) cache.startRv = at;
    // bytes that are not a JSON object cannot be served: kept aside (KEP-3926), as the LMDB load does
    if (!looksLikeObject(bytes)) this.markCorrupt(gr, key, rv, bytes);
    else cache.load(key, rv, bytes);
  }

  relist(at: number, state: Map<string, Map<string, { rv: number; bytes: Buffer }>>, owns: (gr: string) => boolean): void {
    const grs = new Set([...this.byGr.keys(), ...state.keys()]);
    const touched: ResourceCache[] = [];
    for (const gr of grs) {
      if (!owns(gr)) continue;
      const cache = this.cache(gr);
      touched.push(cache);
      // kube's cacher ends its watchers when its reflector relists: each resumes from its
      // last version, which is below the new history's start (410, and its informer relists)
      cache.watchers.closeAll();
      const now = state.get(gr) ?? new Map<string, { rv: number; bytes: Buffer }>();
      const corrupt = this.corrupt.get(gr);
      corrupt?.clear();
      // the differences become changes, so that the in-process observers (the garbage
      // collector, the controllers) see what the lost events did; no watcher is left to see them
      for (const e of [...cache.sorted()]) {
        if (now.has(e.key)) continue;
        let bytes = e.json;
        try {
          const o = JSON.parse(bytes.toString());
          if (o?.metadata) o.metadata.resourceVersion = String(at);
          bytes = Buffer.from(JSON.stringify(o));
        } catch {
          /* its last bytes as they were */
        }
        this.change('DELETED', gr, e.key, at, bytes, undefined);
      }
      for (const [key, { rv, bytes }] of now) {
        if (!looksLikeObject(bytes)) {
          this.markCorrupt(gr, key, rv, bytes);
          continue;
        }
        const prev = cache.items.get(key);
        if (!prev) this.change('ADDED', gr, key, rv, bytes, undefined);
        else if (prev.rv !== rv) this.change('MODIFIED', gr, key, rv, bytes, undefined);
      }
    }
    this.end();
    for (const cache of touched) cache.resetHistory(at);
  }

  end(): void {
    const byType = this.batch;
    if (byType.size === 0) return;
    this.batch = new Map();
    for (const [cache, evs] of byType) {
      cache.eventsDispatched += evs.length;
      cache.watchers.dispatch(evs);
    }
    // In-process controllers (garbage collector, grace sweeper) see the same events.
    for (const [cache, evs] of byType) for (const o of this.observers) o(cache, evs);
    // The writer's parsed object served the watchers' selectors and the observers above; the
    // cache keeps only the bytes from here on (parsed again on demand). Thousands of parsed
    // objects kept alive per second would all survive into the old generation and cost the
    // front thread more in garbage collection than a later parse costs the rare reader.
    for (const evs of byType.values()) for (const ev of evs) ev.entry.obj = undefined;
  }

  /**
   * Calls fn on this thread with every committed batch of events, per type, after the
   * watchers, until the function returned is called (a controller that stops leading).
   */
  observe(fn: (cache: ResourceCache, events: WatchEvent[]) => void): () => void {
    this.observers = [...this.observers, fn];
    return () => {
      this.observers = this.observers.filter((o) => o !== fn);
    };
  }

  // ---------------------------------------------------------------- caches

  /** The cache of one resource type, created on first use. */
  cache(gr: string): ResourceCache {
    let c = this.byGr.get(gr);
    if (!c) {
      const cap = this.opts.watchCacheSizes[gr] ?? this.opts.watchCacheCapacity;
      c = new ResourceCache(gr, cap, this.storage.freshRv(gr));
      this.byGr.set(gr, c);
    }
    return c;
  }

  /** The cache of one resource type when it has one (none is created). */
  peek(gr: string): ResourceCache | undefined {
    return this.byGr.get(gr);
  }

  caches(): Iterable<ResourceCache> {
    return this.byGr.values();
  }

  /** Resource types that have a cache (all types with objects, and every type touched since start). */
  resourceTypes(): string[] {
    return [...this.byGr.keys()];
  }

  /** The apiserver_watch_cache_* figures of each cached resource type. */
  watchCacheStats(): Array<{ resource: string; received: number; dispatched: number; resourceVersion: number; capacity: number }> {
    const out = [];
    for (const [gr, c] of this.byGr) out.push({ resource: gr, received: c.eventsReceived, dispatched: c.eventsDispatched, resourceVersion: this.storage.freshRv(gr), capacity: c.capacity });
    return out;
  }

  /** Objects in the caches, by group-resource (apiserver_storage_objects). */
  objectCounts(): Array<[string, number]> {
    const out: Array<[string, number]> = [];
    for (const [gr, c] of this.byGr) out.push([gr, c.items.size]);
    return out;
  }

  // ---------------------------------------------------------------- watch replay

  /**
   * The events of gr after startRv, for a watch that starts there: from the ring when it
   * reaches back that far, else storage's history up to where the ring starts, then the
   * ring (kube's cacher makes the same choice). With a backend that reads history from
   * memory (LMDB) it all happens now, and the caller registers its watcher in the same
   * turn, so no event slips between the replay and the live stream. With one that answers
   * later the ring may move on meanwhile: what it dropped is read from storage too, and the
   * ring's part is taken once the reads are done. { corrupt }: a replayed event's stored
   * bytes are not an object (the watch ends with an error, as kube's does).
   */
  replay(gr: string, startRv: number, withPrev: boolean): WatchEvent[] | { corrupt: Buffer } | Promise<WatchEvent[] | { corrupt: Buffer }> {
    const cache = this.cache(gr);
    const ring = cache.eventsAfter(startRv);
    if (ring !== null) return ring;
    const upto = cache.startRv;
    const read = this.storage.eventsSince(gr, startRv, upto, withPrev);
    if (!(read instanceof Promise)) return this.joinRing(cache, read, upto);
    return this.replayLater(cache, read, upto, withPrev);
  }

  private async replayLater(cache: ResourceCache, first: Promise<StoredEvent[]>, upto: number, withPrev: boolean): Promise<WatchEvent[] | { corrupt: Buffer }> {
    let stored = await first;
    while (cache.startRv > upto) {
      const from = upto;
      upto = cache.startRv;
      stored = stored.concat(await this.storage.eventsSince(cache.gr, from, upto, withPrev));
    }
    return this.joinRing(cache, stored, upto);
  }

  /** The events read from storage up to `upto` (where the ring starts), then the ring's. */
  private joinRing(cache: ResourceCache, stored: StoredEvent[], upto: number): WatchEvent[] | { corrupt: Buffer } {
    const older: WatchEvent[] = [];
    for (const s of stored) {
      if (!looksLikeObject(s.json)) return { corrupt: s.json };
      const [ns, name] = splitKey(s.key);
      const ev: WatchEvent = { rv: s.rv, type: s.type, entry: { key: s.key, ns, name, rv: s.rv, json: s.json } };
      if (s.prevJson) ev.prev = { key: s.key, ns, name, rv: s.prevRv, json: s.prevJson };
      older.push(ev);
    }
    return older.concat(cache.eventsAfter(upto) ?? []);
  }

  // ---------------------------------------------------------------- corrupt objects (KEP-3926)

  markCorrupt(gr: string, key: string, rv: number, bytes: Buffer): void {
    let m = this.corrupt.get(gr);
    if (!m) this.corrupt.set(gr, (m = new Map()));
    m.set(key, { rv, bytes });
    this.cache(gr); // the type exists, even with nothing readable in it
  }

  /** The corrupt objects of a type, or undefined when there are none (one map lookup: cheap on every read). */
  corruptOf(gr: string): Map<string, CorruptObject> | undefined {
    const m = this.corrupt.get(gr);
    return m && m.size > 0 ? m : undefined;
  }

  corruptObjects(): Iterable<[string, Map<string, CorruptObject>]> {
    return this.corrupt.entries();
  }

  /** gr's current state as this layer holds it: its cache, with the objects kept aside as corrupt. */
  currentState(gr: string): CurrentState {
    const cache = this.cache(gr);
    const corrupt = this.corruptOf(gr);
    const asStored = (key: string, c: CorruptObject): StoredObject => ({ key, rv: c.rv, json: c.bytes });
    return {
      at: this.storage.freshRv(gr),
      get: (key) => {
        const e = cache.items.get(key);
        if (e || !corrupt) return e;
        const c = corrupt.get(key);
        return c && asStored(key, c);
      },
      *range(ns, from) {
        const entries = cache.list(ns);
        let i = from ? firstKeyAtOrAfter(entries, from) : 0;
        if (!corrupt) {
          for (; i < entries.length; i++) yield entries[i];
          return;
        }
        // (rare) the corrupt objects of the range, merged in key order
        const prefix = ns === '' ? '' : ns + '/';
        const aside = [...corrupt].filter(([k]) => k >= from && k.startsWith(prefix)).sort(([a], [b]) => (a < b ? -1 : 1));
        let j = 0;
        for (; i < entries.length; i++) {
          while (j < aside.length && aside[j][0] < entries[i].key) yield asStored(...aside[j++]);
          yield entries[i];
        }
        while (j < aside.length) yield asStored(...aside[j++]);
      },
    };
  }
}
