import { describe, it, expect } from 'vitest';
import { LiveEntry, ResourceCache, selectable } from './watch-cache.js';
import { Watcher } from './watcher-group.js';
import { memorySink } from './memory-sink.js';

const sink = memorySink;

const obj = (ns: string, name: string, labels: Record<string, string> = {}) =>
  Buffer.from(JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace: ns, labels } }));

describe('ResourceCache', () => {
  it('keeps a sorted view and namespace slices', () => {
    const c = new ResourceCache('configmaps', 100, 0);
    c.apply('ADDED', 'b/x', 1, obj('b', 'x'));
    c.apply('ADDED', 'a/y', 2, obj('a', 'y'));
    c.apply('ADDED', 'a/b', 3, obj('a', 'b'));
    expect(c.sorted().map((e) => e.key)).toEqual(['a/b', 'a/y', 'b/x']);
    expect(c.list('a').map((e) => e.key)).toEqual(['a/b', 'a/y']);
    c.apply('MODIFIED', 'a/y', 4, obj('a', 'y'));
    expect(c.list('a')[1].rv).toBe(4);
    c.apply('DELETED', 'a/b', 5, obj('a', 'b'));
    expect(c.list('a').map((e) => e.key)).toEqual(['a/y']);
  });
  it("a commit's records share one buffer; once a quarter of them are current, those get bytes of their own", () => {
    const c = new ResourceCache('configmaps', 10, 0);
    // 64 objects in one 64 KiB buffer, as a shard's commit brings them
    const texts = Array.from({ length: 64 }, (_, i) => obj('s', `o${i}`, { i: String(i) }).toString().padEnd(1024));
    const slab = Buffer.alloc(64 * 1024);
    let rv = 0;
    texts.forEach((t, i) => {
      slab.write(t, i * 1024);
      c.apply('ADDED', `s/o${i}`, ++rv, slab.subarray(i * 1024, (i + 1) * 1024));
    });
    const entries = c.list('s') as LiveEntry[];
    expect(new Set(entries.map((e) => e.slab)).size).toBe(1);
    const shared = entries[0].slab!;
    expect(shared.live).toBe(64);
    // 47 of them change (their new bytes arrive elsewhere): 17 still view the buffer
    for (let i = 0; i < 47; i++) c.apply('MODIFIED', `s/o${i}`, ++rv, Buffer.from(texts[i]));
    expect(shared.live).toBe(17);
    expect(c.list('s').filter((e) => e.json.buffer === slab.buffer).length).toBe(17);
    // one more leaves a quarter (16 of 64): they are copied out, and read the same
    c.apply('DELETED', 's/o47', ++rv, Buffer.from(texts[47]));
    const left = c.list('s');
    expect(left.length).toBe(63);
    expect(left.filter((e) => e.json.buffer === slab.buffer).length).toBe(0);
    for (const e of left) expect(e.json.toString()).toBe(texts[Number(e.name.slice(1))]);
    expect(shared.live).toBe(0);
  });
  it('a kind whose selectable fields are name and namespace keeps only the labels; its fields follow from the key', () => {
    const c = new ResourceCache('configmaps', 10, 0);
    const o = JSON.parse(obj('ns1', 'a', { app: 'x' }).toString());
    c.apply('ADDED', 'ns1/a', 1, obj('ns1', 'a', { app: 'x' }), o);
    const e = c.list('ns1')[0];
    expect(e.sel).toBeUndefined();
    expect(selectable(e, 'configmaps')).toEqual({ labels: { app: 'x' }, fields: { 'metadata.name': 'a', 'metadata.namespace': 'ns1' } });
    // no object at hand at the commit (another thread's write): the bytes are read once
    c.apply('ADDED', 'ns1/b', 2, obj('ns1', 'b', { app: 'y' }));
    const b = c.list('ns1')[1];
    expect(selectable(b, 'configmaps').labels).toEqual({ app: 'y' });
    expect(b.sel).toBeDefined();
    // a kind with fields of its own reads them at the commit
    const p = new ResourceCache('pods', 10, 0);
    const pod = { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'p', namespace: 'n' }, spec: { nodeName: 'node-1' }, status: { phase: 'Running' } };
    p.apply('ADDED', 'n/p', 3, Buffer.from(JSON.stringify(pod)), pod);
    expect(p.list('n')[0].sel!.fields['spec.nodeName']).toBe('node-1');
  });
  it('a namespace written and never read keeps a bounded change log, and reads stay right', () => {
    const c = new ResourceCache('configmaps', 10, 0);
    let rv = 0;
    for (let i = 0; i < 8; i++) c.apply('ADDED', `w/o${i}`, ++rv, obj('w', `o${i}`));
    // 100,000 updates of 8 objects, no read between them: the log is merged as it grows
    for (let n = 0; n < 100_000; n++) c.apply('MODIFIED', `w/o${n % 8}`, ++rv, obj('w', `o${n % 8}`));
    const idx = (c as unknown as { byNs: Map<string, { changeKeys: string[] }> }).byNs.get('w')!;
    expect(idx.changeKeys.length).toBeLessThanOrEqual(1024);
    c.apply('DELETED', 'w/o3', ++rv, obj('w', 'o3'));
    c.apply('ADDED', 'w/a', ++rv, obj('w', 'a'));
    expect(c.list('w').map((e) => e.key)).toEqual(['w/a', 'w/o0', 'w/o1', 'w/o2', 'w/o4', 'w/o5', 'w/o6', 'w/o7']);
    expect(c.list('w').find((e) => e.key === 'w/o7')!.rv).toBe(100_008);
  });
  it('creates alone are not merged on the write path (no sort per thousands of creates); the next read merges them in order', () => {
    const c = new ResourceCache('configmaps', 10, 0);
    const names = Array.from({ length: 5000 }, (_, i) => `n${(i * 7919) % 5000}`);
    let rv = 0;
    for (const n of names) c.apply('ADDED', `w/${n}`, ++rv, obj('w', n));
    const idx = (c as unknown as { byNs: Map<string, { changeKeys: string[]; base: unknown[] }> }).byNs.get('w')!;
    expect(idx.base.length).toBe(0);
    expect(idx.changeKeys.length).toBe(5000);
    expect(c.list('w').map((e) => e.key)).toEqual(names.map((n) => `w/${n}`).sort());
  });
  it('answers events after a version from the ring, and null once the ring has moved past it', () => {
    const c = new ResourceCache('configmaps', 2, 10);
    c.apply('ADDED', 'a/1', 11, obj('a', '1'));
    expect(c.eventsAfter(10)!.map((e) => e.rv)).toEqual([11]);
    c.apply('ADDED', 'a/2', 12, obj('a', '2'));
    c.apply('ADDED', 'a/3', 13, obj('a', '3'));
    expect(c.eventsAfter(10)).toBeNull();
    expect(c.eventsAfter(11)!.map((e) => e.rv)).toEqual([12, 13]);
  });
  it('rebuilds the state at an older version by undoing later ring events (ListFromCacheSnapshot)', () => {
    const c = new ResourceCache('configmaps', 10, 0);
    c.apply('ADDED', 'a/x', 1, obj('a', 'x'));
    c.apply('ADDED', 'a/y', 2, obj('a', 'y'));
    c.apply('ADDED', 'b/z', 3, obj('b', 'z'));
    c.apply('MODIFIED', 'a/x', 4, obj('a', 'x', { v: '2' }));
    c.apply('DELETED', 'a/y', 5, obj('a', 'y'));
    c.apply('ADDED', 'a/w', 6, obj('a', 'w'));
    const at = (rv: number, ns = '') => c.snapshotAt(rv, ns, 75_000)!.map((e) => `${e.key}@${e.rv}`);
    expect(at(3)).toEqual(['a/x@1', 'a/y@2', 'b/z@3']);
    expect(at(3, 'a')).toEqual(['a/x@1', 'a/y@2']);
    expect(at(4, 'a')).toEqual(['a/x@4', 'a/y@2']);
    expect(at(5)).toEqual(['a/x@4', 'b/z@3']);
    expect(at(6)).toEqual(['a/w@6', 'a/x@4', 'b/z@3']);
    // not once the ring has moved past the version, nor when the undone events are too old
    for (let rv = 7; rv < 20; rv++) c.apply('ADDED', `c/${rv}`, rv, obj('c', String(rv)));
    expect(c.snapshotAt(3, '', 75_000)).toBeNull();
    expect(c.snapshotAt(15, '', -1)).toBeNull();
    expect(c.snapshotAt(15, 'a', 75_000)!.map((e) => e.key)).toEqual(['a/w', 'a/x']);
  });
});

describe('WatcherGroup fan-out', () => {
  it('shares one frame per event and turns selector transitions into ADDED/DELETED', () => {
    const c = new ResourceCache('configmaps', 100, 0);
    const s1 = sink();
    const s2 = sink();
    const all = new Watcher({ ns: '', name: '', labels: null, fields: null, sink: s1, maxBufferedBytes: 1 << 20 });
    const sel = new Watcher({ ns: 'a', name: '', labels: [{ key: 'app', op: '=', values: ['web'] }], fields: null, sink: s2, maxBufferedBytes: 1 << 20 });
    c.watchers.add(all);
    c.watchers.add(sel);
    const evs = [
      c.apply('ADDED', 'a/x', 1, obj('a', 'x')),
      c.apply('MODIFIED', 'a/x', 2, obj('a', 'x', { app: 'web' })),
      c.apply('MODIFIED', 'a/x', 3, obj('a', 'x')),
      c.apply('ADDED', 'b/y', 4, obj('b', 'y', { app: 'web' })),
    ];
    c.watchers.dispatch(evs);
    all.flush();
    sel.flush();
    const frames = (s: { text(): string }) => s.text().split('\n').filter(Boolean);
    expect(frames(s1).map((x) => JSON.parse(x).type)).toEqual(['ADDED', 'MODIFIED', 'MODIFIED', 'ADDED']);
    expect(frames(s2).map((x) => JSON.parse(x).type)).toEqual(['ADDED', 'DELETED']);
  });
  it('closes a watcher whose transport buffers past its budget', () => {
    const c = new ResourceCache('configmaps', 100, 0);
    const s = sink();
    s.bufferedBytes = () => 1 << 30;
    const w = new Watcher({ ns: '', name: '', labels: null, fields: null, sink: s, maxBufferedBytes: 1024 });
    c.watchers.add(w);
    w.onClose = () => c.watchers.remove(w);
    c.watchers.dispatch([c.apply('ADDED', 'a/x', 1, obj('a', 'x'))]);
    w.flush();
    expect(w.closed).toBe(true);
    expect(s.ended).toBe(true);
    expect(c.watchers.size).toBe(0);
  });
});

describe('ResourceCache namespace index', () => {
  it('lists each namespace and all of them sorted, as a model does, under random changes read at random times', () => {
    const c = new ResourceCache('configmaps', 100, 0);
    const model = new Map<string, number>();
    let seed = 7;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n);
    const held: Array<{ arr: unknown[]; copy: unknown[] }> = [];
    for (let rv = 1; rv <= 3000; rv++) {
      const key = `ns${rnd(4)}/n${rnd(60)}`;
      if (model.has(key) && rnd(3) === 0) {
        c.apply('DELETED', key, rv, Buffer.from(`{"rv":${rv}}`));
        model.delete(key);
      } else {
        c.apply(model.has(key) ? 'MODIFIED' : 'ADDED', key, rv, Buffer.from(`{"rv":${rv}}`));
        model.set(key, rv);
      }
      if (rnd(5) === 0) {
        const ns = rnd(5) === 4 ? '' : `ns${rnd(4)}`;
        const want = [...model].filter(([k]) => ns === '' || k.startsWith(ns + '/')).sort(([a], [b]) => (a < b ? -1 : 1));
        const got = c.list(ns);
        expect(got.map((e) => [e.key, e.rv])).toEqual(want);
        expect(c.joined(ns, 0, got.length).toString()).toBe(want.map(([, v]) => `{"rv":${v}}`).join(','));
        if (held.length < 20) held.push({ arr: got, copy: got.slice() });
      }
    }
    // A list handed out earlier never changes under its reader.
    for (const h of held) expect(h.arr).toEqual(h.copy);
  });
});

describe('ResourceCache joined pages', () => {
  it('a small page of a large list and a large one give the same bytes as the whole list sliced', () => {
    const c = new ResourceCache('configmaps', 10, 0);
    for (let i = 0; i < 100; i++) c.apply('ADDED', `ns/k${String(i).padStart(3, '0')}`, i + 1, Buffer.from(`{"i":${i}}`));
    const whole = c.list('ns').map((e) => e.json.toString());
    expect(c.joined('ns', 10, 15).toString()).toBe(whole.slice(10, 15).join(','));
    expect(c.joined('ns', 0, 100).toString()).toBe(whole.join(','));
    expect(c.joined('ns', 10, 15).toString()).toBe(whole.slice(10, 15).join(','));
    expect(c.joined('', 95, 100).toString()).toBe(whole.slice(95).join(','));
    expect(c.joined('ns', 5, 5).length).toBe(0);
  });
});
