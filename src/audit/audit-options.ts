// The --audit-* flags: their values, kube-apiserver's defaults and its checks. The log
// backend defaults to blocking mode and batches of one (batching buys a file nothing); the
// webhook defaults to batch mode, 400 events a batch or 30s, throttled to 10 batches a
// second after a burst of 15. Truncation is off unless asked for.
import { MODES, type BatchConfig, type Mode, type TruncateConfig } from './backend.js';
import { LOG_FORMATS, type LogFormat } from './log-backend.js';
import { AUDIT_API_VERSION } from './event.js';

export interface AuditBackendOptions {
  mode: Mode;
  batch: BatchConfig;
  truncate: TruncateConfig;
  version: string;
}

export interface AuditOptions {
  policyFile: string;
  log: AuditBackendOptions & { path: string; format: LogFormat; maxAge: number; maxBackup: number; maxSize: number; compress: boolean };
  webhook: AuditBackendOptions & { configFile: string; initialBackoff: number };
}

const DEFAULT_BUFFER_SIZE = 10000;
const DEFAULT_TRUNCATE: TruncateConfig = { enabled: false, maxBatchSize: 10 * 1024 * 1024, maxEventSize: 100 * 1024 };

export function defaultAuditOptions(): AuditOptions {
  return {
    policyFile: '',
    log: {
      path: '',
      format: 'json',
      maxAge: 0,
      maxBackup: 0,
      maxSize: 0,
      compress: false,
      mode: 'blocking',
      batch: { bufferSize: DEFAULT_BUFFER_SIZE, maxBatchSize: 1, maxBatchWait: 0, throttleEnable: false, throttleQPS: 0, throttleBurst: 0 },
      truncate: { ...DEFAULT_TRUNCATE },
      version: AUDIT_API_VERSION,
    },
    webhook: {
      configFile: '',
      initialBackoff: 10,
      mode: 'batch',
      batch: { bufferSize: DEFAULT_BUFFER_SIZE, maxBatchSize: 400, maxBatchWait: 30, throttleEnable: true, throttleQPS: 10, throttleBurst: 15 },
      truncate: { ...DEFAULT_TRUNCATE },
      version: AUDIT_API_VERSION,
    },
  };
}

/** The flags of one backend ("log" or "webhook"), as name → setter; kinds as options.ts knows them. */
export function backendFlags(plugin: 'log' | 'webhook'): Record<string, { kind: 'int' | 'string' | 'bool' | 'duration' | 'float'; help: string; set: (a: AuditOptions, v: any) => void }> {
  const b = (a: AuditOptions) => a[plugin];
  const d = defaultAuditOptions()[plugin];
  const p = `audit-${plugin}`;
  return {
    [`${p}-mode`]: {
      kind: 'string',
      help: `Strategy for sending audit events: blocking sends before the response completes, blocking-strict also fails the request when the RequestReceived event cannot be stored, batch buffers and sends asynchronously. (default "${d.mode}")`,
      set: (a, v) => (b(a).mode = v),
    },
    [`${p}-batch-buffer-size`]: { kind: 'int', help: `Events buffered before batching (batch mode). (default ${d.batch.bufferSize})`, set: (a, v) => (b(a).batch.bufferSize = v) },
    [`${p}-batch-max-size`]: { kind: 'int', help: `Most events in one batch (batch mode). (default ${d.batch.maxBatchSize})`, set: (a, v) => (b(a).batch.maxBatchSize = v) },
    [`${p}-batch-max-wait`]: { kind: 'duration', help: `How long a partial batch waits before it is sent (batch mode). (default ${d.batch.maxBatchWait}s)`, set: (a, v) => (b(a).batch.maxBatchWait = v) },
    [`${p}-batch-throttle-enable`]: { kind: 'bool', help: `Whether batching is throttled (batch mode). (default ${d.batch.throttleEnable})`, set: (a, v) => (b(a).batch.throttleEnable = v) },
    [`${p}-batch-throttle-qps`]: { kind: 'float', help: `Batches per second at most (batch mode, throttled). (default ${d.batch.throttleQPS})`, set: (a, v) => (b(a).batch.throttleQPS = v) },
    [`${p}-batch-throttle-burst`]: { kind: 'int', help: `Batches sent at once before the throttle applies (batch mode). (default ${d.batch.throttleBurst})`, set: (a, v) => (b(a).batch.throttleBurst = v) },
    [`${p}-truncate-enabled`]: { kind: 'bool', help: 'Whether events and batches are truncated. (default false)', set: (a, v) => (b(a).truncate.enabled = v) },
    [`${p}-truncate-max-batch-size`]: { kind: 'int', help: `Most bytes in one batch sent on. (default ${d.truncate.maxBatchSize})`, set: (a, v) => (b(a).truncate.maxBatchSize = v) },
    [`${p}-truncate-max-event-size`]: {
      kind: 'int',
      help: `Most bytes in one event: a larger one loses its request and response objects, and is dropped if still too large. (default ${d.truncate.maxEventSize})`,
      set: (a, v) => (b(a).truncate.maxEventSize = v),
    },
    [`${p}-version`]: { kind: 'string', help: `API group and version of the events written. (default "${AUDIT_API_VERSION}")`, set: (a, v) => (b(a).version = v) },
  };
}

function positive(what: string, v: number): void {
  if (!(v > 0)) throw new Error(`${what} ${v}, must be a positive number`);
}

/** kube's checks of an enabled backend's flags; the message says which flag is wrong. */
export function validateAuditOptions(a: AuditOptions): void {
  const l = a.log;
  if (l.path) {
    if (l.maxAge < 0) throw new Error(`--audit-log-maxage ${l.maxAge} can't be a negative number`);
    if (l.maxBackup < 0) throw new Error(`--audit-log-maxbackup ${l.maxBackup} can't be a negative number`);
    if (l.maxSize < 0) throw new Error(`--audit-log-maxsize ${l.maxSize} can't be a negative number`);
    if (!LOG_FORMATS.includes(l.format)) throw new Error(`invalid audit log format ${l.format}, allowed formats are "${LOG_FORMATS.join(',')}"`);
    validateBackend('log', l);
  }
  if (a.webhook.configFile) {
    validateBackend('webhook', a.webhook);
    if (a.webhook.initialBackoff <= 0) throw new Error(`invalid audit webhook initial backoff ${a.webhook.initialBackoff}s, must be a positive number`);
  }
}

function validateBackend(plugin: string, o: AuditBackendOptions): void {
  if (!MODES.includes(o.mode)) throw new Error(`invalid audit ${plugin} mode ${o.mode}, allowed modes are "${MODES.join(',')}"`);
  if (o.mode === 'batch') {
    positive(`invalid audit batch ${plugin} buffer size`, o.batch.bufferSize);
    positive(`invalid audit batch ${plugin} max batch size`, o.batch.maxBatchSize);
    if (plugin === 'webhook') positive(`invalid audit batch ${plugin} max batch wait`, o.batch.maxBatchWait);
    if (o.batch.throttleEnable) {
      positive(`invalid audit batch ${plugin} throttle QPS`, o.batch.throttleQPS);
      positive(`invalid audit batch ${plugin} throttle burst`, o.batch.throttleBurst);
    }
  }
  if (o.truncate.enabled) {
    positive(`invalid audit truncate ${plugin} max event size`, o.truncate.maxEventSize);
    positive(`invalid audit truncate ${plugin} max batch size`, o.truncate.maxBatchSize);
    if (o.truncate.maxBatchSize < o.truncate.maxEventSize) {
      throw new Error(`invalid audit truncate ${plugin} max batch size ${o.truncate.maxBatchSize}, must be at least max event size (${o.truncate.maxEventSize})`);
    }
  }
  if (o.version !== AUDIT_API_VERSION) throw new Error(`invalid audit ${plugin} version ${o.version}, the only supported version is ${AUDIT_API_VERSION}`);
}
