// Encryption at rest for the storage backends: the transformer of each group-resource
// under the current --encryption-provider-config, swapped whole when the file changes and
// --encryption-provider-config-automatic-reload is on (kube's DynamicTransformers and its
// DynamicEncryptionConfigContent controller, pkg/server/options/encryptionconfig).
//
// A backend calls transformerFor(groupResource) for each value it writes or reads (a Map
// lookup; the answer may change after a reload, so it is not to be kept across requests):
//   stored = t.toStorage(bytes, key)            // on every write, key = the storage key
//   { data, stale } = t.fromStorage(stored, key) // on every read (a promise only for KMS v2 cache misses)
// An unconfigured resource gets IDENTITY (identity: true): the bytes themselves, no copy,
// no promise.
//
// Thread ownership: the thread that created it (the storage layer's); the reload timer
// and KMS polls run on its event loop.
import { readFileSync } from 'node:fs';
import { configHash, parseGroupResource, groupResourceString } from './config.js';
import { loadEncryptionConfig, type HealthCheck, type LoadedConfig, type LoadOptions } from './load.js';
import { EncryptionMetrics } from './metrics.js';
import { IDENTITY, type FromStorage } from './transformer.js';

export interface ResourceTransformer {
  /** true for an unconfigured resource: toStorage and fromStorage hand the bytes back */
  readonly identity: boolean;
  /** The stored form of `data` under storage key `key` (etcd's full key). Throws on failure. */
  toStorage(data: Buffer, key: string): Buffer;
  /** The plain bytes of a stored value, and whether a rewrite would re-encrypt it. Throws (or rejects) on failure. */
  fromStorage(data: Buffer, key: string): FromStorage | Promise<FromStorage>;
}

export interface EncryptionOptions {
  /** --encryption-provider-config ('' for none: identity everywhere) */
  configFile: string;
  /** --encryption-provider-config-automatic-reload */
  automaticReload: boolean;
  /** this server's identity, hashed into the reload metrics (kube's apiserver id) */
  apiServerId?: string;
  /** --show-hidden-metrics-for-version=1.32 */
  showHiddenMetrics?: boolean;
  /** how often the file is checked for changes (kube: every minute) */
  reloadIntervalMs?: number;
  /** a failed reload (the old configuration stays) */
  onReloadError?: (err: Error) => void;
  kmsService?: LoadOptions['kmsService'];
  /** the metrics the transformers report to (default: a registry of their own); a shard worker forwards them */
  metrics?: EncryptionMetrics;
  /** false: no reload timer of its own, reloadOnce is called by another thread's (a shard worker follows the main thread's) */
  reloadTimer?: boolean;
  /** after a reload swapped a new configuration in */
  onReloaded?: () => void;
  kmsTimings?: LoadOptions['kmsTimings'];
}

const IDENTITY_RESOURCE: ResourceTransformer = IDENTITY;

export class EncryptionTransformers {
  private current: LoadedConfig | null = null;
  private byResource = new Map<string, ResourceTransformer>();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private retryMs = 0;

  private constructor(
    private readonly opts: EncryptionOptions,
    readonly metrics: EncryptionMetrics,
  ) {}

  /** Loads the configuration (awaiting each KMS plugin's first Status) and, with automatic reload, starts watching the file. */
  static async start(opts: EncryptionOptions): Promise<EncryptionTransformers> {
    const t = new EncryptionTransformers(opts, opts.metrics ?? new EncryptionMetrics(opts.apiServerId ?? '', opts.showHiddenMetrics ?? false));
    if (opts.configFile) {
      t.install(await loadEncryptionConfig(opts.configFile, t.loadOptions()));
      if (opts.automaticReload && opts.reloadTimer !== false) t.schedule(opts.reloadIntervalMs ?? 60_000);
    }
    return t;
  }

  private loadOptions(): LoadOptions {
    return { reload: this.opts.automaticReload, metrics: this.metrics, kmsService: this.opts.kmsService, kmsTimings: this.opts.kmsTimings };
  }

  private install(loaded: LoadedConfig): void {
    this.current = loaded;
    this.byResource = new Map();
  }

  /**
   * The transformer of a group-resource ("secrets", "deployments.apps"): its own entry, else
   * "*.<group>", else "*.*", else identity (kube's transformerFromOverrides).
   */
  transformerFor(groupResource: string): ResourceTransformer {
    const hit = this.byResource.get(groupResource);
    if (hit) return hit;
    const t = this.resolve(groupResource);
    this.byResource.set(groupResource, t);
    return t;
  }

  private resolve(groupResource: string): ResourceTransformer {
    const map = this.current?.transformers;
    if (!map) return IDENTITY_RESOURCE;
    const gr = parseGroupResource(groupResource);
    const t = map.get(groupResourceString(gr)) ?? map.get(groupResourceString({ group: gr.group, resource: '*' })) ?? map.get('*.*');
    if (!t) return IDENTITY_RESOURCE;
    // the resource label of the transformation metrics (kube takes it from the request)
    return {
      identity: false,
      toStorage: (data, key) => t.toStorage(data, key, groupResource),
      fromStorage: (data, key) => t.fromStorage(data, key, groupResource),
    };
  }

  /** The KMS health checks for /healthz, /livez and /readyz (kms-providers, as kube names it; none without KMS or reload). */
  /** Whether any resource may be encrypted (a configuration is loaded): a backend skips every check when not. */
  get configured(): boolean {
    return this.current !== null;
  }

  healthChecks(): HealthCheck[] {
    if (!this.current) return [];
    // delegate to whatever is current when the check runs: a reload replaces the plugins
    return this.current.healthChecks.map((c) => ({ name: c.name, check: () => (this.current?.healthChecks.find((x) => x.name === c.name) ?? c).check() }));
  }

  private schedule(ms: number): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.reloadOnce().then(
        (ok) => {
          // kube retries a failed reload with a growing delay (its work queue's rate limiter), and polls anyway
          this.retryMs = ok ? 0 : Math.min(Math.max(this.retryMs * 2, 5), 1_000_000);
          this.schedule(ok ? (this.opts.reloadIntervalMs ?? 60_000) : Math.min(this.retryMs, this.opts.reloadIntervalMs ?? 60_000));
        },
        () => this.schedule(this.opts.reloadIntervalMs ?? 60_000),
      );
    }, ms);
    this.timer.unref();
  }

  /**
   * kube's processWorkItem: when the file's hash changed, load it; on success (and healthy
   * KMS plugins) swap it in and close the old plugins after their grace period. A bad file
   * keeps the old configuration and counts a failure. Resolves false on failure.
   */
  async reloadOnce(): Promise<boolean> {
    const path = this.opts.configFile;
    let loaded: LoadedConfig | null = null;
    try {
      let hash: string;
      try {
        hash = configHash(readFileSync(path));
      } catch (e) {
        throw new Error(`error reading encryption provider configuration file "${path}": ${(e as Error).message}`);
      }
      if (hash === this.current?.hash) return true;
      loaded = await loadEncryptionConfig(path, { ...this.loadOptions(), reload: true });
      if (loaded.hash === this.current?.hash) {
        loaded.close();
        return true;
      }
      await this.waitHealthy(loaded);
      const old = this.current;
      this.install(loaded);
      if (old) setTimeout(() => old.close(), old.closeGracePeriodMs).unref();
      this.metrics.reloaded(true);
      this.opts.onReloaded?.();
      return true;
    } catch (e) {
      loaded?.close();
      this.metrics.reloaded(false);
      this.opts.onReloadError?.(new Error(`error processing encryption config file ${path}: ${(e as Error).message}`));
      return false;
    }
  }

  /** kube's validateNewTransformersHealth: the new plugins' check polled every 100 ms for up to max(grace period, 10 s). */
  private async waitHealthy(loaded: LoadedConfig): Promise<void> {
    const check = loaded.healthChecks[0];
    if (!check) return;
    const deadline = Date.now() + Math.max(loaded.closeGracePeriodMs, 10_000);
    for (;;) {
      try {
        await check.check();
        return;
      } catch (e) {
        if (Date.now() >= deadline) throw new Error(`health check for new transformers failed, polling error context deadline exceeded: ${(e as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.current?.close();
  }
}

/** No --encryption-provider-config: every resource stored as is. */
export function noEncryption(): Promise<EncryptionTransformers> {
  return EncryptionTransformers.start({ configFile: '', automaticReload: false });
}
