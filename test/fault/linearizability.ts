// A linearizability checker for the key-value operations of the fault test, in the manner
// of porcupine (github.com/anishathalye/porcupine: Wing & Gong's search with Lowe's cache of
// (linearized set, state)), one key at a time (linearizability is compositional: a history
// is linearizable iff each key's is).
//
// The model of one key: absent, or holding the value of one write. Every write's value is
// unique, and the version a value was committed at is known from whoever saw it (the
// writer's answer, a read, a watch event): rvOf. So the state is the value alone, and a
// resourceVersion precondition holds iff rvOf(state) is the version asked for. An operation
// with an unknown outcome may be linearized anywhere after its invocation, or never (maybe
// applied): the search succeeds once every operation that completed is linearized. When its
// deadline is known (the server that held it died and the next one was ready), it may be
// linearized only before that: passing its deadline drops it (a step of the search, so that
// it is undone on the way back). Without that bound every unknown operation would be tried
// at every later point of the history; with it the search stays near linear. Versions must
// grow along a key's linearization.
//
// Thread ownership: pure functions of the test's main thread.
import type { Op } from './history.js';

export interface KeyVerdict {
  key: string;
  ok: boolean;
  ops: number;
  /** when not ok: the operations of the longest linearizable prefix found, and the first that could not follow */
  detail?: string;
}

/** state: the value held (null: absent); undefined: op cannot take effect in this state */
export function step(state: string | null, op: Op, rvOf: ReadonlyMap<string, number>): string | null | undefined {
  const curRv = state === null ? undefined : rvOf.get(state);
  const applied = op.outcome === 'ok' || op.outcome === 'unknown';
  const grows = (v: string) => {
    const r = rvOf.get(v);
    return r === undefined || curRv === undefined || r > curRv;
  };
  switch (op.kind) {
    case 'get':
      return op.outcome === 'ok' && op.value === state ? state : undefined;
    case 'create':
      if (applied) return state === null && grows(op.value!) ? op.value : undefined;
      if (op.outcome === 'exists') return state !== null ? state : undefined;
      return undefined;
    case 'update':
    case 'delete': {
      const holds = state !== null && (op.precondition === undefined || curRv === op.precondition);
      if (applied) {
        if (!holds) return undefined;
        if (op.kind === 'delete') return null;
        return grows(op.value!) ? op.value : undefined;
      }
      if (op.outcome === 'notfound') return state === null ? null : undefined;
      if (op.outcome === 'conflict') return state !== null && op.precondition !== undefined && curRv !== op.precondition ? state : undefined;
      return undefined;
    }
  }
}

interface Node {
  op: Op | null;
  call: boolean;
  /** a call's return, a return's call */
  match: Node | null;
  prev: Node | null;
  next: Node | null;
}

/**
 * One key's history (its operations in any order). maxStates bounds the search: past it the
 * key is reported as not decided (ok false, detail says so) rather than searched for ever.
 */
export function checkKey(key: string, ops: Op[], rvOf: ReadonlyMap<string, number>, maxStates = 5_000_000): KeyVerdict {
  // entries in time order; a completion at Infinity (unknown) sorts last
  const entries: Array<{ t: number; node: Node }> = [];
  for (const op of ops) {
    const c: Node = { op, call: true, match: null, prev: null, next: null };
    const r: Node = { op, call: false, match: null, prev: null, next: null };
    c.match = r;
    r.match = c;
    entries.push({ t: op.call, node: c }, { t: op.ret === Infinity ? (op.deadline ?? Infinity) : op.ret, node: r });
  }
  entries.sort((a, b) => a.t - b.t || (a.node.call === b.node.call ? 0 : a.node.call ? 1 : -1));
  const head: Node = { op: null, call: false, match: null, prev: null, next: null };
  let last = head;
  for (const e of entries) {
    e.node.prev = last;
    last.next = e.node;
    last = e.node;
  }
  const index = new Map<Op, number>();
  ops.forEach((o, i) => index.set(o, i));
  // two 32-bit random words per operation: the linearized set's hash is their xor
  const h1 = new Uint32Array(ops.length).map(() => (Math.random() * 2 ** 32) >>> 0);
  const h2 = new Uint32Array(ops.length).map(() => (Math.random() * 2 ** 32) >>> 0);
  let s1 = 0;
  let s2 = 0;
  const seen = new Set<string>();
  const stack: Array<{ node: Node; state: string | null; dropped?: boolean }> = [];
  let state: string | null = null;
  let finiteLeft = ops.filter((o) => o.ret !== Infinity).length;
  let best = 0;
  let bestStuck: Op | null = null;
  /** the last operations of the longest prefix (only its tail is shown: copying it whole at each new best made the search quadratic) */
  let bestTail: Op[] = [];
  const lift = (n: Node) => {
    n.prev!.next = n.next;
    if (n.next) n.next.prev = n.prev;
    const m = n.match!;
    m.prev!.next = m.next;
    if (m.next) m.next.prev = m.prev;
  };
  const unlift = (n: Node) => {
    const m = n.match!;
    m.prev!.next = m;
    if (m.next) m.next.prev = m;
    n.prev!.next = n;
    if (n.next) n.next.prev = n;
  };
  let entry = head.next;
  for (;;) {
    if (finiteLeft === 0) return { key, ok: true, ops: ops.length };
    if (entry && entry.call) {
      const op = entry.op!;
      const next = step(state, op, rvOf);
      if (next !== undefined) {
        const i = index.get(op)!;
        const k = `${(s1 ^ h1[i]) >>> 0}:${(s2 ^ h2[i]) >>> 0}:${next}`;
        if (!seen.has(k)) {
          if (seen.size >= maxStates) return { key, ok: false, ops: ops.length, detail: `undecided: more than ${maxStates} states searched` };
          seen.add(k);
          stack.push({ node: entry, state });
          s1 = (s1 ^ h1[i]) >>> 0;
          s2 = (s2 ^ h2[i]) >>> 0;
          state = next;
          lift(entry);
          if (op.ret !== Infinity) finiteLeft--;
          if (stack.length > best) {
            best = stack.length;
            bestTail = stack.slice(-8).map((s) => s.node.op!);
            bestStuck = null;
          }
          entry = head.next;
          continue;
        }
      }
      entry = entry.next;
      continue;
    }
    if (entry && !entry.call && entry.op!.ret === Infinity) {
      // the deadline of an unknown operation not linearized: from here on it never happened
      const op = entry.op!;
      const i = index.get(op)!;
      const k = `${(s1 ^ h1[i]) >>> 0}:${(s2 ^ h2[i]) >>> 0}:${state}`;
      if (!seen.has(k)) {
        if (seen.size >= maxStates) return { key, ok: false, ops: ops.length, detail: `undecided: more than ${maxStates} states searched` };
        seen.add(k);
        const c = entry.match!;
        stack.push({ node: c, state, dropped: true });
        s1 = (s1 ^ h1[i]) >>> 0;
        s2 = (s2 ^ h2[i]) >>> 0;
        lift(c);
        entry = head.next;
        continue;
      }
    }
    // a completion whose operation is not linearized yet (or the end): go back one step
    if (stack.length === best && entry?.op && !bestStuck) bestStuck = entry.op;
    const top = stack.pop();
    if (!top) {
      const show = (o: Op) => `#${o.id} c${o.client} ${o.kind}${o.precondition !== undefined ? `(rv=${o.precondition})` : ''} ${o.value ?? '∅'} -> ${o.outcome}${o.rv !== undefined ? ` rv=${o.rv}` : ''} [${o.call}, ${o.ret}]`;
      const tail = bestTail.map(show).join('\n  ');
      return { key, ok: false, ops: ops.length, detail: `longest linearizable prefix: ${best} operations, ending\n  ${tail}\nthen no way to linearize ${bestStuck ? show(bestStuck) : '(the rest)'}` };
    }
    const op = top.node.op!;
    const i = index.get(op)!;
    s1 = (s1 ^ h1[i]) >>> 0;
    s2 = (s2 ^ h2[i]) >>> 0;
    state = top.state;
    unlift(top.node);
    if (op.ret !== Infinity) finiteLeft++;
    // (a drop has no alternative at its point: the operation cannot stay pending past its
    // deadline, so the search goes back one more step)
    entry = top.dropped ? null : top.node.next;
  }
}

export interface HistoryVerdict {
  ops: number;
  keys: number;
  /** operations that ended with no answer (maybe applied) */
  unknown: number;
  anomalies: string[];
}

/**
 * The whole history: rvOf from every observation (the history's own and `observed`, e.g. the
 * watchers' events: value -> version), then each key. A value seen at two versions, or a
 * refused write's value seen anywhere, is an anomaly of its own.
 */
export function checkHistory(ops: Op[], observed: Iterable<[string, number]> = []): HistoryVerdict {
  const anomalies: string[] = [];
  const rvOf = new Map<string, number>();
  const see = (value: string, rv: number, where: string) => {
    const had = rvOf.get(value);
    if (had === undefined) rvOf.set(value, rv);
    else if (had !== rv) anomalies.push(`value ${value} seen at version ${had} and at ${rv} (${where})`);
  };
  for (const o of ops) if (o.outcome === 'ok' && o.value !== null && o.rv !== undefined && o.kind !== 'delete') see(o.value, o.rv, `operation #${o.id}`);
  for (const [v, rv] of observed) see(v, rv, 'a watch event');
  const refused = new Set<string>();
  for (const o of ops) if ((o.kind === 'create' || o.kind === 'update') && (o.outcome === 'exists' || o.outcome === 'conflict' || o.outcome === 'notfound')) refused.add(o.value!);
  for (const v of rvOf.keys()) if (refused.has(v)) anomalies.push(`value ${v} was refused to its writer, yet stored (version ${rvOf.get(v)})`);
  const byKey = new Map<string, Op[]>();
  for (const o of ops) {
    let l = byKey.get(o.key);
    if (!l) byKey.set(o.key, (l = []));
    l.push(o);
  }
  for (const [key, list] of byKey) {
    // First without the writes of unknown outcome that nobody ever saw (applied, they could
    // only explain refusals: the search is much smaller); a key that fails so is checked
    // again with them.
    const seenOnly = list.filter((o) => !(o.outcome === 'unknown' && (o.kind === 'create' || o.kind === 'update') && !rvOf.has(o.value!)));
    let v = checkKey(key, seenOnly, rvOf);
    if (!v.ok && seenOnly.length !== list.length) v = checkKey(key, list, rvOf);
    if (!v.ok) anomalies.push(`key ${key} is not linearizable: ${v.detail}`);
  }
  return { ops: ops.length, keys: byKey.size, unknown: ops.filter((o) => o.outcome === 'unknown').length, anomalies };
}
