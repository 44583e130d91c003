// Start-up load of one shard's objects into a front thread's caches.
//
// The caches hold each object's key and version; its bytes stay in the shard's B-tree, which
// lmdb maps into the process, and are read from there when a reader asks (StoredEntry in
// watch-cache.ts). So a load is a scan of the keys and versions, not a copy of the store:
//
//   1. the persisted index (cache-index.ts), when the shard's B-tree is still at the version
//      it was written at: the keys and versions in key order, one file read, no scan of
//      the store. Written at clean shutdown (Coordinator.close); a store that moved on since
//      (a crash after further writes, whose log the shard worker applied at its start)
//      never matches it, and neither does a file that fails its checksum;
//   2. else one scan of the B-tree's records in version order (scan.ts, no copy per record),
//      sorted by key per type: the newest record of a key decides, a tombstone removes it.
//
// Thread ownership: runs on the thread that owns the caches (the main thread today, each
// front thread later), with that thread's own read-only handle of the environment. The
// shard worker must be ready first (its log applied to its B-tree).
import { FLAG_LIVE, type ShardEnv } from '../shard/layout.js';
import { FIXED, recordValue } from '../shard/record.js';
import { scanRecords } from '../shard/scan.js';
import { lastTxnId, readCacheIndex, type CacheIndex } from '../shard/cache-index.js';
import { HINTS_UNKNOWN, type ResourceCache, type ValueSource } from './watch-cache.js';

export interface LoadReport {
  /** where the keys came from */
  from: 'index' | 'store';
  objects: number;
  corrupt: number;
  /** why the persisted index was not used ('' when it was, or there was none) */
  indexRefused: string;
}

/** Whether bytes[start, end) are a JSON object: '{' first and '}' last, blanks aside (no parse). */
export function looksLikeObjectAt(b: Uint8Array, start: number, end: number): boolean {
  let i = start;
  let j = end - 1;
  while (i <= j && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i++;
  while (j >= i && (b[j] === 0x20 || b[j] === 0x0a || b[j] === 0x0d || b[j] === 0x09)) j--;
  return i < j && b[i] === 0x7b && b[j] === 0x7d;
}

const sources = new WeakMap<ShardEnv, ValueSource>();

/** The stored bytes of live objects, read from the environment's B-tree by version. */
export function storeValues(env: ShardEnv): ValueSource {
  let s = sources.get(env);
  if (!s) {
    s = {
      json(rv: number): Buffer {
        const rec = env.hist.get(rv);
        if (!rec) throw new Error(`storage: the record of resource version ${rv} is gone from the store`);
        return recordValue(rec).subarray(1);
      },
    };
    sources.set(env, s);
  }
  return s;
}

const GONE = 0;
const LIVE = 1;
const CORRUPT = 2;

/** One type's records in version order, as the scan finds them. */
interface TypeRows {
  grBytes: Buffer;
  keys: string[];
  rvs: number[];
  /** GONE, LIVE or CORRUPT */
  states: number[];
}

type Utf8Slicing = Buffer & { utf8Slice(start: number, end: number): string };

/**
 * Loads every live object of the shard into its type's cache (cacheOf); bytes that are not
 * a JSON object go to markCorrupt instead (KEP-3926: kept aside, so that start-up, reads of
 * other objects and unsafe deletion still work). indexDir is where the persisted index
 * lives (the shard's directory), '' for none.
 */
export function loadCaches(
  env: ShardEnv,
  indexDir: string,
  cacheOf: (gr: string) => ResourceCache,
  markCorrupt: (gr: string, key: string, rv: number, bytes: Buffer) => void,
): LoadReport {
  const src = storeValues(env);
  const maxRv: number = env.meta.get('maxRv') ?? 0;
  let indexRefused = '';
  if (indexDir) {
    const found = readCacheIndex(indexDir, maxRv, lastTxnId(env.root));
    if (typeof found !== 'string') return { ...fromIndex(found, src, cacheOf, markCorrupt), from: 'index', indexRefused: '' };
    indexRefused = found;
  }
  return { ...fromStore(env, src, cacheOf, markCorrupt), from: 'store', indexRefused };
}

function fromIndex(index: CacheIndex, src: ValueSource, cacheOf: (gr: string) => ResourceCache, markCorrupt: (gr: string, key: string, rv: number, bytes: Buffer) => void) {
  let objects = 0;
  let corrupt = 0;
  for (const t of index.types) {
    for (const c of t.corrupt) markCorrupt(t.gr, c.key, c.rv, Buffer.from(src.json(c.rv)));
    corrupt += t.corrupt.length;
    if (t.keys.length) cacheOf(t.gr).loadSorted(t.keys, t.rvs, t.hints, src);
    objects += t.keys.length;
  }
  return { objects, corrupt };
}

function fromStore(env: ShardEnv, src: ValueSource, cacheOf: (gr: string) => ResourceCache, markCorrupt: (gr: string, key: string, rv: number, bytes: Buffer) => void) {
  const byGr = new Map<string, TypeRows>();
  let cur: TypeRows | null = null;
  scanRecords(env, (rv, rec, size) => {
    const r = rec as Utf8Slicing;
    const grLen = r[25] | (r[26] << 8);
    const keyLen = r[27] | (r[28] << 8);
    // consecutive records are mostly of one type: its name is decoded once per run
    if (cur === null || cur.grBytes.length !== grLen || r.compare(cur.grBytes, 0, grLen, FIXED, FIXED + grLen) !== 0) {
      const gr = r.utf8Slice(FIXED, FIXED + grLen);
      cur = byGr.get(gr) ?? null;
      if (!cur) byGr.set(gr, (cur = { grBytes: Buffer.from(r.subarray(FIXED, FIXED + grLen)), keys: [], rvs: [], states: [] }));
    }
    const keyEnd = FIXED + grLen + keyLen;
    cur.keys.push(r.utf8Slice(FIXED + grLen, keyEnd));
    cur.rvs.push(rv);
    cur.states.push(r[keyEnd] !== FLAG_LIVE ? GONE : looksLikeObjectAt(r, keyEnd + 1, size) ? LIVE : CORRUPT);
  });
  let objects = 0;
  let corrupt = 0;
  for (const gr of [...byGr.keys()].sort()) {
    const { keys, rvs, states } = byGr.get(gr)!;
    // by key, and for one key in version order (ties keep their scan order): a key's newest record is the last of its run
    const order = keysInOrder(keys);
    const liveKeys: string[] = [];
    const liveRvs: number[] = [];
    for (let n = 0; n < order.length; n++) {
      const i = order[n];
      if (n + 1 < order.length && keys[order[n + 1]] === keys[i]) continue;
      if (states[i] === LIVE) {
        liveKeys.push(keys[i]);
        liveRvs.push(rvs[i]);
      } else if (states[i] === CORRUPT) {
        markCorrupt(gr, keys[i], rvs[i], Buffer.from(src.json(rvs[i])));
        corrupt++;
      }
    }
    // (hints unknown: a search of every object's bytes here would cost more than the rest of
    // the scan; the first reader that asks looks once, and the next index keeps them)
    if (liveKeys.length) cacheOf(gr).loadSorted(liveKeys, liveRvs, HINTS_UNKNOWN, src);
    objects += liveKeys.length;
  }
  return { objects, corrupt };
}

/** The positions of keys sorted by key, equal keys in position order. */
function keysInOrder(keys: string[]): Int32Array {
  const order = new Int32Array(keys.length);
  let sorted = true;
  for (let i = 0; i < keys.length; i++) {
    order[i] = i;
    if (i > 0 && keys[i - 1] >= keys[i]) sorted = false;
  }
  if (!sorted) order.sort((a, b) => (keys[a] < keys[b] ? -1 : keys[a] > keys[b] ? 1 : a - b));
  return order;
}
