// PodSecurity's metrics as kube-apiserver 1.33 names them (k8s.io/pod-security-admission/metrics):
// pod_security_evaluations_total, pod_security_exemptions_total and pod_security_errors_total.
// Counted in plain maps (one key string per request, as src/metrics/request-metrics.ts does)
// and written out in Prometheus' text format on a scrape; each front thread has its own
// counts, which /metrics adds up with the other threads' (src/metrics/merge-text.ts).
//
// Thread ownership: the front thread whose plugin records into it (module state per thread).
import { type LevelVersion, versionString } from './api.js';
import type { Attributes } from '../plugin.js';

/** The server's own minor version: a policy version past it is counted as "future". */
const API_MINOR = 33;

export type Decision = 'allow' | 'deny';
export type Mode = 'enforce' | 'audit' | 'warn';

const esc = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');

/** kube's resourceLabel: pod, namespace, or controller for any workload. */
function resourceLabel(a: Attributes): string {
  if (a.groupResource.group === '') {
    if (a.groupResource.resource === 'pods') return 'pod';
    if (a.groupResource.resource === 'namespaces') return 'namespace';
  }
  return 'controller';
}
const operationLabel = (a: Attributes) => a.operation.toLowerCase();

export class PodSecurityMetrics {
  private readonly evaluations = new Map<string, number>();
  private readonly exemptions = new Map<string, number>();
  private readonly errors = new Map<string, number>();

  /** kube's RecordEvaluation: privileged and latest count as "latest", a version past this server's as "future". */
  evaluation(decision: Decision, lv: LevelVersion, mode: Mode, a: Attributes): void {
    const version = lv.version.latest || lv.level === 'privileged' ? 'latest' : lv.version.minor > API_MINOR ? 'future' : versionString(lv.version);
    const key = `decision="${decision}",mode="${mode}",policy_level="${lv.level}",policy_version="${version}",request_operation="${operationLabel(a)}",resource="${resourceLabel(a)}",subresource="${esc(a.subresource)}"`;
    this.evaluations.set(key, (this.evaluations.get(key) ?? 0) + 1);
  }

  exemption(a: Attributes): void {
    const key = `request_operation="${operationLabel(a)}",resource="${resourceLabel(a)}",subresource="${esc(a.subresource)}"`;
    this.exemptions.set(key, (this.exemptions.get(key) ?? 0) + 1);
  }

  error(fatal: boolean, a: Attributes): void {
    const key = `fatal="${fatal}",request_operation="${operationLabel(a)}",resource="${resourceLabel(a)}",subresource="${esc(a.subresource)}"`;
    this.errors.set(key, (this.errors.get(key) ?? 0) + 1);
  }

  /** The three counters in Prometheus' text format (each only once it has a series, as client_golang writes a CounterVec). */
  render(): string {
    const out: string[] = [];
    const counter = (name: string, help: string, series: Map<string, number>) => {
      if (series.size === 0) return;
      out.push(`# HELP ${name} [ALPHA] ${help}`, `# TYPE ${name} counter`);
      for (const key of [...series.keys()].sort()) out.push(`${name}{${key}} ${series.get(key)}`);
    };
    counter('pod_security_errors_total', 'Number of errors preventing normal evaluation. Non-fatal errors may result in the latest restricted profile being used for evaluation.', this.errors);
    counter('pod_security_evaluations_total', 'Number of policy evaluations that occurred, not counting ignored or exempt requests.', this.evaluations);
    counter('pod_security_exemptions_total', 'Number of exempt requests, not counting ignored or out of scope requests.', this.exemptions);
    return out.length ? out.join('\n') + '\n' : '';
  }
}

/** This thread's counts (the plugin records here unless given its own). */
export const podSecurityMetrics = new PodSecurityMetrics();
