// GET /metrics: the apiserver metrics (request-metrics.ts) followed by the process
// metrics prom-client collects (process_cpu_seconds_total, process_resident_memory_bytes,
// process_start_time_seconds, open descriptors, and Node's own nodejs_* series, which
// stand where kube-apiserver has its go_* ones). Prometheus' text format 0.0.4.
import client from 'prom-client';
import { sendBody } from '../http/respond.js';
import type { ApiRequest, ResponseSink } from '../http/types.js';
import type { RequestMetrics } from './request-metrics.js';

const TEXT_FORMAT = 'text/plain; version=0.0.4; charset=utf-8';

export function metricsHandler(metrics: RequestMetrics): (req: ApiRequest, res: ResponseSink) => Promise<void> {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  for (const name of metrics.disabled) registry.removeSingleMetric(name);
  return async (req, res) => {
    const text = metrics.render() + (await registry.metrics());
    sendBody(req, res, 200, TEXT_FORMAT, text);
  };
}
