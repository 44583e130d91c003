// The watch checks themselves: a clean record passes; a repeated or reordered event, a gap, a
// disagreement between watchers, a wrong final state and a list that is no snapshot are found.
import { describe, it, expect } from 'vitest';
import type { Op } from './history.js';
import { checkWatchers, type Segment, type WatcherRecord, type WatchEventRec } from './watch-check.js';

const ops: Op[] = [
  { id: 0, client: 0, key: 'a', kind: 'create', value: 'a1', rv: 10, outcome: 'ok', call: 1, ret: 2 },
  { id: 1, client: 0, key: 'b', kind: 'create', value: 'b1', rv: 11, outcome: 'ok', call: 3, ret: 4 },
  { id: 2, client: 0, key: 'a', kind: 'update', value: 'a2', rv: 12, outcome: 'ok', call: 5, ret: 6 },
  { id: 3, client: 0, key: 'b', kind: 'delete', value: null, outcome: 'ok', call: 7, ret: 8 },
];
const ev = (type: WatchEventRec['type'], key: string, rv: number, value: string): WatchEventRec => ({ type, key, rv, value });
const all = [ev('ADDED', 'a', 10, 'a1'), ev('ADDED', 'b', 11, 'b1'), ev('MODIFIED', 'a', 12, 'a2'), ev('DELETED', 'b', 13, 'b1')];
const final = { rv: 13, state: new Map([['a', { value: 'a2', rv: 12 }]]) };
const listAt = (rv: number, upto: number, events: WatchEventRec[]): Segment => ({ start: 'list', fromRv: rv, listed: new Map(), events, upto });
const resume = (rv: number, upto: number, events: WatchEventRec[]): Segment => ({ start: 'resume', fromRv: rv, events, upto });

describe('watch checks', () => {
  it('pass a watcher that resumed across a break, and a list that is a snapshot', () => {
    const w: WatcherRecord = { id: 0, segments: [listAt(5, 11, all.slice(0, 2)), resume(11, 13, all.slice(2))] };
    const v = checkWatchers([w], ops, final, [{ rv: 11, items: new Map([['a', { value: 'a1', rv: 10 }], ['b', { value: 'b1', rv: 11 }]]) }]);
    expect(v.anomalies).toEqual([]);
    expect(v).toMatchObject({ events: 4, resumes: 1, listsChecked: 1 });
  });

  it('find a repeated event after a resumption, and a gap', () => {
    const repeated: WatcherRecord = { id: 0, segments: [listAt(5, 11, all.slice(0, 2)), resume(11, 13, [all[1], ...all.slice(2)])] };
    expect(checkWatchers([repeated], ops, final).anomalies.some((a) => a.includes('repeated or out of order'))).toBe(true);
    const gap: WatcherRecord = { id: 0, segments: [listAt(5, 13, [all[0], all[2]])] };
    const v = checkWatchers([gap], ops, { rv: 13, state: new Map([['a', { value: 'a2', rv: 12 }]]) });
    expect(v.anomalies.some((a) => a.includes('missed create of b at 11'))).toBe(true);
  });

  it('find watchers that disagree, a wrong final state, and a list that is not a snapshot', () => {
    const w0: WatcherRecord = { id: 0, segments: [listAt(5, 13, all)] };
    const w1: WatcherRecord = { id: 1, segments: [listAt(5, 13, [all[0], all[1], ev('MODIFIED', 'a', 12, 'a1'), all[3]])] };
    const v = checkWatchers([w0, w1], ops, final, [{ rv: 12, items: new Map([['a', { value: 'a2', rv: 12 }]]) }]);
    expect(v.anomalies.some((a) => a.startsWith('version 12:'))).toBe(true);
    expect(v.anomalies.some((a) => a.includes('watcher 1: ends with a = a1@12'))).toBe(true);
    // at 12, b was still there: a list without it is no snapshot
    expect(v.anomalies.some((a) => a.startsWith('list at 12: b = absent'))).toBe(true);
  });
});
