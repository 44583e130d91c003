// The bench's HTML report (bench/report.ts): one server's results, or two side by side,
// drawn without scripts or anything from the network, and the text measures that keep its
// labels inside their room. (bench/screenshot.ts checks the layout in a real browser.)
import { describe, expect, it } from 'vitest';
import { comparisonTable, html, mergeReports, textWidth, wrap, type Report, type ScenarioResult } from '../bench/report.js';

const load = (scenario: string, rps: number, p50: number): ScenarioResult => ({
  scenario,
  metrics: { rps, p50, p90: p50 * 2, p99: p50 * 4, p999: p50 * 8, non2xx: 0, cpuUsPerReq: 1e6 / rps },
  series: { perSecond: [rps * 0.9, rps, rps * 1.1], perSecondUnit: 'req/s' },
  before: { rssBytes: 100 * 2 ** 20, cpuSeconds: 1 },
  after: { rssBytes: 120 * 2 ** 20, cpuSeconds: 2 },
});

const watch = (eventsPerSec: number): ScenarioResult => ({
  scenario: 'watch 1000 watchers',
  metrics: { watchers: 1000, eventsPerSec, p50: 30, p99: 80, calmP50: 5, calmP99: 9 },
  series: { perSecond: [eventsPerSec, eventsPerSec, 0, 1000], perSecondUnit: 'events/s', eventP50: [20, 30, null, 5], eventP99: [60, 80, null, 9], phases: [{ at: 0, name: 'full speed' }, { at: 2.2, name: 'drained' }, { at: 3, name: 'calm' }], rssByWatchers: [[0, 100], [500, 110], [1000, 121]] },
  after: { rssBytes: 121 * 2 ** 20, cpuSeconds: 9 },
});

const report = (name: string, k: number): Report => ({
  target: `${name} somewhere`,
  name,
  machine: { cpus: 2, memoryGiB: 24, node: 'v20', platform: 'linux/x64' },
  startedAt: '2026-11-26T04:00:00.000Z',
  seconds: 3,
  results: [
    { scenario: 'idle after start', metrics: { rssMB: 100 * k } },
    load('create (50 clients, a client with a rather long name that has to wrap onto more lines)', 10000 / k, 3 * k),
    { scenario: 'list 10k ConfigMaps, consistent', metrics: { ms: 5 * k, MB: 3.7 } },
    watch(500000 / k),
  ],
});

describe('bench report', () => {
  it('wraps a label into lines that fit, cutting a word only when it alone is too long', () => {
    const lines = wrap('get one object (50 clients, native client)', 120, 12);
    expect(lines.length).toBeGreaterThan(1);
    for (const l of lines) expect(textWidth(l, 12)).toBeLessThanOrEqual(120);
    expect(lines.join(' ')).toBe('get one object (50 clients, native client)');
    const long = wrap('x'.repeat(60), 100, 12);
    for (const l of long) expect(textWidth(l, 12)).toBeLessThanOrEqual(100);
    expect(long.join('')).toBe('x'.repeat(60));
  });

  it('renders one server alone: no ratio, no second server, nothing undefined', () => {
    const page = html(report('kubeshard', 1));
    expect(page).not.toMatch(/<script|undefined|NaN|https?:\/\/(?!www\.w3\.org)/);
    expect(page).not.toContain('ratio');
    expect(page).toContain('Latency percentiles');
    expect(page).toContain('Throughput through the run');
    expect(page).toContain('Event latency per second');
    expect(page).toContain('against open watches');
  });

  it('renders two servers side by side with the ratio of each figure', () => {
    const r = report('kubeshard', 1);
    r.reference = { name: 'kube-apiserver v1.24.0', target: 'the reference', results: report('x', 8).results };
    const page = html(r);
    expect(page).not.toMatch(/<script|undefined|NaN/);
    // throughput: 10,000 against 1,250 req/s, 8× the reference; list time 5 against 40 ms
    expect(page).toContain('×8.00');
    expect(page).toContain('8.00× better');
    expect(page).toContain('×0.13');
    const text = comparisonTable(r);
    expect(text).toMatch(/create .*10,000 +1,250 +8\.00/);
    expect(text).toMatch(/list 10k ConfigMaps, consistent +ms +5 +40 +0\.13 \(8\.00× better\)/);
  });

  it('says what the event latency is measured from: the acknowledgement, or (older results) the send', () => {
    const r = report('kubeshard', 1);
    const w = r.results[3];
    const old = html(r);
    expect(old).toContain("from the writer's send");
    expect(old).not.toContain('acknowledgement');
    w.metrics = { ...w.metrics, sendP50: 40, sendP99: 120, calmSendP50: 12, calmSendP99: 30 };
    w.series = { ...w.series, eventLatencyFrom: 'ack', eventSendP50: [40, 50, null, 12], eventSendP99: [100, 120, null, 30] };
    const page = html(r);
    expect(page).not.toMatch(/<script|undefined|NaN/);
    expect(page).toContain("from each create's acknowledgement");
    expect(page).toContain('p50 at ¼ load, from the send (ms)');
    expect(page).toContain('p99 at full speed, from the send (ms)');
  });

  it('merges two result files into one comparison, the second as the reference', () => {
    const merged = mergeReports(report('kubeshard', 1), report('kube-apiserver v1.24.0', 8));
    expect(merged.name).toBe('kubeshard');
    expect(merged.reference?.name).toBe('kube-apiserver v1.24.0');
    expect(merged.reference?.results[1].metrics.rps).toBe(1250);
    // JSON turns NaN into null: a result file read back still renders
    const back = JSON.parse(JSON.stringify({ ...merged, results: [{ scenario: 'idle after start', metrics: { rssMB: NaN } }, ...merged.results.slice(1)] })) as Report;
    expect(html(back)).not.toMatch(/undefined|NaN/);
  });
});
