// The fan-out tick: what each write carries when frames come faster than a transport
// piece, and that every frame still arrives once, whole and in order.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { ResourceCache } from './watch-cache.js';
import { Watcher, setFanoutTick } from './watcher-group.js';
import { memorySink, type MemorySink } from './memory-sink.js';

const sink = memorySink;

const obj = (name: string, pad: number) => Buffer.from(JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace: 'a' }, data: { v: 'x'.repeat(pad) } }));
const watcher = (s: MemorySink, maxBufferedBytes = 1 << 20) => new Watcher({ gr: 'configmaps', ns: 'a', name: '', labels: null, fields: null, sink: s, maxBufferedBytes });
const names = (s: MemorySink) =>
  Buffer.concat(s.writes)
    .toString()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l).object.metadata.name);
const ticks = (n = 3) => new Promise((r) => setTimeout(r, 20 * n));

beforeAll(() => setFanoutTick(1));
afterAll(() => setFanoutTick(5));

describe('fan-out tick', () => {
  it('frames within one piece leave in one write', async () => {
    const c = new ResourceCache('configmaps', 100, 0);
    const s = sink(16 * 1024);
    c.watchers.add(watcher(s));
    c.watchers.dispatch([1, 2, 3].map((i) => c.apply('ADDED', `a/n${i}`, i, obj(`n${i}`, 100))));
    await ticks();
    expect(s.writes.length).toBe(1);
    expect(names(s)).toEqual(['n1', 'n2', 'n3']);
  });

  it('frames that fill more than a piece: whole pieces first, the rest on the next tick, every frame once and in order', async () => {
    const c = new ResourceCache('configmaps', 100, 0);
    const quantum = 2000;
    const s = sink(quantum);
    c.watchers.add(watcher(s));
    // ~330-byte frames: 16 of them fill two pieces and a half
    c.watchers.dispatch(Array.from({ length: 16 }, (_, i) => c.apply('ADDED', `a/n${i}`, i + 1, obj(`n${i}`, 220))));
    await ticks();
    expect(s.writes.length).toBe(2);
    // the first write is whole frames filling at most two whole pieces, more than one
    expect(s.writes[0].byteLength).toBeLessThanOrEqual(2 * quantum);
    expect(s.writes[0].byteLength).toBeGreaterThan(quantum);
    expect(s.writes[0].toString().endsWith('}\n')).toBe(true);
    expect(names(s)).toEqual(Array.from({ length: 16 }, (_, i) => `n${i}`));
  });

  it('a frame larger than a piece still leaves', async () => {
    const c = new ResourceCache('configmaps', 100, 0);
    const s = sink(1000);
    c.watchers.add(watcher(s));
    c.watchers.dispatch([c.apply('ADDED', 'a/big', 1, obj('big', 5000)), c.apply('ADDED', 'a/small', 2, obj('small', 10))]);
    await ticks();
    expect(names(s)).toEqual(['big', 'small']);
  });

  it('watchers that see the same events share one chunk', async () => {
    const c = new ResourceCache('configmaps', 100, 0);
    const s1 = sink(16 * 1024);
    const s2 = sink(16 * 1024);
    c.watchers.add(watcher(s1));
    c.watchers.add(watcher(s2));
    c.watchers.dispatch([1, 2].map((i) => c.apply('ADDED', `a/n${i}`, i, obj(`n${i}`, 50))));
    await ticks();
    expect(s1.writes.length).toBe(1);
    expect(s2.writes[0]).toBe(s1.writes[0]);
  });

  it('a direct flush (a watch timing out, the first write) sends everything at once', () => {
    const c = new ResourceCache('configmaps', 100, 0);
    const s = sink(500);
    const w = watcher(s);
    c.watchers.add(w);
    c.watchers.dispatch(Array.from({ length: 5 }, (_, i) => c.apply('ADDED', `a/n${i}`, i + 1, obj(`n${i}`, 300))));
    w.flush();
    expect(s.writes.length).toBe(1);
    expect(names(s)).toEqual(['n0', 'n1', 'n2', 'n3', 'n4']);
  });

  it('a watcher over its budget is closed in the tick; the others get every frame', async () => {
    const c = new ResourceCache('configmaps', 100, 0);
    const slow = sink(16 * 1024);
    slow.buffered = 1 << 30;
    const fast = sink(16 * 1024);
    const ws = watcher(slow, 1024);
    ws.onClose = () => c.watchers.remove(ws);
    c.watchers.add(ws);
    c.watchers.add(watcher(fast));
    c.watchers.dispatch([c.apply('ADDED', 'a/n1', 1, obj('n1', 10))]);
    await ticks();
    c.watchers.dispatch([c.apply('ADDED', 'a/n2', 2, obj('n2', 10))]);
    await ticks();
    expect(ws.closed).toBe(true);
    expect(slow.ended).toBe(true);
    expect(c.watchers.size).toBe(1);
    expect(names(fast)).toEqual(['n1', 'n2']);
  });
});

describe('fan-out pump', () => {
  const immediate = () => new Promise<void>((r) => setImmediate(r));
  const written = (s: MemorySink) => s.writes.map((w) => names({ writes: [w] } as MemorySink));

  it('a lone event leaves on the next turn of the loop, with no tick to wait for', async () => {
    setFanoutTick(1000);
    try {
      const c = new ResourceCache('configmaps', 100, 0);
      const s = sink(16 * 1024);
      c.watchers.add(watcher(s));
      const t0 = performance.now();
      c.watchers.dispatch([c.apply('ADDED', 'a/n1', 1, obj('n1', 10))]);
      expect(s.writes.length).toBe(0); // not from within the commit: its writers are answered first
      await immediate();
      await immediate();
      expect(names(s)).toEqual(['n1']);
      expect(performance.now() - t0).toBeLessThan(50);
    } finally {
      setFanoutTick(1);
    }
  });

  it('writes in slices, in order of arrival; events committed during a pass ride with the watchers still queued', async () => {
    setFanoutTick(0); // a slice is the smallest batch of writes (8 watchers)
    try {
      const c = new ResourceCache('configmaps', 100, 0);
      const sinks = Array.from({ length: 32 }, () => sink(16 * 1024));
      for (const s of sinks) c.watchers.add(watcher(s));
      c.watchers.dispatch([c.apply('ADDED', 'a/n1', 1, obj('n1', 10))]);
      await immediate(); // the first slice
      const first = sinks.filter((s) => s.writes.length > 0);
      expect(first.length).toBe(8);
      // a commit between two slices: its event joins the outboxes of the 24 still queued
      c.watchers.dispatch([c.apply('ADDED', 'a/n2', 2, obj('n2', 10))]);
      await ticks();
      for (const s of sinks) expect(names(s)).toEqual(['n1', 'n2']);
      for (const s of first) expect(written(s)).toEqual([['n1'], ['n2']]);
      const rest = sinks.filter((s) => !first.includes(s));
      for (const s of rest) expect(written(s)).toEqual([['n1', 'n2']]);
    } finally {
      setFanoutTick(1);
    }
  });

  it('other work runs between slices', async () => {
    setFanoutTick(0);
    try {
      const c = new ResourceCache('configmaps', 100, 0);
      const sinks = Array.from({ length: 64 }, () => sink(16 * 1024));
      for (const s of sinks) c.watchers.add(watcher(s));
      c.watchers.dispatch([c.apply('ADDED', 'a/n1', 1, obj('n1', 10))]);
      let doneWhenOtherRan = -1;
      setImmediate(() => setImmediate(() => (doneWhenOtherRan = sinks.filter((s) => s.writes.length > 0).length)));
      await ticks();
      expect(doneWhenOtherRan).toBeGreaterThan(0);
      expect(doneWhenOtherRan).toBeLessThan(64);
      for (const s of sinks) expect(names(s)).toEqual(['n1']);
    } finally {
      setFanoutTick(1);
    }
  });

  it('a pass from an idle pump begins at a rotating watcher, so none is always written last', async () => {
    const c = new ResourceCache('configmaps', 100, 0);
    const sinks = Array.from({ length: 10 }, () => sink(16 * 1024));
    const order: number[] = [];
    sinks.forEach((s, i) => {
      const write = s.write;
      s.write = (b) => {
        order.push(i);
        return write(b);
      };
      c.watchers.add(watcher(s));
    });
    const lasts = new Set<number>();
    for (let rv = 1; rv <= 5; rv++) {
      order.length = 0;
      c.watchers.dispatch([c.apply('ADDED', `a/n${rv}`, rv, obj(`n${rv}`, 10))]);
      await ticks(1);
      expect([...order].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      lasts.add(order[9]);
    }
    expect(lasts.size).toBeGreaterThan(2);
  });

  it('a long pass keeps its order across slices (one rotation of the watchers, none written twice)', async () => {
    setFanoutTick(0);
    try {
      const c = new ResourceCache('configmaps', 100, 0);
      const n = 5000; // past the point where the pump compacts its queue
      const order: number[] = [];
      for (let i = 0; i < n; i++) {
        const s = sink(16 * 1024);
        const write = s.write;
        s.write = (b) => {
          order.push(i);
          return write(b);
        };
        c.watchers.add(watcher(s));
      }
      c.watchers.dispatch([c.apply('ADDED', 'a/n1', 1, obj('n1', 10))]);
      while (order.length < n) await immediate();
      await ticks(1);
      expect(order.length).toBe(n);
      for (let i = 1; i < n; i++) expect(order[i]).toBe((order[i - 1] + 1) % n);
    } finally {
      setFanoutTick(1);
    }
  });
});

describe('watchers indexed by trigger field and by object', () => {
  const pod = (name: string, nodeName: string) => Buffer.from(JSON.stringify({ kind: 'Pod', apiVersion: 'v1', metadata: { name, namespace: 'a' }, spec: { nodeName } }));
  const podWatcher = (s: MemorySink, fields: Array<{ field: string; op: '=' | '!='; value: string }> | null, name = '') =>
    new Watcher({ gr: 'pods', ns: '', name, labels: null, fields, sink: s, maxBufferedBytes: 1 << 20 });
  const types = (s: MemorySink) =>
    s
      .text()
      .split('\n')
      .filter(Boolean)
      .map((l) => `${JSON.parse(l).type} ${JSON.parse(l).object.metadata.name}`);

  it('a watcher pinned to spec.nodeName sees its node pods only, a move away as DELETED; others see all that match', async () => {
    const c = new ResourceCache('pods', 100, 0);
    const n1 = sink();
    const n2 = sink();
    const notN1 = sink();
    const byName = sink();
    c.watchers.add(podWatcher(n1, [{ field: 'spec.nodeName', op: '=', value: 'n1' }]));
    c.watchers.add(podWatcher(n2, [{ field: 'spec.nodeName', op: '=', value: 'n2' }]));
    c.watchers.add(podWatcher(notN1, [{ field: 'spec.nodeName', op: '!=', value: 'n1' }]));
    c.watchers.add(podWatcher(byName, null, 'p2'));
    c.watchers.dispatch([c.apply('ADDED', 'a/p1', 1, pod('p1', 'n1')), c.apply('ADDED', 'a/p2', 2, pod('p2', 'n2')), c.apply('ADDED', 'a/p3', 3, pod('p3', ''))]);
    c.watchers.dispatch([c.apply('MODIFIED', 'a/p2', 4, pod('p2', 'n1'))]);
    await ticks();
    expect(types(n1)).toEqual(['ADDED p1', 'ADDED p2']);
    expect(types(n2)).toEqual(['ADDED p2', 'DELETED p2']);
    expect(types(notN1)).toEqual(['ADDED p2', 'ADDED p3', 'DELETED p2']);
    expect(types(byName)).toEqual(['ADDED p2', 'MODIFIED p2']);
  });
});
