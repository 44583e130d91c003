// Watchers of one resource type, indexed by namespace and by name, and the fan-out of
// committed events to them.
//
// Thread ownership: the front thread that owns the sockets. Fan-out never waits on a
// watcher: each batch of frames is written corked, and a watcher whose transport has
// buffered more than its budget is closed (its client resumes from the last version it
// saw), the way kube-apiserver drops a watcher that cannot keep up. So a slow client
// never blocks a commit or another watcher.
import type { EventType } from '../shard/protocol.js';
import type { ResponseSink } from '../../src/http/types.js';
import { matchFieldMap, matchLabels, type FieldSelector, type LabelSelector } from '../../src/request/selectors.js';
import { bookmarkFrame, frameOf, selectable, type CacheEntry, type WatchEvent } from './watch-cache.js';

export interface WatcherOptions {
  /** group-resource of the watched type (which fields its field selectors read) */
  gr: string;
  ns: string;
  name: string;
  labels: LabelSelector | null;
  fields: FieldSelector | null;
  sink: ResponseSink;
  maxBufferedBytes: number;
  /** the frame of an event in this watcher's representation; JSON frameOf when absent */
  frame?: (ev: WatchEvent, as: EventType) => Buffer;
  /** BOOKMARK events were asked for (allowWatchBookmarks) */
  bookmarks?: boolean;
  /** the kind and apiVersion a BOOKMARK's object carries */
  apiVersion?: string;
  kind?: string;
  /** the version up to which every event of the type has been dispatched */
  freshRv?: () => number;
  /** how a BOOKMARK (or another value that is no stored object) is framed; JSON when absent */
  valueFrame?: (type: string, value: Record<string, unknown>) => Buffer;
}

export class Watcher {
  /** the last resourceVersion this watcher was sent (or skipped, as not matching) */
  rv = 0;
  /** the version of the last frame or bookmark actually written */
  sentRv = 0;
  closed = false;
  /** frames gathered during one batch, written in one cork */
  outbox: Buffer[] = [];
  onClose?: () => void;
  readonly filtered: boolean;

  constructor(readonly opts: WatcherOptions) {
    this.filtered = opts.labels !== null || opts.fields !== null;
  }

  matches(e: CacheEntry): boolean {
    if (this.opts.ns !== '' && e.ns !== this.opts.ns) return false;
    if (this.opts.name !== '' && e.name !== this.opts.name) return false;
    if (!this.filtered) return true;
    const sel = selectable(e, this.opts.gr);
    return matchLabels(this.opts.labels, sel.labels) && matchFieldMap(this.opts.fields, sel.fields);
  }

  /** The type this watcher sees an event as, or null: selector transitions become ADDED / DELETED. */
  viewOf(ev: WatchEvent): EventType | null {
    // without selectors, an event's key alone decides (its previous state has the same key)
    if (!this.filtered) return this.matches(ev.entry) ? ev.type : null;
    if (ev.type === 'ADDED') return this.matches(ev.entry) ? 'ADDED' : null;
    if (ev.type === 'DELETED') return (ev.prev ? this.matches(ev.prev) : this.matches(ev.entry)) ? 'DELETED' : null;
    const now = this.matches(ev.entry);
    const before = ev.prev ? this.matches(ev.prev) : false;
    if (now && before) return 'MODIFIED';
    if (now) return 'ADDED';
    if (before) return 'DELETED';
    return null;
  }

  enqueue(ev: WatchEvent): void {
    const as = this.viewOf(ev);
    if (as) {
      this.outbox.push(this.opts.frame ? this.opts.frame(ev, as) : frameOf(ev, as));
      this.sentRv = ev.rv;
    }
    this.rv = ev.rv;
  }

  /**
   * Queues a BOOKMARK at the newest version whose events this watcher has all been given,
   * when that is newer than what it last saw. Returns true if one was queued.
   */
  bookmark(initialEventsEnd = false): boolean {
    if (this.closed || !this.opts.bookmarks) return false;
    const rv = Math.max(this.rv, this.opts.freshRv?.() ?? 0);
    if (!initialEventsEnd && rv <= this.sentRv) return false;
    const { apiVersion = 'v1', kind = '', valueFrame } = this.opts;
    if (valueFrame) {
      const metadata: Record<string, unknown> = { resourceVersion: String(rv) };
      if (initialEventsEnd) metadata.annotations = { 'k8s.io/initial-events-end': 'true' };
      this.outbox.push(valueFrame('BOOKMARK', { kind, apiVersion, metadata }));
    } else {
      this.outbox.push(bookmarkFrame(apiVersion, kind, rv, initialEventsEnd));
    }
    this.rv = rv;
    this.sentRv = rv;
    return true;
  }

  /**
   * The first write: the initial events and replay may be far larger than the budget for
   * a watcher that falls behind, so they are allowed on top of it until the socket drains.
   */
  flushInitial(): boolean {
    for (const f of this.outbox) this.allowance += f.byteLength;
    this.opts.sink.onDrain(() => (this.allowance = 0));
    return this.flush();
  }

  /** bytes the transport may hold beyond the budget (the initial write) */
  private allowance = 0;

  /**
   * Writes what was gathered, corked, as one chunk. Returns false if the watcher had to be
   * closed. With wholePieces (the fan-out tick), when the frames fill more than one of the
   * transport's pieces, only the frames that fill whole pieces leave now and the rest wait
   * for the next tick: every piece costs a TLS record and a syscall on each side, full or
   * not, and a heavy fan-out would otherwise send a short piece per watcher per tick.
   */
  flush(wholePieces = false): boolean {
    if (this.closed || this.outbox.length === 0) return !this.closed;
    const frames = this.outbox;
    const sink = this.opts.sink;
    if (sink.aborted) {
      this.close();
      return false;
    }
    let chunk: Buffer;
    if (frames.length === 1) {
      chunk = frames[0];
      this.outbox = [];
    } else {
      const batch = joinedFrames(frames, wholePieces ? (sink.writeQuantum ?? 0) : 0);
      chunk = batch.chunk;
      this.outbox = batch.count === frames.length ? [] : frames.slice(batch.count);
    }
    // the sink corks the chunk itself, in pieces that fit uWS's cork buffer
    sink.write(chunk);
    if (sink.bufferedBytes() > this.opts.maxBufferedBytes + this.allowance) {
      this.close();
      return false;
    }
    return true;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.outbox = [];
    bookmarkWatchers.delete(this);
    dirty.delete(this);
    const sink = this.opts.sink;
    if (!sink.aborted) sink.end();
    this.onClose?.();
  }
}

/**
 * The frames of one tick joined into one chunk: all of them, or (quantum > 0) those that
 * fill whole pieces of quantum bytes when they fill more than one (at least one frame).
 * Watchers that see the same events (all the unfiltered watchers of a namespace, flushed
 * one after the other) share the chunk of the previous one instead of each copying the
 * frames again.
 */
let lastFrames: Buffer[] | null = null;
let lastQuantum = 0;
let lastBatch: { chunk: Buffer; count: number } | null = null;
function joinedFrames(frames: Buffer[], quantum: number): { chunk: Buffer; count: number } {
  const prev = lastFrames;
  if (prev && prev.length === frames.length && quantum === lastQuantum) {
    let same = true;
    for (let i = 0; i < frames.length && same; i++) same = prev[i] === frames[i];
    if (same) return lastBatch!;
  }
  let count = frames.length;
  let bytes = 0;
  for (const f of frames) bytes += f.byteLength;
  if (quantum > 0 && bytes > quantum) {
    const limit = Math.floor(bytes / quantum) * quantum;
    let sum = frames[0].byteLength;
    count = 1;
    while (count < frames.length && sum + frames[count].byteLength <= limit) sum += frames[count++].byteLength;
    bytes = sum;
  }
  lastFrames = frames;
  lastQuantum = quantum;
  lastBatch = { chunk: count === 1 ? frames[0] : Buffer.concat(count === frames.length ? frames : frames.slice(0, count), bytes), count };
  return lastBatch;
}

/**
 * Watchers with frames waiting, flushed together on the next tick of the fan-out clock.
 * Writing each watcher's frames once per tick rather than once per commit puts several
 * events into one TLS record and one syscall when commits come fast; when they come
 * slowly, a tick is one event and the added latency is at most the tick.
 */
const dirty = new Set<Watcher>();
let flushTimer: NodeJS.Timeout | null = null;
let tickMs = 5;
/**
 * The wait before the next flush: the tick, or as long as the last flush took when that
 * was longer (up to MAX_TICK_MS). With thousands of watchers a flush costs a TLS record
 * and a syscall per watcher (on both ends) whatever it carries: 10,000 watchers take a
 * few hundred ms to flush even one event each. Waiting as long as the last flush took
 * keeps at least half of the front thread for requests and commits, and lets every write
 * carry all the events of that interval, so the cost per event falls as the load grows
 * instead of the thread falling behind. The bound keeps the added latency at a fraction
 * of what such a flush itself takes; with few watchers the flush is short and so is the
 * wait (the tick when a flush takes less).
 */
let nextTickMs = 5;
const MAX_TICK_MS = 200;

export function setFanoutTick(ms: number): void {
  tickMs = ms;
  nextTickMs = ms;
}

function flushDirty(): void {
  flushTimer = null;
  const start = performance.now();
  const ws = [...dirty];
  dirty.clear();
  // watchers with frames left for the next tick (see Watcher.flush)
  let held: Watcher[] | null = null;
  for (const w of ws) if (w.flush(true) && w.outbox.length > 0) (held ??= []).push(w);
  // the shared chunk is for this tick only
  lastFrames = null;
  lastBatch = null;
  nextTickMs = Math.min(MAX_TICK_MS, Math.max(tickMs, performance.now() - start));
  if (held) for (const w of held) scheduleFlush(w);
}

export function scheduleFlush(w: Watcher): void {
  dirty.add(w);
  if (!flushTimer) flushTimer = setTimeout(flushDirty, nextTickMs);
}

/**
 * Watchers that asked for bookmarks get one periodically (kube-apiserver sends them about
 * once a minute), so that an idle watcher learns a recent version it can resume from.
 * One clock for all of them: a watcher costs a set entry, not a timer.
 */
const bookmarkWatchers = new Set<Watcher>();
let bookmarkTimer: NodeJS.Timeout | null = null;
let bookmarkIntervalMs = 60_000;

export function setBookmarkInterval(ms: number): void {
  bookmarkIntervalMs = ms;
}

function sendBookmarks(): void {
  for (const w of bookmarkWatchers) if (w.bookmark()) scheduleFlush(w);
  if (bookmarkWatchers.size === 0 && bookmarkTimer) {
    clearInterval(bookmarkTimer);
    bookmarkTimer = null;
  }
}

export function wantBookmarks(w: Watcher): void {
  if (!w.opts.bookmarks || w.closed) return;
  bookmarkWatchers.add(w);
  if (!bookmarkTimer) {
    bookmarkTimer = setInterval(sendBookmarks, bookmarkIntervalMs);
    bookmarkTimer.unref();
  }
}

export class WatcherGroup {
  private all = new Set<Watcher>();
  private byNs = new Map<string, Set<Watcher>>();
  size = 0;

  add(w: Watcher): void {
    const ns = w.opts.ns;
    let set: Set<Watcher>;
    if (ns === '') set = this.all;
    else {
      let s = this.byNs.get(ns);
      if (!s) this.byNs.set(ns, (s = new Set()));
      set = s;
    }
    set.add(w);
    this.size++;
  }

  remove(w: Watcher): void {
    const ns = w.opts.ns;
    const set = ns === '' ? this.all : this.byNs.get(ns);
    if (set?.delete(w)) {
      this.size--;
      if (ns !== '' && set.size === 0) this.byNs.delete(ns);
    }
  }

  /** Fans a committed batch (of this type, in rv order) out to the watchers. */
  dispatch(events: WatchEvent[]): void {
    if (this.size === 0) return;
    for (const ev of events) {
      this.enqueueTo(this.all, ev);
      const nsSet = this.byNs.get(ev.entry.ns);
      if (nsSet) this.enqueueTo(nsSet, ev);
    }
  }

  private enqueueTo(set: Set<Watcher>, ev: WatchEvent): void {
    for (const w of set) {
      if (w.closed || ev.rv <= w.rv) continue;
      const before = w.outbox.length;
      w.enqueue(ev);
      if (before === 0 && w.outbox.length > 0) scheduleFlush(w);
    }
  }

  closeAll(): void {
    for (const w of [...this.all]) w.close();
    for (const set of [...this.byNs.values()]) for (const w of [...set]) w.close();
  }
}
