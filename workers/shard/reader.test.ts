import { describe, it, expect, afterAll } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { openShardEnv, encodeRev, FLAG_LIVE, FLAG_TOMBSTONE, LAYOUT } from './layout.js';
import { encodePayload } from './record.js';
import { eventsBetween, getAt, listAt, objectsAt, overlayRecords, treeRecords, type CurrentState, type History, type RecordSource, type StoredObject } from './reader.js';
import type { EventType } from './protocol.js';
import type { ShardEnv } from './layout.js';
import { loadCaches } from '../watch/load-caches.js';
import { ResourceCache } from '../watch/watch-cache.js';

/** The start-up load (load-caches.ts, from the store): every live object, by type and key. */
function currentObjects(env: ShardEnv): StoredObject[] & Array<{ gr: string }> {
  const caches = new Map<string, ResourceCache>();
  loadCaches(env, '', (gr) => caches.get(gr) ?? caches.set(gr, new ResourceCache(gr, 0, 0)).get(gr)!, () => undefined);
  return [...caches.keys()].sort().flatMap((gr) => [...caches.get(gr)!.items.values()].sort((a, b) => (a.key < b.key ? -1 : 1)).map((e) => ({ gr, key: e.key, rv: e.rv, json: e.json })));
}

const dir = mkdtempSync(join(tmpdir(), 'reader-'));
const env = openShardEnv(dir);
afterAll(async () => {
  await env.root.close();
  rmSync(dir, { recursive: true, force: true });
});

const j = (s: string) => Buffer.from(JSON.stringify({ v: s }));
// ns a: a/k0..a/k5 created at 1..6; a/k1 modified at 7; a/k2 deleted at 8; ns b: b/x at 9;
// a secret at 10 (another type in the same shard); a/k2 created again at 11
type Row = [gr: string, key: string, rv: number, type: EventType, prev: number, v: string];
const rows: Row[] = [];
for (let i = 0; i < 6; i++) rows.push(['configmaps', `a/k${i}`, i + 1, 'ADDED', 0, `k${i}@${i + 1}`]);
rows.push(['configmaps', 'a/k1', 7, 'MODIFIED', 2, 'k1@7'], ['configmaps', 'a/k2', 8, 'DELETED', 3, 'k2@8'], ['configmaps', 'b/x', 9, 'ADDED', 0, 'x@9']);
rows.push(['secrets', 'a/s', 10, 'ADDED', 0, 's'], ['configmaps', 'a/k2', 11, 'ADDED', 0, 'k2@11']);
env.root.transactionSync(() => {
  for (const [gr, key, rv, type, prev, v] of rows) {
    env.hist.putSync(rv, encodePayload({ rv, prev, ts: 0, type, gr, key, value: encodeRev(type === 'DELETED' ? FLAG_TOMBSTONE : FLAG_LIVE, j(v)) }));
  }
});

/** The current state at `at` as the front's cache would hold it: each key's newest live revision. */
function stateAt(gr: string, at: number): CurrentState {
  const m = new Map<string, StoredObject>();
  for (const [g, key, rv, type, , v] of rows) {
    if (g !== gr || rv > at) continue;
    if (type === 'DELETED') m.delete(key);
    else m.set(key, { key, rv, json: j(v) });
  }
  const sorted = [...m.values()].sort((a, b) => (a.key < b.key ? -1 : 1));
  return {
    at,
    get: (k) => m.get(k),
    range: (ns, from) => sorted.filter((o) => o.key >= from && (ns === '' || o.key.startsWith(ns + '/'))),
  };
}

const keys = (l: Array<{ key: string }>) => l.map((o) => o.key);
const values = (l: Array<{ json: Buffer }>) => l.map((o) => JSON.parse(o.json.toString()).v);

// The records as a read sees them: the B-tree alone, or the B-tree up to 6 and the records
// after it held apart (those the front keeps until the B-tree has them).
const tree = treeRecords(env);
const split: RecordSource = overlayRecords(env, 6, [...env.hist.getRange({ start: 7 })].map(({ key, value }) => ({ key, value: Buffer.from(value) })));
const sources: Array<[string, RecordSource]> = [
  ['the B-tree', tree],
  ['the B-tree up to 6, newer records held apart', split],
];

describe.each(sources)('history reads (etcd range at a revision, from the current state and the records after): %s', (_, src) => {
  // the same answers whatever version the current state is at: before, at or after the one asked
  for (const at of [6, 9, 11]) {
    const h: History = { src, gr: 'configmaps', cur: stateAt('configmaps', at) };
    it(`the whole namespace at a revision (current state at ${at})`, () => {
      expect(values(listAt(h, 9, 'a'))).toEqual(['k0@1', 'k1@7', 'k3@4', 'k4@5', 'k5@6']);
      expect(values(listAt(h, 6, 'a'))).toEqual(['k0@1', 'k1@2', 'k2@3', 'k3@4', 'k4@5', 'k5@6']);
      expect(values(listAt(h, 11, 'a'))).toEqual(['k0@1', 'k1@7', 'k2@11', 'k3@4', 'k4@5', 'k5@6']);
      expect(keys(listAt(h, 9))).toEqual(['a/k0', 'a/k1', 'a/k3', 'a/k4', 'a/k5', 'b/x']);
      expect(keys(listAt(h, 8))).toEqual(['a/k0', 'a/k1', 'a/k3', 'a/k4', 'a/k5']);
    });
    it(`one object at a revision (current state at ${at})`, () => {
      expect(values([getAt(h, 'a/k1', 6)!])).toEqual(['k1@2']);
      expect(values([getAt(h, 'a/k1', 7)!])).toEqual(['k1@7']);
      expect(getAt(h, 'a/k2', 9)).toBeUndefined();
      expect(values([getAt(h, 'a/k2', 7)!])).toEqual(['k2@3']);
      expect(getAt(h, 'b/x', 8)).toBeUndefined();
      expect(getAt(h, 'a/s', 10)).toBeUndefined();
    });
    it(`a chunk from a start key with a limit is the same slice the full read gives (current state at ${at})`, () => {
      const all = listAt(h, 9, 'a');
      for (let from = 0; from < all.length; from++) {
        for (let limit = 1; limit <= all.length; limit++) {
          const start = from === 0 ? '' : all[from - 1].key + '\u0000';
          const chunk = listAt(h, 9, 'a', start, limit);
          expect(keys(chunk)).toEqual(keys(all.slice(from, from + limit)));
          expect(values(chunk)).toEqual(values(all.slice(from, from + limit)));
          if (from + limit < all.length) expect(listAt(h, 9, 'a', all[from + limit].key).length).toBe(all.length - from - limit);
        }
      }
      expect(listAt(h, 6, 'a', 'a/k2').length).toBe(4);
      expect(listAt(h, 9, 'a', 'a/k2').length).toBe(3);
    });
  }
  it('stops reading where the caller stops', () => {
    const h: History = { src, gr: 'configmaps', cur: stateAt('configmaps', 11) };
    const it = objectsAt(h, 9, 'a', 'a/k3');
    expect(it.next().value?.key).toBe('a/k3');
    it.return(undefined);
    expect(listAt(h, 9, 'a', 'a/z')).toEqual([]);
    expect(listAt(h, 9, 'b', 'b/y')).toEqual([]);
  });
  it('events between two versions, with the previous state when asked', () => {
    const evs = eventsBetween(src, 'configmaps', 6, 11, true);
    expect(evs.map((e) => [e.key, e.rv, e.type, e.prevRv])).toEqual([
      ['a/k1', 7, 'MODIFIED', 2],
      ['a/k2', 8, 'DELETED', 3],
      ['b/x', 9, 'ADDED', 0],
      ['a/k2', 11, 'ADDED', 0],
    ]);
    expect(values(evs)).toEqual(['k1@7', 'k2@8', 'x@9', 'k2@11']);
    expect(evs.map((e) => e.prevJson && JSON.parse(e.prevJson.toString()).v)).toEqual(['k1@2', 'k2@3', undefined, undefined]);
  });
  it('the start-up load: each live key at its newest revision, by type and key', () => {
    expect(currentObjects(env).map((o) => [o.gr, o.key, o.rv])).toEqual([
      ['configmaps', 'a/k0', 1],
      ['configmaps', 'a/k1', 7],
      ['configmaps', 'a/k2', 11],
      ['configmaps', 'a/k3', 4],
      ['configmaps', 'a/k4', 5],
      ['configmaps', 'a/k5', 6],
      ['configmaps', 'b/x', 9],
      ['secrets', 'a/s', 10],
    ]);
  });
});

describe('a store of the first layout', () => {
  it('is rewritten in this one when opened for writing, history included', async () => {
    const old = mkdtempSync(join(tmpdir(), 'reader-v1-'));
    try {
      // revs: [gr, key, rv] -> flag + JSON; log: rv -> event (compacted below 3: k0's log entry is gone)
      const root = open({ path: old, maxDbs: 8, compression: false });
      const revs = root.openDB<Buffer, [string, string, number]>({ name: 'revs', encoding: 'binary' });
      const log = root.openDB<any, number>({ name: 'log' });
      const meta = root.openDB<number, string>({ name: 'meta' });
      root.transactionSync(() => {
        revs.putSync(['configmaps', 'a/k0', 1], encodeRev(FLAG_LIVE, j('k0@1')));
        revs.putSync(['configmaps', 'a/k1', 3], encodeRev(FLAG_LIVE, j('k1@3')));
        revs.putSync(['configmaps', 'a/k1', 4], encodeRev(FLAG_LIVE, j('k1@4')));
        revs.putSync(['configmaps', 'a/k2', 5], encodeRev(FLAG_TOMBSTONE, j('k2@5')));
        log.putSync(3, { g: 'configmaps', k: 'a/k1', t: 'ADDED', p: 0, ts: 1 });
        log.putSync(4, { g: 'configmaps', k: 'a/k1', t: 'MODIFIED', p: 3, ts: 2 });
        log.putSync(5, { g: 'configmaps', k: 'a/k2', t: 'DELETED', p: 2, ts: 3 });
        meta.putSync('maxRv', 5);
        meta.putSync('compactedRv', 2);
      });
      await root.close();
      const upgraded = openShardEnv(old);
      try {
        expect(upgraded.meta.get('layout')).toBe(LAYOUT);
        expect(currentObjects(upgraded).map((o) => [o.key, o.rv])).toEqual([
          ['a/k0', 1],
          ['a/k1', 4],
        ]);
        const evs = eventsBetween(treeRecords(upgraded), 'configmaps', 2, 5, true);
        expect(evs.map((e) => [e.key, e.rv, e.type, e.prevRv])).toEqual([
          ['a/k1', 3, 'ADDED', 0],
          ['a/k1', 4, 'MODIFIED', 3],
          ['a/k2', 5, 'DELETED', 2],
        ]);
        expect(JSON.parse(evs[1].prevJson!.toString()).v).toBe('k1@3');
      } finally {
        await upgraded.root.close();
      }
    } finally {
      rmSync(old, { recursive: true, force: true });
    }
  });
});
