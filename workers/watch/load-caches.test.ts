// The start-up load of a shard's caches: from the store (a scan of its records) and from the
// persisted cache index, which must give the same caches, and must be refused whenever the
// store has moved on since it was written, or the file is damaged.
import { describe, it, expect, afterEach } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeRev, FLAG_LIVE, FLAG_TOMBSTONE, openShardEnv, type ShardEnv } from '../shard/layout.js';
import { encodePayload } from '../shard/record.js';
import { CACHE_INDEX_FILE, lastTxnId, writeCacheIndex, type TypeToIndex } from '../shard/cache-index.js';
import { loadCaches } from './load-caches.js';
import { CacheItems, HINT_OWNER_REFERENCES, HINTS_UNKNOWN, mayHold, ResourceCache, StoredEntry, type CacheEntry } from './watch-cache.js';
import type { EventType } from '../shard/protocol.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const body = (key: string, rv: number, extra = '') => {
  const [ns, name] = key.split('/');
  return `{"kind":"X","metadata":{"name":"${name}","namespace":"${ns}","resourceVersion":"${rv}"${extra}}}`;
};

/** A shard environment with these records, each its own write, in order. */
function store(records: Array<[EventType, string, string, string?]>): { env: ShardEnv; dir: string; put: (r: [EventType, string, string, string?]) => void } {
  const dir = mkdtempSync(join(tmpdir(), 'kubeshard-load-'));
  dirs.push(dir);
  const env = openShardEnv(dir);
  let rv = 0;
  const prev = new Map<string, number>();
  const put = ([type, gr, key, raw]: [EventType, string, string, string?]) => {
    rv++;
    const json = Buffer.from(raw ?? body(key, rv));
    env.root.transactionSync(() => {
      env.hist.putSync(rv, encodePayload({ rv, prev: prev.get(gr + key) ?? 0, ts: Date.now(), type, gr, key, value: encodeRev(type === 'DELETED' ? FLAG_TOMBSTONE : FLAG_LIVE, json) }));
      env.meta.putSync('maxRv', rv);
    });
    prev.set(gr + key, rv);
  };
  for (const r of records) put(r);
  return { env, dir, put };
}

interface Loaded {
  caches: Map<string, ResourceCache>;
  corrupt: Array<[string, string, number, string]>;
  from: string;
  refused: string;
}

function load(env: ShardEnv, dir: string): Loaded {
  const caches = new Map<string, ResourceCache>();
  const corrupt: Loaded['corrupt'] = [];
  const cacheOf = (gr: string) => {
    let c = caches.get(gr);
    if (!c) caches.set(gr, (c = new ResourceCache(gr, 100, 0)));
    return c;
  };
  const r = loadCaches(env, dir, cacheOf, (gr, key, rv, bytes) => corrupt.push([gr, key, rv, bytes.toString()]));
  return { caches, corrupt, from: r.from, refused: r.indexRefused };
}

/** What the coordinator writes at clean shutdown. */
function writeIndex(env: ShardEnv, dir: string, l: Loaded): void {
  const types: TypeToIndex[] = [];
  for (const [gr, c] of l.caches) {
    const live = [...c.list('')].sort((a, b) => (a.key < b.key ? -1 : 1)).map((e) => ({ key: e.key, rv: e.rv, hints: e instanceof StoredEntry ? e.hints : undefined }));
    types.push({ gr, live, corrupt: l.corrupt.filter(([g]) => g === gr).map(([, key, rv]) => ({ key, rv })) });
  }
  writeCacheIndex(dir, env.meta.get('maxRv') ?? 0, lastTxnId(env.root), types);
}

const view = (l: Loaded) =>
  Object.fromEntries(
    [...l.caches].map(([gr, c]) => [gr, { all: c.list('').map((e) => `${e.key}@${e.rv}`), size: c.items.size, json: c.list('').map((e) => e.json.toString()) }]),
  );

const RECORDS: Array<[EventType, string, string, string?]> = [
  ['ADDED', 'configmaps', 'a/x'],
  ['ADDED', 'configmaps', 'a-b/y'],
  ['ADDED', 'secrets', 'a/s'],
  ['ADDED', 'configmaps', 'a/w'],
  ['MODIFIED', 'configmaps', 'a/x'],
  ['ADDED', 'configmaps', 'b/gone'],
  ['DELETED', 'configmaps', 'b/gone'],
  ['ADDED', 'configmaps', 'a/bad', '{"kind":"X","metadata":{"name":"bad"'],
  ['ADDED', 'namespaces', '/a'],
  ['ADDED', 'configmaps', 'a/owned', body('a/owned', 10, ',"ownerReferences":[{"uid":"u1"}]')],
];

describe('loadCaches', () => {
  it('loads the newest revision of every live key from the store, in key order, bytes read from the store', async () => {
    const { env, dir } = store(RECORDS);
    const l = load(env, dir);
    expect(l.from).toBe('store');
    expect(l.refused).toBe('no index');
    const cm = l.caches.get('configmaps')!;
    expect(cm.list('').map((e) => `${e.key}@${e.rv}`)).toEqual(['a/owned@10', 'a/w@4', 'a/x@5', 'a-b/y@2']);
    expect(cm.list('a').map((e) => e.name)).toEqual(['owned', 'w', 'x']);
    expect(cm.items.get('a/x')!.json.toString()).toBe(body('a/x', 5));
    expect(cm.items.get('b/gone')).toBeUndefined();
    expect(cm.items.size).toBe(4);
    expect(l.caches.get('namespaces')!.items.get('/a')!.name).toBe('a');
    expect(l.corrupt).toEqual([['configmaps', 'a/bad', 8, '{"kind":"X","metadata":{"name":"bad"']]);
    // hints are found on first ask, and kept
    const owned = cm.items.get('a/owned') as StoredEntry;
    expect(owned.hints).toBe(HINTS_UNKNOWN);
    expect(mayHold(owned, HINT_OWNER_REFERENCES)).toBe(true);
    expect(mayHold(cm.items.get('a/w')!, HINT_OWNER_REFERENCES)).toBe(false);
    expect(owned.hints & HINT_OWNER_REFERENCES).toBe(HINT_OWNER_REFERENCES);
    await env.root.close();
  });

  it('loads the same caches from the cache index while the store is where the index was written', async () => {
    const { env, dir } = store(RECORDS);
    const cold = load(env, dir);
    mayHold(cold.caches.get('configmaps')!.items.get('a/owned')!, HINT_OWNER_REFERENCES);
    writeIndex(env, dir, cold);
    const warm = load(env, dir);
    expect(warm.from).toBe('index');
    expect(view(warm)).toEqual(view(cold));
    expect(warm.corrupt).toEqual(cold.corrupt);
    // the hints found before were persisted
    expect((warm.caches.get('configmaps')!.items.get('a/owned') as StoredEntry).hints & HINT_OWNER_REFERENCES).toBe(HINT_OWNER_REFERENCES);
    // (never asked: still unknown)
    expect((warm.caches.get('configmaps')!.items.get('a/w') as StoredEntry).hints).toBe(HINTS_UNKNOWN);
    await env.root.close();
  });

  it('refuses an index the store has moved on from (a write after it, as a kill -9 leaves it), and loads the store', async () => {
    const { env, dir, put } = store(RECORDS);
    writeIndex(env, dir, load(env, dir));
    put(['DELETED', 'configmaps', 'a/w']);
    put(['ADDED', 'configmaps', 'c/new']);
    const l = load(env, dir);
    expect(l.from).toBe('store');
    expect(l.refused).toMatch(/index at resource version 10, the store at 12/);
    expect(l.caches.get('configmaps')!.list('').map((e) => e.key)).toEqual(['a/owned', 'a/x', 'a-b/y', 'c/new']);
    await env.root.close();
  });

  it('refuses an index when the store changed without a new version (bytes rewritten in place)', async () => {
    const { env, dir } = store(RECORDS);
    writeIndex(env, dir, load(env, dir));
    const rec = env.hist.get(4)!;
    env.root.transactionSync(() => env.hist.putSync(4, rec));
    const l = load(env, dir);
    expect(l.from).toBe('store');
    expect(l.refused).toMatch(/storage transaction/);
    await env.root.close();
  });

  it('refuses a damaged, torn or foreign index', async () => {
    const { env, dir } = store(RECORDS);
    const cold = load(env, dir);
    writeIndex(env, dir, cold);
    const file = join(dir, CACHE_INDEX_FILE);
    const good = readFileSync(file);
    const flipped = Buffer.from(good);
    flipped[flipped.length - 3] ^= 0x20;
    writeFileSync(file, flipped);
    expect(load(env, dir).refused).toBe('index checksum mismatch');
    writeFileSync(file, good.subarray(0, good.length - 5));
    expect(load(env, dir).refused).toBe('index torn');
    const header = Buffer.from(good);
    header[17] ^= 1;
    writeFileSync(file, header);
    expect(load(env, dir).refused).toBe('index header damaged');
    writeFileSync(file, 'not an index at all, but long enough to hold a header of 48 bytes');
    const l = load(env, dir);
    expect(l.refused).toBe('index header damaged');
    expect(view(l)).toEqual(view(cold));
    await env.root.close();
  });
});

describe('loadCaches, an index out of order', () => {
  it('is refused: loaded keys are found by binary search', async () => {
    const { env, dir } = store(RECORDS);
    const cold = load(env, dir);
    const live = cold.caches.get('configmaps')!.list('').map((e) => ({ key: e.key, rv: e.rv }));
    writeCacheIndex(dir, env.meta.get('maxRv') ?? 0, lastTxnId(env.root), [{ gr: 'configmaps', live: live.reverse(), corrupt: [] }]);
    const l = load(env, dir);
    expect(l.from).toBe('store');
    expect(l.refused).toMatch(/^index keys of configmaps out of order/);
    expect(view(l)).toEqual(view(cold));
    await env.root.close();
  });
});

describe('CacheItems', () => {
  const e = (key: string, rv: number): CacheEntry => ({ key, ns: key.split('/')[0], name: key.split('/')[1], rv, json: Buffer.from('{}') });
  it('answers like a Map over the loaded objects and the changes since', () => {
    const items = new CacheItems();
    items.addLoaded('a', [e('a/1', 1), e('a/3', 3)]);
    items.addLoaded('b', [e('b/2', 2)]);
    expect(items.size).toBe(3);
    expect(items.get('a/3')!.rv).toBe(3);
    expect(items.get('a/2')).toBeUndefined();
    expect(items.has('c/1')).toBe(false);
    items.set('a/3', e('a/3', 5));
    items.set('a/2', e('a/2', 6));
    expect(items.size).toBe(4);
    expect(items.delete('a/1')).toBe(true);
    expect(items.delete('a/1')).toBe(false);
    expect(items.delete('zz/1')).toBe(false);
    expect(items.get('a/1')).toBeUndefined();
    expect(items.size).toBe(3);
    expect([...items.values()].map((x) => `${x.key}@${x.rv}`).sort()).toEqual(['a/2@6', 'a/3@5', 'b/2@2']);
    items.set('a/1', e('a/1', 7));
    expect(items.size).toBe(4);
    expect(items.get('a/1')!.rv).toBe(7);
    expect(items.delete('a/2')).toBe(true);
    expect([...items.keys()].sort()).toEqual(['a/1', 'a/3', 'b/2']);
  });
});
