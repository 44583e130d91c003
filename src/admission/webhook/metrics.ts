// kube-apiserver's admission metrics (apiserver/pkg/admission/metrics/metrics.go), named,
// labelled and bucketed as 1.33 has them, in a prom-client registry of their own that /metrics
// appends (as the encryption metrics' registry is: `admissionMetrics.text()`).
//
// Only what admission with webhooks touches is kept here: the per-webhook latency and
// request count, rejections, fail-open counts, and the per-step latency of the chain.
// Webhook calls cost a network round trip, so prom-client's per-update label hashing is of
// no weight here (unlike the request metrics of the hot path, src/metrics/request-metrics.ts).
//
// Thread ownership: the front thread that runs admission; one registry per process module
// instance (each front thread has its own, merged by the metrics endpoint's text merge).
import client from 'prom-client';
import type { Operation } from '../plugin.js';
import { Histogram } from '../../metrics/request-metrics.js';

/** kube's WebhookRejectionErrorType */
export type WebhookRejectionErrorType = 'calling_webhook_error' | 'apiserver_internal_error' | 'no_error';

const STEP_BUCKETS = [0.005, 0.025, 0.1, 0.5, 1.0, 2.5];
const WEBHOOK_BUCKETS = [0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10, 25];

const OPERATIONS: Operation[] = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'];
const OPERATION_SLOT: Record<Operation, number> = { CREATE: 0, UPDATE: 1, DELETE: 2, CONNECT: 3 };

/** Codes above 600 are counted as 600 (kube bounds the label's cardinality so). */
const code = (c: number) => String(c > 600 ? 600 : c);

export class AdmissionMetrics {
  readonly registry = new client.Registry();
  /** the step metric runs on every write: plain histograms by label key (no label hashing), written out by text() */
  private readonly step: Array<Histogram | undefined> = new Array(16);
  /** the controller metric: the same 16 slots per plugin name (found by name, no key string made) */
  private readonly controller = new Map<string, Array<Histogram | undefined>>();
  private readonly webhook: client.Histogram<string>;
  private readonly rejection: client.Counter<string>;
  private readonly failOpen: client.Counter<string>;
  private readonly requests: client.Counter<string>;
  private readonly matchConditionExclusions: client.Counter<string>;

  constructor() {
    const registers = [this.registry];
    this.webhook = new client.Histogram({
      name: 'apiserver_admission_webhook_admission_duration_seconds',
      help: '[STABLE] Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).',
      labelNames: ['name', 'type', 'operation', 'rejected'],
      buckets: WEBHOOK_BUCKETS,
      registers,
    });
    this.rejection = new client.Counter({
      name: 'apiserver_admission_webhook_rejection_count',
      help: '[ALPHA] Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.',
      labelNames: ['name', 'type', 'operation', 'error_type', 'rejection_code'],
      registers,
    });
    this.failOpen = new client.Counter({
      name: 'apiserver_admission_webhook_fail_open_count',
      help: '[ALPHA] Admission webhook fail open count, identified by name and broken out for each admission type (validating or mutating).',
      labelNames: ['name', 'type'],
      registers,
    });
    this.requests = new client.Counter({
      name: 'apiserver_admission_webhook_request_total',
      help: '[ALPHA] Admission webhook request total, identified by name and broken out for each admission type (validating or mutating) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.',
      labelNames: ['name', 'type', 'operation', 'code', 'rejected'],
      registers,
    });
    this.matchConditionExclusions = new client.Counter({
      name: 'apiserver_admission_match_condition_exclusions_total',
      help: '[ALPHA] Admission match condition evaluation exclusions count, identified by name of resource containing the match condition and broken out for each kind containing matchConditions (webhook or policy), operation and admission type (validate or admit).',
      labelNames: ['name', 'kind', 'type', 'operation'],
      registers,
    });
  }

  /** kube's ObserveAdmissionStep: one whole pass (admit or validate) of the chain. */
  observeStep(seconds: number, rejected: boolean, operation: Operation, type: 'admit' | 'validate'): void {
    // (a fixed slot per label set: no key string made per request)
    const i = (type === 'admit' ? 0 : 8) + OPERATION_SLOT[operation] * 2 + (rejected ? 1 : 0);
    (this.step[i] ??= new Histogram(STEP_BUCKETS)).observe(seconds);
  }

  /** kube's ObserveAdmissionController: one plugin's admit or validate step. */
  observeController(plugin: string, seconds: number, rejected: boolean, operation: Operation, type: 'admit' | 'validate'): void {
    let slots = this.controller.get(plugin);
    if (!slots) this.controller.set(plugin, (slots = new Array(16)));
    const i = (type === 'admit' ? 0 : 8) + OPERATION_SLOT[operation] * 2 + (rejected ? 1 : 0);
    (slots[i] ??= new Histogram(STEP_BUCKETS)).observe(seconds);
  }

  private controllerText(): string {
    if (this.controller.size === 0) return '';
    const name = 'apiserver_admission_controller_admission_duration_seconds';
    let out = `# HELP ${name} [STABLE] Time each admission plugin took, in seconds, by plugin name, operation, step type (validate or admit) and whether it refused.\n# TYPE ${name} histogram\n`;
    for (const plugin of [...this.controller.keys()].sort()) out += this.slotsText(name, this.controller.get(plugin)!, `name="${plugin}",`);
    return out;
  }

  private stepText(): string {
    if (!this.step.some(Boolean)) return '';
    const name = 'apiserver_admission_step_admission_duration_seconds';
    const out = `# HELP ${name} [STABLE] Admission sub-step latency histogram in seconds, broken out for each operation and API resource and step type (validate or admit).\n# TYPE ${name} histogram\n`;
    return out + this.slotsText(name, this.step, '');
  }

  /** The series of 16 slots (type, operation, rejected), each label set prefixed by `first`. */
  private slotsText(name: string, step: Array<Histogram | undefined>, first: string): string {
    let out = '';
    const slots = step.flatMap((h, i) => (h ? [{ h, type: i < 8 ? 'admit' : 'validate', operation: OPERATIONS[(i % 8) >> 1], rejected: String((i & 1) === 1) }] : []));
    slots.sort((a, b) => (a.operation < b.operation ? -1 : a.operation > b.operation ? 1 : a.rejected < b.rejected ? -1 : a.rejected > b.rejected ? 1 : a.type < b.type ? -1 : 1));
    for (const { h, type, operation, rejected } of slots) {
      const labels = `${first}operation="${operation}",rejected="${rejected}",type="${type}"`;
      let cum = 0;
      h.bounds.forEach((b, i) => {
        cum += h.counts[i];
        out += `${name}_bucket{${labels},le="${b}"} ${cum}\n`;
      });
      out += `${name}_bucket{${labels},le="+Inf"} ${h.count}\n${name}_sum{${labels}} ${h.sum}\n${name}_count{${labels}} ${h.count}\n`;
    }
    return out;
  }

  /** kube's ObserveWebhook: type is 'admit' (mutating) or 'validating', as kube labels them. */
  observeWebhook(name: string, seconds: number, rejected: boolean, operation: Operation, type: 'admit' | 'validating', status: number): void {
    this.requests.inc({ name, type, operation, code: code(status), rejected: String(rejected) });
    this.webhook.observe({ name, type, operation, rejected: String(rejected) }, seconds);
  }

  observeRejection(name: string, type: 'admit' | 'validating', operation: Operation, errorType: WebhookRejectionErrorType, rejectionCode: number): void {
    this.rejection.inc({ name, type, operation, error_type: errorType, rejection_code: code(rejectionCode) });
  }

  observeFailOpen(name: string, type: 'admit' | 'validating'): void {
    this.failOpen.inc({ name, type });
  }

  observeMatchConditionExclusion(name: string, type: 'admit' | 'validating', operation: Operation): void {
    this.matchConditionExclusions.inc({ name, kind: 'webhook', type, operation });
  }

  async text(): Promise<string> {
    return this.controllerText() + this.stepText() + (await this.registry.metrics());
  }
}

/** The process' (this thread's) admission metrics. */
export const admissionMetrics = new AdmissionMetrics();
