// Start-up load of one shard's objects into a front thread's caches.
//
// The caches hold each object's key and version; its bytes stay in the shard's B-tree, which
// lmdb maps into the process, and are read from there when a reader asks (StoredEntry in
// watch-cache.ts). So a load is a scan of the keys and versions, not a copy of the store:
//
//   1. the persisted index (cache-index.ts), when the shard's B-tree is still at the version
//      it was written at: the keys and versions in key order, one file read, no scan of
//      the store. Written at clean shutdown (LmdbStorage.close); a store that moved on since
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

type Utf8Slicing = Buffer & { utf8Slice(start: number, end: number): string };

/**
 * The records of the scan, in version order, in arrays sized once from the database's
 * entry count (grown only if records were added since): a million pushes into growing
 * arrays would leave their outgrown copies behind as garbage the size of the load.
 */
class ScanRows {
  keys: string[];
  rvs: Float64Array;
  /** GONE, LIVE or CORRUPT */
  states: Uint8Array;
  /** the record's type: its position in grs */
  types: Uint16Array;
  n = 0;

  constructor(capacity: number) {
    const c = Math.max(16, capacity);
    this.keys = new Array(c);
    this.rvs = new Float64Array(c);
    this.states = new Uint8Array(c);
    this.types = new Uint16Array(c);
  }

  push(type: number, key: string, rv: number, state: number): void {
    if (this.n === this.rvs.length) this.grow();
    const i = this.n++;
    this.keys[i] = key;
    this.rvs[i] = rv;
    this.states[i] = state;
    this.types[i] = type;
  }

  private grow(): void {
    const c = this.rvs.length * 2;
    const rvs = new Float64Array(c);
    rvs.set(this.rvs);
    const states = new Uint8Array(c);
    states.set(this.states);
    const types = new Uint16Array(c);
    types.set(this.types);
    Object.assign(this, { rvs, states, types });
  }
}

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
  /**
   * (encryption at rest) the decrypted JSON of the live records stored encrypted, by version
   * (LmdbStorage decrypts them before the load): the caches read those from here, and a
   * record stored encrypted that is not here (it could not be decrypted) is kept aside as
   * corrupt, as kube treats a value its transformers cannot read.
   */
  plain?: Map<number, Buffer>,
): LoadReport {
  const base = storeValues(env);
  const src: ValueSource = plain ? { json: (rv) => plain.get(rv) ?? base.json(rv) } : base;
  const maxRv: number = env.meta.get('maxRv') ?? 0;
  let indexRefused = '';
  if (indexDir) {
    const found = readCacheIndex(indexDir, maxRv, lastTxnId(env.root));
    indexRefused = typeof found === 'string' ? found : outOfOrder(found);
    if (typeof found !== 'string' && !indexRefused) return { ...fromIndex(found, src, cacheOf, markCorrupt), from: 'index', indexRefused: '' };
  }
  return { ...fromStore(env, src, cacheOf, markCorrupt, plain), from: 'store', indexRefused };
}

/**
 * Why the index's keys cannot be searched ('' when they can): each type's must be in strictly
 * increasing order (the caches find loaded keys by binary search). Its checksum only says
 * the file is as written; this costs a comparison per key.
 */
function outOfOrder(index: CacheIndex): string {
  for (const t of index.types) {
    const k = t.keys;
    for (let i = 1; i < k.length; i++) if (!(k[i - 1] < k[i])) return `index keys of ${t.gr} out of order at ${k[i]}`;
  }
  return '';
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

function fromStore(env: ShardEnv, src: ValueSource, cacheOf: (gr: string) => ResourceCache, markCorrupt: (gr: string, key: string, rv: number, bytes: Buffer) => void, plain?: Map<number, Buffer>) {
  const grs: string[] = [];
  const grIds = new Map<string, number>();
  const rows = new ScanRows((env.hist.getStats() as { entryCount: number }).entryCount);
  let grBytes: Buffer | null = null;
  let type = 0;
  scanRecords(env, (rv, rec, size) => {
    const r = rec as Utf8Slicing;
    const grLen = r[25] | (r[26] << 8);
    const keyLen = r[27] | (r[28] << 8);
    const keyEnd = FIXED + grLen + keyLen;
    if (keyEnd >= size) throw new Error(`storage: record ${rv} is torn`);
    // consecutive records are mostly of one type: its name is decoded once per run
    if (grBytes === null || grBytes.length !== grLen || r.compare(grBytes, 0, grLen, FIXED, FIXED + grLen) !== 0) {
      const gr = r.utf8Slice(FIXED, FIXED + grLen);
      grBytes = Buffer.from(gr);
      let id = grIds.get(gr);
      if (id === undefined) {
        grIds.set(gr, (id = grs.length));
        grs.push(gr);
      }
      type = id;
    }
    const decrypted = plain?.get(rv);
    rows.push(type, r.utf8Slice(FIXED + grLen, keyEnd), rv, r[keyEnd] !== FLAG_LIVE ? GONE : (decrypted ? looksLikeObjectAt(decrypted, 0, decrypted.length) : looksLikeObjectAt(r, keyEnd + 1, size)) ? LIVE : CORRUPT);
  });
  const { keys, rvs, states, types, n } = rows;
  // by type, then key, and for one key in version order: a key's newest record is the last of its run
  const order = new Int32Array(n);
  let sorted = true;
  for (let i = 0; i < n; i++) {
    order[i] = i;
    if (i > 0 && (types[i - 1] > types[i] || (types[i - 1] === types[i] && keys[i - 1] >= keys[i]))) sorted = false;
  }
  if (!sorted) order.sort((a, b) => types[a] - types[b] || (keys[a] < keys[b] ? -1 : keys[a] > keys[b] ? 1 : a - b));
  let objects = 0;
  let corrupt = 0;
  for (let from = 0; from < n; ) {
    const t = types[order[from]];
    let to = from;
    let live = 0;
    for (; to < n && types[order[to]] === t; to++) {
      const i = order[to];
      const last = to + 1 === n || keys[order[to + 1]] !== keys[i] || types[order[to + 1]] !== t;
      if (last && states[i] === LIVE) live++;
    }
    // (arrays of the exact size: nothing outgrown left behind)
    const liveKeys: string[] = new Array(live);
    const liveRvs = new Float64Array(live);
    let k = 0;
    for (let p = from; p < to; p++) {
      const i = order[p];
      if (p + 1 < to && keys[order[p + 1]] === keys[i]) continue;
      if (states[i] === LIVE) {
        liveKeys[k] = keys[i];
        liveRvs[k++] = rvs[i];
      } else if (states[i] === CORRUPT) {
        markCorrupt(grs[t], keys[i], rvs[i], Buffer.from(src.json(rvs[i])));
        corrupt++;
      }
    }
    // (hints unknown: a search of every object's bytes here would cost more than the rest of
    // the scan; the first reader that asks looks once, and the next index keeps them)
    if (live) cacheOf(grs[t]).loadSorted(liveKeys, liveRvs, HINTS_UNKNOWN, src);
    objects += live;
    from = to;
  }
  return { objects, corrupt };
}

