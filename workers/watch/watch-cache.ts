// The front thread's in-memory state of one resource type: the current objects (the
// read cache), a bounded ring of recent events, and the watchers of the type.
//
// Thread ownership: a ResourceCache belongs to the front thread that created it. Shard
// workers never touch it; they send committed batches, which the cache layer applies here
// (src/storage/cacher.ts).
//
// Every object is kept as the exact JSON bytes the shard committed. A GET writes those
// bytes; a list concatenates them; a watch frame wraps them once per event and the same
// frame goes to every watcher. Objects are parsed only when something needs a field
// (a selector, a write that starts from the current object), and the parse is memoized.
import type { EventType } from '../shard/protocol.js';
import { WatcherGroup } from './watcher-group.js';
import { onlyMetadataFields, selectableFields } from '../../src/request/field-labels.js';
import { itemLength, writeItem } from '../../src/codec/list-item.js';
import { PartedMap } from '../../src/storage/parted-map.js';

export interface CacheEntry {
  /** "<namespace>/<name>" */
  key: string;
  ns: string;
  name: string;
  rv: number;
  json: Buffer;
  /** memoized parse of json; shared, so never mutate it (clone first) */
  obj?: any;
  /** memoized encodings of this version in other representations (src/codec/representation.ts) */
  enc?: Map<string, Buffer>;
  /** labels and selectable fields, read once (at commit when the object is at hand) */
  sel?: Selectable;
}

/**
 * The ArrayBuffer that a commit's records arrive in (the shard sends one per group commit:
 * workers/shard/shard-worker.ts), as the cache entries of one type share it. One buffer for
 * a batch instead of an ArrayBuffer (and its backing store) per object: a cache of hundreds
 * of thousands of objects has that many objects fewer for every old-generation collection of
 * the front thread to mark.
 *
 * One live object keeps its whole buffer, so a buffer whose current objects fell to a quarter
 * has theirs copied out (release): an object holds at most four times its bytes, or a buffer
 * no larger than UNTRACKED_SLAB_BYTES (not tracked), as a slice of Node's own Buffer pool holds its pool.
 */
export class RecordSlab {
  /** how many of entries are in their cache's current state, viewing ab (LiveEntry.slab === this) */
  live = 0;
  entries: LiveEntry[] = [];
  constructor(readonly ab: ArrayBufferLike) {}
}

/**
 * Buffers no larger than this (Node's Buffer pool size: a commit of a few records, a pool slice)
 * are not tracked: what one of their objects can hold is no more than a pooled Buffer holds.
 * A larger bound let churn keep a 30 KiB commit per live 1 KiB object.
 */
const UNTRACKED_SLAB_BYTES = Buffer.poolSize;

/**
 * An object written while the server runs: its bytes (often a view of a RecordSlab) and,
 * rather than its selectable fields, its labels when they were at hand at the commit. Its
 * name and, for a kind whose only selectable fields are name and namespace, those fields
 * follow from its key: four heap objects an entry fewer than a record of them each.
 */
export class LiveEntry implements CacheEntry {
  obj: any;
  enc: Map<string, Buffer> | undefined = undefined;
  sel: Selectable | undefined = undefined;
  /** the slab its bytes view while it is its key's current state in the cache, else null */
  slab: RecordSlab | null = null;

  constructor(
    readonly key: string,
    readonly ns: string,
    readonly rv: number,
    public json: Buffer,
    obj: any,
    /** the labels read at the commit (undefined: it has none), null when not known (no object was at hand) */
    readonly labels: Record<string, string> | undefined | null,
  ) {
    this.obj = obj;
  }

  get name(): string {
    return this.key.slice(this.ns.length + 1);
  }
}

/** What label and field selectors look at: matching one needs no walk of the object. */
export interface Selectable {
  labels: Record<string, string> | undefined;
  fields: Record<string, string>;
}

/** Where the bytes of the objects loaded at start-up are read from: the shard's B-tree (load-caches.ts). */
export interface ValueSource {
  /** the JSON of the object stored at version rv */
  json(rv: number): Buffer;
}

/**
 * An object loaded at start-up (load-caches.ts): its key and version, and its bytes read
 * from the shard's memory-mapped B-tree when asked for (a GET, a list built, a parse),
 * never held. A million loaded objects then cost the front thread this small entry each
 * (no Buffer per value, no copy of the store in the heap), and the pages of the store a
 * reader touches are the kernel's page cache, shared by every thread that maps it.
 *
 * The record of a live object stays in the B-tree until the object changes and the
 * retention window passes (compaction); an entry replaced by a change is pinned first
 * (ResourceCache.apply), so a watch event's previous state keeps its bytes.
 */
export class StoredEntry implements CacheEntry {
  declare obj?: any;
  declare enc?: Map<string, Buffer>;
  declare sel?: Selectable;
  /** the bytes, once pinned */
  declare private held?: Buffer;

  constructor(
    readonly key: string,
    readonly ns: string,
    readonly rv: number,
    /** what its bytes hold (HINT_*), HINTS_UNKNOWN until someone looked (mayHold) */
    public hints: number,
    private readonly src: ValueSource,
  ) {}

  get name(): string {
    return this.key.slice(this.ns.length + 1);
  }

  get json(): Buffer {
    return this.held ?? this.src.json(this.rv);
  }

  /** Reads the bytes now and keeps them: the entry outlives its record's place in the store. */
  pin(): void {
    this.held ??= this.src.json(this.rv);
  }
}

/**
 * What an object's bytes were seen to hold when they were loaded, kept (and persisted with
 * the key index) so that the controllers that look at every object at start-up (the garbage
 * collector, the grace sweeper) need not read the bytes of a million loaded objects.
 */
export const HINT_OWNER_REFERENCES = 1;
export const HINT_DELETION_TIMESTAMP = 2;
/** hints not known yet: mayHold looks at the bytes once and keeps what it found */
export const HINTS_UNKNOWN = 0x80;
const HINT_TEXT: ReadonlyArray<[number, Buffer]> = [
  [HINT_OWNER_REFERENCES, Buffer.from('"ownerReferences"')],
  [HINT_DELETION_TIMESTAMP, Buffer.from('"deletionTimestamp"')],
];

/** The hints of stored JSON bytes: each text it holds anywhere (a field of that name may be there). */
export function hintsOf(json: Buffer): number {
  let h = 0;
  for (const [bit, text] of HINT_TEXT) if (json.includes(text)) h |= bit;
  return h;
}

/** Whether the object may hold the field of the hint (false: certainly not); reads no loaded object's bytes. */
export function mayHold(e: CacheEntry, hint: number): boolean {
  if (e instanceof StoredEntry) {
    if (e.hints === HINTS_UNKNOWN) e.hints = hintsOf(e.json);
    return (e.hints & hint) !== 0;
  }
  for (const [bit, text] of HINT_TEXT) if (bit === hint) return e.json.includes(text);
  return true;
}

/**
 * The current objects of one type by key: the Map-like view ResourceCache.items gives its
 * readers (get, has, size, values). The objects loaded at start-up stay in their sorted
 * per-namespace arrays and are found by binary search, since a Map of a million keys costs
 * more to build (its growth and the garbage of its old tables) than the rest of the load;
 * everything changed since is kept in a PartedMap (a Map in parts, so that its growth never
 * rehashes every key at once), where a deleted loaded key is null.
 */
export class CacheItems {
  /** per namespace, the objects loaded at start-up, sorted by key; never changed */
  private loaded = new Map<string, CacheEntry[]>();
  private loadedCount = 0;
  private changed = new PartedMap<CacheEntry | null>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(key: string): CacheEntry | undefined {
    const c = this.changed.get(key);
    if (c !== undefined) return c ?? undefined;
    return this.loadedCount > 0 ? this.fromLoaded(key) : undefined;
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  set(key: string, e: CacheEntry): this {
    if (this.get(key) === undefined) this.count++;
    this.changed.set(key, e);
    return this;
  }

  delete(key: string): boolean {
    const c = this.changed.get(key);
    if (c === null) return false;
    const inLoaded = this.loadedCount > 0 && this.fromLoaded(key) !== undefined;
    if (c === undefined && !inLoaded) return false;
    this.count--;
    if (inLoaded) this.changed.set(key, null);
    else this.changed.delete(key);
    return true;
  }

  /** Takes one namespace's loaded objects (sorted by key, none of them present yet). */
  addLoaded(ns: string, sorted: CacheEntry[]): void {
    this.loaded.set(ns, sorted);
    this.loadedCount += sorted.length;
    this.count += sorted.length;
  }

  *values(): IterableIterator<CacheEntry> {
    for (const arr of this.loaded.values()) {
      for (let i = 0; i < arr.length; i++) if (this.changed.size === 0 || this.changed.get(arr[i].key) === undefined) yield arr[i];
    }
    for (const e of this.changed.values()) if (e) yield e;
  }

  *keys(): IterableIterator<string> {
    for (const e of this.values()) yield e.key;
  }

  *entries(): IterableIterator<[string, CacheEntry]> {
    for (const e of this.values()) yield [e.key, e];
  }

  [Symbol.iterator](): IterableIterator<[string, CacheEntry]> {
    return this.entries();
  }

  private fromLoaded(key: string): CacheEntry | undefined {
    const arr = this.loaded.get(key.slice(0, key.indexOf('/')));
    if (!arr) return undefined;
    const i = firstKeyAtOrAfter(arr, key);
    return i < arr.length && arr[i].key === key ? arr[i] : undefined;
  }
}

export function entryObject(e: CacheEntry): any {
  if (e.obj === undefined) e.obj = JSON.parse(e.json.toString('utf8'));
  return e.obj;
}

export function selectable(e: CacheEntry, gr: string): Selectable {
  if (e.sel !== undefined) return e.sel;
  // (made anew at each call, not kept: a few short-lived objects against two more per entry for good)
  if (e instanceof LiveEntry && e.labels !== null && onlyMetadataFields(gr)) return { labels: e.labels, fields: { 'metadata.name': e.name, 'metadata.namespace': e.ns } };
  const obj = entryObject(e);
  return (e.sel = { labels: obj?.metadata?.labels, fields: selectableFields(gr, obj) });
}

/** The first index i in [from, to) where below(i) is false; below must be true then false along the range. */
export function lowerBound(from: number, to: number, below: (i: number) => boolean): number {
  let lo = from;
  let hi = to;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (below(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first index of a key-sorted array whose key is not below `key`. */
export function firstKeyAtOrAfter(arr: ReadonlyArray<{ key: string }>, key: string): number {
  return lowerBound(0, arr.length, (i) => arr[i].key < key);
}

export function splitKey(key: string): [string, string] {
  const i = key.indexOf('/');
  return [key.slice(0, i), key.slice(i + 1)];
}

export interface WatchEvent {
  rv: number;
  type: EventType;
  /** the object after the event; for DELETED, its last state at the delete's version */
  entry: CacheEntry;
  /** the object before the event, when there was one */
  prev?: CacheEntry;
  /** the previous state at this event's version: what a watcher it leaves is sent (entryAs) */
  leftAs?: CacheEntry;
  /** memoized frames, one per event type it is sent as */
  frames?: Partial<Record<EventType, Buffer>>;
  /** memoized frames in other representations, by src/codec/representation.ts frameKey */
  encFrames?: Map<string, Buffer>;
  /** commit time (ms), for the age of a snapshot rebuilt from the ring */
  ts?: number;
}

const FRAME_HEAD: Record<EventType, Buffer> = {
  ADDED: Buffer.from('{"type":"ADDED","object":'),
  MODIFIED: Buffer.from('{"type":"MODIFIED","object":'),
  DELETED: Buffer.from('{"type":"DELETED","object":'),
};
const FRAME_TAIL = Buffer.from('}\n');

/** The JSON watch frame for an event, built once and shared by every watcher. */
export function frameOf(ev: WatchEvent, as: EventType = ev.type): Buffer {
  const frames = (ev.frames ??= {});
  let f = frames[as];
  if (!f) {
    f = Buffer.concat([FRAME_HEAD[as], objectAs(ev, as), FRAME_TAIL]);
    frames[as] = f;
  }
  return f;
}

/**
 * The object an event carries when a watcher sees it as `as`. An update that takes an
 * object out of a watcher's selector is a DELETED of the state the watcher last matched,
 * at the update's version (as kube-apiserver's cache watchers send it).
 */
function objectAs(ev: WatchEvent, as: EventType): Buffer {
  return entryAs(ev, as).json;
}

/**
 * The entry an event carries when a watcher sees it as `as` (see objectAs); memoized on the
 * event, so every other representation and converted version of that DELETED shares it.
 */
export function entryAs(ev: WatchEvent, as: EventType | string): CacheEntry {
  if (as !== 'DELETED' || ev.type === 'DELETED' || !ev.prev) return ev.entry;
  if (ev.leftAs) return ev.leftAs;
  const prev = ev.prev;
  const from = Buffer.from(`"resourceVersion":"${prev.rv}"`);
  const i = prev.json.indexOf(from);
  if (i < 0) return ev.entry;
  const json = Buffer.concat([prev.json.subarray(0, i), Buffer.from(`"resourceVersion":"${ev.rv}"`), prev.json.subarray(i + from.length)]);
  return (ev.leftAs = { key: prev.key, ns: prev.ns, name: prev.name, rv: ev.rv, json });
}

/** Appends the ADDED frame of a current object (a synthetic initial event) as its parts, with no copy. */
export function initialFrames(e: CacheEntry, out: Buffer[]): void {
  out.push(FRAME_HEAD.ADDED, e.json, FRAME_TAIL);
}

/**
 * A BOOKMARK frame: an object of the watched kind that carries only its resourceVersion
 * (and, at the end of the initial events, the annotation that says so).
 */
export function bookmarkFrame(apiVersion: string, kind: string, rv: number, initialEventsEnd = false): Buffer {
  const meta = initialEventsEnd ? `{"resourceVersion":"${rv}","annotations":{"k8s.io/initial-events-end":"true"}}` : `{"resourceVersion":"${rv}"}`;
  return Buffer.from(`{"type":"BOOKMARK","object":{"kind":${JSON.stringify(kind)},"apiVersion":${JSON.stringify(apiVersion)},"metadata":${meta}}}\n`);
}


/**
 * The items of one list, joined by commas, memoized while that list does not change: a list
 * response is then a small header, one slice of these bytes and a tail, with no per-item
 * work. offsets[i] is where item i starts; item i ends one byte (the comma) before item i+1.
 */
interface JoinedList {
  version: number;
  bytes: Buffer;
  offsets: Int32Array;
  /** what each item's JSON had cut (src/codec/list-item.ts) */
  prefix: Buffer | undefined;
}

/**
 * One namespace's objects ("" holds a cluster-scoped type's). base is sorted by key and never
 * mutated once built, so a reader may hold it across an await. A change costs O(1): it is
 * noted in `changes` (key and new entry, or null once deleted, appended in order), and the
 * next read merges the changes into a new sorted base in one pass. So a burst of writes pays
 * an append per write (not an insert into a map that grows with the burst),
 * and a read pays once per burst, never a re-sort of the whole type.
 */
interface NsIndex {
  /** the namespace: every entry of it holds this one string (not a copy of its own) */
  ns: string;
  base: CacheEntry[];
  /** base was given to a reader: it must not change any more */
  handedOut: boolean;
  /** the keys changed since base was built, in order (a key may recur: the last one counts) */
  changeKeys: string[];
  /** each change's new entry, null for a deletion */
  changeEntries: Array<CacheEntry | null>;
  /** changes since base was built that replaced or removed an entry base or the log still holds */
  superseded: number;
  /** bumped by every change: the joined bytes are valid for one version */
  version: number;
  joined?: JoinedList;
}

const COMMA = 0x2c;
/**
 * A namespace's change log is merged without a read once this many of its changes replaced or
 * removed an entry still held, and more than the namespace has: the memory it keeps beyond the
 * live objects stays within about twice theirs.
 */
const MERGE_AFTER = 1024;

function joinItems(arr: CacheEntry[], version: number, prefix: Buffer | undefined): JoinedList {
  let total = arr.length > 0 ? arr.length - 1 : 0;
  // (each item's bytes read once: an object loaded at start-up reads them from the store)
  const jsons: Buffer[] = new Array(arr.length);
  for (let i = 0; i < arr.length; i++) total += itemLength((jsons[i] = arr[i].json), prefix);
  const bytes = Buffer.allocUnsafe(total);
  const offsets = new Int32Array(arr.length + 1);
  let off = 0;
  for (let i = 0; i < arr.length; i++) {
    if (i > 0) bytes[off++] = COMMA;
    offsets[i] = off;
    off = writeItem(jsons[i], prefix, bytes, off);
  }
  offsets[arr.length] = total + 1;
  return { version, bytes, offsets, prefix };
}

export class ResourceCache {
  readonly items = new CacheItems();
  /** bumped by every change of items: the all-namespaces views are valid for one version */
  private version = 0;
  private byNs = new Map<string, NsIndex>();
  /** the namespaces of byNs in order; null when one came or went */
  private nsOrder: string[] | null = null;
  private all: { version: number; arr: CacheEntry[]; joined?: JoinedList } | null = null;
  readonly watchers = new WatcherGroup();
  private ring: WatchEvent[] = [];
  private ringHead = 0;
  /** every event of this type with rv > startRv is in the ring */
  startRv: number;
  /** the newest version of any object of this type, live or deleted, that the cache has seen */
  private newestRv = 0;
  /** events the feed brought and events handed to the watchers (the apiserver_watch_cache_* counters) */
  eventsReceived = 0;
  eventsDispatched = 0;

  constructor(
    readonly gr: string,
    readonly capacity: number,
    loadedAtRv: number,
  ) {
    this.startRv = loadedAtRv;
  }

  /** Start-up load; no events, no watchers yet. */
  load(key: string, rv: number, json: Buffer): void {
    const slash = key.indexOf('/');
    const idx = this.nsIndex(key.slice(0, slash));
    const entry: CacheEntry = { key, ns: idx.ns, name: key.slice(slash + 1), rv, json };
    this.items.set(key, entry);
    // Storage hands objects over in key order: appended to a namespace nobody has read
    // yet, they need no merge (a million-object start-up builds no change map).
    const base = idx.base;
    if (!idx.handedOut && idx.changeKeys.length === 0 && (base.length === 0 || base[base.length - 1].key < key)) {
      base.push(entry);
      idx.version++;
      this.version++;
    } else this.note(idx, key, entry, true);
    if (rv > this.newestRv) this.newestRv = rv;
  }

  /**
   * Start-up load of objects sorted by key (load-caches.ts), whose bytes stay in the store
   * (StoredEntry). Each namespace's run becomes its sorted list and its part of items as it
   * is, with no per-object insert. A cache that holds objects already takes them one by one.
   */
  loadSorted(keys: readonly string[], rvs: ArrayLike<number>, hints: ArrayLike<number> | number, src: ValueSource): void {
    if (this.items.size > 0) {
      for (let i = 0; i < keys.length; i++) this.load(keys[i], rvs[i], src.json(rvs[i]));
      return;
    }
    let i = 0;
    while (i < keys.length) {
      const key = keys[i];
      const slash = key.indexOf('/');
      const nsPrefix = key.slice(0, slash + 1);
      const idx = this.nsIndex(key.slice(0, slash));
      const run: CacheEntry[] = [];
      // a namespace's keys are one run of the sorted keys: "<ns>/" starts each, and no other key sorts between two of them
      for (; i < keys.length && keys[i].startsWith(nsPrefix) && keys[i].indexOf('/') === slash; i++) {
        const rv = rvs[i];
        run.push(new StoredEntry(keys[i], idx.ns, rv, typeof hints === 'number' ? hints : hints[i], src));
        if (rv > this.newestRv) this.newestRv = rv;
      }
      idx.base = run;
      // (base and the loaded array are one: no push into it from here on)
      idx.handedOut = true;
      idx.version++;
      this.version++;
      this.items.addLoaded(idx.ns, run);
    }
  }

  /** The newest version that touched this type: the cache is the state at any version from here on. */
  lastRvOfType(): number {
    return this.newestRv;
  }

  apply(type: EventType, key: string, rv: number, json: Buffer, obj?: any): WatchEvent {
    // An ADDED key was absent (the shard committed it as such): one lookup in a map of every
    // object of the type saved per create.
    const prev = type === 'ADDED' ? undefined : this.items.get(key);
    const slash = prev ? -1 : key.indexOf('/');
    // The change is noted in its namespace's index, whose one string the entry shares (not a
    // copy per object); deleting a key the cache does not hold touches no index.
    const idx = prev ? this.nsIndex(prev.ns) : type === 'DELETED' ? undefined : this.nsIndex(key.slice(0, slash));
    const ns = idx ? idx.ns : key.slice(0, slash);
    const entry = new LiveEntry(key, ns, rv, json, obj, obj ? (obj.metadata?.labels ?? undefined) : null);
    // a loaded object's bytes are in the store, where compaction removes them some time after this change
    if (prev instanceof StoredEntry) prev.pin();
    else if (prev instanceof LiveEntry && prev.slab) this.release(prev);
    // The object is at hand now: read its selectable fields once, so no selector parses it
    // later (a kind whose fields are name and namespace alone needs only the labels: selectable()).
    if (obj && !onlyMetadataFields(this.gr)) entry.sel = { labels: obj.metadata?.labels, fields: selectableFields(this.gr, obj) };
    // bytes that view a larger buffer (a commit's records): the entry joins that buffer's slab
    if (type !== 'DELETED' && json.buffer.byteLength > UNTRACKED_SLAB_BYTES && json.byteLength * 2 <= json.buffer.byteLength) {
      let slab = this.slab;
      if (slab === null || slab.ab !== json.buffer) slab = this.slab = new RecordSlab(json.buffer);
      slab.entries.push(entry);
      slab.live++;
      entry.slab = slab;
    }
    if (rv > this.newestRv) this.newestRv = rv;
    if (type === 'DELETED') {
      if (prev) {
        this.items.delete(key);
        this.note(idx!, key, null, true);
      }
    } else {
      this.items.set(key, entry);
      this.note(idx!, key, entry, prev !== undefined);
    }
    const ev: WatchEvent = { rv, type, entry, prev, ts: Date.now() };
    if (this.capacity > 0) {
      this.ring.push(ev);
      if (this.ring.length - this.ringHead > this.capacity) {
        this.startRv = this.ring[this.ringHead].rv;
        this.ringHead++;
        if (this.ringHead > 1024 && this.ringHead * 2 > this.ring.length) {
          this.ring = this.ring.slice(this.ringHead);
          this.ringHead = 0;
        }
      }
    } else {
      this.startRv = rv;
    }
    return ev;
  }

  /** The slab the last commit's entries joined: the next entry of the same buffer joins it too. */
  private slab: RecordSlab | null = null;

  /**
   * An entry leaves the current state (changed or deleted): its slab has one current object
   * fewer, and once those are a quarter of the slab's entries, they get bytes of their own so
   * that the slab can go (the entries left in the event ring keep it until they leave it).
   */
  private release(e: LiveEntry): void {
    const slab = e.slab!;
    e.slab = null;
    if (--slab.live === 0) slab.entries = [];
    else if (slab.live * 4 <= slab.entries.length) {
      for (const x of slab.entries) {
        if (x.slab !== slab) continue;
        x.json = Buffer.from(x.json);
        x.slab = null;
      }
      slab.entries = [];
      slab.live = 0;
    }
  }

  private nsIndex(ns: string): NsIndex {
    let idx = this.byNs.get(ns);
    if (!idx) {
      idx = { ns, base: [], handedOut: false, changeKeys: [], changeEntries: [], superseded: 0, version: 0 };
      this.byNs.set(ns, idx);
      this.nsOrder = null;
    }
    return idx;
  }

  private note(idx: NsIndex, key: string, entry: CacheEntry | null, supersedes: boolean): void {
    idx.changeKeys.push(key);
    idx.changeEntries.push(entry);
    idx.version++;
    idx.joined = undefined;
    this.version++;
    // The change log is merged by the next read. A namespace that is written and never read
    // would keep each superseded object without bound: merged here once those outgrow the
    // namespace (at least MERGE_AFTER), a pass paid once per that many updates or deletes.
    // Creates alone supersede nothing: their log holds only live objects, and merging it on
    // the write path (a sort of every new key) stalled the front thread for hundreds of ms
    // once a namespace held a few hundred thousand objects.
    if (supersedes && ++idx.superseded >= MERGE_AFTER && idx.superseded > idx.base.length) this.merge(idx);
  }

  /** The namespace's sorted objects, with its pending changes merged in (one pass). */
  private nsList(ns: string): CacheEntry[] {
    const idx = this.byNs.get(ns);
    if (!idx) return [];
    idx.handedOut = true;
    if (idx.changeKeys.length === 0) return idx.base;
    return this.merge(idx);
  }

  /** Merges the namespace's change log into a new sorted base (the old base, perhaps a reader's, is left as it was). */
  private merge(idx: NsIndex): CacheEntry[] {
    const ns = idx.ns;
    // each changed key's last change
    const changes = new Map<string, CacheEntry | null>();
    for (let i = 0; i < idx.changeKeys.length; i++) changes.set(idx.changeKeys[i], idx.changeEntries[i]);
    idx.changeKeys = [];
    idx.changeEntries = [];
    idx.superseded = 0;
    const base = idx.base;
    const addedKeys: string[] = [];
    for (const [key, e] of changes) {
      if (e === null) continue;
      const i = base.length === 0 ? 0 : firstKeyAtOrAfter(base, key);
      if (i >= base.length || base[i].key !== key) addedKeys.push(key);
    }
    // (strings sorted without a comparator: the same order as <, several times faster than
    // calling one per comparison)
    addedKeys.sort();
    const added = addedKeys.map((k) => changes.get(k)!);
    const out: CacheEntry[] = [];
    let j = 0;
    for (let i = 0; i < base.length; i++) {
      let cur: CacheEntry | null = base[i];
      const ch = changes.get(cur.key);
      if (ch !== undefined) cur = ch;
      while (j < added.length && added[j].key < base[i].key) out.push(added[j++]);
      if (cur !== null) out.push(cur);
    }
    while (j < added.length) out.push(added[j++]);
    idx.base = out;
    if (out.length === 0) {
      this.byNs.delete(ns);
      this.nsOrder = null;
    }
    return out;
  }

  /** Objects sorted by namespace then name (the order kube-apiserver lists in). */
  sorted(): CacheEntry[] {
    return this.list('');
  }

  /** Objects of one namespace ("" = all), sorted. Never mutate it: it is shared until the next change. */
  list(ns: string): CacheEntry[] {
    if (ns !== '') return this.nsList(ns);
    if (this.all && this.all.version === this.version) return this.all.arr;
    // Merging may drop an emptied namespace (and reset nsOrder): merge all first.
    for (const ns of [...this.byNs.keys()]) this.nsList(ns);
    this.nsOrder ??= [...this.byNs.keys()].sort();
    let arr: CacheEntry[];
    if (this.nsOrder.length === 1) arr = this.nsList(this.nsOrder[0]);
    else {
      arr = [];
      for (const ns of this.nsOrder) {
        const part = this.nsList(ns);
        for (let i = 0; i < part.length; i++) arr.push(part[i]);
      }
    }
    this.all = { version: this.version, arr };
    return arr;
  }

  /**
   * The JSON of list(ns)[from, to) joined by commas. A whole list, or a large part of one
   * (the chunks of a paged list), is one slice of a buffer built once per version of that
   * list and shared by every reader; a small page of a large list (limit=50 of thousands,
   * re-read after every change) joins only its own items instead of the whole list.
   */
  joined(ns: string, from: number, to: number, prefix?: Buffer): Buffer {
    if (from >= to) return Buffer.alloc(0);
    const arr = this.list(ns);
    const holder: { joined?: JoinedList } | undefined = ns === '' ? this.all! : this.byNs.get(ns);
    if (!holder) return Buffer.alloc(0);
    let j = holder.joined;
    if (!j || j.prefix !== prefix) {
      if ((to - from) * 4 < arr.length) return joinItems(arr.slice(from, to), 0, prefix).bytes;
      j = holder.joined = joinItems(arr, ns === '' ? this.version : this.byNs.get(ns)!.version, prefix);
    }
    return j.bytes.subarray(j.offsets[from], j.offsets[to] - 1);
  }

  /** Forgets every event: the ring starts again at `at` (a relist; earlier versions are gone). */
  resetHistory(at: number): void {
    this.ring = [];
    this.ringHead = 0;
    this.startRv = at;
  }

  /** Events after rv, or null when the ring no longer holds all of them. */
  eventsAfter(rv: number): WatchEvent[] | null {
    if (rv < this.startRv) return null;
    return this.ring.slice(lowerBound(this.ringHead, this.ring.length, (i) => this.ring[i].rv <= rv));
  }

  /**
   * The objects of one namespace ("" = all) as they were at rv, sorted, rebuilt from the
   * current objects by undoing the ring's later events (kube's cache snapshots, kept for
   * `maxAgeMs`). Null when the ring no longer reaches back to rv, or the first undone
   * event is older than that.
   */
  snapshotAt(rv: number, ns: string, maxAgeMs: number): CacheEntry[] | null {
    const later = this.eventsAfter(rv);
    if (later === null) return null;
    if (later.length === 0) return this.list(ns);
    if ((later[0].ts ?? 0) < Date.now() - maxAgeMs) return null;
    const prefix = ns === '' ? '' : ns + '/';
    const state = new Map<string, CacheEntry>();
    for (const e of this.list(ns)) state.set(e.key, e);
    for (let i = later.length - 1; i >= 0; i--) {
      const ev = later[i];
      if (!ev.entry.key.startsWith(prefix)) continue;
      if (ev.type === 'ADDED') state.delete(ev.entry.key);
      else if (ev.prev) state.set(ev.entry.key, ev.prev);
      else return null;
    }
    return [...state.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }
}
