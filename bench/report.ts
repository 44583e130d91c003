// The bench report: a table on stdout, JSON under bench/results/, and a self-contained
// HTML page with inline SVG charts (no scripts, no network).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ProcSample } from './lib.js';

export interface ScenarioResult {
  scenario: string;
  /** what was measured, e.g. { rps: 1234, p50: 3, p99: 12 } */
  metrics: Record<string, number>;
  /** the issue's goal for the headline metric, in words */
  goal?: string;
  reached?: boolean;
  before?: ProcSample;
  after?: ProcSample;
  notes?: string;
}

export interface Report {
  target: string;
  machine: { cpus: number; memoryGiB: number; node: string; platform: string };
  startedAt: string;
  results: ScenarioResult[];
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return '-';
  if (Math.abs(n) >= 100) return Math.round(n).toLocaleString('en-US');
  return n.toFixed(n >= 10 ? 1 : 2);
}

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

function esc(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}

function barChart(title: string, rows: Array<[string, number]>, unit: string): string {
  const w = 720;
  const rowH = 26;
  const h = 40 + rows.length * rowH;
  const max = Math.max(1, ...rows.map(([, v]) => (Number.isFinite(v) ? v : 0)));
  const bars = rows
    .map(([label, v], i) => {
      const y = 30 + i * rowH;
      const bw = Number.isFinite(v) ? Math.max(1, (v / max) * (w - 330)) : 0;
      return `<text x="0" y="${y + 16}" font-size="12">${esc(label)}</text><rect x="220" y="${y + 4}" width="${bw}" height="16" fill="#3b82f6"/><text x="${226 + bw}" y="${y + 16}" font-size="12">${fmt(v)} ${esc(unit)}</text>`;
    })
    .join('');
  return `<h3>${esc(title)}</h3><svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif">${bars}</svg>`;
}

function lineChart(title: string, points: Array<[number, number]>, xLabel: string, yLabel: string): string {
  if (points.length === 0) return '';
  const w = 720;
  const h = 300;
  const pad = 60;
  const xs = points.map((p) => p[0]);
  const ys = points.map((p) => p[1]);
  const xmax = Math.max(...xs, 1);
  const ymax = Math.max(...ys, 1);
  const px = (x: number) => pad + (x / xmax) * (w - 2 * pad);
  const py = (y: number) => h - pad + -(y / ymax) * (h - 2 * pad);
  const path = points.map((p, i) => `${i ? 'L' : 'M'}${px(p[0]).toFixed(1)},${py(p[1]).toFixed(1)}`).join(' ');
  const dots = points.map((p) => `<circle cx="${px(p[0])}" cy="${py(p[1])}" r="4" fill="#ef4444"/><text x="${px(p[0]) + 6}" y="${py(p[1]) - 6}" font-size="11">${fmt(p[1])}</text>`).join('');
  return `<h3>${esc(title)}</h3><svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif">
<line x1="${pad}" y1="${h - pad}" x2="${w - pad}" y2="${h - pad}" stroke="#333"/><line x1="${pad}" y1="${pad}" x2="${pad}" y2="${h - pad}" stroke="#333"/>
<text x="${w / 2}" y="${h - 20}" font-size="12" text-anchor="middle">${esc(xLabel)} (max ${fmt(xmax)})</text>
<text x="14" y="${h / 2}" font-size="12" transform="rotate(-90 14 ${h / 2})" text-anchor="middle">${esc(yLabel)}</text>
<path d="${path}" fill="none" stroke="#ef4444" stroke-width="2"/>${dots}</svg>`;
}

export function html(r: Report): string {
  const thr = r.results.filter((s) => s.metrics.rps !== undefined).map((s): [string, number] => [s.scenario, s.metrics.rps]);
  const lat: Array<[string, number]> = [];
  for (const s of r.results) {
    if (s.metrics.p50 !== undefined) lat.push([`${s.scenario} p50`, s.metrics.p50]);
    if (s.metrics.p99 !== undefined) lat.push([`${s.scenario} p99`, s.metrics.p99]);
    if (s.metrics.calmP50 !== undefined) lat.push([`${s.scenario} p50 at 25% load`, s.metrics.calmP50]);
    if (s.metrics.calmP99 !== undefined) lat.push([`${s.scenario} p99 at 25% load`, s.metrics.calmP99]);
  }
  const listMs = r.results.filter((s) => s.metrics.ms !== undefined).map((s): [string, number] => [s.scenario, s.metrics.ms]);
  const watch = r.results.filter((s) => s.scenario.startsWith('watch ')).map((s): [number, number] => [s.metrics.watchers, s.metrics.eventsPerSec]);
  const rss = r.results.filter((s) => s.metrics.watchers !== undefined && s.after).map((s): [number, number] => [s.metrics.watchers, s.after!.rssBytes / 2 ** 20]);
  const rows = r.results
    .map((s) => `<tr><td>${esc(s.scenario)}</td><td>${esc(Object.entries(s.metrics).map(([k, v]) => `${k}=${fmt(v)}`).join(', '))}</td><td>${s.goal ? `${s.reached ? '✔' : '✘'} ${esc(s.goal)}` : ''}</td><td>${s.after ? fmt(s.after.rssBytes / 2 ** 20) + ' MB' : ''}</td><td>${s.before && s.after ? fmt(s.after.cpuSeconds - s.before.cpuSeconds) + ' s' : ''}</td></tr>`)
    .join('\n');
  return `<!doctype html><html><head><meta charset="utf-8"><title>kubeshard bench ${esc(r.startedAt)}</title>
<style>body{font-family:sans-serif;margin:2em;max-width:960px}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px}</style></head><body>
<h1>Bench report</h1><p>Target: ${esc(r.target)}. Machine: ${r.machine.cpus} CPUs, ${r.machine.memoryGiB} GiB, Node ${esc(r.machine.node)}, ${esc(r.machine.platform)}. Started ${esc(r.startedAt)}.</p>
<table><tr><th>scenario</th><th>metrics</th><th>goal</th><th>server RSS after</th><th>server CPU</th></tr>${rows}</table>
${thr.length ? barChart('Throughput', thr, 'req/s') : ''}
${lat.length ? barChart('Latency', lat, 'ms') : ''}
${listMs.length ? barChart('List time', listMs, 'ms') : ''}
${lineChart('Watch: events/s delivered against watchers', watch, 'watchers', 'events/s')}
${lineChart('Server RSS (MB) against open watches', rss, 'watchers', 'RSS MB')}
</body></html>`;
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
