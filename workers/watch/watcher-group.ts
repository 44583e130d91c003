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
import { matchFields, matchLabels, type FieldSelector, type LabelSelector } from '../../src/request/selectors.js';
import { entryObject, frameOf, type CacheEntry, type WatchEvent } from './watch-cache.js';

export interface WatcherOptions {
  ns: string;
  name: string;
  labels: LabelSelector | null;
  fields: FieldSelector | null;
  sink: ResponseSink;
  maxBufferedBytes: number;
  /** the frame of an event in this watcher's representation; JSON frameOf when absent */
  frame?: (ev: WatchEvent, as: EventType) => Buffer;
}

export class Watcher {
  /** the last resourceVersion this watcher was sent */
  rv = 0;
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
    const obj = entryObject(e);
    return matchLabels(this.opts.labels, obj?.metadata?.labels) && matchFields(this.opts.fields, obj);
  }

  /** The type this watcher sees an event as, or null: selector transitions become ADDED / DELETED. */
  viewOf(ev: WatchEvent): EventType | null {
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
    if (as) this.outbox.push(this.opts.frame ? this.opts.frame(ev, as) : frameOf(ev, as));
    this.rv = ev.rv;
  }

  /** Writes what the tick gathered, corked, as one chunk. Returns false if the watcher had to be closed. */
  flush(): boolean {
    if (this.closed || this.outbox.length === 0) return !this.closed;
    const frames = this.outbox;
    this.outbox = [];
    const sink = this.opts.sink;
    if (sink.aborted) {
      this.close();
      return false;
    }
    const chunk = frames.length === 1 ? frames[0] : joinedFrames(frames);
    sink.cork(() => sink.write(chunk));
    if (sink.bufferedBytes() > this.opts.maxBufferedBytes) {
      this.close();
      return false;
    }
    return true;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.outbox = [];
    const sink = this.opts.sink;
    if (!sink.aborted) sink.cork(() => sink.end());
    this.onClose?.();
  }
}

/**
 * The frames of one tick joined into one chunk. Watchers that see the same events (all
 * the unfiltered watchers of a namespace, flushed one after the other) share the chunk of
 * the previous one instead of each copying the frames again.
 */
let lastFrames: Buffer[] | null = null;
let lastChunk: Buffer | null = null;
function joinedFrames(frames: Buffer[]): Buffer {
  const prev = lastFrames;
  if (prev && prev.length === frames.length) {
    let same = true;
    for (let i = 0; i < frames.length && same; i++) same = prev[i] === frames[i];
    if (same) return lastChunk!;
  }
  lastFrames = frames;
  lastChunk = Buffer.concat(frames);
  return lastChunk;
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

export function setFanoutTick(ms: number): void {
  tickMs = ms;
}

function flushDirty(): void {
  flushTimer = null;
  const ws = [...dirty];
  dirty.clear();
  for (const w of ws) w.flush();
  // the shared chunk is for this tick only
  lastFrames = null;
  lastChunk = null;
}

export function scheduleFlush(w: Watcher): void {
  dirty.add(w);
  if (!flushTimer) flushTimer = setTimeout(flushDirty, tickMs);
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
