// Reading /metrics in tests: the samples of one metric, parsed from Prometheus' text format.
import { expect } from 'vitest';
import { request, type TestServer } from './server.js';

export interface Sample {
  labels: Record<string, string>;
  value: number;
}

export async function scrape(server: TestServer, name: string): Promise<Sample[]> {
  const r = await request(server, 'GET', '/metrics');
  expect(r.status).toBe(200);
  expect(r.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
  const out: Sample[] = [];
  for (const line of r.body.split('\n')) {
    const m = /^([a-z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    out.push({ labels, value: Number(m[3]) });
  }
  return out;
}
