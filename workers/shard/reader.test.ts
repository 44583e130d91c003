import { describe, it, expect, afterAll } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openShardEnv, encodeRev, FLAG_LIVE, FLAG_TOMBSTONE } from './layout.js';
import { countAt, listAt, objectsAt } from './reader.js';

const dir = mkdtempSync(join(tmpdir(), 'reader-'));
const env = openShardEnv(dir);
afterAll(async () => {
  await env.root.close();
  rmSync(dir, { recursive: true, force: true });
});

const j = (s: string) => Buffer.from(JSON.stringify({ v: s }));
// ns a: a/k0..a/k5 created at 1..6; a/k1 modified at 7; a/k2 deleted at 8; ns b: b/x at 9
const revs: Array<[string, number, number, string]> = [];
for (let i = 0; i < 6; i++) revs.push([`a/k${i}`, i + 1, FLAG_LIVE, `k${i}@${i + 1}`]);
revs.push(['a/k1', 7, FLAG_LIVE, 'k1@7'], ['a/k2', 8, FLAG_TOMBSTONE, 'k2@8'], ['b/x', 9, FLAG_LIVE, 'x@9']);
env.revs.transactionSync(() => {
  for (const [k, rv, flag, v] of revs) env.revs.putSync(['configmaps', k, rv], encodeRev(flag, j(v)));
  env.revs.putSync(['secrets', 'a/s', 1], encodeRev(FLAG_LIVE, j('s')));
});

const keys = (l: Array<{ key: string }>) => l.map((o) => o.key);
const values = (l: Array<{ json: Buffer }>) => l.map((o) => JSON.parse(o.json.toString()).v);

describe('history reads (etcd range at a revision)', () => {
  it('the whole prefix at a revision: tombstones gone, each key at its newest revision not after rv', () => {
    expect(values(listAt(env, 'configmaps', 9, 'a/'))).toEqual(['k0@1', 'k1@7', 'k3@4', 'k4@5', 'k5@6']);
    expect(values(listAt(env, 'configmaps', 6, 'a/'))).toEqual(['k0@1', 'k1@2', 'k2@3', 'k3@4', 'k4@5', 'k5@6']);
    expect(keys(listAt(env, 'configmaps', 9))).toEqual(['a/k0', 'a/k1', 'a/k3', 'a/k4', 'a/k5', 'b/x']);
  });
  it('a chunk from a start key with a limit is the same slice the full read gives', () => {
    const all = listAt(env, 'configmaps', 9, 'a/');
    for (let from = 0; from < all.length; from++) {
      for (let limit = 1; limit <= all.length; limit++) {
        const start = from === 0 ? '' : all[from - 1].key + '\u0000';
        const chunk = listAt(env, 'configmaps', 9, 'a/', start, limit);
        expect(keys(chunk)).toEqual(keys(all.slice(from, from + limit)));
        expect(values(chunk)).toEqual(values(all.slice(from, from + limit)));
        if (from + limit < all.length) {
          expect(countAt(env, 'configmaps', 9, 'a/', all[from + limit].key)).toBe(all.length - from - limit);
        }
      }
    }
    expect(countAt(env, 'configmaps', 6, 'a/', 'a/k2')).toBe(4);
    expect(countAt(env, 'configmaps', 9, 'a/', 'a/k2')).toBe(3);
  });
  it('stops reading where the caller stops', () => {
    const it = objectsAt(env, 'configmaps', 9, 'a/', 'a/k3');
    expect(it.next().value?.key).toBe('a/k3');
    it.return(undefined);
    expect(listAt(env, 'configmaps', 9, 'a/', 'a/z')).toEqual([]);
    expect(listAt(env, 'configmaps', 9, 'a/', 'b/')).toEqual([]);
  });
});
