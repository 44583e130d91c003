// The checker itself: it accepts linearizable histories (with operations of unknown outcome
// taken as maybe applied) and finds the anomalies it is there for.
import { describe, it, expect } from 'vitest';
import { History, type Op } from './history.js';
import { checkHistory } from './linearizability.js';

/** A little DSL: each op is [call, ret | Infinity, fields]. */
function hist(list: Array<[number, number, Partial<Op> & Pick<Op, 'kind' | 'outcome'>]>): Op[] {
  return list.map(([call, ret, f], id) => ({ id, client: id, key: 'k', value: null, ...f, call, ret }));
}

describe('linearizability checker', () => {
  it('accepts a sequential history and concurrent writes in either order', () => {
    const ops = hist([
      [1, 2, { kind: 'create', value: 'a', rv: 10, outcome: 'ok' }],
      [3, 8, { kind: 'update', value: 'b', rv: 12, outcome: 'ok' }],
      [4, 7, { kind: 'update', value: 'c', rv: 11, outcome: 'ok' }],
      [5, 6, { kind: 'get', value: 'c', rv: 11, outcome: 'ok' }],
      [9, 10, { kind: 'update', precondition: 11, value: 'd', outcome: 'conflict' }],
      [11, 12, { kind: 'update', precondition: 12, value: 'e', rv: 13, outcome: 'ok' }],
      [13, 14, { kind: 'delete', precondition: 13, outcome: 'ok' }],
      [15, 16, { kind: 'get', outcome: 'ok' }],
      [17, 18, { kind: 'delete', outcome: 'notfound' }],
    ]);
    expect(checkHistory(ops).anomalies).toEqual([]);
  });

  it('takes an unknown outcome as maybe applied, either way', () => {
    const applied = hist([
      [1, 2, { kind: 'create', value: 'a', rv: 10, outcome: 'ok' }],
      [3, Infinity, { kind: 'update', value: 'b', outcome: 'unknown' }],
      [5, 6, { kind: 'get', value: 'b', rv: 11, outcome: 'ok' }],
    ]);
    expect(checkHistory(applied).anomalies).toEqual([]);
    const not = hist([
      [1, 2, { kind: 'create', value: 'a', rv: 10, outcome: 'ok' }],
      [3, Infinity, { kind: 'update', value: 'b', outcome: 'unknown' }],
      [5, 6, { kind: 'get', value: 'a', rv: 10, outcome: 'ok' }],
      [7, Infinity, { kind: 'delete', outcome: 'unknown' }],
      [8, 9, { kind: 'create', value: 'c', outcome: 'exists' }],
    ]);
    expect(checkHistory(not).anomalies).toEqual([]);
  });

  it('takes an unknown outcome with a deadline as applied before it or never, not after', () => {
    const dl = (ops: Op[], deadline: number) => ops.map((o) => (o.ret === Infinity ? { ...o, deadline } : o));
    // applied before its deadline (seen by a read after it) or dropped at it: both fine
    const seen = dl(
      hist([
        [1, 2, { kind: 'create', value: 'a', rv: 10, outcome: 'ok' }],
        [3, Infinity, { kind: 'delete', outcome: 'unknown' }],
        [6, 7, { kind: 'get', outcome: 'ok' }],
      ]),
      5,
    );
    expect(checkHistory(seen).anomalies).toEqual([]);
    const dropped = dl(
      hist([
        [1, 2, { kind: 'create', value: 'a', rv: 10, outcome: 'ok' }],
        [3, Infinity, { kind: 'delete', outcome: 'unknown' }],
        [6, 7, { kind: 'get', value: 'a', rv: 10, outcome: 'ok' }],
        [8, 9, { kind: 'get', value: 'a', rv: 10, outcome: 'ok' }],
      ]),
      5,
    );
    expect(checkHistory(dropped).anomalies).toEqual([]);
    // the key still held after the deadline, then gone with nothing that removed it: only an
    // effect after the deadline would explain it
    const late = dl(
      hist([
        [1, 2, { kind: 'create', value: 'a', rv: 10, outcome: 'ok' }],
        [3, Infinity, { kind: 'delete', outcome: 'unknown' }],
        [6, 7, { kind: 'get', value: 'a', rv: 10, outcome: 'ok' }],
        [8, 9, { kind: 'get', outcome: 'ok' }],
      ]),
      5,
    );
    expect(checkHistory(late).anomalies.length).toBe(1);
    // without a deadline the same history is linearizable (the delete may land at any time)
    expect(checkHistory(late.map(({ deadline: _d, ...o }) => o)).anomalies).toEqual([]);
  });

  it('finds a lost acknowledged write (a read after it sees the older value)', () => {
    const ops = hist([
      [1, 2, { kind: 'create', value: 'a', rv: 10, outcome: 'ok' }],
      [3, 4, { kind: 'update', value: 'b', rv: 11, outcome: 'ok' }],
      [5, 6, { kind: 'get', value: 'a', rv: 10, outcome: 'ok' }],
    ]);
    const v = checkHistory(ops);
    expect(v.anomalies.length).toBe(1);
    expect(v.anomalies[0]).toContain('not linearizable');
  });

  it('finds a precondition that was not honoured, and two creates that both won', () => {
    const lostUpdate = hist([
      [1, 2, { kind: 'create', value: 'a', rv: 10, outcome: 'ok' }],
      [3, 6, { kind: 'update', precondition: 10, value: 'b', rv: 11, outcome: 'ok' }],
      [4, 5, { kind: 'update', precondition: 10, value: 'c', rv: 12, outcome: 'ok' }],
    ]);
    expect(checkHistory(lostUpdate).anomalies.length).toBe(1);
    const twice = hist([
      [1, 3, { kind: 'create', value: 'a', rv: 10, outcome: 'ok' }],
      [2, 4, { kind: 'create', value: 'b', rv: 11, outcome: 'ok' }],
    ]);
    expect(checkHistory(twice).anomalies.length).toBe(1);
  });

  it('finds versions going back, a refused write that was stored, and a value at two versions', () => {
    const back = hist([
      [1, 2, { kind: 'create', value: 'a', rv: 10, outcome: 'ok' }],
      [3, 4, { kind: 'update', value: 'b', rv: 9, outcome: 'ok' }],
    ]);
    expect(checkHistory(back).anomalies.length).toBe(1);
    const phantom = hist([
      [1, 2, { kind: 'create', value: 'a', rv: 10, outcome: 'ok' }],
      [3, 4, { kind: 'update', precondition: 7, value: 'b', outcome: 'conflict' }],
      [5, 6, { kind: 'get', value: 'b', rv: 11, outcome: 'ok' }],
    ]);
    expect(checkHistory(phantom).anomalies.some((a) => a.includes('refused'))).toBe(true);
    const twoVersions = hist([[1, 2, { kind: 'create', value: 'a', rv: 10, outcome: 'ok' }]]);
    expect(checkHistory(twoVersions, [['a', 12]]).anomalies.length).toBe(1);
  });

  it('checks many concurrent clients on a few keys in reasonable time', () => {
    // a linearizable random history: one simulated store, operations overlapping in time
    const h = new History();
    const store = new Map<string, { v: string; rv: number }>();
    let rv = 100;
    type Pending = { start: number; finish: () => void };
    let pending: Pending[] = [];
    let n = 0;
    for (let t = 0; t < 3000; t++) {
      const key = `k${t % 4}`;
      const call = h.invoke();
      const r = Math.random();
      const cur = store.get(key);
      let fields: Partial<Op> & Pick<Op, 'kind' | 'outcome'>;
      const value = `v${n++}`;
      if (r < 0.3) {
        if (cur) fields = { kind: 'create', value, outcome: 'exists' };
        else store.set(key, { v: value, rv: ++rv }), (fields = { kind: 'create', value, rv, outcome: 'ok' });
      } else if (r < 0.6) {
        if (!cur) fields = { kind: 'update', value, outcome: 'notfound' };
        else store.set(key, { v: value, rv: ++rv }), (fields = { kind: 'update', precondition: cur.rv, value, rv, outcome: 'ok' });
      } else if (r < 0.7) {
        if (!cur) fields = { kind: 'delete', outcome: 'notfound' };
        else store.delete(key), (fields = { kind: 'delete', outcome: Math.random() < 0.2 ? 'unknown' : 'ok' });
      } else fields = { kind: 'get', value: cur?.v ?? null, rv: cur?.rv, outcome: 'ok' };
      // the effect happened now; the answer comes a little later, after other calls
      const f = fields;
      pending.push({ start: t, finish: () => h.complete({ client: 0, key, call, ...f } as Omit<Op, 'id' | 'ret'>) });
      pending = pending.filter((p) => (t - p.start > 3 || Math.random() < 0.3 ? (p.finish(), false) : true));
    }
    for (const p of pending) p.finish();
    const v = checkHistory(h.ops);
    expect(v.anomalies).toEqual([]);
    expect(v.ops).toBe(3000);
  });
});
