// --tracing-config-file: kube's TracingConfiguration (apiserver.config.k8s.io v1, v1beta1 or
// v1alpha1; kube's ReadTracingConfiguration and ValidateTracingConfiguration): an endpoint and a
// sampling rate per million. Spans go to the endpoint over OTLP/gRPC without TLS, as
// kube-apiserver sends them (component-base/tracing NewProvider: the Go otlptracegrpc exporter
// with WithEndpoint and WithInsecure). The endpoint is therefore a gRPC target, not a URL:
// "host:port" (default localhost:4317, the collector's OTLP/gRPC port), or a gRPC name with a
// dns or unix scheme. kube's validateEndpoint refuses any other scheme, http and https
// included, and so does this file (start-up stops), with kube's message.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';

const GROUP = 'apiserver.config.k8s.io';
const VERSIONS = new Set(['v1', 'v1beta1', 'v1alpha1']);
/** kube's default: the OTLP/gRPC exporter's own default endpoint */
export const DEFAULT_ENDPOINT = 'localhost:4317';

export interface TracingConfig {
  /** what the gRPC exporter dials: "host:port" or "unix:///path" */
  target: string;
  /** the endpoint as written (or the default) */
  endpoint: string;
  samplingRatePerMillion: number;
}

/**
 * The gRPC target an endpoint names, or an error message. The scheme check is kube's
 * validateEndpoint (a name without "//" is read as dns://name). The npm exporter takes a
 * "host:port" or a "unix://" URL, so a dns name is reduced to its host:port (a DNS authority,
 * dns://server/host:port, is not honoured: the system resolver is used), and an abstract unix
 * socket, which kube accepts, is refused here because the npm exporter cannot dial one.
 */
export function grpcTarget(endpoint: string): { target: string } | { error: string } {
  const hasSlashes = endpoint.includes('//');
  const named = hasSlashes ? endpoint : `dns://${endpoint}`;
  let u: URL;
  try {
    u = new URL(named);
  } catch (e) {
    return { error: `endpoint: Invalid value: ${JSON.stringify(named)}: ${(e as Error).message}` };
  }
  const scheme = u.protocol.replace(/:$/, '');
  if (scheme !== 'dns' && scheme !== 'unix' && scheme !== 'unix-abstract') {
    return { error: `endpoint: Invalid value: ${JSON.stringify(named)}: unsupported scheme: ${scheme}.  Options are none, dns, unix, or unix-abstract.  See https://github.com/grpc/grpc/blob/master/doc/naming.md` };
  }
  if (scheme === 'unix-abstract') return { error: `endpoint: Invalid value: ${JSON.stringify(endpoint)}: abstract unix sockets are not supported by this server's OTLP exporter` };
  if (scheme === 'unix') return { target: endpoint };
  if (!hasSlashes) return { target: endpoint };
  // dns://[authority]/host:port: the name is the path
  const name = u.pathname.replace(/^\//, '') || u.host;
  if (!name) return { error: `endpoint: Invalid value: ${JSON.stringify(endpoint)}: no host` };
  return { target: name };
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
  let target = '';
  if (typeof endpoint !== 'string') errs.push(`endpoint: Invalid value: ${JSON.stringify(endpoint)}: must be a string`);
  else {
    const t = grpcTarget(endpoint);
    if ('error' in t) errs.push(t.error);
    else target = t.target;
  }
  if (errs.length) throw new Error(`invalid tracing configuration: ${errs.join(', ')}`);
  return { target, endpoint, samplingRatePerMillion: rate };
}
