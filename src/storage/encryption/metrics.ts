// The metrics of encryption at rest, named, labelled and bucketed as kube-apiserver 1.33
// names them (k8s.io/apiserver/pkg/storage/value/metrics.go and
// pkg/server/options/encryptionconfig/metrics/metrics.go), in a prom-client registry of
// their own that /metrics appends (registry.metrics()).
//
// Only configured resources are counted: an unconfigured resource's identity costs nothing
// (transformer.ts IDENTITY), as in kube, where it bypasses the prefix transformers.
//
// Thread ownership: the thread that loaded the configuration (the storage layer's); one
// registry per EncryptionMetrics.
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import client from 'prom-client';
import type { TransformError } from './transformer.js';

/** What the transformers report (an interface so that tests may count calls). */
export interface TransformationMetrics {
  /** one transformation: the group-resource ("secrets", "deployments.apps"), type to_storage or from_storage, the transformer's prefix, performance.now() at its start, its error */
  transformation(resource: string, type: 'to_storage' | 'from_storage', prefix: string, start: number, err: Error | null): void;
  /** a KMS v2 read whose data key was not cached (a Decrypt call to the plugin) */
  cacheMiss(): void;
  /** a KMS v2 seed made: performance.now() at its start, its error */
  dataKeyGeneration(start: number, err: Error | null): void;
}

/**
 * One measurement made on another thread, to be counted on the one that serves /metrics:
 * a transformation (resource, type, prefix, status, seconds), a KMS v2 cache miss, a seed
 * generation (failed, seconds).
 */
export type MetricRecord = ['t', string, string, string, string, number] | ['m'] | ['g', boolean, number];

/** prometheus' ExponentialBuckets(start, factor, count) */
function exponential(start: number, factor: number, count: number): number[] {
  const out: number[] = [];
  for (let i = 0, v = start; i < count; i++, v *= factor) out.push(v);
  return out;
}

/** kube's getHash: "sha256:<hex>", or '' for ''. */
export function idHash(id: string): string {
  return id ? `sha256:${createHash('sha256').update(id).digest('hex')}` : '';
}

export class EncryptionMetrics implements TransformationMetrics {
  readonly registry = new client.Registry();
  private readonly operations: client.Counter<string>;
  private readonly duration: client.Histogram<string>;
  private readonly misses: client.Counter<string>;
  private readonly keyGeneration: client.Histogram<string>;
  private readonly keyGenerationFailures: client.Counter<string>;
  private readonly reloads: client.Counter<string>;
  private readonly reloadTimestamp: client.Gauge<string>;
  private readonly reloadSuccess?: client.Counter<string>;
  private readonly reloadFailures?: client.Counter<string>;
  private readonly idHash: string;

  /**
   * apiServerId: this server's identity (its apiserver Lease name), hashed into the reload
   * metrics' apiserver_id_hash label. showHidden: --show-hidden-metrics-for-version=1.32,
   * which brings back the reload counters kube deprecated in 1.30 (hidden since 1.31).
   */
  constructor(apiServerId = '', showHidden = false) {
    this.idHash = idHash(apiServerId);
    const registers = [this.registry];
    this.operations = new client.Counter({
      name: 'apiserver_storage_transformation_operations_total',
      help: '[ALPHA] Values transformed on their way to storage (to_storage: encryption) or from it (from_storage: decryption), by resource, transformer prefix and status (OK, or why it failed).',
      labelNames: ['resource', 'transformation_type', 'transformer_prefix', 'status'],
      registers,
    });
    this.duration = new client.Histogram({
      name: 'apiserver_storage_transformation_duration_seconds',
      help: '[ALPHA] Seconds a successful value transformation took, by type and transformer prefix.',
      labelNames: ['transformation_type', 'transformer_prefix'],
      buckets: exponential(5e-6, 2, 25),
      registers,
    });
    this.misses = new client.Counter({
      name: 'apiserver_storage_envelope_transformation_cache_misses_total',
      help: '[ALPHA] KMS v2 reads whose data encryption key was not cached, so the KMS plugin was asked to decrypt it.',
      registers,
    });
    this.keyGeneration = new client.Histogram({
      name: 'apiserver_storage_data_key_generation_duration_seconds',
      help: '[ALPHA] Seconds it took to make a data encryption key (a KMS v2 seed).',
      buckets: exponential(5e-6, 2, 14),
      registers,
    });
    this.keyGenerationFailures = new client.Counter({
      name: 'apiserver_storage_data_key_generation_failures_total',
      help: '[ALPHA] Data encryption keys (KMS v2 seeds) that could not be made.',
      registers,
    });
    this.reloads = new client.Counter({
      name: 'apiserver_encryption_config_controller_automatic_reloads_total',
      help: '[ALPHA] Automatic reloads of the encryption configuration file, by status (success or failure) and API server identity.',
      labelNames: ['status', 'apiserver_id_hash'],
      registers,
    });
    this.reloadTimestamp = new client.Gauge({
      name: 'apiserver_encryption_config_controller_automatic_reload_last_timestamp_seconds',
      help: '[ALPHA] Unix time of the last automatic reload of the encryption configuration, by status (success or failure) and API server identity.',
      labelNames: ['status', 'apiserver_id_hash'],
      registers,
    });
    if (showHidden) {
      this.reloadSuccess = new client.Counter({
        name: 'apiserver_encryption_config_controller_automatic_reload_success_total',
        help: '[ALPHA] (Deprecated since 1.30.0) Successful automatic reloads of the encryption configuration, by API server identity.',
        labelNames: ['apiserver_id_hash'],
        registers,
      });
      this.reloadFailures = new client.Counter({
        name: 'apiserver_encryption_config_controller_automatic_reload_failures_total',
        help: '[ALPHA] (Deprecated since 1.30.0) Failed automatic reloads of the encryption configuration, by API server identity.',
        labelNames: ['apiserver_id_hash'],
        registers,
      });
    }
  }

  transformation(resource: string, type: 'to_storage' | 'from_storage', prefix: string, start: number, err: Error | null): void {
    // kube's getErrorCode: the gRPC code of a KMS failure, else unknown-non-grpc
    const status = err ? ((err as TransformError).grpcCode ?? 'unknown-non-grpc') : 'OK';
    this.countTransformation(resource, type, prefix, status, (performance.now() - start) / 1000);
  }

  private countTransformation(resource: string, type: string, prefix: string, status: string, seconds: number): void {
    this.operations.inc({ resource, transformation_type: type, transformer_prefix: prefix, status });
    if (status === 'OK') this.duration.observe({ transformation_type: type, transformer_prefix: prefix }, seconds);
  }

  cacheMiss(): void {
    this.misses.inc();
  }

  /** kube's RecordDataKeyGeneration */
  dataKeyGeneration(start: number, err: Error | null): void {
    this.countKeyGeneration(err !== null, (performance.now() - start) / 1000);
  }

  private countKeyGeneration(failed: boolean, seconds: number): void {
    if (failed) this.keyGenerationFailures.inc();
    else this.keyGeneration.observe(seconds);
  }

  /** Counts what another thread's transformers measured (ForwardedMetrics.take() there). */
  add(records: readonly MetricRecord[]): void {
    for (const r of records) {
      if (r[0] === 't') this.countTransformation(r[1], r[2], r[3], r[4], r[5]);
      else if (r[0] === 'm') this.misses.inc();
      else this.countKeyGeneration(r[1], r[2]);
    }
  }

  /** kube's RecordEncryptionConfigAutomaticReloadSuccess / ...Failure */
  reloaded(ok: boolean): void {
    const status = ok ? 'success' : 'failure';
    this.reloads.inc({ status, apiserver_id_hash: this.idHash });
    this.reloadTimestamp.set({ status, apiserver_id_hash: this.idHash }, Date.now() / 1000);
    (ok ? this.reloadSuccess : this.reloadFailures)?.inc({ apiserver_id_hash: this.idHash });
  }

  /** the Prometheus text of these metrics, for /metrics */
  text(): Promise<string> {
    return this.registry.metrics();
  }
}

/**
 * The metrics of transformers that run on a thread that does not serve /metrics (a shard
 * worker): each measurement is kept as a record until take() hands them to the thread that
 * counts them (EncryptionMetrics.add). Reloads are counted by the thread that drives them.
 *
 * Thread ownership: the thread whose transformers report to it.
 */
export class ForwardedMetrics extends EncryptionMetrics {
  private records: MetricRecord[] = [];

  override transformation(resource: string, type: 'to_storage' | 'from_storage', prefix: string, start: number, err: Error | null): void {
    const status = err ? ((err as TransformError).grpcCode ?? 'unknown-non-grpc') : 'OK';
    this.records.push(['t', resource, type, prefix, status, (performance.now() - start) / 1000]);
  }

  override cacheMiss(): void {
    this.records.push(['m']);
  }

  override dataKeyGeneration(start: number, err: Error | null): void {
    this.records.push(['g', err !== null, (performance.now() - start) / 1000]);
  }

  override reloaded(): void {}

  /** The records since the last take (null when none). */
  take(): MetricRecord[] | null {
    if (this.records.length === 0) return null;
    const r = this.records;
    this.records = [];
    return r;
  }
}
