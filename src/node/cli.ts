// `kubeshard node [flags]`: the node agent (issue 23), with kubelet's flag names. The
// configuration in effect is kubelet's: built-in defaults, then --config, then the
// --config-dir drop-ins (config.ts), then the command-line flags.
//
// Thread ownership: the agent's main thread, at start-up and on the stop signals.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ApiClient, ApiError, loadKubeconfig } from './api-client.js';
import { NodeAgent } from './agent.js';
import { bootstrapClientCert, kubeconfigUsable } from './bootstrap.js';
import { EventRecorder } from './events.js';
import { ConfigError, loadConfig, parseDuration, withDefaults, type KubeletConfiguration } from './config.js';
import { DEFAULT_LOG_ROTATION, type LogRotation } from './cri-log.js';
import { defaultHostname, defaultNodeIP, parseQuantity } from './node-status.js';
import { ProcessRuntime } from './process-runtime.js';
import { selfSignedCert } from './serving-cert.js';

export const DEFAULT_ROOT_DIR = '/var/lib/kubeshard-node';

/** The feature gates this agent knows, with their 1.33 defaults. */
export const FEATURE_DEFAULTS: Record<string, boolean> = { ContainerCheckpoint: true, KubeletFineGrainedAuthz: true };

interface Flag {
  help: string;
  bool?: boolean;
}

const FLAGS: Record<string, Flag> = {
  kubeconfig: { help: 'kubeconfig file with the API server and the credentials to reach it' },
  'bootstrap-kubeconfig': { help: 'kubeconfig with bootstrap credentials: when --kubeconfig is missing or expired, a client certificate is requested by a CSR and --kubeconfig written' },
  'hostname-override': { help: "the node's name and Hostname address (default: the host name)" },
  'node-ip': { help: "the node's InternalIP (default: the first non-loopback IPv4 address)" },
  'root-dir': { help: `where the agent keeps pods, logs and checkpoints (default ${DEFAULT_ROOT_DIR})` },
  'cert-dir': { help: 'where a self-signed serving certificate is kept (default <root-dir>/pki)' },
  config: { help: 'a KubeletConfiguration file (kubelet.config.k8s.io/v1beta1)' },
  'config-dir': { help: 'a directory of *.conf KubeletConfiguration drop-ins, merged over --config in name order' },
  address: { help: 'the address the HTTPS API listens on (default 0.0.0.0)' },
  port: { help: 'the port of the HTTPS API (default 10250)' },
  'healthz-port': { help: 'the port of the unauthenticated healthz endpoint, 0 to disable (default 10248)' },
  'healthz-bind-address': { help: 'the address of the healthz endpoint (default 127.0.0.1)' },
  'tls-cert-file': { help: 'serving certificate (default: a self-signed one in --cert-dir)' },
  'tls-private-key-file': { help: 'serving key' },
  'client-ca-file': { help: 'CA bundle verifying client certificates of the HTTPS API' },
  'anonymous-auth': { help: 'let unauthenticated requests through as system:anonymous (default false)', bool: true },
  'authentication-token-webhook': { help: 'check bearer tokens with TokenReview (default true)', bool: true },
  'authorization-mode': { help: 'AlwaysAllow or Webhook (SubjectAccessReview) (default Webhook)' },
  'node-status-update-frequency': { help: 'how often the node status is computed (default 10s)' },
  'node-status-report-frequency': { help: 'the longest time between status writes when nothing changed (default 5m0s)' },
  'node-lease-duration-seconds': { help: 'the Lease duration; it is renewed every quarter of it (default 40)' },
  'feature-gates': { help: 'A=true,B=false: ContainerCheckpoint (default true), KubeletFineGrainedAuthz (default true)' },
  'max-pods': { help: 'the pods capacity (default 110)' },
  'node-labels': { help: 'labels to add at registration, k=v,k2=v2' },
  'register-node': { help: 'register the Node (default true)', bool: true },
  'register-with-taints': { help: 'taints at registration, key=value:Effect,...' },
  'container-log-max-size': { help: 'a container log is rotated when it would pass this size (default 10Mi)' },
  'container-log-max-files': { help: 'the most log files kept per container, the live one included; more than 1 (default 5)' },
  'container-runtime': { help: 'the runtime: process (default)' },
  help: { help: 'this help', bool: true },
};

export class FlagError extends Error {}

export function parseFlags(argv: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h') {
      out.help = 'true';
      continue;
    }
    const m = /^--?([a-z0-9-]+)(?:=(.*))?$/s.exec(a);
    if (!m) throw new FlagError(`unexpected argument "${a}"`);
    const f = FLAGS[m[1]];
    if (!f) throw new FlagError(`unknown flag: --${m[1]}`);
    if (m[2] !== undefined) out[m[1]] = m[2];
    else if (f.bool) out[m[1]] = 'true';
    else {
      if (i + 1 >= argv.length) throw new FlagError(`flag needs an argument: --${m[1]}`);
      out[m[1]] = argv[++i];
    }
  }
  return out;
}

function usage(): string {
  return ['Usage: kubeshard node [flags]', '', ...Object.entries(FLAGS).map(([n, f]) => `  --${n}${f.bool ? '' : ' value'}\n        ${f.help}`)].join('\n');
}

const bool = (v: string) => {
  if (/^(true|1|t)$/i.test(v)) return true;
  if (/^(false|0|f)$/i.test(v)) return false;
  throw new FlagError(`invalid boolean "${v}"`);
};

function keyValues(s: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (s ?? '').split(',').filter(Boolean)) {
    const i = part.indexOf('=');
    if (i <= 0) throw new FlagError(`invalid key=value "${part}"`);
    out[part.slice(0, i).trim()] = part.slice(i + 1).trim();
  }
  return out;
}

/** The flags laid over the configuration (flags win, as in kubelet). */
export function applyFlags(cfg: KubeletConfiguration, f: Record<string, string>): KubeletConfiguration {
  const c: KubeletConfiguration = JSON.parse(JSON.stringify(cfg));
  if (f.address) c.address = f.address;
  if (f.port) c.port = Number(f.port);
  if (f['healthz-port']) c.healthzPort = Number(f['healthz-port']);
  if (f['healthz-bind-address']) c.healthzBindAddress = f['healthz-bind-address'];
  if (f['tls-cert-file']) c.tlsCertFile = f['tls-cert-file'];
  if (f['tls-private-key-file']) c.tlsPrivateKeyFile = f['tls-private-key-file'];
  c.authentication ??= {};
  if (f['client-ca-file']) c.authentication.x509 = { ...c.authentication.x509, clientCAFile: f['client-ca-file'] };
  if (f['anonymous-auth']) c.authentication.anonymous = { ...c.authentication.anonymous, enabled: bool(f['anonymous-auth']) };
  if (f['authentication-token-webhook']) c.authentication.webhook = { ...c.authentication.webhook, enabled: bool(f['authentication-token-webhook']) };
  if (f['authorization-mode']) c.authorization = { ...c.authorization, mode: f['authorization-mode'] };
  if (f['node-status-update-frequency']) c.nodeStatusUpdateFrequency = f['node-status-update-frequency'];
  if (f['node-status-report-frequency']) c.nodeStatusReportFrequency = f['node-status-report-frequency'];
  if (f['node-lease-duration-seconds']) c.nodeLeaseDurationSeconds = Number(f['node-lease-duration-seconds']);
  if (f['feature-gates']) {
    const gates: Record<string, boolean> = { ...c.featureGates };
    for (const [k, v] of Object.entries(keyValues(f['feature-gates']))) gates[k] = bool(v);
    c.featureGates = gates;
  }
  if (f['container-log-max-size']) c.containerLogMaxSize = f['container-log-max-size'];
  if (f['container-log-max-files']) c.containerLogMaxFiles = Number(f['container-log-max-files']);
  if (f['max-pods']) c.maxPods = Number(f['max-pods']);
  if (f['register-node']) c.registerNode = bool(f['register-node']);
  if (f['register-with-taints']) {
    c.registerWithTaints = f['register-with-taints'].split(',').filter(Boolean).map((t) => {
      const m = /^([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$/.exec(t.trim());
      if (!m) throw new FlagError(`invalid taint "${t}"`);
      return { key: m[1], ...(m[2] ? { value: m[2] } : {}), effect: m[3] };
    });
  }
  return c;
}

/** containerLogMaxSize and containerLogMaxFiles as kubelet's NewContainerLogManager checks them. */
export function containerLogRotation(cfg: KubeletConfiguration): LogRotation {
  const files = cfg.containerLogMaxFiles ?? DEFAULT_LOG_ROTATION.maxFiles;
  if (!Number.isInteger(files) || files <= 1) throw new ConfigError(`invalid MaxFiles ${cfg.containerLogMaxFiles}, must be > 1`);
  const size = cfg.containerLogMaxSize === undefined ? DEFAULT_LOG_ROTATION.maxSize : parseQuantity(String(cfg.containerLogMaxSize));
  if (size === undefined || !Number.isFinite(size) || !Number.isInteger(size)) throw new ConfigError(`failed to parse container log max size "${cfg.containerLogMaxSize}"`);
  return { maxSize: size, maxFiles: files };
}

export async function nodeMain(argv: string[]): Promise<number> {
  const log = (m: string) => console.error(`${new Date().toISOString()} ${m}`);
  let flags: Record<string, string>;
  let cfg: KubeletConfiguration;
  let logRotation: LogRotation;
  try {
    flags = parseFlags(argv);
    if (flags.help) {
      console.log(usage());
      return 0;
    }
    cfg = withDefaults(loadConfig(flags.config, flags['config-dir']));
    cfg = applyFlags(cfg, flags);
    if (!flags.kubeconfig) throw new FlagError(flags['bootstrap-kubeconfig'] ? '--kubeconfig is required: the path where TLS bootstrap writes the kubeconfig it gets' : '--kubeconfig is required');
    if ((flags['container-runtime'] ?? 'process') !== 'process') throw new FlagError(`unknown --container-runtime "${flags['container-runtime']}" (only "process")`);
    logRotation = containerLogRotation(cfg);
    const mode = cfg.authorization?.mode;
    if (mode !== 'AlwaysAllow' && mode !== 'Webhook') throw new FlagError(`unsupported authorization mode "${mode}" (AlwaysAllow or Webhook)`);
  } catch (e) {
    if (e instanceof FlagError || e instanceof ConfigError) {
      console.error(`Error: ${e.message}`);
      return 2;
    }
    throw e;
  }
  const gates = { ...FEATURE_DEFAULTS, ...cfg.featureGates };
  const rootDir = resolve(flags['root-dir'] ?? DEFAULT_ROOT_DIR);
  const hostname = (flags['hostname-override'] ?? defaultHostname()).toLowerCase();
  const nodeIP = flags['node-ip'] ?? defaultNodeIP();
  process.umask(0o077);

  let tls;
  try {
    if (cfg.tlsCertFile && cfg.tlsPrivateKeyFile) tls = { cert: readFileSync(cfg.tlsCertFile), key: readFileSync(cfg.tlsPrivateKeyFile) };
    else tls = selfSignedCert(flags['cert-dir'] ?? join(rootDir, 'pki'), hostname, nodeIP);
    const caFile = cfg.authentication?.x509?.clientCAFile;
    if (caFile) (tls as any).clientCA = readFileSync(caFile);
  } catch (e) {
    console.error(`Error: serving certificate: ${(e as Error).message}`);
    return 1;
  }

  if (flags['bootstrap-kubeconfig'] && !kubeconfigUsable(flags.kubeconfig)) {
    try {
      await bootstrapClientCert({ bootstrapKubeconfig: flags['bootstrap-kubeconfig'], kubeconfig: flags.kubeconfig, certDir: flags['cert-dir'] ?? join(rootDir, 'pki'), nodeName: hostname, log });
    } catch (e) {
      log(`failed to run Kubelet: unable to load bootstrap kubeconfig: ${(e as Error).message}`);
      return 1;
    }
  }
  const api = new ApiClient(loadKubeconfig(flags.kubeconfig));
  const data = async (path: string, secret: boolean) => {
    try {
      const o = await api.get(path);
      const out: Record<string, string> = {};
      for (const [k, v] of Object.entries<string>(o.data ?? {})) out[k] = secret ? Buffer.from(v, 'base64').toString('utf8') : v;
      return out;
    } catch (e) {
      if (e instanceof ApiError && e.code === 404) return undefined;
      throw e;
    }
  };
  const events = new EventRecorder(api, hostname, log);
  const runtime = new ProcessRuntime({
    rootDir,
    nodeName: hostname,
    nodeIP,
    log,
    logRotation,
    onEvent: (pod, fieldPath, type, reason, message) => events.record({ kind: 'Pod', namespace: pod.metadata.namespace, name: pod.metadata.name, uid: pod.metadata.uid, fieldPath }, type, reason, message),
    lookups: {
      secret: (ns, name) => data(`/api/v1/namespaces/${encodeURIComponent(ns)}/secrets/${encodeURIComponent(name)}`, true),
      configMap: (ns, name) => data(`/api/v1/namespaces/${encodeURIComponent(ns)}/configmaps/${encodeURIComponent(name)}`, false),
    },
  });
  const labels = keyValues(flags['node-labels']);
  const agent = new NodeAgent(
    api,
    runtime,
    {
      settings: {
        nodeName: hostname,
        hostname,
        nodeIP,
        port: cfg.port ?? 10250,
        rootDir,
        maxPods: cfg.maxPods ?? 110,
        systemReserved: cfg.systemReserved ?? {},
        kubeReserved: cfg.kubeReserved ?? {},
        evictionHard: cfg.evictionHard ?? {},
        runtimeVersion: runtime.version,
        labels,
        taints: cfg.registerWithTaints ?? [],
        providerID: cfg.providerID,
      },
      address: cfg.address ?? '0.0.0.0',
      healthzAddress: cfg.healthzBindAddress ?? '127.0.0.1',
      healthzPort: cfg.healthzPort ?? 10248,
      tls,
      auth: {
        nodeName: hostname,
        clientCA: !!cfg.authentication?.x509?.clientCAFile,
        webhookAuthn: cfg.authentication?.webhook?.enabled !== false,
        anonymous: !!cfg.authentication?.anonymous?.enabled,
        authzMode: cfg.authorization!.mode as 'AlwaysAllow' | 'Webhook',
        tokenCacheMs: parseDuration(cfg.authentication?.webhook?.cacheTTL, 120_000),
        allowedCacheMs: parseDuration(cfg.authorization?.webhook?.cacheAuthorizedTTL, 300_000),
        deniedCacheMs: parseDuration(cfg.authorization?.webhook?.cacheUnauthorizedTTL, 30_000),
        fineGrainedAuthz: gates.KubeletFineGrainedAuthz !== false,
      },
      checkpointEnabled: gates.ContainerCheckpoint !== false,
      statusUpdateMs: parseDuration(cfg.nodeStatusUpdateFrequency, 10_000),
      statusReportMs: parseDuration(cfg.nodeStatusReportFrequency, 300_000),
      leaseDurationSeconds: cfg.nodeLeaseDurationSeconds ?? 40,
      registerNode: cfg.registerNode !== false,
      effective: { ...cfg, featureGates: gates },
    },
    log,
    events,
  );

  let stopping: Promise<void> | undefined;
  const stopped = new Promise<number>((res) => {
    const stop = (sig: string) => {
      if (stopping) return;
      log(`received ${sig}, stopping`);
      stopping = agent.stop().then(
        () => res(0),
        (e) => (log(`stop: ${(e as Error).message}`), res(1)),
      );
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  try {
    await agent.start();
  } catch (e) {
    log(`failed to start the node agent: ${(e as Error).message}`);
    await agent.stop().catch(() => {});
    return 1;
  }
  return stopped;
}
