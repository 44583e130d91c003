// Watchers of one resource type, indexed by namespace and by name, and the fan-out of
// committed events to them.
//
// Thread ownership: the front thread that owns the sockets. Fan-out never waits on a
// watcher: each batch of frames is written corked, and a watcher whose transport has
// buffered more than its budget is closed (its client resumes from the last version it
// saw), the way kube-apiserver drops a watcher that cannot keep up. So a slow client
// never blocks a commit or another watcher.
import { readFileSync } from 'node:fs';
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
  /**
   * Readies what an event's frame needs when that takes a wait (a CRD's conversion webhook,
   * src/registry/conversion.ts readyViews); undefined when the frame can be made now. While a
   * wait is under way, later events and BOOKMARKs queue behind it, in order.
   */
  prepare?: (ev: WatchEvent, as: EventType) => Promise<void> | undefined;
  /**
   * The field selector's values of an entry when they are not the stored object's (a CRD
   * version converted by its webhook reads its own selectableFields on the converted object),
   * with prepareMatch readying what it reads for an event's states before the event is matched.
   */
  fieldsOf?: (e: CacheEntry) => Record<string, string>;
  prepareMatch?: (ev: WatchEvent) => Promise<void> | undefined;
  /** apiserver_watch_events_total and _sizes of the watched kind (src/metrics/apiserver-metrics.ts) */
  counter?: { sent(bytes: number): void };
}

export class Watcher {
  /** the last resourceVersion this watcher was sent (or skipped, as not matching) */
  rv = 0;
  /** the version of the last frame or bookmark actually written */
  sentRv = 0;
  closed = false;
  /** frames gathered since the last write, written in one cork */
  outbox: Buffer[] = [];
  /** in the pump's queue (scheduleFlush) */
  queued = false;
  /** when it was queued (the fan-out statistics only) */
  queuedAt = 0;
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
    if (!matchLabels(this.opts.labels, sel.labels)) return false;
    return matchFieldMap(this.opts.fields, this.opts.fieldsOf ? this.opts.fieldsOf(e) : sel.fields);
  }

  /** An event's frame joins the outbox (and the watch event metrics). */
  private push(frame: Buffer): void {
    this.outbox.push(frame);
    this.opts.counter?.sent(frame.byteLength);
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
    const pm = this.opts.prepareMatch;
    if (pm) {
      const ready = this.pending ? undefined : pm(ev);
      if (this.pending || ready) {
        // matched once its states are readied, then framed (and readied for that) in its turn
        this.later(async () => {
          await (ready ?? pm(ev));
          const as = this.viewOf(ev);
          if (!as) return;
          await this.opts.prepare?.(ev, as);
          this.push(this.opts.frame ? this.opts.frame(ev, as) : frameOf(ev, as));
          this.sentRv = ev.rv;
        });
        this.rv = ev.rv;
        return;
      }
    }
    const as = this.viewOf(ev);
    if (as) {
      const wait = this.pending ? undefined : this.opts.prepare?.(ev, as);
      if (this.pending || wait) {
        this.later(async () => {
          await (wait ?? this.opts.prepare?.(ev, as));
          this.push(this.opts.frame ? this.opts.frame(ev, as) : frameOf(ev, as));
          this.sentRv = ev.rv;
        });
      } else {
        this.push(this.opts.frame ? this.opts.frame(ev, as) : frameOf(ev, as));
        this.sentRv = ev.rv;
      }
    }
    this.rv = ev.rv;
  }

  /** the steps waiting on prepare(), in event order (none without a prepare that waits) */
  private pending?: Promise<void>;
  /** a queued step is running (what it does is in its turn) */
  private stepping = false;

  /**
   * Runs step after the ones queued before it, then writes what it added. A step that
   * fails ends the watch without a further event, as kube's watch server stops when it
   * cannot encode an event (the client's next list reports the error).
   */
  private later(step: () => Promise<void> | void): void {
    const run = (this.pending ?? Promise.resolve()).then(async () => {
      if (this.closed) return;
      await step();
      if (this.closed) return;
      this.flush();
    });
    const mine = run.catch(() => this.close());
    this.pending = mine;
    void mine.then(() => {
      if (this.pending === mine) this.pending = undefined;
    });
  }

  /**
   * Queues a BOOKMARK at the newest version whose events this watcher has all been given,
   * when that is newer than what it last saw. Returns true if one was queued.
   */
  bookmark(initialEventsEnd = false): boolean {
    if (this.closed || !this.opts.bookmarks) return false;
    if (this.pending && !this.stepping) {
      // events still being readied: a BOOKMARK now would claim versions not yet sent; the
      // end of the initial events follows them instead
      if (initialEventsEnd) {
        this.later(() => {
          this.stepping = true;
          try {
            this.bookmark(true);
          } finally {
            this.stepping = false;
          }
        });
      }
      return false;
    }
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
 * The fan-out pump. Watchers with frames waiting form one queue in the order they got
 * their first unsent frame, and are written in that order, each with everything it has
 * gathered by its turn: a watcher's frames wait for the watchers queued before it, never
 * for a clock. The pump starts as soon as the commit that queued them has been handled (its
 * writers acknowledged first), writes for at most one slice (--watch-fanout-tick, 5 ms) and
 * then yields, so requests and commits go on between slices; events committed meanwhile
 * join the outboxes of the watchers still queued and leave with them, and a watcher already
 * written is queued again at the tail. So each watcher is written at most once per pass
 * over the queue, and the cost of a pass (a TLS record and a syscall per watcher, on both
 * ends: with 10,000 watchers this is the whole latency) is shared by all the events that
 * arrive during it: batches grow with the load by themselves, with no tick to wait for
 * when there is none. A pass that starts from an idle pump begins at a rotating point of
 * the queue, so no watcher is always the last one written.
 */
let queue: Watcher[] = [];
let head = 0;
let pumpScheduled = false;
/** the queue was empty when its first watcher came: the next slice begins a fresh pass */
let fresh = false;
let sliceMs = 5;
/** where the next pass from an idle pump begins, as a fraction of the queue */
let rotation = 0;

export function setFanoutTick(ms: number): void {
  sliceMs = ms;
}

const STATS = process.env.KUBESHARD_FANOUT_STATS === '1';
const st = { slices: 0, writes: 0, busyMs: 0, lagMs: 0, maxLagMs: 0, last: performance.now(), cpu: threadCpuMs() };
/** this thread's CPU time (ms, 10 ms ticks), for the fan-out statistics */
function threadCpuMs(): number {
  if (!STATS) return 0;
  const f = readFileSync('/proc/thread-self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

function pump(): void {
  pumpScheduled = false;
  const start = performance.now();
  if (fresh) {
    // a fresh pass: begin at a rotating point (golden-ratio steps spread the starts)
    fresh = false;
    rotation = (rotation + 0.618034) % 1;
    const r = Math.floor(rotation * queue.length);
    if (r > 0) queue = queue.slice(r).concat(queue.slice(0, r));
  }
  const deadline = start + sliceMs;
  let n = 0;
  while (head < queue.length) {
    const w = queue[head++];
    w.queued = false;
    if (w.closed) continue;
    if (STATS) {
      const lag = start - w.queuedAt;
      st.lagMs += lag;
      if (lag > st.maxLagMs) st.maxLagMs = lag;
      st.writes++;
    }
    // frames left beyond whole pieces (see Watcher.flush) wait for the watcher's next turn
    if (w.flush(true) && w.outbox.length > 0) enqueue(w);
    if ((++n & 7) === 0 && performance.now() >= deadline) break;
  }
  if (head >= queue.length) {
    queue = [];
    head = 0;
    // the shared chunk is for one run of watchers only
    lastFrames = null;
    lastBatch = null;
  } else {
    if (head > 4096 && head * 2 > queue.length) {
      queue = queue.slice(head);
      head = 0;
    }
    schedulePump();
  }
  if (STATS) {
    const now = performance.now();
    st.slices++;
    st.busyMs += now - start;
    if (now - st.last > 1000) {
      const w = Math.max(1, st.writes);
      const cpu = threadCpuMs();
      console.log(`fanout: ${st.slices} slices, ${st.writes} writes, pump busy ${((100 * st.busyMs) / (now - st.last)).toFixed(0)}%, thread cpu ${((100 * (cpu - st.cpu)) / (now - st.last)).toFixed(0)}%, queue wait ${(st.lagMs / w).toFixed(1)} ms (max ${st.maxLagMs.toFixed(1)}), ${(((st.busyMs / w) * 1000) || 0).toFixed(1)} us per write`);
      Object.assign(st, { slices: 0, writes: 0, busyMs: 0, lagMs: 0, maxLagMs: 0, last: now, cpu });
    }
  }
}

function schedulePump(): void {
  if (pumpScheduled) return;
  pumpScheduled = true;
  setImmediate(pump);
}

function enqueue(w: Watcher): void {
  w.queued = true;
  if (STATS) w.queuedAt = performance.now();
  queue.push(w);
}

/** Queues w for the pump (once: a queued watcher takes later frames along on its turn). */
export function scheduleFlush(w: Watcher): void {
  if (w.queued || w.closed) return;
  if (head >= queue.length) fresh = true;
  enqueue(w);
  schedulePump();
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

/**
 * The fields whose exact value a watcher may be indexed by, per type (kube's watch cache
 * trigger functions: pods by spec.nodeName, so that each of thousands of kubelets' watches
 * is offered only its node's pods, not every pod event of the cluster).
 */
const TRIGGER_FIELDS: Record<string, string> = { pods: 'spec.nodeName' };

/** The server's watcher counts (src/flowcontrol/watch-counts.ts), when this thread has them. */
let serverCounts: { note(gr: string, ns: string, delta: number): void } | undefined;

/** Every WatcherGroup of this thread counts its watchers in `counts` too (set once, at start). */
export function countWatchersIn(counts: { note(gr: string, ns: string, delta: number): void }): void {
  serverCounts = counts;
}

/** (a watcher in an index by name or trigger field: counted in its type's total only, as interested() counts it) */
const INDEXED = '\0';

export class WatcherGroup {
  private all = new Set<Watcher>();
  private byNs = new Map<string, Set<Watcher>>();
  /** watchers of one object name (a kubelet's Secret and ConfigMap watches, a node's own Node) */
  private byName = new Map<string, Set<Watcher>>();
  /** watchers pinned to one value of the type's trigger field */
  private byTrigger = new Map<string, Set<Watcher>>();
  size = 0;

  /** the watched type's group-resource, learned from its first watcher */
  private gr = '';

  /** The index a watcher belongs in: [map, key], or undefined for the namespace sets. */
  private slot(w: Watcher): [Map<string, Set<Watcher>>, string] | undefined {
    const o = w.opts;
    // a watcher whose matching reads converted objects is never indexed: its fields are not the stored ones
    if (o.fieldsOf || o.prepareMatch) return undefined;
    if (o.name !== '') return [this.byName, o.name];
    const field = TRIGGER_FIELDS[o.gr];
    if (!field || !o.fields) return undefined;
    for (const r of o.fields) if (r.field === field && r.op === '=') return [this.byTrigger, r.value];
    return undefined;
  }

  add(w: Watcher): void {
    if (!this.gr) this.gr = w.opts.gr;
    const slot = this.slot(w);
    const ns = w.opts.ns;
    let set: Set<Watcher>;
    if (slot) {
      const [map, key] = slot;
      let s = map.get(key);
      if (!s) map.set(key, (s = new Set()));
      set = s;
    } else if (ns === '') set = this.all;
    else {
      let s = this.byNs.get(ns);
      if (!s) this.byNs.set(ns, (s = new Set()));
      set = s;
    }
    set.add(w);
    this.size++;
    serverCounts?.note(w.opts.gr, slot ? INDEXED : ns, 1);
  }

  remove(w: Watcher): void {
    const slot = this.slot(w);
    const ns = w.opts.ns;
    if (slot) {
      const [map, key] = slot;
      const set = map.get(key);
      if (set?.delete(w)) {
        this.size--;
        serverCounts?.note(w.opts.gr, INDEXED, -1);
        if (set.size === 0) map.delete(key);
      }
      return;
    }
    const set = ns === '' ? this.all : this.byNs.get(ns);
    if (set?.delete(w)) {
      this.size--;
      serverCounts?.note(w.opts.gr, ns, -1);
      if (ns !== '' && set.size === 0) this.byNs.delete(ns);
    }
  }

  /** Watchers a change in namespace ns reaches: the cluster-wide ones and that namespace's (kube's WatchTracker count). */
  interested(ns: string): number {
    return ns === '' ? this.size : this.all.size + (this.byNs.get(ns)?.size ?? 0);
  }

  /** Fans a committed batch (of this type, in rv order) out to the watchers. */
  dispatch(events: WatchEvent[]): void {
    if (this.size === 0) return;
    const field = this.byTrigger.size > 0 ? TRIGGER_FIELDS[this.gr] : undefined;
    for (const ev of events) {
      this.enqueueTo(this.all, ev);
      const nsSet = this.byNs.get(ev.entry.ns);
      if (nsSet) this.enqueueTo(nsSet, ev);
      if (this.byName.size > 0) {
        const nameSet = this.byName.get(ev.entry.name);
        if (nameSet) this.enqueueTo(nameSet, ev);
      }
      if (field) {
        // the watchers of the value the object has now, and of the one it had (it left them: a DELETED for them)
        const now = selectable(ev.entry, this.gr).fields[field] ?? '';
        const set = this.byTrigger.get(now);
        if (set) this.enqueueTo(set, ev);
        if (ev.prev) {
          const before = selectable(ev.prev, this.gr).fields[field] ?? '';
          if (before !== now) {
            const old = this.byTrigger.get(before);
            if (old) this.enqueueTo(old, ev);
          }
        }
      }
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
    for (const set of [...this.byName.values()]) for (const w of [...set]) w.close();
    for (const set of [...this.byTrigger.values()]) for (const w of [...set]) w.close();
  }
}
