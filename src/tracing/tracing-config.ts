// --tracing-config-file: kube's TracingConfiguration (apiserver.config.k8s.io v1, v1beta1 or
// v1alpha1; kube's ReadTracingConfiguration and ValidateTracingConfiguration): an endpoint and a
// sampling rate per million. The endpoint is where spans are exported: kube-apiserver speaks
// OTLP/gRPC to it (default localhost:4317); this server exports OTLP/HTTP with JSON bodies
// (the npm OpenTelemetry exporter), so the endpoint names a collector's OTLP/HTTP receiver:
// "host:port" (default localhost:4318, that receiver's usual port) becomes
// http://host:port/v1/traces; a URL with a scheme is used as given, /v1/traces added when it
// has no path.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';

const GROUP = 'apiserver.config.k8s.io';
const VERSIONS = new Set(['v1', 'v1beta1', 'v1alpha1']);
/** kube's default endpoint is OTLP/gRPC's port; ours is OTLP/HTTP's (see above) */
export const DEFAULT_ENDPOINT = 'localhost:4318';

export interface TracingConfig {
  /** the OTLP/HTTP traces URL spans are posted to */
  url: string;
  /** the endpoint as written (or the default) */
  endpoint: string;
  samplingRatePerMillion: number;
}

/** The traces URL an endpoint names (see the header). */
export function tracesUrl(endpoint: string): string {
  if (/^https?:\/\//.test(endpoint)) {
    const u = new URL(endpoint);
    if (u.pathname === '/' || u.pathname === '') u.pathname = '/v1/traces';
    return u.toString();
  }
  return `http://${endpoint}/v1/traces`;
}

/** Reads and checks a TracingConfiguration; a bad file stops start-up with kube's kind of message. */
export function readTracingConfig(file: string): TracingConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`unable to read tracing configuration from "${file}": ${(e as Error).message}`);
  }
  let doc: any;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw new Error(`unable to decode tracing configuration data: ${(e as Error).message}`);
  }
  if (!doc || typeof doc !== 'object') throw new Error('unable to decode tracing configuration data: not an object');
  const [group, version] = String(doc.apiVersion ?? '').split('/');
  if (group !== GROUP || !VERSIONS.has(version) || doc.kind !== 'TracingConfiguration') {
    throw new Error(`unable to decode tracing configuration data: no kind "${doc.kind ?? ''}" is registered for version "${doc.apiVersion ?? ''}"`);
  }
  const errs: string[] = [];
  const rate = doc.samplingRatePerMillion ?? 0;
  if (typeof rate !== 'number' || !Number.isInteger(rate)) errs.push(`samplingRatePerMillion: Invalid value: ${JSON.stringify(rate)}: must be an integer`);
  else if (rate < 0) errs.push(`samplingRatePerMillion: Invalid value: ${rate}: sampling rate must be positive`);
  else if (rate > 1_000_000) errs.push(`samplingRatePerMillion: Invalid value: ${rate}: sampling rate per million must be less than or equal to one million`);
  const endpoint = doc.endpoint === undefined || doc.endpoint === null || doc.endpoint === '' ? DEFAULT_ENDPOINT : doc.endpoint;
  let url = '';
  if (typeof endpoint !== 'string') errs.push(`endpoint: Invalid value: ${JSON.stringify(endpoint)}: must be a string`);
  else {
    try {
      url = tracesUrl(endpoint);
      new URL(url);
    } catch (e) {
      errs.push(`endpoint: Invalid value: "${endpoint}": ${(e as Error).message}`);
    }
  }
  if (errs.length) throw new Error(`invalid tracing configuration: ${errs.join(', ')}`);
  return { url, endpoint, samplingRatePerMillion: rate };
}
