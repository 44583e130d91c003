// The conformance suite of the storage interface (src/storage/interface.ts), after kube's
// pkg/storage/testing store_tests.go and watcher_tests.go: every backend runs it, from a
// test file beside it (src/storage/lmdb/lmdb-storage.test.ts; the etcd3 backend's).
// Each test starts a fresh backend under the cache layer, as the server runs it, with a
// recording subscriber beside the caches.
//
// Thread ownership: vitest's thread, which is the backend's.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Cacher } from './cacher.js';
import { CompactedError, Expect, WriteRejected, type ChangeSink, type ChangeType, type Committed, type Storage, type StoredObject } from './interface.js';

/** What a backend's test file hands the suite for each test. */
export interface ConformanceBackend {
  /** a backend not started yet, over empty storage of its own (a temp dir, an etcd key prefix) */
  storage: Storage;
  /**
   * Compacts its history up to its newest committed version (LMDB: every record older than
   * now; etcd: Compact at the current revision), and resolves once compactedRv shows it.
   */
  compact(): Promise<void>;
  /**
   * A new backend instance over the same storage, not started (the suite has closed the
   * previous one): a restart. Without it, the restart test checks nothing.
   */
  reopen?(): Storage;
  /** after the storage is closed: removes what the test left (the temp dir, the keys) */
  cleanup?(): Promise<void>;
}

interface Seen {
  type: ChangeType;
  gr: string;
  key: string;
  rv: number;
  bytes: Buffer;
  obj: any;
}

/** Records the feed: each change, and the number of batch ends seen after it. */
class Recorder implements ChangeSink {
  changes: Seen[] = [];
  ends = 0;
  /** per change index: whether a batch end followed it */
  endedAt = new Set<number>();

  change(type: ChangeType, gr: string, key: string, rv: number, bytes: Buffer, obj: any): void {
    this.changes.push({ type, gr, key, rv, bytes, obj });
  }

  loads = 0;

  load(): void {
    this.loads++;
  }

  end(): void {
    this.ends++;
    if (this.changes.length > 0) this.endedAt.add(this.changes.length - 1);
  }

  /** whether the change at rv was seen, and a batch end after it */
  sawCommitted(rv: number): boolean {
    const i = this.changes.findIndex((c) => c.rv === rv);
    if (i < 0) return false;
    for (const j of this.endedAt) if (j >= i) return true;
    return false;
  }
}

const GR = 'configmaps';

function configMap(ns: string, name: string, data: Record<string, string>): Record<string, unknown> {
  return { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace: ns }, data };
}

const parse = (b: Buffer): any => JSON.parse(b.toString('utf8'));
const keysOf = (objs: Iterable<StoredObject>): string[] => [...objs].map((o) => o.key);

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('the write was not refused');
}

async function failure(p: Promise<unknown>): Promise<string> {
  const e = await rejection(p);
  expect(e).toBeInstanceOf(WriteRejected);
  return (e as WriteRejected).failure;
}

function throwsCompacted(fn: () => unknown): Promise<void> {
  return (async () => {
    let err: unknown;
    try {
      await fn();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CompactedError);
  })();
}

/** Registers the suite for one backend; start() makes a fresh one for each test. */
export function storageConformance(name: string, start: () => Promise<ConformanceBackend>): void {
  describe(`storage conformance: ${name}`, () => {
    let backend: ConformanceBackend;
    let storage: Storage;
    let cacher: Cacher;
    let rec: Recorder;

    beforeEach(async () => {
      backend = await start();
      storage = backend.storage;
      rec = new Recorder();
      storage.subscribe(rec);
      cacher = new Cacher(storage, { watchCacheCapacity: 100, watchCacheSizes: {} });
      await cacher.start();
    });

    afterEach(async () => {
      await cacher.close();
      await backend.cleanup?.();
    });

    const create = (ns: string, n: string, data: Record<string, string> = { v: '1' }): Promise<Committed> => {
      const obj = configMap(ns, n, data);
      return storage.write({ type: 'ADDED', gr: GR, key: `${ns}/${n}`, expect: Expect.Absent, obj }, obj);
    };
    const update = (ns: string, n: string, expect: number, data: Record<string, string>): Promise<Committed> => {
      const obj = configMap(ns, n, data);
      return storage.write({ type: 'MODIFIED', gr: GR, key: `${ns}/${n}`, expect, obj }, obj);
    };
    const remove = (ns: string, n: string, expect: number): Promise<Committed> => {
      const obj = configMap(ns, n, {});
      return storage.write({ type: 'DELETED', gr: GR, key: `${ns}/${n}`, expect, obj }, obj);
    };

    it('is healthy once started', () => {
      expect(storage.storageProblem()).toBe('');
    });

    it('creates a key once: a second create is refused as exists', async () => {
      const c = await create('ns1', 'a');
      expect(c.rv).toBeGreaterThan(0);
      const stored = parse(c.json);
      expect(stored.metadata.resourceVersion).toBe(String(c.rv));
      expect(stored.data).toEqual({ v: '1' });
      expect(await failure(create('ns1', 'a', { v: '2' }))).toBe('exists');
      // the refused write changed nothing
      expect(parse((await storage.getAt(GR, 'ns1/a', storage.freshRv(GR)))!.json).data).toEqual({ v: '1' });
    });

    it('updates at the version held; a stale version is a conflict, a missing key not found', async () => {
      const c = await create('ns1', 'a');
      const u = await update('ns1', 'a', c.rv, { v: '2' });
      expect(u.rv).toBeGreaterThan(c.rv);
      expect(parse(u.json).metadata.resourceVersion).toBe(String(u.rv));
      expect(await failure(update('ns1', 'a', c.rv, { v: '3' }))).toBe('conflict');
      // any version
      const any = await update('ns1', 'a', Expect.Any, { v: '4' });
      expect(any.rv).toBeGreaterThan(u.rv);
      expect(await failure(update('ns1', 'missing', Expect.Any, { v: '1' }))).toBe('notfound');
      expect(await failure(update('ns1', 'missing', any.rv, { v: '1' }))).toBe('notfound');
    });

    it('deletes at the version held; a stale version is a conflict, a missing key not found', async () => {
      const c = await create('ns1', 'a');
      const u = await update('ns1', 'a', c.rv, { v: '2' });
      expect(await failure(remove('ns1', 'a', c.rv))).toBe('conflict');
      const d = await remove('ns1', 'a', u.rv);
      expect(d.rv).toBeGreaterThan(u.rv);
      expect(parse(d.json).metadata.resourceVersion).toBe(String(d.rv));
      expect(await storage.getAt(GR, 'ns1/a', storage.freshRv(GR))).toBeUndefined();
      expect(await failure(remove('ns1', 'a', Expect.Any))).toBe('notfound');
      expect(await failure(remove('ns1', 'never', d.rv))).toBe('notfound');
      // the key can be created again
      expect((await create('ns1', 'a')).rv).toBeGreaterThan(d.rv);
    });

    it('reads one object at a past version', async () => {
      const c = await create('ns1', 'a', { v: '1' });
      const u = await update('ns1', 'a', c.rv, { v: '2' });
      const other = await create('ns1', 'b');
      const d = await remove('ns1', 'a', u.rv);
      expect(storage.freshRv(GR)).toBeGreaterThanOrEqual(d.rv);
      expect(await storage.getAt(GR, 'ns1/a', c.rv - 1)).toBeUndefined();
      const atC = (await storage.getAt(GR, 'ns1/a', c.rv))!;
      expect(atC.rv).toBe(c.rv);
      expect(parse(atC.json).data).toEqual({ v: '1' });
      // between two changes of the key: the earlier one
      const atOther = (await storage.getAt(GR, 'ns1/a', other.rv))!;
      expect(atOther.rv).toBe(u.rv);
      expect(parse(atOther.json).data).toEqual({ v: '2' });
      expect(parse(atOther.json).metadata.resourceVersion).toBe(String(u.rv));
      expect(await storage.getAt(GR, 'ns1/a', d.rv)).toBeUndefined();
    });

    it('lists a namespace at a version, from a start key (continue)', async () => {
      const a = await create('ns1', 'a');
      const b = await create('ns1', 'b', { v: '1' });
      await create('ns1', 'c');
      const d = await create('ns2', 'd');
      const at = d.rv;
      expect(keysOf(await storage.rangeAt(GR, at, '', ''))).toEqual(['ns1/a', 'ns1/b', 'ns1/c', 'ns2/d']);
      expect(keysOf(await storage.rangeAt(GR, at, 'ns1', ''))).toEqual(['ns1/a', 'ns1/b', 'ns1/c']);
      // continue after ns1/a: the next key on
      expect(keysOf(await storage.rangeAt(GR, at, 'ns1', 'ns1/a\u0000'))).toEqual(['ns1/b', 'ns1/c']);
      expect(keysOf(await storage.rangeAt(GR, at, '', 'ns1/c'))).toEqual(['ns1/c', 'ns2/d']);
      // later changes do not show at the earlier version
      const b2 = await update('ns1', 'b', b.rv, { v: '2' });
      await remove('ns1', 'c', Expect.Any);
      await create('ns1', 'e');
      const before = [...(await storage.rangeAt(GR, at, 'ns1', 'ns1/b'))];
      expect(before.map((o) => o.key)).toEqual(['ns1/b', 'ns1/c']);
      expect(before[0].rv).toBe(b.rv);
      expect(parse(before[0].json).data).toEqual({ v: '1' });
      const now = [...(await storage.rangeAt(GR, storage.freshRv(GR), 'ns1', 'ns1/b'))];
      expect(now.map((o) => o.key)).toEqual(['ns1/b', 'ns1/e']);
      expect(now[0].rv).toBe(b2.rv);
      // at the first create: only it
      expect(keysOf(await storage.rangeAt(GR, a.rv, '', ''))).toEqual(['ns1/a']);
    });

    it('gives the events since a version in order, with previous states when asked', async () => {
      const c = await create('ns1', 'a', { v: '1' });
      const u = await update('ns1', 'a', c.rv, { v: '2' });
      const b = await create('ns1', 'b');
      const d = await remove('ns1', 'a', u.rv);
      const evs = await storage.eventsSince(GR, c.rv - 1, d.rv, true);
      expect(evs.map((e) => [e.type, e.key, e.rv])).toEqual([
        ['ADDED', 'ns1/a', c.rv],
        ['MODIFIED', 'ns1/a', u.rv],
        ['ADDED', 'ns1/b', b.rv],
        ['DELETED', 'ns1/a', d.rv],
      ]);
      expect(parse(evs[1].json).data).toEqual({ v: '2' });
      expect(evs[1].prevRv).toBe(c.rv);
      expect(parse(evs[1].prevJson!).data).toEqual({ v: '1' });
      expect(evs[3].prevRv).toBe(u.rv);
      expect(parse(evs[3].json).metadata.resourceVersion).toBe(String(d.rv));
      // a window of them
      const mid = await storage.eventsSince(GR, c.rv, b.rv, false);
      expect(mid.map((e) => e.rv)).toEqual([u.rv, b.rv]);
      expect(mid[0].prevJson).toBeUndefined();
      // another type's changes are not among them
      const lease = { kind: 'Lease', apiVersion: 'coordination.k8s.io/v1', metadata: { name: 'l', namespace: 'ns1' } };
      const l = await storage.write({ type: 'ADDED', gr: 'leases.coordination.k8s.io', key: 'ns1/l', expect: Expect.Absent, obj: lease }, lease);
      expect((await storage.eventsSince(GR, d.rv, Math.max(l.rv, storage.freshRv(GR)), false)).length).toBe(0);
    });

    it('refuses reads below the compacted version', async () => {
      const c = await create('ns1', 'a', { v: '1' });
      const u = await update('ns1', 'a', c.rv, { v: '2' });
      const u2 = await update('ns1', 'a', u.rv, { v: '3' });
      // (compaction takes what is older than now)
      await new Promise((r) => setTimeout(r, 20));
      await backend.compact();
      const compacted = storage.compactedRv(GR);
      expect(compacted).toBeGreaterThan(c.rv);
      await throwsCompacted(() => storage.getAt(GR, 'ns1/a', c.rv));
      await throwsCompacted(() => storage.rangeAt(GR, c.rv, 'ns1', ''));
      await throwsCompacted(() => storage.eventsSince(GR, c.rv, u2.rv, false));
      // at the compacted version and after: still read
      const at = Math.max(compacted, u2.rv);
      expect(parse((await storage.getAt(GR, 'ns1/a', at))!.json).data).toEqual({ v: '3' });
      expect(keysOf(await storage.rangeAt(GR, at, 'ns1', ''))).toEqual(['ns1/a']);
      expect(await storage.eventsSince(GR, at, at, false)).toEqual([]);
    });

    it('feeds each committed change, in version order, before the write resolves', async () => {
      const seenWhenResolved: boolean[] = [];
      const track = (p: Promise<Committed>) => p.then((c) => (seenWhenResolved.push(rec.sawCommitted(c.rv)), c));
      // three writes in one turn (one batch where the backend batches), then one more. The
      // contract orders the feed by version, and each write's change before its answer; it
      // does not order writes sent together by the order they were sent (etcd's concurrent
      // txns commit in any order, as kube-apiserver's do): the versions decide.
      const names = ['a', 'b', 'c'];
      const objs = names.map((n) => configMap('ns1', n, { v: n }));
      const written = await Promise.all(objs.map((obj, i) => track(storage.write({ type: 'ADDED', gr: GR, key: `ns1/${names[i]}`, expect: Expect.Absent, obj }, obj))));
      const last = await track(update('ns1', 'a', written[0].rv, { v: 'a2' }));
      expect(seenWhenResolved).toEqual([true, true, true, true]);
      expect(new Set(written.map((w) => w.rv)).size).toBe(3);
      const mine = rec.changes.filter((ch) => ch.gr === GR);
      // every change once, in version order, the later update after the three creates
      const byVersion = names.map((n, i) => ({ rv: written[i].rv, type: 'ADDED', key: `ns1/${n}` })).sort((x, y) => x.rv - y.rv);
      byVersion.push({ rv: last.rv, type: 'MODIFIED', key: 'ns1/a' });
      expect(mine.map((ch) => ({ rv: ch.rv, type: ch.type, key: ch.key }))).toEqual(byVersion);
      for (let i = 1; i < rec.changes.length; i++) expect(rec.changes[i].rv).toBeGreaterThan(rec.changes[i - 1].rv);
      for (const ch of mine) expect(parse(ch.bytes).metadata.resourceVersion).toBe(String(ch.rv));
      // the writer's own object, its version set before the subscribers saw it
      expect(mine.find((ch) => ch.rv === written[0].rv)!.obj).toBe(objs[0]);
      expect((objs[0].metadata as any).resourceVersion).toBe(String(written[0].rv));
      // the cache layer took them too
      expect(cacher.cache(GR).items.get('ns1/a')?.rv).toBe(last.rv);
      expect(storage.freshRv(GR)).toBeGreaterThanOrEqual(last.rv);
      expect(storage.committedRv(GR)).toBeGreaterThanOrEqual(last.rv);
      expect(storage.currentRv(GR)).toBeGreaterThanOrEqual(storage.committedRv(GR));
    });

    it('starts again with the state it had: the objects with their versions, their history, then the feed', async () => {
      if (!backend.reopen) return;
      const a = await create('ns1', 'a', { v: '1' });
      const b = await create('ns2', 'b');
      const c = await create('ns1', 'c');
      const a2 = await update('ns1', 'a', a.rv, { v: '2' });
      const gone = await remove('ns1', 'c', c.rv);
      await cacher.close();
      storage = backend.reopen();
      rec = new Recorder();
      storage.subscribe(rec);
      cacher = new Cacher(storage, { watchCacheCapacity: 100, watchCacheSizes: {} });
      await cacher.start();
      const cache = cacher.cache(GR);
      expect([...cache.items.values()].map((e) => [e.key, e.rv]).sort()).toEqual([
        ['ns1/a', a2.rv],
        ['ns2/b', b.rv],
      ]);
      expect(parse(cache.items.get('ns1/a')!.json).data).toEqual({ v: '2' });
      expect(cache.list('ns1').map((e) => e.key)).toEqual(['ns1/a']);
      expect(storage.freshRv(GR)).toBeGreaterThanOrEqual(gone.rv);
      expect(storage.committedRv(GR)).toBeGreaterThanOrEqual(gone.rv);
      // no watch event for what was there already
      expect(rec.changes).toEqual([]);
      // history from before the restart
      expect((await storage.eventsSince(GR, a.rv - 1, gone.rv, false)).map((e) => e.rv)).toEqual([a.rv, b.rv, c.rv, a2.rv, gone.rv]);
      expect(parse((await storage.getAt(GR, 'ns1/a', c.rv))!.json).data).toEqual({ v: '1' });
      // the ring holds every event after the state it started from
      expect(cache.eventsAfter(storage.freshRv(GR))).toEqual([]);
      // and writes go on above every version before
      expect(await failure(create('ns1', 'a'))).toBe('exists');
      const a3 = await update('ns1', 'a', a2.rv, { v: '3' });
      expect(a3.rv).toBeGreaterThan(gone.rv);
      expect(rec.sawCommitted(a3.rv)).toBe(true);
      expect(cache.eventsAfter(gone.rv)!.map((e) => e.rv)).toEqual([a3.rv]);
    });

    it('waits until fresh: at once when it is, until the change arrives, or until its timeout', async () => {
      const c = await create('ns1', 'a');
      expect(await storage.waitFresh(GR, c.rv, 1000)).toBe(true);
      const waiting = storage.waitFresh(GR, storage.freshRv(GR) + 1, 10_000);
      const next = await create('ns1', 'b');
      expect(await waiting).toBe(true);
      expect(storage.freshRv(GR)).toBeGreaterThanOrEqual(next.rv);
      // a version nobody will write in time
      expect(await storage.waitFresh(GR, storage.currentRv(GR) + 1000, 200)).toBe(false);
    });
  });
}
