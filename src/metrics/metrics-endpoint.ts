// GET /metrics: the apiserver metrics (request-metrics.ts) followed by the process
// metrics prom-client collects (process_cpu_seconds_total, process_resident_memory_bytes,
// process_start_time_seconds, open descriptors, and Node's own nodejs_* series, which
// stand where kube-apiserver has its go_* ones), and the encryption at rest metrics
// (src/storage/encryption/metrics.ts). Prometheus' text format 0.0.4.
import client from 'prom-client';
import { sendBody } from '../http/respond.js';
import type { ApiRequest, ResponseSink } from '../http/types.js';
import type { RequestMetrics } from './request-metrics.js';
import { mergeMetricsText } from './merge-text.js';

const TEXT_FORMAT = 'text/plain; version=0.0.4; charset=utf-8';

/**
 * others: the other front threads' texts (front-threads.ts: request and encryption metrics), added up with this thread's
 * (merge-text.ts); the process metrics are this (the main) thread's alone.
 */
export function metricsHandler(metrics: RequestMetrics, others?: () => Promise<string[]>, extra?: () => Promise<string>): (req: ApiRequest, res: ResponseSink) => Promise<void> {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  for (const name of metrics.disabled) registry.removeSingleMetric(name);
  return async (req, res) => {
    // extra: metrics kept in registries of their own (encryption at rest's); the other
    // front threads send theirs with their request metrics, and the counts add up
    const own = metrics.render() + (extra ? await extra() : '');
    const theirs = others ? await others() : [];
    const text = (theirs.length ? mergeMetricsText([own, ...theirs]) : own) + (await registry.metrics());
    sendBody(req, res, 200, TEXT_FORMAT, text);
  };
}
