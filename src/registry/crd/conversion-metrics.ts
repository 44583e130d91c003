// The metrics of CRD conversion webhooks, named, labelled and bucketed as kube-apiserver 1.33's
// apiextensions-apiserver has them (conversion/metrics.go): the webhook request count and
// latency by result and failure type, and the whole conversion's latency by CRD and versions.
// They live in the admission metrics' registry, which /metrics already appends.
//
// Thread ownership: the front thread that converts (one registry per thread, merged by /metrics).
import client from 'prom-client';
import { admissionMetrics } from '../../admission/webhook/metrics.js';

/** kube's ConversionWebhookErrorType values this server reports. */
export type ConversionFailureType = 'conversion_webhook_call_failure';

/** metrics.ExponentialBuckets(0.001, 2, 15) */
const CRD_BUCKETS = Array.from({ length: 15 }, (_, i) => 0.001 * 2 ** i);
const REQUEST_BUCKETS = [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 45, 60];

const registers = [admissionMetrics.registry];
const requests = new client.Counter({
  name: 'apiserver_conversion_webhook_request_total',
  help: '[ALPHA] Counter for conversion webhook requests with success/failure and failure error type',
  labelNames: ['result', 'failure_type'],
  registers,
});
const latency = new client.Histogram({
  name: 'apiserver_conversion_webhook_duration_seconds',
  help: '[ALPHA] Conversion webhook request latency',
  labelNames: ['result', 'failure_type'],
  buckets: REQUEST_BUCKETS,
  registers,
});
const crdLatency = new client.Histogram({
  name: 'apiserver_crd_conversion_webhook_duration_seconds',
  help: '[ALPHA] CRD webhook conversion duration in seconds',
  labelNames: ['crd_name', 'from_version', 'to_version', 'succeeded'],
  buckets: CRD_BUCKETS,
  registers,
});

/** One webhook call's outcome (kube's ObserveConversionWebhookSuccess / ...Failure). */
export function observeWebhookCall(seconds: number, failure?: ConversionFailureType): void {
  const labels = { result: failure ? 'failure' : 'success', failure_type: failure ?? '' };
  requests.inc(labels);
  latency.observe(labels, seconds);
}

/** One whole conversion (kube's converterMetric), when the versions differ. */
export function observeConversion(crdName: string, fromVersion: string, toVersion: string, seconds: number, succeeded: boolean): void {
  if (fromVersion === toVersion) return;
  crdLatency.observe({ crd_name: crdName, from_version: fromVersion, to_version: toVersion, succeeded: String(succeeded) }, seconds);
}
