// Cell formatting shared by the printers: ages, label maps and selectors, container lists.
// Each mirrors what kube-apiserver prints for the same field, so kubectl output matches.
import { humanDuration } from './duration.js';

/** Epoch ms of an RFC 3339 timestamp; 0 when absent or unparsable (Go's zero time). */
export function timeOf(ts: unknown): number {
  if (typeof ts !== 'string' || ts === '') return 0;
  const t = Date.parse(ts);
  return Number.isNaN(t) ? 0 : t;
}

/** Age of a timestamp: "<unknown>" for a missing one. */
export function since(ts: unknown, now: number): string {
  const t = timeOf(ts);
  return t === 0 ? '<unknown>' : humanDuration(now - t);
}

export function age(obj: any, now: number): string {
  return since(obj?.metadata?.creationTimestamp, now);
}

function sortedEntries(m: unknown): Array<[string, string]> {
  if (!m || typeof m !== 'object') return [];
  return Object.entries(m as Record<string, unknown>)
    .map(([k, v]): [string, string] => [k, String(v ?? '')])
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** "a=1,b=2" sorted by key, "<none>" for an empty map. */
export function formatLabels(m: unknown): string {
  const s = sortedEntries(m).map(([k, v]) => `${k}=${v}`).join(',');
  return s === '' ? '<none>' : s;
}

/**
 * A LabelSelector as labels.Selector.String() prints it: requirements sorted by key,
 * "k=v", "k in (a,b)", "k notin (a,b)", "k", "!k". Empty or missing gives "".
 * Returns null when the selector is malformed (unknown operator, bad values).
 */
export function selectorString(sel: any): string | null {
  if (!sel || typeof sel !== 'object') return '';
  const reqs: Array<[string, string]> = [];
  for (const [k, v] of sortedEntries(sel.matchLabels)) reqs.push([k, `${k}=${v}`]);
  const exprs = Array.isArray(sel.matchExpressions) ? sel.matchExpressions : [];
  for (const e of exprs) {
    const key = String(e?.key ?? '');
    const values: string[] = Array.isArray(e?.values) ? e.values.map(String).sort() : [];
    switch (e?.operator) {
      case 'In':
        if (values.length === 0) return null;
        reqs.push([key, `${key} in (${values.join(',')})`]);
        break;
      case 'NotIn':
        if (values.length === 0) return null;
        reqs.push([key, `${key} notin (${values.join(',')})`]);
        break;
      case 'Exists':
        if (values.length) return null;
        reqs.push([key, key]);
        break;
      case 'DoesNotExist':
        if (values.length) return null;
        reqs.push([key, `!${key}`]);
        break;
      default:
        return null;
    }
  }
  // A stable sort by key keeps matchLabels before expressions on the same key.
  reqs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return reqs.map((r) => r[1]).join(',');
}

/** metav1.FormatLabelSelector: "<none>" for empty, "<error>" for malformed. */
export function formatLabelSelector(sel: any): string {
  const s = selectorString(sel);
  if (s === null) return '<error>';
  return s === '' ? '<none>' : s;
}

/** Container names and images, comma-joined, for the wide columns of workloads. */
export function containerCells(containers: unknown): [string, string] {
  const list = Array.isArray(containers) ? containers : [];
  return [list.map((c) => String(c?.name ?? '')).join(','), list.map((c) => String(c?.image ?? '')).join(',')];
}

export function boolPtr(v: unknown): string {
  if (v === true) return 'True';
  if (v === false) return 'False';
  return '<unset>';
}

export function int(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? Math.trunc(v) : 0;
}

export function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

export function len(v: unknown): number {
  if (Array.isArray(v)) return v.length;
  if (v && typeof v === 'object') return Object.keys(v).length;
  return 0;
}

/** net.JoinHostPort: IPv6 literals in brackets. */
export function joinHostPort(host: string, port: number | string): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** "a,b,c + 2 more..." after `max` entries (the `count` is of everything seen). */
export function listWithMore(list: string[], count: number, max: number): string {
  const s = list.join(',');
  return count > max ? `${s} + ${count - max} more...` : s;
}
