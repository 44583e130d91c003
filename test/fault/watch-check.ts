// The watch half of the fault test's checks. Each watcher's record is a run of segments: a
// list (the state at its version) followed by the watch from there, or a watch resumed from
// the last version the watcher saw (after the server died, or the stream ended). Checked:
//  - each event once and in version order, across resumptions (a resumed watch continues
//    strictly after the last version seen: nothing repeated, nothing reordered);
//  - event types agree with the watcher's own reconstruction (ADDED of an absent key,
//    MODIFIED and DELETED of a present one, a DELETED carrying the last state);
//  - all watchers agree on what happened at each version;
//  - no gaps: every acknowledged write whose version falls inside a segment's span was
//    delivered in that segment;
//  - each watcher's reconstruction, once it has seen the final version, is the final state;
//  - every list answered at a version a watcher's segment spans is that watcher's state at
//    that version (a list is one consistent snapshot, across keys).
// A 410 (history compacted) is allowed: the watcher lists again, and that segment starts afresh.
//
// Thread ownership: pure functions of the test's main thread.
import type { Op } from './history.js';

export interface WatchEventRec {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  key: string;
  rv: number;
  /** the object's data.v */
  value: string | null;
}

export interface Segment {
  /** list: the watcher's state is replaced by `listed` at fromRv; resume: a watch from the last version seen */
  start: 'list' | 'resume';
  fromRv: number;
  listed?: Map<string, { value: string | null; rv: number }>;
  events: WatchEventRec[];
  /** the newest version this segment reached (its last event or bookmark) */
  upto: number;
}

export interface WatcherRecord {
  id: number;
  segments: Segment[];
}

export interface WatchVerdict {
  events: number;
  /** list answers compared with a watcher's state at their version (one per watcher spanning it) */
  listsChecked: number;
  resumes: number;
  relists: number;
  anomalies: string[];
}

/** A list's answer: the state at its version. */
export interface ListRec {
  rv: number;
  items: Map<string, { value: string | null; rv: number }>;
}

export function checkWatchers(
  watchers: WatcherRecord[],
  ops: Op[],
  final: { rv: number; state: Map<string, { value: string | null; rv: number }> },
  lists: ListRec[] = [],
): WatchVerdict {
  const anomalies: string[] = [];
  let events = 0;
  // lists in version order: each one inside a watcher's segment must be that watcher's state at its version
  const byRv = [...lists].sort((a, b) => a.rv - b.rv);
  const compareList = (w: number, l: ListRec, state: Map<string, { value: string | null; rv: number }>) => {
    listsChecked++;
    const keys = new Set([...state.keys(), ...l.items.keys()]);
    for (const k of keys) {
      const a = state.get(k);
      const b = l.items.get(k);
      if (a?.value !== b?.value || a?.rv !== b?.rv) {
        anomalies.push(`list at ${l.rv}: ${k} = ${b ? `${b.value}@${b.rv}` : 'absent'}, watcher ${w} had ${a ? `${a.value}@${a.rv}` : 'absent'} at that version`);
        return;
      }
    }
    for (const [k, it] of l.items) if (it.rv > l.rv) anomalies.push(`list at ${l.rv}: ${k} at version ${it.rv}, newer than the list`);
  };
  let listsChecked = 0;
  let resumes = 0;
  let relists = 0;
  const at = new Map<number, { w: number; e: WatchEventRec }>();
  const acked = ops.filter((o) => o.outcome === 'ok' && (o.kind === 'create' || o.kind === 'update') && o.rv !== undefined);
  const written = new Set(ops.filter((o) => o.kind === 'create' || o.kind === 'update').map((o) => o.value));
  for (const w of watchers) {
    let state = new Map<string, { value: string | null; rv: number }>();
    let last = 0;
    let first = true;
    for (const seg of w.segments) {
      if (seg.start === 'list') {
        if (!first) relists++;
        state = new Map(seg.listed);
        last = seg.fromRv;
      } else {
        resumes++;
        if (seg.fromRv !== last) anomalies.push(`watcher ${w.id}: resumed from ${seg.fromRv}, but the last version it saw was ${last} (harness)`);
      }
      first = false;
      const seen = new Set<number>();
      // the lists this segment spans, from the first at or above its start
      let li = 0;
      // (a resumed segment's start was the end of the one before, which compared the lists there)
      while (li < byRv.length && (byRv[li].rv < seg.fromRv || (seg.start === 'resume' && byRv[li].rv === seg.fromRv))) li++;
      for (const e of seg.events) {
        while (li < byRv.length && byRv[li].rv < e.rv) compareList(w.id, byRv[li++], state);
        events++;
        seen.add(e.rv);
        if (e.rv <= last) anomalies.push(`watcher ${w.id}: event ${e.type} ${e.key} at ${e.rv} after version ${last} (repeated or out of order)`);
        last = Math.max(last, e.rv);
        const cur = state.get(e.key);
        if (e.type === 'ADDED' && cur) anomalies.push(`watcher ${w.id}: ADDED ${e.key} at ${e.rv}, which it holds (at ${cur.rv})`);
        if (e.type !== 'ADDED' && !cur) anomalies.push(`watcher ${w.id}: ${e.type} ${e.key} at ${e.rv}, which it does not hold`);
        if (e.type === 'DELETED' && cur && cur.value !== e.value) anomalies.push(`watcher ${w.id}: DELETED ${e.key} at ${e.rv} carries ${e.value}, its last state was ${cur.value}`);
        if (e.type !== 'DELETED' && !written.has(e.value)) anomalies.push(`watcher ${w.id}: ${e.type} ${e.key} at ${e.rv} carries ${e.value}, which no client wrote`);
        if (e.type === 'DELETED') state.delete(e.key);
        else state.set(e.key, { value: e.value, rv: e.rv });
        const other = at.get(e.rv);
        if (!other) at.set(e.rv, { w: w.id, e });
        else if (other.e.key !== e.key || other.e.type !== e.type || other.e.value !== e.value) {
          anomalies.push(`version ${e.rv}: watcher ${other.w} saw ${other.e.type} ${other.e.key} ${other.e.value}, watcher ${w.id} saw ${e.type} ${e.key} ${e.value}`);
        }
      }
      while (li < byRv.length && byRv[li].rv <= seg.upto) compareList(w.id, byRv[li++], state);
      last = Math.max(last, seg.upto);
      // no gaps: the acknowledged writes of this segment's span
      for (const o of acked) {
        if (o.rv! > seg.fromRv && o.rv! <= seg.upto && !seen.has(o.rv!)) anomalies.push(`watcher ${w.id}: missed ${o.kind} of ${o.key} at ${o.rv} (its segment spans ${seg.fromRv}..${seg.upto})`);
      }
    }
    if (last < final.rv) {
      anomalies.push(`watcher ${w.id}: never reached the final version ${final.rv} (last ${last})`);
      continue;
    }
    for (const [key, f] of final.state) {
      const s = state.get(key);
      if (!s || s.value !== f.value || s.rv !== f.rv) anomalies.push(`watcher ${w.id}: ends with ${key} = ${s ? `${s.value}@${s.rv}` : 'absent'}, the final state has ${f.value}@${f.rv}`);
    }
    for (const [key, s] of state) if (!final.state.has(key)) anomalies.push(`watcher ${w.id}: ends with ${key} = ${s.value}@${s.rv}, absent from the final state`);
  }
  return { events, resumes, relists, listsChecked, anomalies };
}

/** value -> version of every ADDED or MODIFIED event, for the linearizability check's rvOf. */
export function observedVersions(watchers: WatcherRecord[]): Array<[string, number]> {
  const out: Array<[string, number]> = [];
  for (const w of watchers) for (const s of w.segments) for (const e of s.events) if (e.type !== 'DELETED' && e.value !== null) out.push([e.value, e.rv]);
  return out;
}
