// The bench report: a table on stdout, JSON under bench/results/, and a self-contained
// HTML page with inline SVG charts (no scripts, no network).
//
// A report holds one server's results, or two (kubeshard and a reference server, measured in
// the same run: `npm run bench -- --reference KUBECONFIG`), drawn side by side with the ratio
// of each figure. Two result files of earlier runs merge into one comparison report:
//
//   node dist/bench/report.js --compare A.json B.json [--out FILE.html]
//   node dist/bench/report.js A.json [--out FILE.html]        (the page of one result file again)
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ProcSample } from './lib.js';

/** What the charts draw through a run, second by second. */
export interface ScenarioSeries {
  /** requests (or events, or lists) completed in each second of the run: 1 s buckets */
  perSecond?: number[];
  /** the unit of perSecond: 'req/s', 'events/s', 'lists/s' */
  perSecondUnit?: string;
  /**
   * watch event latency (ms) per second: p50 and p99 (null: no event that second), measured
   * as eventLatencyFrom says
   */
  eventP50?: Array<number | null>;
  eventP99?: Array<number | null>;
  /**
   * 'ack': from each create's acknowledgement (its 201 reaching the writer, the issue's
   * definition) to the event's arrival at the fleet's sampled raw watches; 'send' (and
   * results written before it was recorded): from the writer's send time, at the sampler watches
   */
  eventLatencyFrom?: 'ack' | 'send';
  /** with eventLatencyFrom 'ack': the same arrivals' latency from the send, per second */
  eventSendP50?: Array<number | null>;
  eventSendP99?: Array<number | null>;
  /** where the run's phases begin, in seconds from its start */
  phases?: Array<{ at: number; name: string }>;
  /** [open watches, server RSS in MB] while a fleet of watches opened */
  rssByWatchers?: Array<[number, number]>;
}

export interface ScenarioResult {
  scenario: string;
  /** what was measured, e.g. { rps: 1234, p50: 3, p90: 5, p99: 12, p999: 30 } */
  metrics: Record<string, number>;
  /** the issue's goal for the headline metric, in words */
  goal?: string;
  reached?: boolean;
  before?: ProcSample;
  after?: ProcSample;
  notes?: string;
  series?: ScenarioSeries;
}

/** One server's results. */
export interface RunResults {
  /** a short name for legends: "kubeshard", "kube-apiserver v1.24.0" */
  name: string;
  /** where it ran and how it was measured, in words */
  target: string;
  startedAt?: string;
  results: ScenarioResult[];
}

export interface Report {
  target: string;
  /** the first server's short name (kubeshard when the bench started it) */
  name?: string;
  machine: { cpus: number; memoryGiB: number; node: string; platform: string };
  startedAt: string;
  /** seconds per load run */
  seconds?: number;
  results: ScenarioResult[];
  /** the second server of the run (the reference), scenario by scenario after the first */
  reference?: RunResults;
}

function fmt(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '-';
  if (Number.isInteger(n)) return n.toLocaleString('en-US');
  if (Math.abs(n) >= 100) return Math.round(n).toLocaleString('en-US');
  return n.toFixed(Math.abs(n) >= 10 ? 1 : 2);
}

/** A ratio, to two significant digits at least: 0.12, 1.5, 23, 1,250. */
function fmtRatio(r: number): string {
  if (!Number.isFinite(r)) return '-';
  if (r >= 100) return Math.round(r).toLocaleString('en-US');
  if (r >= 10) return r.toFixed(1);
  if (r >= 0.1) return r.toFixed(2);
  return r.toPrecision(2);
}

const nameOf = (r: Report) => r.name ?? 'this server';

export function table(r: Report): string {
  const lines = [`target: ${r.target}   machine: ${r.machine.cpus} cpus, ${r.machine.memoryGiB} GiB, node ${r.machine.node}`];
  const rows = r.results.map((s) => {
    const m = Object.entries(s.metrics).map(([k, v]) => `${k}=${fmt(v)}`).join(' ');
    const cpu = s.before && s.after ? ` cpu=${fmt(s.after.cpuSeconds - s.before.cpuSeconds)}s rss=${fmt(s.after.rssBytes / 2 ** 20)}MB` : '';
    return [s.scenario, m + cpu, s.goal ? `${s.reached ? 'met' : 'NOT met'}: ${s.goal}` : ''];
  });
  const w0 = Math.max(8, ...rows.map((x) => x[0].length)) + 2;
  const w1 = Math.max(7, ...rows.map((x) => x[1].length)) + 2;
  lines.push('scenario'.padEnd(w0) + 'metrics'.padEnd(w1) + 'goal');
  for (const [a, b, c] of rows) lines.push(a.padEnd(w0) + b.padEnd(w1) + c);
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------
// The comparison: which figure of each scenario is its headline, and which way is better.

interface Headline {
  key: string;
  unit: string;
  higherIsBetter: boolean;
}

const HEADLINES: Array<Headline & { when: (m: Record<string, number>) => boolean }> = [
  { key: 'rps', unit: 'req/s', higherIsBetter: true, when: (m) => m.rps !== undefined },
  { key: 'eventsPerSec', unit: 'events/s', higherIsBetter: true, when: (m) => m.eventsPerSec !== undefined },
  { key: 'ms', unit: 'ms', higherIsBetter: false, when: (m) => m.ms !== undefined },
  { key: 'seconds', unit: 's', higherIsBetter: false, when: (m) => m.seconds !== undefined },
  { key: 'rssMB', unit: 'MB RSS', higherIsBetter: false, when: (m) => m.rssMB !== undefined },
];

function headlineOf(s: ScenarioResult): Headline | undefined {
  return HEADLINES.find((h) => h.when(s.metrics));
}

/** Scenarios of both runs, in the first run's order (then those only the second has). */
function pairs(r: Report): Array<{ scenario: string; a?: ScenarioResult; b?: ScenarioResult }> {
  const out: Array<{ scenario: string; a?: ScenarioResult; b?: ScenarioResult }> = [];
  const bs = new Map((r.reference?.results ?? []).map((s) => [s.scenario, s]));
  for (const a of r.results) {
    out.push({ scenario: a.scenario, a, b: bs.get(a.scenario) });
    bs.delete(a.scenario);
  }
  for (const b of bs.values()) out.push({ scenario: b.scenario, b });
  return out;
}

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : NaN);

/** "8.3× better" / "2.1× worse" / "same", for a ratio a/b of a metric. */
function verdict(a: number, b: number, higherIsBetter: boolean): { text: string; better: boolean | undefined } {
  if (!(a > 0) || !(b > 0)) return { text: '', better: undefined };
  const gain = higherIsBetter ? a / b : b / a;
  if (Math.abs(gain - 1) < 0.05) return { text: 'about the same', better: undefined };
  return gain > 1 ? { text: `${fmtRatio(gain)}× better`, better: true } : { text: `${fmtRatio(1 / gain)}× worse`, better: false };
}

/** The comparison as text (stdout): scenario, headline metric, both figures, the ratio. */
export function comparisonTable(r: Report): string {
  const refName = r.reference?.name ?? 'reference';
  const rows = pairs(r).map(({ scenario, a, b }) => {
    const h = headlineOf(a ?? b!);
    if (!h) return [scenario, '', '', '', ''];
    const va = num(a?.metrics[h.key]);
    const vb = num(b?.metrics[h.key]);
    const v = verdict(va, vb, h.higherIsBetter);
    return [scenario, h.unit, fmt(va), fmt(vb), Number.isFinite(va / vb) ? `${fmtRatio(va / vb)} (${v.text})` : '-'];
  });
  const head = ['scenario', 'unit', nameOf(r), refName, `ratio ${nameOf(r)} / ${refName}`];
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((x) => x[i].length)) + 2);
  return [head, ...rows].map((row) => row.map((c, i) => c.padEnd(w[i])).join('')).join('\n');
}

// ---------------------------------------------------------------------------------------
// Drawing. Every chart is an SVG of a fixed size in px (scaled down, never clipped, on a
// window narrower than it). Text that has a limited room carries data-maxw (px): the
// screenshot check (bench/screenshot.ts) measures it in a real browser.

function esc(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}

const FONT = `'DejaVu Sans', Verdana, sans-serif`;
const COLOR_A = '#2563eb';
const COLOR_B = '#ea7a0c';
const MUTED = '#6b7280';
const GRID = '#e5e7eb';

/**
 * An upper estimate of a string's width in px at a font size, from DejaVu Sans's advance
 * widths (the default sans-serif on Debian; Verdana's are close), rounded up.
 */
export function textWidth(s: string, size: number): number {
  let w = 0;
  for (const ch of s) {
    if (ch >= '0' && ch <= '9') w += 0.64;
    else if (ch === ' ' || ch === '.' || ch === ',' || ch === ':' || ch === ';' || ch === "'" || ch === '|' || ch === '·') w += 0.33;
    else if ('iljI!'.includes(ch)) w += 0.3;
    else if ('frt()[]-/'.includes(ch)) w += 0.43;
    else if ('mwMW%'.includes(ch)) w += 1.0;
    else if (ch >= 'A' && ch <= 'Z') w += 0.78;
    else if (ch >= 'a' && ch <= 'z') w += 0.64;
    else w += 1.0; // ×, ≥, ¼, µ, ÷, …
  }
  return Math.ceil(w * size);
}

/** Words into lines of at most maxW px (a word longer than a line is cut at a character). */
export function wrap(s: string, maxW: number, size: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of s.split(/\s+/).filter(Boolean)) {
    const candidate = line ? `${line} ${word}` : word;
    if (textWidth(candidate, size) <= maxW) {
      line = candidate;
      continue;
    }
    if (line) lines.push(line);
    line = word;
    while (textWidth(line, size) > maxW && line.length > 1) {
      let cut = line.length - 1;
      while (cut > 1 && textWidth(line.slice(0, cut), size) > maxW) cut--;
      lines.push(line.slice(0, cut));
      line = line.slice(cut);
    }
  }
  if (line) lines.push(line);
  return lines.length ? lines : [''];
}

/** A text element; maxW (px) is the room it has, checked by the screenshot script. */
function text(x: number, y: number, s: string, o: { size?: number; anchor?: 'start' | 'middle' | 'end'; fill?: string; weight?: string; maxW?: number; extra?: string } = {}): string {
  const size = o.size ?? 12;
  return `<text x="${r1(x)}" y="${r1(y)}" font-size="${size}"${o.anchor && o.anchor !== 'start' ? ` text-anchor="${o.anchor}"` : ''}${o.fill ? ` fill="${o.fill}"` : ''}${o.weight ? ` font-weight="${o.weight}"` : ''}${o.maxW !== undefined ? ` data-maxw="${Math.floor(o.maxW)}"` : ''}${o.extra ?? ''}>${esc(s)}</text>`;
}

const r1 = (v: number) => Math.round(v * 10) / 10;

function svg(w: number, h: number, body: string, label: string): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="${esc(label)}" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" font-family="${FONT}">${body}</svg>`;
}

/** Round tick values from 0 to at least max. */
function linearTicks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw)!;
  const ticks: number[] = [];
  for (let v = 0; v < max + step * 0.999; v += step) ticks.push(Math.round(v / step) * step);
  return ticks;
}

/** Ticks of a log axis covering [min, max]: 1, 2, 5 times the powers of ten. */
function logTicks(min: number, max: number): number[] {
  const lo = 10 ** Math.floor(Math.log10(min));
  const hi = 10 ** Math.ceil(Math.log10(max));
  const ticks: number[] = [];
  for (let p = lo; p <= hi * 1.0001; p *= 10) for (const m of [1, 2, 5]) if (p * m >= lo && p * m <= hi * 1.0001) ticks.push(p * m);
  // few decades: keep 1, 2, 5; many: the powers of ten alone
  const decades = Math.log10(hi / lo);
  const kept = decades > 3 ? ticks.filter((t) => Math.abs(Math.log10(t) - Math.round(Math.log10(t))) < 1e-9) : ticks;
  // the axis from the last tick below min to the first above max
  const first = kept.filter((t) => t <= min * 1.0001).pop() ?? kept[0];
  const last = kept.find((t) => t >= max * 0.9999) ?? kept[kept.length - 1];
  return kept.filter((t) => t >= first && t <= last);
}

function tickLabel(v: number): string {
  if (v >= 1e6) return `${fmtShort(v / 1e6)}M`;
  if (v >= 1e4) return `${fmtShort(v / 1e3)}k`;
  if (v >= 1000) return Math.round(v).toLocaleString('en-US');
  return fmtShort(v);
}

function fmtShort(v: number): string {
  return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(3)));
}

interface BarRow {
  label: string;
  a?: number;
  b?: number;
}

/**
 * Horizontal grouped bars: per row, the first server's bar above the second's, each with its
 * value, and the ratio (first ÷ second) with its verdict in a column of its own.
 */
function groupedBars(o: { title: string; unit: string; higherIsBetter: boolean; rows: BarRow[]; names: [string, string?]; width?: number }): string {
  const two = o.names[1] !== undefined && o.rows.some((r) => r.b !== undefined && Number.isFinite(r.b));
  const W = o.width ?? 840;
  const LW = 250; // the label column
  const RW = two ? 150 : 0; // the ratio column
  const size = 12;
  const barH = 15;
  const x0 = LW + 12;
  const values = o.rows.flatMap((r) => [r.a, r.b]).filter((v): v is number => v !== undefined && Number.isFinite(v));
  const valueRoom = Math.max(0, ...values.map((v) => textWidth(`${fmt(v)} ${o.unit}`, 11))) + 10;
  const barMax = W - RW - x0 - valueRoom;
  const max = Math.max(1e-9, ...values);
  let y = 8;
  const parts: string[] = [];
  for (const row of o.rows) {
    const lines = wrap(row.label, LW - 8, size);
    const barsH = two ? 2 * barH + 3 : barH;
    const h = Math.max(lines.length * 15, barsH, two ? 30 : 0);
    const mid = y + h / 2;
    lines.forEach((l, i) => parts.push(text(LW - 8, mid - (lines.length * 15) / 2 + 11.5 + i * 15, l, { size, anchor: 'end', maxW: LW - 8 })));
    const bar = (v: number | undefined, by: number, color: string) => {
      if (v === undefined || !Number.isFinite(v)) {
        parts.push(text(x0 + 4, by + 11.5, 'not measured', { size: 11, fill: MUTED }));
        return;
      }
      const bw = Math.max(1.5, (v / max) * barMax);
      parts.push(`<rect x="${x0}" y="${r1(by)}" width="${r1(bw)}" height="${barH}" fill="${color}" rx="2"/>`);
      parts.push(text(x0 + bw + 5, by + 11.5, `${fmt(v)} ${o.unit}`, { size: 11, maxW: valueRoom }));
    };
    const top = mid - barsH / 2;
    bar(row.a, top, COLOR_A);
    if (two) {
      bar(row.b, top + barH + 3, COLOR_B);
      const a = row.a ?? NaN;
      const b = row.b ?? NaN;
      if (a > 0 && b > 0) {
        const v = verdict(a, b, o.higherIsBetter);
        parts.push(text(W - RW + 12, mid - 2, `×${fmtRatio(a / b)}`, { size: 13, weight: 'bold', maxW: RW - 14 }));
        parts.push(text(W - RW + 12, mid + 13, v.text, { size: 11, fill: v.better === undefined ? MUTED : v.better ? '#15803d' : '#b91c1c', maxW: RW - 14 }));
      }
    }
    y += h + 10;
    parts.push(`<line x1="0" x2="${W}" y1="${r1(y - 5)}" y2="${r1(y - 5)}" stroke="${GRID}"/>`);
  }
  parts.unshift(`<line x1="${x0}" x2="${x0}" y1="4" y2="${r1(y - 5)}" stroke="#9ca3af"/>`);
  const legend = two ? `<p class="legend">${swatch(COLOR_A)} ${esc(o.names[0])} ${swatch(COLOR_B)} ${esc(o.names[1]!)}; ratio = ${esc(o.names[0])} ÷ ${esc(o.names[1]!)} (${o.higherIsBetter ? 'higher' : 'lower'} is better)</p>` : '';
  return `<section class="card chart"><h3>${esc(o.title)}</h3>${legend}${svg(W, Math.ceil(y), parts.join(''), o.title)}</section>`;
}

function swatch(color: string, dashed = false): string {
  return dashed
    ? `<svg width="22" height="10" class="sw" aria-hidden="true"><line x1="1" x2="21" y1="5" y2="5" stroke="${color}" stroke-width="2.5" stroke-dasharray="4 3"/></svg>`
    : `<span class="sw" style="background:${color}"></span>`;
}

interface Line {
  points: Array<[number, number | null]>;
  color: string;
  dashed?: boolean;
  dots?: boolean;
}

/**
 * A line chart: x linear (or categorical with xLabels), y linear from 0 or log. Gaps (null)
 * break a line. Vertical markers (phases) are drawn with their names in rows of their own.
 */
function lineChart(o: { title: string; lines: Line[]; xTitle: string; yTitle: string; logY?: boolean; xLabels?: string[]; markers?: Array<{ at: number; name: string; color?: string }>; width?: number; height?: number; xMax?: number }): string {
  const W = o.width ?? 414;
  const H = o.height ?? 250;
  const all = o.lines.flatMap((l) => l.points).filter((p): p is [number, number] => p[1] !== null && Number.isFinite(p[1]) && (!o.logY || p[1] > 0));
  if (all.length === 0) return '';
  const markers = o.markers ?? [];
  const size = 11;
  const yTicksRaw = o.logY ? logTicks(Math.min(...all.map((p) => p[1])), Math.max(...all.map((p) => p[1]))) : linearTicks(Math.max(...all.map((p) => p[1])));
  const yTicks = yTicksRaw.length >= 2 ? yTicksRaw : [yTicksRaw[0] / 10, yTicksRaw[0]];
  const left = Math.max(...yTicks.map((t) => textWidth(tickLabel(t), size))) + 26;
  const top = 10 + markers.length * 13;
  const right = 14;
  const bottom = 40;
  const pw = W - left - right;
  const ph = H - top - bottom;
  const xs = all.map((p) => p[0]);
  const xMin = o.xLabels ? 0 : 0;
  const xMax = o.xLabels ? o.xLabels.length - 1 : Math.max(o.xMax ?? 0, ...xs, ...markers.map((m) => m.at), 1);
  const px = (x: number) => left + (o.xLabels ? ((x + 0.5) / o.xLabels.length) * pw : ((x - xMin) / (xMax - xMin)) * pw);
  const yLo = yTicks[0];
  const yHi = yTicks[yTicks.length - 1];
  const py = (y: number) => (o.logY ? top + ph - ((Math.log10(y) - Math.log10(yLo)) / (Math.log10(yHi) - Math.log10(yLo))) * ph : top + ph - ((y - yLo) / (yHi - yLo)) * ph);
  const parts: string[] = [];
  for (const t of yTicks) {
    parts.push(`<line x1="${left}" x2="${W - right}" y1="${r1(py(t))}" y2="${r1(py(t))}" stroke="${GRID}"/>`);
    parts.push(text(left - 5, py(t) + 4, tickLabel(t), { size, anchor: 'end', fill: MUTED, maxW: left - 20 }));
  }
  if (o.xLabels) {
    o.xLabels.forEach((l, i) => parts.push(text(px(i), top + ph + 15, l, { size, anchor: 'middle', fill: MUTED, maxW: pw / o.xLabels!.length })));
  } else {
    const xt = linearTicks(xMax, Math.max(2, Math.floor(pw / 70))).filter((t) => t <= xMax * 1.0001);
    for (const t of xt) {
      parts.push(`<line x1="${r1(px(t))}" x2="${r1(px(t))}" y1="${top + ph}" y2="${top + ph + 4}" stroke="#9ca3af"/>`);
      // the last label ends at the tick when centring it would cross the chart's edge
      const atEdge = px(t) + textWidth(tickLabel(t), size) / 2 > W - 1;
      parts.push(text(px(t), top + ph + 15, tickLabel(t), { size, anchor: atEdge ? 'end' : 'middle', fill: MUTED, maxW: 60 }));
    }
  }
  parts.push(`<line x1="${left}" x2="${W - right}" y1="${top + ph}" y2="${top + ph}" stroke="#9ca3af"/><line x1="${left}" x2="${left}" y1="${top}" y2="${top + ph}" stroke="#9ca3af"/>`);
  parts.push(text(left + pw / 2, H - 6, o.xTitle, { size, anchor: 'middle', maxW: pw }));
  parts.push(text(12, top + ph / 2, o.yTitle, { size, anchor: 'middle', extra: ` transform="rotate(-90 12 ${r1(top + ph / 2)})"`, maxW: ph }));
  markers.forEach((m, i) => {
    const x = px(m.at);
    parts.push(`<line x1="${r1(x)}" x2="${r1(x)}" y1="${top - (markers.length - i) * 13 + 9}" y2="${top + ph}" stroke="${m.color ?? '#9ca3af'}" stroke-opacity="0.7" stroke-dasharray="3 3"/>`);
    // the name on the marker's right if it fits, else on its left
    const w = textWidth(m.name, 10);
    const right = x + 3 + w <= W - 2;
    parts.push(text(right ? x + 3 : x - 3, top - (markers.length - i) * 13 + 8, m.name, { size: 10, anchor: right ? 'start' : 'end', fill: m.color ?? MUTED, maxW: right ? W - x - 5 : x - 5 }));
  });
  for (const l of o.lines) {
    let d = '';
    let pen = false;
    for (const [x, y] of l.points) {
      if (y === null || !Number.isFinite(y) || (o.logY && y <= 0)) {
        pen = false;
        continue;
      }
      d += `${pen ? 'L' : 'M'}${r1(px(x))},${r1(py(y))}`;
      pen = true;
    }
    parts.push(`<path d="${d}" fill="none" stroke="${l.color}" stroke-width="2"${l.dashed ? ' stroke-dasharray="5 4"' : ''}/>`);
    if (l.dots) for (const [x, y] of l.points) if (y !== null && Number.isFinite(y) && (!o.logY || y > 0)) parts.push(`<circle cx="${r1(px(x))}" cy="${r1(py(y))}" r="3.5" fill="${l.color}"/>`);
  }
  return `<figure><figcaption>${esc(o.title)}</figcaption>${svg(W, H, parts.join(''), o.title)}</figure>`;
}

const PERCENTILES: Array<[string, string]> = [
  ['p50', 'p50'],
  ['p90', 'p90'],
  ['p99', 'p99'],
  ['p999', 'p99.9'],
];

function ratioCell(a: number, b: number, higherIsBetter: boolean): string {
  if (!(a > 0) || !(b > 0)) return '<td></td>';
  const v = verdict(a, b, higherIsBetter);
  return `<td class="num">×${fmtRatio(a / b)} <span class="${v.better === undefined ? 'same' : v.better ? 'better' : 'worse'}">${esc(v.text)}</span></td>`;
}

/** One load run: its latency percentiles, its requests per second through the run, and the figures. */
function runCard(scenario: string, a: ScenarioResult | undefined, b: ScenarioResult | undefined, names: [string, string?]): string {
  const runs = [a, b];
  const colors = [COLOR_A, COLOR_B];
  const percentileLines: Line[] = [];
  runs.forEach((s, i) => {
    if (!s) return;
    const pts = PERCENTILES.map(([k], j): [number, number | null] => [j, Number.isFinite(num(s.metrics[k])) ? s.metrics[k] : null]);
    if (pts.some((p) => p[1] !== null)) percentileLines.push({ points: pts, color: colors[i], dots: true });
  });
  const unit = a?.series?.perSecondUnit ?? b?.series?.perSecondUnit ?? 'req/s';
  const tputLines: Line[] = [];
  runs.forEach((s, i) => {
    const ps = s?.series?.perSecond;
    if (ps?.length) tputLines.push({ points: ps.map((v, j): [number, number] => [j + 0.5, v]), color: colors[i], dots: ps.length <= 12 });
  });
  const charts = [
    lineChart({ title: 'Latency percentiles (ms, log scale)', lines: percentileLines, xTitle: 'percentile', yTitle: 'ms', logY: true, xLabels: PERCENTILES.map((p) => p[1]) }),
    lineChart({ title: `Throughput through the run (${unit}, 1 s buckets)`, lines: tputLines, xTitle: 'seconds into the run', yTitle: unit, xMax: Math.max(...runs.map((s) => s?.series?.perSecond?.length ?? 0)) }),
  ].filter(Boolean);
  if (charts.length === 0) return '';
  const two = names[1] !== undefined && b !== undefined;
  const rows: Array<[string, string, boolean]> = [
    ...PERCENTILES.map(([k, label]): [string, string, boolean] => [k, `${label} (ms)`, false]),
    ['rps', `mean (${unit === 'lists/s' ? 'lists/s' : 'req/s'})`, true],
    ['cpuUsPerReq', 'server CPU per request (µs)', false],
  ];
  const trs = rows
    .filter(([k]) => Number.isFinite(num(a?.metrics[k])) || Number.isFinite(num(b?.metrics[k])) || (k === 'rps' && Number.isFinite(num(a?.metrics.lists))))
    .map(([k, label, hib]) => {
      const va = k === 'rps' && a?.metrics.rps === undefined && a?.metrics.lists !== undefined ? a.metrics.lists / Math.max(1, a.series?.perSecond?.length ?? 1) : num(a?.metrics[k]);
      const vb = k === 'rps' && b?.metrics.rps === undefined && b?.metrics.lists !== undefined ? b.metrics.lists / Math.max(1, b.series?.perSecond?.length ?? 1) : num(b?.metrics[k]);
      return `<tr><th scope="row">${esc(label)}</th><td class="num">${fmt(va)}</td>${two ? `<td class="num">${fmt(vb)}</td>${ratioCell(va, vb, hib)}` : ''}</tr>`;
    })
    .join('');
  const head = `<tr><th></th><th>${swatch(COLOR_A)} ${esc(names[0])}</th>${two ? `<th>${swatch(COLOR_B)} ${esc(names[1]!)}</th><th>ratio</th>` : ''}</tr>`;
  return `<section class="card run"><h3>${esc(scenario)}</h3><div class="charts">${charts.join('')}</div><table class="mini">${head}${trs}</table></section>`;
}

/** One watch run: events delivered per second, and the event latency per second. */
function watchCard(scenario: string, a: ScenarioResult | undefined, b: ScenarioResult | undefined, names: [string, string?]): string {
  const runs = [a, b];
  const colors = [COLOR_A, COLOR_B];
  const ev: Line[] = [];
  const lat: Line[] = [];
  runs.forEach((s, i) => {
    const se = s?.series;
    if (se?.perSecond?.length) ev.push({ points: se.perSecond.map((v, j): [number, number] => [j + 0.5, v]), color: colors[i] });
    if (se?.eventP99?.length) lat.push({ points: se.eventP99.map((v, j): [number, number | null] => [j + 0.5, v]), color: colors[i] });
    if (se?.eventP50?.length) lat.push({ points: se.eventP50.map((v, j): [number, number | null] => [j + 0.5, v]), color: colors[i], dashed: true });
  });
  const xMax = Math.max(...runs.map((s) => s?.series?.perSecond?.length ?? 0));
  // where each run's phases begin, in its colour
  // (a run whose fleet did not receive every event before the bench stopped waiting did not drain)
  const undrained = (s: ScenarioResult) => num(s.metrics.delivered) < num(s.metrics.expected);
  const markers = runs.flatMap((s, i) =>
    (s?.series?.phases ?? []).filter((p) => p.at > 0).map((p) => ({ ...p, name: p.name === 'drained' && undrained(s!) ? 'drain timed out' : p.name, color: colors[i] })),
  );
  const charts = [
    lineChart({ title: 'Events delivered per second (all watchers)', lines: ev, xTitle: 'seconds since the writer started', yTitle: 'events/s', markers, xMax }),
    lineChart({ title: 'Event latency per second (ms, log scale)', lines: lat, xTitle: 'seconds since the writer started', yTitle: 'ms', logY: true, markers, xMax }),
  ].filter(Boolean);
  if (charts.length === 0) return '';
  const two = names[1] !== undefined && b !== undefined;
  const rows: Array<[string, string, boolean]> = [
    ['eventsPerSec', 'events/s delivered', true],
    ['p50', 'p50 at full speed (ms)', false],
    ['p99', 'p99 at full speed (ms)', false],
    ['sendP50', 'p50 at full speed, from the send (ms)', false],
    ['sendP99', 'p99 at full speed, from the send (ms)', false],
    ['calmEventsPerSec', 'events/s offered at ¼ load', true],
    ['calmP50', 'p50 at ¼ load (ms)', false],
    ['calmP99', 'p99 at ¼ load (ms)', false],
    ['calmSendP50', 'p50 at ¼ load, from the send (ms)', false],
    ['calmSendP99', 'p99 at ¼ load, from the send (ms)', false],
    ['cpuNsPerEvent', 'server CPU per event (ns)', false],
    ['watchers', 'watchers open', true],
  ];
  // the share of the events due (every write times every watcher) that arrived before the bench stopped waiting
  const share = (s: ScenarioResult | undefined) => (s ? (100 * num(s.metrics.delivered)) / num(s.metrics.expected) : NaN);
  const shareRow = [a, b].some((s) => Number.isFinite(share(s)))
    ? `<tr><th scope="row">events delivered of those due (%)</th><td class="num">${fmt(share(a))}</td>${two ? `<td class="num">${fmt(share(b))}</td><td></td>` : ''}</tr>`
    : '';
  const trs =
    rows
      .filter(([k]) => Number.isFinite(num(a?.metrics[k])) || Number.isFinite(num(b?.metrics[k])))
      .map(([k, label, hib]) => `<tr><th scope="row">${esc(label)}</th><td class="num">${fmt(num(a?.metrics[k]))}</td>${two ? `<td class="num">${fmt(num(b?.metrics[k]))}</td>${ratioCell(num(a?.metrics[k]), num(b?.metrics[k]), hib)}` : ''}</tr>`)
      .join('') + shareRow;
  const head = `<tr><th></th><th>${swatch(COLOR_A)} ${esc(names[0])}</th>${two ? `<th>${swatch(COLOR_B)} ${esc(names[1]!)}</th><th>ratio</th>` : ''}</tr>`;
  // results written before the bench measured from the acknowledgement drew the samplers' latency from the send
  const fromAck = runs.some((s) => s?.series?.eventLatencyFrom === 'ack');
  const fromSend = runs.some((s) => s?.series?.eventP99?.length && s.series.eventLatencyFrom !== 'ack');
  const what =
    fromAck && !fromSend
      ? "of the events that arrived in that second at the sampled watches (about a hundred, spread over the fleet), from each create's acknowledgement (its 201 reaching the writer) to the event's arrival; the table gives the latency from the writer's send beside it"
      : fromAck
        ? "of the events that arrived in that second: from each create's acknowledgement at the fleet's sampled watches, or (results without that) from the writer's send at the sampler watches"
        : "of the sampler watches' events that arrived in that second, from the writer's send";
  const legend = `<p class="legend">Latency: solid p99, ${swatch(MUTED, true)} dashed p50 ${what}. Dotted verticals, in each server's colour: <i>drained</i>: every event of the full-speed writes delivered (<i>drain timed out</i>: 10 s passed first); <i>calm</i>: writes at a quarter of the delivered rate begin.</p>`;
  return `<section class="card run"><h3>${esc(scenario)}</h3><div class="charts">${charts.join('')}</div>${legend}<table class="mini">${head}${trs}</table></section>`;
}

function rssCard(r: Report, names: [string, string?]): string {
  const shadesA = [COLOR_A, '#60a5fa', '#1e3a8a'];
  const shadesB = [COLOR_B, '#fbbf24', '#9a3412'];
  /** one chart of the runs whose scenario passes pick: idle watches on the fresh server, or the watch runs */
  const chart = (title: string, pick: (s: ScenarioResult) => boolean) => {
    const lines: Line[] = [];
    const keys: string[] = [];
    const add = (results: ScenarioResult[] | undefined, shades: string[], name: string) => {
      let i = 0;
      for (const s of results ?? []) {
        const pts = s.series?.rssByWatchers;
        if (!pts?.length || !pick(s)) continue;
        const color = shades[i % shades.length];
        lines.push({ points: pts, color, dots: pts.length <= 8 });
        keys.push(`<li>${swatch(color)} ${esc(name)}: ${esc(s.scenario)}</li>`);
        i++;
      }
    };
    add(r.results, shadesA, names[0]);
    if (names[1] !== undefined) add(r.reference?.results, shadesB, names[1]);
    if (lines.length === 0) return '';
    return `<div>${lineChart({ title, lines, xTitle: 'watches open', yTitle: 'RSS (MB)' })}<ul class="keys">${keys.join('')}</ul></div>`;
  };
  const idle = chart('Idle watches, opened on the fresh server', (s) => s.scenario.startsWith('idle-watches'));
  const busy = chart('The watch runs\' watchers (after the other scenarios)', (s) => s.scenario.startsWith('watch '));
  if (!idle && !busy) return '';
  return `<section class="card chart"><h3>Server RSS (MB) against open watches</h3><p class="legend">Sampled every 250 ms while each fleet of watches opened, and once 2 s after (idle watches).</p><div class="charts">${idle}${busy}</div></section>`;
}

function summaryTable(r: Report, names: [string, string?]): string {
  const two = names[1] !== undefined;
  const rows = pairs(r)
    .map(({ scenario, a, b }) => {
      const h = headlineOf(a ?? b!);
      if (!h) return '';
      const va = num(a?.metrics[h.key]);
      const vb = num(b?.metrics[h.key]);
      const goal = a?.goal ? `<span class="${a.reached ? 'better' : 'worse'}">${a.reached ? '✔' : '✘'}</span> ${esc(a.goal)}` : '';
      return `<tr><td>${esc(scenario)}</td><td>${esc(h.unit)}</td><td class="num">${fmt(va)}</td>${two ? `<td class="num">${fmt(vb)}</td>${ratioCell(va, vb, h.higherIsBetter)}` : ''}<td>${goal}</td></tr>`;
    })
    .join('\n');
  const note = two ? `<p class="legend">Each scenario's headline figure. Ratio: ${esc(names[0])} ÷ ${esc(names[1]!)}, and how many times better or worse that is for ${esc(names[0])}.</p>` : '';
  return `<section class="card wide"><h2>Summary</h2>${note}<table class="summary"><tr><th>scenario</th><th>unit</th><th>${swatch(COLOR_A)} ${esc(names[0])}</th>${two ? `<th>${swatch(COLOR_B)} ${esc(names[1]!)}</th><th>ratio</th>` : ''}<th>goal (${esc(names[0])})</th></tr>${rows}</table></section>`;
}

function detailTable(run: RunResults): string {
  const rows = run.results
    .map((s) => `<tr><td>${esc(s.scenario)}</td><td class="metrics">${esc(Object.entries(s.metrics).map(([k, v]) => `${k}=${fmt(v)}`).join(', '))}</td><td class="num">${s.after ? fmt(s.after.rssBytes / 2 ** 20) + ' MB' : ''}</td><td class="num">${s.before && s.after ? fmt(s.after.cpuSeconds - s.before.cpuSeconds) + ' s' : ''}</td></tr>`)
    .join('\n');
  return `<section class="card wide"><h3>All figures: ${esc(run.name)}</h3><p class="legend">${esc(run.target)}</p><table class="detail"><tr><th>scenario</th><th>metrics</th><th>server RSS after</th><th>server CPU</th></tr>${rows}</table></section>`;
}

const CSS = `
*{box-sizing:border-box}
body{font-family:${FONT};margin:0;background:#f3f4f6;color:#111827;font-size:14px;line-height:1.4}
main{max-width:1860px;margin:0 auto;padding:18px 22px}
h1{font-size:22px;margin:0 0 6px}h2{font-size:17px;margin:0 0 8px}h3{font-size:15px;margin:0 0 6px;overflow-wrap:anywhere}
.meta{color:#374151;margin:0 0 14px;overflow-wrap:anywhere}
.grid{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.card{background:#fff;border:1px solid #d1d5db;border-radius:6px;padding:12px 14px;max-width:100%}
.card.wide{flex:1 1 100%}
.charts{display:flex;flex-wrap:wrap;gap:12px}
figure{margin:0}figcaption{font-size:12px;color:#374151;margin:0 0 2px;max-width:414px}
.card.run,.card.chart{width:870px}
ul.keys{list-style:none;padding:0;margin:2px 0 0;font-size:12px;color:#4b5563;max-width:414px}
svg{max-width:100%;height:auto;display:block}
svg.sw{display:inline-block;vertical-align:middle}
span.sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px}
.legend{font-size:12px;color:#4b5563;margin:4px 0 8px;max-width:860px;overflow-wrap:anywhere}
table{border-collapse:collapse}
td,th{border:1px solid #e5e7eb;padding:3px 8px;font-size:13px;text-align:left;vertical-align:top}
th{background:#f9fafb;font-weight:600}
td.num{text-align:right;white-space:nowrap}
td.metrics{overflow-wrap:anywhere;font-size:12px}
table.detail{width:100%}
table.summary th,table.mini th{white-space:nowrap}
table.mini th[scope=row]{white-space:normal}
table.mini{width:100%}
table.mini{margin-top:8px}
h2.section{margin:22px 0 10px}
.better{color:#15803d}.worse{color:#b91c1c}.same{color:${MUTED}}
`;

export function html(r: Report): string {
  const names: [string, string?] = [nameOf(r), r.reference?.name];
  const two = r.reference !== undefined;
  const ps = pairs(r);
  const bars = (title: string, unit: string, higherIsBetter: boolean, pick: (s: ScenarioResult) => number | undefined) => {
    const rows = ps
      .map(({ scenario, a, b }): BarRow => ({ label: scenario, a: a ? pick(a) : undefined, b: b ? pick(b) : undefined }))
      .filter((row) => (row.a !== undefined && Number.isFinite(row.a)) || (row.b !== undefined && Number.isFinite(row.b)));
    return rows.length ? groupedBars({ title, unit, higherIsBetter, rows, names }) : '';
  };
  const m = (k: string) => (s: ScenarioResult) => (s.metrics[k] === undefined || s.metrics[k] === null ? undefined : s.metrics[k]);
  const isWatch = (s: ScenarioResult) => s.scenario.startsWith('watch ');
  const runCards = ps
    .filter(({ a, b }) => [a, b].some((s) => s && !isWatch(s) && (s.metrics.p90 !== undefined || s.series?.perSecond?.length)))
    .map(({ scenario, a, b }) => runCard(scenario, a, b, names))
    .join('\n');
  const watchCards = ps
    .filter(({ a, b }) => [a, b].some((s) => s && isWatch(s)))
    .map(({ scenario, a, b }) => watchCard(scenario, a, b, names))
    .join('\n');
  const rssNote = (run: { name: string; target: string }) => `<li><b>${esc(run.name)}</b>: ${esc(run.target)}</li>`;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>kubeshard bench ${esc(r.startedAt)}</title>
<style>${CSS}</style></head><body><main>
<h1>Bench report${two ? `: ${esc(names[0])} and ${esc(names[1]!)} side by side` : `: ${esc(names[0])}`}</h1>
<div class="meta"><p>Started ${esc(r.startedAt)}${r.seconds ? `, ${r.seconds} s per load run` : ''}. Machine: ${r.machine.cpus} CPUs, ${r.machine.memoryGiB} GiB, Node ${esc(r.machine.node)}, ${esc(r.machine.platform)}; the load clients run on the same machine.${two ? ' Each scenario ran against the first server, then at once against the second: compare figures within this report only.' : ''}</p>
<ul>${rssNote({ name: names[0], target: r.target })}${r.reference ? rssNote(r.reference) : ''}</ul></div>
<div class="grid">
${summaryTable(r, names)}
${bars('Throughput (requests per second)', 'req/s', true, m('rps'))}
${bars('Server CPU per request (µs; steadier than req/s on a shared machine)', 'µs', false, m('cpuUsPerReq'))}
${bars('List time (ms, median)', 'ms', false, (s) => (s.metrics.ms === undefined ? undefined : s.metrics.ms))}
${bars('Watch: events delivered per second', 'events/s', true, m('eventsPerSec'))}
${bars('Server RSS (MB): idle, with idle watches, after each watch run', 'MB', false, (s) => (s.metrics.rssMB !== undefined ? s.metrics.rssMB : isWatch(s) && s.after ? s.after.rssBytes / 2 ** 20 : undefined))}
${rssCard(r, names)}
</div>
${runCards ? `<h2 class="section">Each load run: latency percentiles and throughput through the run</h2><div class="grid">${runCards}</div>` : ''}
${watchCards ? `<h2 class="section">Watch runs: delivery and event latency through the run</h2><div class="grid">${watchCards}</div>` : ''}
<h2 class="section">All figures</h2><div class="grid">
${detailTable({ name: names[0], target: r.target, results: r.results })}
${r.reference ? detailTable(r.reference) : ''}
</div>
</main></body></html>`;
}

export function writeReport(dir: string, r: Report): { json: string; html: string } {
  mkdirSync(dir, { recursive: true });
  const stamp = r.startedAt.replace(/[:.]/g, '-');
  const json = join(dir, `bench-${stamp}.json`);
  const page = join(dir, `bench-${stamp}.html`);
  writeFileSync(json, JSON.stringify(r, null, 2));
  writeFileSync(page, html(r));
  writeFileSync(join(dir, 'latest.json'), JSON.stringify(r, null, 2));
  writeFileSync(join(dir, 'latest.html'), html(r));
  return { json, html: page };
}

/**
 * Two result files as one comparison: a's first server beside b's first server (b's own
 * reference, if it has one, is left out). The machine and start time are a's.
 */
export function mergeReports(a: Report, b: Report): Report {
  return {
    ...a,
    reference: { name: b.name ?? (b.target.startsWith('kubeshard') ? 'kubeshard' : b.target), target: `${b.target}, started ${b.startedAt}`, startedAt: b.startedAt, results: b.results },
  };
}

function cli(argv: string[]): void {
  const out = argv.includes('--out') ? argv[argv.indexOf('--out') + 1] : undefined;
  const files = argv.filter((x, i) => !x.startsWith('--') && argv[i - 1] !== '--out');
  const read = (f: string) => JSON.parse(readFileSync(f, 'utf8')) as Report;
  if (argv.includes('--compare')) {
    if (files.length !== 2) throw new Error('usage: report.js --compare A.json B.json [--out FILE.html]');
    const merged = mergeReports(read(files[0]), read(files[1]));
    const page = out ?? join(dirname(resolve(files[0])), `compare-${basename(files[0], '.json')}-${basename(files[1], '.json')}.html`);
    writeFileSync(page, html(merged));
    writeFileSync(page.replace(/\.html$/, '') + '.json', JSON.stringify(merged, null, 2));
    console.log(comparisonTable(merged));
    console.log(`\nHTML: ${page}`);
    return;
  }
  if (files.length !== 1) throw new Error('usage: report.js --compare A.json B.json [--out FILE.html] | report.js RESULT.json [--out FILE.html]');
  const r = read(files[0]);
  const page = out ?? resolve(files[0]).replace(/\.json$/, '') + '.html';
  writeFileSync(page, html(r));
  console.log(r.reference ? comparisonTable(r) : table(r));
  console.log(`\nHTML: ${page}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    cli(process.argv.slice(2));
  } catch (e) {
    console.error((e as Error).message);
    process.exit(2);
  }
}
