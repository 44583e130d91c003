// Read-side access to a shard's revision history, used by the front thread (layout.ts).
// (The start-up load of the current objects is workers/watch/load-caches.ts.)
//
// "Key at revision" is answered as etcd answers it, from an index in memory: here, the
// front's cache, which holds every object's newest revision (the state at `at`). The state
// at an older revision x is that state with the records after x undone: the first record
// of a key after x names the revision the key had at x (its previous one, 0 when none).
// The records come from a RecordSource: the B-tree's read snapshot (one LMDB read
// transaction, stable) and the newer records the front holds; the caller makes sure it
// holds every record up to the versions it asks about (LmdbStorage.history).
import { FLAG_LIVE, type ShardEnv } from './layout.js';
import { recordIsOf, recordKey, recordPrev, recordType, recordValue } from './record.js';
import type { EventType } from './protocol.js';

export interface StoredObject {
  key: string;
  rv: number;
  json: Buffer;
}

export interface StoredEvent extends StoredObject {
  type: EventType;
  /** previous revision of the key (0 when none) */
  prevRv: number;
  /** the object at prevRv, when asked for */
  prevJson?: Buffer;
}

/** The newest state of one resource type, as the front holds it. */
export interface CurrentState {
  /** the version it is the state at: every record up to it is reflected, none after */
  at: number;
  get(key: string): StoredObject | undefined;
  /** the objects of namespace ns ("" = all) with key >= from, in key order */
  range(ns: string, from: string): Iterable<StoredObject>;
}

/** One revision record: its version and its bytes (record.ts), as the B-tree holds it. */
export interface RecordEntry {
  key: number;
  value: Buffer;
}

/**
 * The revision records of a shard that a read can see, in version order. The B-tree holds
 * them up to the last version it was given; the newer ones are those the front keeps until
 * the B-tree has them (LmdbStorage.records).
 */
export interface RecordSource {
  /** the records with start <= version < end */
  range(start: number, end: number): Iterable<RecordEntry>;
  get(rv: number): Buffer | undefined;
  /**
   * A record's JSON, decrypted when the record holds it encrypted at rest (LmdbStorage sets
   * it when an encryption configuration is loaded); absent: the record's value is the JSON.
   */
  plain?(rec: Buffer): Buffer;
}

/** The B-tree alone. */
export function treeRecords(env: ShardEnv): RecordSource {
  return { range: (start, end) => env.hist.getRange({ start, end }), get: (rv) => env.hist.get(rv) };
}

/** The first entry of `entries` (in version order) at or after rv. */
function firstAtOrAfter(entries: RecordEntry[], rv: number): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (entries[mid].key < rv) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The B-tree's records up to `upto` (the last version its read snapshot holds), then those
 * of `newer`: every record after upto, in version order.
 */
export function overlayRecords(env: ShardEnv, upto: number, newer: RecordEntry[]): RecordSource {
  return {
    *range(start, end) {
      if (start <= upto) yield* env.hist.getRange({ start, end: Math.min(end, upto + 1) });
      for (let i = firstAtOrAfter(newer, Math.max(start, upto + 1)); i < newer.length && newer[i].key < end; i++) yield newer[i];
    },
    get(rv) {
      if (rv <= upto) return env.hist.get(rv);
      const i = firstAtOrAfter(newer, rv);
      return i < newer.length && newer[i].key === rv ? newer[i].value : undefined;
    },
  };
}

/** One type's history: its shard's revision records and the type's current state. */
export interface History {
  src: RecordSource;
  gr: string;
  cur: CurrentState;
}

const json = (src: RecordSource, value: Buffer): Buffer => (src.plain ? src.plain(value) : Buffer.from(recordValue(value).subarray(1)));

/** The object at revision p, or null when it is a tombstone or gone. */
function revision(src: RecordSource, key: string, p: number): StoredObject | null {
  const v = src.get(p);
  if (!v || recordValue(v)[0] !== FLAG_LIVE) return null;
  return { key, rv: p, json: json(src, v) };
}

/**
 * For every key of the type (that `want` accepts) with a record between rv and the current
 * state's version: its state at rv (null: absent). Before the current version the records
 * are undone, after it (a version the cache has not seen yet) they are applied.
 */
function changedAt(h: History, rv: number, want: (key: string) => boolean): Map<string, StoredObject | null> {
  const out = new Map<string, StoredObject | null>();
  const at = h.cur.at;
  if (rv === at) return out;
  const gr = Buffer.from(h.gr);
  if (rv < at) {
    for (const { value } of h.src.range(rv + 1, at + 1)) {
      if (!recordIsOf(value, gr)) continue;
      const key = recordKey(value);
      if (out.has(key) || !want(key)) continue;
      const p = recordPrev(value);
      out.set(key, p ? revision(h.src, key, p) : null);
    }
  } else {
    for (const { key: r, value } of h.src.range(at + 1, rv + 1)) {
      if (!recordIsOf(value, gr)) continue;
      const key = recordKey(value);
      if (want(key)) out.set(key, recordValue(value)[0] === FLAG_LIVE ? { key, rv: r, json: json(h.src, value) } : null);
    }
  }
  return out;
}

const byKey = (a: StoredObject, b: StoredObject) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/**
 * The objects of one type in namespace ns ("" = all), from the key `from` on, as they were
 * at rv (etcd's "range at revision"), in key order. The records after rv are read once, up
 * front; the rest streams from the current state, so a caller that stops after n objects
 * has done n steps of the merge.
 */
export function* objectsAt(h: History, rv: number, ns = '', from = ''): Generator<StoredObject> {
  const prefix = ns === '' ? '' : ns + '/';
  const changed = changedAt(h, rv, (k) => k >= from && k.startsWith(prefix));
  const restored: StoredObject[] = [];
  for (const o of changed.values()) if (o) restored.push(o);
  restored.sort(byKey);
  let i = 0;
  for (const o of h.cur.range(ns, from)) {
    if (changed.size > 0 && changed.has(o.key)) continue;
    while (i < restored.length && restored[i].key < o.key) yield restored[i++];
    yield o;
  }
  while (i < restored.length) yield restored[i++];
}

/** objectsAt, collected: at most `limit` objects (0 = all). */
export function listAt(h: History, rv: number, ns = '', from = '', limit = 0): StoredObject[] {
  const out: StoredObject[] = [];
  for (const o of objectsAt(h, rv, ns, from)) {
    out.push(o);
    if (limit > 0 && out.length >= limit) break;
  }
  return out;
}

/** One object as it was at rv. */
export function getAt(h: History, key: string, rv: number): StoredObject | undefined {
  const c = h.cur.get(key);
  // Its newest revision is not after rv: nothing changed it in between.
  if (c && c.rv <= rv && rv <= h.cur.at) return c;
  const changed = changedAt(h, rv, (k) => k === key);
  return changed.has(key) ? (changed.get(key) ?? undefined) : c;
}

/**
 * The events of one type with afterRv < rv <= uptoRv, from the revision history; withPrev
 * adds each one's previous state (a filtered watcher judges selector transitions by it).
 * History after afterRv is not compacted, nor therefore the revisions those events superseded.
 */
export function eventsBetween(src: RecordSource, gr: string, afterRv: number, uptoRv: number, withPrev = false): StoredEvent[] {
  const out: StoredEvent[] = [];
  const grBytes = Buffer.from(gr);
  for (const { key: rv, value } of src.range(afterRv + 1, uptoRv + 1)) {
    if (!recordIsOf(value, grBytes)) continue;
    const key = recordKey(value);
    const type = recordType(value);
    const prevRv = recordPrev(value);
    const ev: StoredEvent = { key, rv, type, prevRv, json: json(src, value) };
    if (withPrev && prevRv && type !== 'ADDED') {
      const prev = revision(src, key, prevRv);
      if (prev) ev.prevJson = prev.json;
    }
    out.push(ev);
  }
  return out;
}
