// Read-side access to a shard's LMDB environment, used by the front thread. Each call
// reads inside one LMDB read transaction, a stable snapshot, so the answer is consistent
// while the shard worker goes on committing.
import { FLAG_LIVE, MAX_STRING, type LogEntry, type ShardEnv } from './layout.js';
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

/** The current live objects of every resource type in the shard: start-up load. */
export function* currentObjects(env: ShardEnv): Generator<{ gr: string } & StoredObject> {
  let pendingGr = '';
  let pendingKey = '';
  let pending: { rv: number; value: Buffer } | null = null;
  const emit = () => (pending && pending.value[0] === FLAG_LIVE ? { gr: pendingGr, key: pendingKey, rv: pending.rv, json: Buffer.from(pending.value.subarray(1)) } : null);
  for (const { key, value } of env.revs.getRange({})) {
    const [gr, k, rv] = key;
    if (pending && (gr !== pendingGr || k !== pendingKey)) {
      const out = emit();
      if (out) yield out;
    }
    pendingGr = gr;
    pendingKey = k;
    pending = { rv, value };
  }
  const out = emit();
  if (out) yield out;
}

/** The range of keys [max(prefix, from), prefix + MAX_STRING) of one type, or null when empty. */
function keyRange(gr: string, prefix: string, from: string): { start: [string, string]; end: [string, string] } | null {
  const lo = from > prefix ? from : prefix;
  const hi = prefix + MAX_STRING;
  return lo < hi ? { start: [gr, lo], end: [gr, hi] } : null;
}

/**
 * The objects of one type (keys starting with prefix, from the key `from` on) as they were
 * at rv (etcd's "range at revision"), sorted by key, read lazily: a caller that stops after
 * n objects has read only the revisions of those keys (and of the next one), as a limited
 * etcd range does. Iterate synchronously, so it stays within one read snapshot.
 */
export function* objectsAt(env: ShardEnv, gr: string, rv: number, prefix = '', from = ''): Generator<StoredObject> {
  const range = keyRange(gr, prefix, from);
  if (!range) return;
  let curKey = '';
  let best: { rv: number; value: Buffer } | null = null;
  for (const { key, value } of env.revs.getRange(range)) {
    const [, k, r] = key;
    // The range starts at the key's encoding; `from` (a continue key ending in NUL) is also
    // compared as a string, which the encoding of a NUL need not honour.
    if (k < from) continue;
    if (k !== curKey) {
      if (best && best.value[0] === FLAG_LIVE) yield { key: curKey, rv: best.rv, json: Buffer.from(best.value.subarray(1)) };
      curKey = k;
      best = null;
    }
    if (r <= rv) best = { rv: r, value };
  }
  if (best && best.value[0] === FLAG_LIVE) yield { key: curKey, rv: best.rv, json: Buffer.from(best.value.subarray(1)) };
}

/** objectsAt, collected: at most `limit` objects (0 = all). */
export function listAt(env: ShardEnv, gr: string, rv: number, prefix = '', from = '', limit = 0): StoredObject[] {
  const out: StoredObject[] = [];
  for (const o of objectsAt(env, gr, rv, prefix, from)) {
    out.push(o);
    if (limit > 0 && out.length >= limit) break;
  }
  return out;
}

/**
 * How many objects objectsAt would yield, as etcd counts a range's keys: from the keys
 * alone, plus one flag byte per key (no object is copied out).
 */
export function countAt(env: ShardEnv, gr: string, rv: number, prefix = '', from = ''): number {
  const range = keyRange(gr, prefix, from);
  if (!range) return 0;
  let n = 0;
  let curKey = '';
  let bestRv = -1;
  const settle = () => {
    if (bestRv < 0) return;
    const v = env.revs.getBinaryFast([gr, curKey, bestRv]);
    if (v && v[0] === FLAG_LIVE) n++;
  };
  for (const key of env.revs.getKeys(range)) {
    const [, k, r] = key as [string, string, number];
    if (k < from) continue;
    if (k !== curKey) {
      settle();
      curKey = k;
      bestRv = -1;
    }
    if (r <= rv) bestRv = r;
  }
  settle();
  return n;
}

/** One object as it was at rv. */
export function getAt(env: ShardEnv, gr: string, key: string, rv: number): StoredObject | undefined {
  let best: { rv: number; value: Buffer } | null = null;
  for (const { key: k, value } of env.revs.getRange({ start: [gr, key, 0], end: [gr, key, rv + 1] })) {
    best = { rv: k[2], value };
  }
  if (!best || best.value[0] !== FLAG_LIVE) return undefined;
  return { key, rv: best.rv, json: Buffer.from(best.value.subarray(1)) };
}

/**
 * The events of one type with afterRv < rv <= uptoRv, from the revision log; withPrev adds
 * each one's previous state (a filtered watcher judges selector transitions by it). History
 * after afterRv is not compacted, nor therefore the revisions those events superseded.
 */
export function eventsBetween(env: ShardEnv, gr: string, afterRv: number, uptoRv: number, withPrev = false): StoredEvent[] {
  const out: StoredEvent[] = [];
  for (const { key: rv, value } of env.log.getRange({ start: afterRv + 1, end: uptoRv + 1 })) {
    const e = value as LogEntry;
    if (e.g !== gr) continue;
    const bytes = env.revs.get([gr, e.k, rv]);
    if (!bytes) continue;
    const ev: StoredEvent = { key: e.k, rv, type: e.t, prevRv: e.p, json: Buffer.from(bytes.subarray(1)) };
    if (withPrev && e.p && e.t !== 'ADDED') {
      const prev = env.revs.get([gr, e.k, e.p]);
      if (prev && prev[0] === FLAG_LIVE) ev.prevJson = Buffer.from(prev.subarray(1));
    }
    out.push(ev);
  }
  return out;
}
