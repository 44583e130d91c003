// The node agent's configuration: a KubeletConfiguration file (kubelet.config.k8s.io/v1beta1,
// the fields this agent uses), drop-ins from --config-dir merged over it, and the agent's
// defaults for what neither sets (kubelet's v1beta1 defaults).
//
// The merge follows spec 2.11, which is what kubelet's mergeKubeletConfigurations gets by
// decoding each drop-in's JSON onto the configuration decoded so far:
//   - a scalar field: the drop-in's value replaces the main one;
//   - a nested structure: merged field by field (recursively);
//   - a list: the drop-in's list replaces the whole list;
//   - a map: each key of the drop-in overrides or adds that key; the value of a key is
//     replaced whole, so in a map of string to list of strings (staticPodURLHeader) an
//     overridden key's list is replaced, never appended to.
// Drop-ins are the directory's files ending in ".conf", applied in lexical name order
// (kubelet's filepath.Walk order), each a KubeletConfiguration of the same apiVersion and kind.
// Command-line flags then override both (kubelet's precedence).
//
// A structure and a map merge alike for scalar values; they differ for a map whose values
// are structures (a key's value is replaced, not merged): FIELD_KINDS names the maps, so
// that difference holds for any such field added later.
//
// Thread ownership: pure functions; the agent's main thread reads the file at start-up.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';

export const CONFIG_API_VERSION = 'kubelet.config.k8s.io/v1beta1';
export const CONFIG_KIND = 'KubeletConfiguration';

/** The subset of KubeletConfiguration (v1beta1) this agent reads; other fields are kept but unused. */
export interface KubeletConfiguration {
  apiVersion?: string;
  kind?: string;
  address?: string;
  port?: number;
  healthzPort?: number;
  healthzBindAddress?: string;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  authentication?: {
    x509?: { clientCAFile?: string };
    webhook?: { enabled?: boolean; cacheTTL?: string };
    anonymous?: { enabled?: boolean };
  };
  authorization?: {
    mode?: string;
    webhook?: { cacheAuthorizedTTL?: string; cacheUnauthorizedTTL?: string };
  };
  nodeStatusUpdateFrequency?: string;
  nodeStatusReportFrequency?: string;
  nodeLeaseDurationSeconds?: number;
  featureGates?: Record<string, boolean>;
  maxPods?: number;
  podPidsLimit?: number;
  systemReserved?: Record<string, string>;
  kubeReserved?: Record<string, string>;
  evictionHard?: Record<string, string>;
  registerNode?: boolean;
  registerWithTaints?: Array<{ key: string; value?: string; effect: string }>;
  providerID?: string;
  staticPodURLHeader?: Record<string, string[]>;
  shutdownGracePeriod?: string;
  containerLogMaxSize?: string;
  containerLogMaxFiles?: number;
  [field: string]: unknown;
}

/**
 * The kinds of the fields whose merge is not "scalar" (structures, lists, maps), by
 * dotted path. A field not named here merges by what its value is: an object as a
 * structure, an array as a list, anything else as a scalar.
 */
export const FIELD_KINDS: Record<string, 'struct' | 'list' | 'map'> = {
  authentication: 'struct',
  'authentication.x509': 'struct',
  'authentication.webhook': 'struct',
  'authentication.anonymous': 'struct',
  authorization: 'struct',
  'authorization.webhook': 'struct',
  logging: 'struct',
  tracing: 'struct',
  featureGates: 'map',
  systemReserved: 'map',
  kubeReserved: 'map',
  evictionHard: 'map',
  evictionSoft: 'map',
  evictionSoftGracePeriod: 'map',
  evictionMinimumReclaim: 'map',
  qosReserved: 'map',
  staticPodURLHeader: 'map',
  registerWithTaints: 'list',
  clusterDNS: 'list',
  tlsCipherSuites: 'list',
  allowedUnsafeSysctls: 'list',
  enforceNodeAllocatable: 'list',
  shutdownGracePeriodByPodPriority: 'list',
  reservedMemory: 'list',
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A deep copy of a JSON value (configuration values are plain JSON). */
function copy<T>(v: T): T {
  return v === undefined ? v : JSON.parse(JSON.stringify(v));
}

/** `over` merged onto `base` as spec 2.11 says (neither argument is changed). */
export function mergeConfig(base: KubeletConfiguration, over: KubeletConfiguration): KubeletConfiguration {
  return mergeStruct(base, over, '') as KubeletConfiguration;
}

function mergeStruct(base: Record<string, unknown>, over: Record<string, unknown>, prefix: string): Record<string, unknown> {
  const out: Record<string, unknown> = copy(base) ?? {};
  for (const [field, value] of Object.entries(over)) {
    const path = prefix ? `${prefix}.${field}` : field;
    // A JSON null leaves a scalar or a structure as it was and empties a list or a map
    // (what decoding null into a Go value does).
    if (value === null) {
      const kind = FIELD_KINDS[path];
      if (kind === 'list' || kind === 'map') delete out[field];
      continue;
    }
    const kind = FIELD_KINDS[path] ?? (Array.isArray(value) ? 'list' : isObject(value) ? 'struct' : 'scalar');
    const current = out[field];
    if (kind === 'struct' && isObject(value)) out[field] = mergeStruct(isObject(current) ? current : {}, value, path);
    else if (kind === 'map' && isObject(value)) {
      // each key overrides or adds; a key's value (a list, a structure) is replaced whole
      const merged: Record<string, unknown> = isObject(current) ? { ...current } : {};
      for (const [k, v] of Object.entries(value)) merged[k] = copy(v);
      out[field] = merged;
    } else out[field] = copy(value); // scalar, or a list: replaced
  }
  return out;
}

export class ConfigError extends Error {}

/** One configuration file, checked to be a KubeletConfiguration. */
export function readConfigFile(path: string): KubeletConfiguration {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new ConfigError(`failed to load Kubelet config file ${path}, error: ${(e as Error).message}`);
  }
  if (doc == null) return {};
  if (!isObject(doc)) throw new ConfigError(`failed to load Kubelet config file ${path}, error: not a YAML or JSON object`);
  if (doc.kind !== undefined && doc.kind !== CONFIG_KIND) throw new ConfigError(`failed to load Kubelet config file ${path}, error: kind ${String(doc.kind)} is not ${CONFIG_KIND}`);
  if (doc.apiVersion !== undefined && doc.apiVersion !== CONFIG_API_VERSION) throw new ConfigError(`failed to load Kubelet config file ${path}, error: apiVersion ${String(doc.apiVersion)} is not ${CONFIG_API_VERSION}`);
  return doc as KubeletConfiguration;
}

/** The drop-in files of a directory: its *.conf files, in name order. */
export function dropInFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => n.endsWith('.conf'))
    .sort()
    .map((n) => join(dir, n))
    .filter((p) => statSync(p).isFile());
}

/** The main file (if any) with every drop-in of the directory (if any) merged over it, in order. */
export function loadConfig(file: string | undefined, dir: string | undefined): KubeletConfiguration {
  let cfg: KubeletConfiguration = file ? readConfigFile(file) : {};
  if (dir) {
    for (const p of dropInFiles(dir)) {
      const d = readConfigFile(p);
      // each drop-in must say what it is, as kubelet requires of drop-ins
      if (d.kind === undefined || d.apiVersion === undefined) throw new ConfigError(`failed to load Kubelet config file ${p}, error: a drop-in needs apiVersion ${CONFIG_API_VERSION} and kind ${CONFIG_KIND}`);
      cfg = mergeConfig(cfg, d);
    }
  }
  return cfg;
}

/** kubelet's v1beta1 defaults for the fields this agent uses. */
export const CONFIG_DEFAULTS: KubeletConfiguration = {
  apiVersion: CONFIG_API_VERSION,
  kind: CONFIG_KIND,
  address: '0.0.0.0',
  port: 10250,
  healthzPort: 10248,
  healthzBindAddress: '127.0.0.1',
  authentication: { x509: {}, webhook: { enabled: true, cacheTTL: '2m0s' }, anonymous: { enabled: false } },
  authorization: { mode: 'Webhook', webhook: { cacheAuthorizedTTL: '5m0s', cacheUnauthorizedTTL: '30s' } },
  nodeStatusUpdateFrequency: '10s',
  nodeStatusReportFrequency: '5m0s',
  nodeLeaseDurationSeconds: 40,
  featureGates: {},
  maxPods: 110,
  systemReserved: {},
  kubeReserved: {},
  evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%', 'imagefs.available': '15%', 'nodefs.inodesFree': '5%' },
  registerNode: true,
  shutdownGracePeriod: '0s',
  containerLogMaxSize: '10Mi',
  containerLogMaxFiles: 5,
};

/** The configuration in effect: defaults, then the file and drop-ins. */
export function withDefaults(cfg: KubeletConfiguration): KubeletConfiguration {
  // evictionHard: kubelet keeps its defaults only when the configuration names none
  const merged = mergeConfig(CONFIG_DEFAULTS, cfg);
  if (cfg.evictionHard) merged.evictionHard = copy(cfg.evictionHard);
  return merged;
}

/** A Go duration ("10s", "5m0s", "1h30m", "250ms") in milliseconds. */
export function parseDuration(s: string | number | undefined, fallbackMs: number): number {
  if (s === undefined || s === '') return fallbackMs;
  if (typeof s === 'number') return s * 1000;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g;
  const unit: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  let consumed = 0;
  for (const m of s.matchAll(re)) {
    total += parseFloat(m[1]) * unit[m[2]];
    consumed += m[0].length;
  }
  if (s === '0') return 0;
  if (consumed !== s.length) throw new ConfigError(`invalid duration "${s}"`);
  return total;
}
