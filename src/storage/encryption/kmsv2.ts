// KMS v2 envelope encryption, as kube-apiserver 1.33 does it
// (storage/value/encrypt/envelope/kmsv2/envelope.go and the kmsv2 probe of
// server/options/encryptionconfig/config.go):
// - a local seed (32 random bytes) is encrypted once by the plugin (Encrypt), and every
//   write derives a fresh AES-GCM key from it (aes.ts HkdfGcmTransformer); the stored value
//   is "k8s:enc:kms:v2:<name>:" then an EncryptedObject protobuf (encryptedData, keyID,
//   encryptedDEKSource, annotations, encryptedDEKSourceType = HKDF_SHA256_XNONCE_AES_GCM_SEED);
// - the plugin's Status is polled (every minute, every 10 s while failing); when its key
//   id changes a new seed is made and encrypted, so writes move to the new key; while the
//   plugin fails, writes go on with the current seed for at most 3 minutes, then fail;
// - reads decrypt the stored seed (or, for older data, the AES-GCM key itself) through the
//   plugin once, then from a cache of 24 hours; a read of data under another key id than
//   the current one is stale.
//
// Thread ownership: the thread that loaded the configuration (timers and gRPC calls run
// on its event loop).
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { AesGcmTransformer, HkdfGcmTransformer, SEED_SIZE } from './aes.js';
import type { KmsService } from './kms-service.js';
import type { TransformationMetrics } from './metrics.js';
import { bytesField, decodeMessage, encodeMessage, mapField, ProtoError, stringField, varintField } from './proto-wire.js';
import { aggregate, TransformError, type FromStorage, type ValueTransformer } from './transformer.js';

export const AES_GCM_KEY = 0;
export const HKDF_SHA256_XNONCE_AES_GCM_SEED = 1;

export interface EncryptedObject {
  encryptedData: Buffer;
  keyId: string;
  encryptedDEKSource: Buffer;
  annotations: Record<string, Buffer>;
  encryptedDEKSourceType: number;
}

export function encodeEncryptedObject(o: EncryptedObject): Buffer {
  return encodeMessage([
    { no: 1, kind: 'bytes', value: o.encryptedData },
    { no: 2, kind: 'string', value: o.keyId },
    { no: 3, kind: 'bytes', value: o.encryptedDEKSource },
    { no: 4, kind: 'map', value: o.annotations },
    { no: 5, kind: 'varint', value: o.encryptedDEKSourceType },
  ]);
}

export function decodeEncryptedObject(b: Buffer): EncryptedObject {
  const m = decodeMessage(b);
  return { encryptedData: bytesField(m, 1), keyId: stringField(m, 2), encryptedDEKSource: bytesField(m, 3), annotations: mapField(m, 4), encryptedDEKSourceType: varintField(m, 5) };
}

/** kube's GetHashIfNotEmpty */
export function keyIdHash(id: string): string {
  return id ? `sha256:${createHash('sha256').update(id).digest('hex')}` : '';
}

/** kube's ValidateKeyID */
export function validateKeyId(id: string): { code: 'ok' | 'empty' | 'too_long'; err?: string } {
  if (!id.length) return { code: 'empty', err: 'keyID is empty' };
  const n = Buffer.byteLength(id);
  if (n > 1024) return { code: 'too_long', err: `keyID is ${n} bytes, which exceeds the max size of 1024` };
  return { code: 'ok' };
}

const FQDN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/;

/** kube's ValidateEncryptedObject, with its messages */
export function validateEncryptedObject(o: EncryptedObject): void {
  if (o.encryptedDEKSourceType !== AES_GCM_KEY && o.encryptedDEKSourceType !== HKDF_SHA256_XNONCE_AES_GCM_SEED) throw new TransformError(`unknown encryptedDEKSourceType: ${o.encryptedDEKSourceType}`);
  if (!o.encryptedData.length) throw new TransformError('encrypted data is empty');
  if (!o.encryptedDEKSource.length) throw new TransformError('failed to validate encrypted DEK source: encrypted DEK source is empty');
  if (o.encryptedDEKSource.length > 1024) throw new TransformError(`failed to validate encrypted DEK source: encrypted DEK source is ${o.encryptedDEKSource.length} bytes, which exceeds the max size of 1024`);
  const k = validateKeyId(o.keyId);
  if (k.err) throw new TransformError(`failed to validate key id: ${k.err}`);
  const errs: Error[] = [];
  let total = 0;
  for (const [key, v] of Object.entries(o.annotations)) {
    if (!FQDN.test(key)) errs.push(new TransformError(`annotations: Invalid value: ${JSON.stringify(key)}: should be a domain with at least two segments separated by dots`));
    total += Buffer.byteLength(key) + v.length;
  }
  if (total > 32 * 1024) errs.push(new TransformError(`total size of annotations is ${total}, which exceeds the max size of ${32 * 1024}`));
  if (errs.length) throw new TransformError(`failed to validate annotations: ${aggregate(errs).message}`);
}

/** kube's generateCacheKey: type, source, key id and sorted annotations, length-prefixed (big endian) */
export function cacheKey(type: number, source: Buffer, keyId: string, annotations: Record<string, Buffer>): string {
  const parts: Buffer[] = [];
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    parts.push(b);
  };
  const u16Prefixed = (b: Buffer) => {
    const h = Buffer.alloc(2);
    h.writeUInt16BE(b.length);
    parts.push(h, b);
  };
  u32(type);
  u16Prefixed(source);
  u16Prefixed(Buffer.from(keyId));
  const keys = Object.keys(annotations).sort();
  if (keys.length) {
    u32(keys.length);
    for (const k of keys) {
      u16Prefixed(Buffer.from(k));
      u16Prefixed(annotations[k]);
    }
  }
  return Buffer.concat(parts).toString('latin1');
}

function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** The write state: the current seed's transformer and what is stored beside its output. */
export interface KmsState {
  transformer: ValueTransformer;
  keyId: string;
  encryptedDEKSource: Buffer;
  annotations: Record<string, Buffer>;
  encryptedDEKSourceType: number;
  uid: string;
  /** ms since the epoch after which writes fail (reads never expire) */
  expiration: number;
  cacheKey: string;
}

export interface KmsTimings {
  /** Status poll while healthy (kube: 1 minute) */
  positiveIntervalMs: number;
  /** Status poll while failing (kube: 10 s) */
  negativeIntervalMs: number;
  /** how long writes go on with the current seed once the plugin fails (kube: 3 minutes) */
  writeMaxTtlMs: number;
  /** how long a healthz answer is reused (kube: 20 s healthy, 3 s failing) */
  healthyTtlMs: number;
  unhealthyTtlMs: number;
  /** the clock (tests move it) */
  now: () => number;
}

export const KMS_TIMINGS: KmsTimings = {
  positiveIntervalMs: 60_000,
  negativeIntervalMs: 10_000,
  writeMaxTtlMs: 180_000,
  healthyTtlMs: 20_000,
  unhealthyTtlMs: 3_000,
  now: Date.now,
};

/**
 * One kms v2 provider: its plugin client, its probe (kube's kmsv2PluginProbe) and write
 * state, and its data-key cache. Thread ownership: the loading thread.
 */
export class KmsV2Provider {
  private state: KmsState | null = null;
  private version = '';
  private last: { err: Error | null; at: number; ttl: number } = { err: null, at: -Infinity, ttl: 0 };
  private checking: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** decrypted data keys by cache key, with their expiry (kube's simpleCache, 24 h) */
  private readonly cache = new Map<string, { t: ValueTransformer; expires: number }>();

  constructor(
    readonly name: string,
    private readonly service: KmsService,
    private readonly metrics: TransformationMetrics,
    private readonly timings: KmsTimings = KMS_TIMINGS,
  ) {}

  /**
   * kube's primeAndProbeKMSv2: one check now (awaited, so a healthy plugin has a seed before
   * the first write), then a check every positive interval, dropping to the negative
   * interval until it succeeds again.
   */
  async start(): Promise<void> {
    let ok = true;
    try {
      await this.check();
    } catch {
      ok = false;
    }
    this.schedule(ok);
  }

  private schedule(healthy: boolean): void {
    if (this.stopped) return;
    this.timer = setTimeout(
      () => {
        this.check().then(
          () => this.schedule(true),
          () => this.schedule(false),
        );
      },
      healthy ? this.timings.positiveIntervalMs : this.timings.negativeIntervalMs,
    );
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.service.close();
  }

  /** kube's kmsv2PluginProbe.check: the plugin's Status, a seed rotation when its key id changed; answers reused for a while. */
  check(): Promise<void> {
    const now = this.timings.now();
    if (now - this.last.at < this.last.ttl) return this.last.err ? Promise.reject(this.last.err) : Promise.resolve();
    if (this.checking) return this.checking;
    this.checking = this.doCheck()
      .then(
        () => {
          this.last = { err: null, at: this.timings.now(), ttl: this.timings.healthyTtlMs };
        },
        (e: Error) => {
          this.last = { err: e, at: this.timings.now(), ttl: this.timings.unhealthyTtlMs };
          throw e;
        },
      )
      .finally(() => {
        this.checking = null;
      });
    return this.checking;
  }

  private async doCheck(): Promise<void> {
    let status;
    try {
      status = await this.service.status();
    } catch (e) {
      throw new TransformError(`failed to perform status section of the healthz check for KMS Provider ${this.name}, error: ${(e as Error).message}`, (e as TransformError).grpcCode);
    }
    const errs: string[] = [];
    if (status.healthz !== 'ok') errs.push(`got unexpected healthz status: ${status.healthz}`);
    if (status.version !== 'v2' && status.version !== 'v2beta1') errs.push(`expected KMSv2 API version v2, got ${status.version}`);
    else {
      if (!this.version) this.version = status.version;
      if (this.version !== status.version) errs.push(`KMSv2 API version should not change after the initial status response version ${this.version}, got ${status.version}`);
    }
    const k = validateKeyId(status.keyId);
    if (k.err) errs.push(`got invalid KMSv2 KeyID hash ${JSON.stringify(keyIdHash(status.keyId))}: ${k.err}`);
    else {
      const err = await this.rotateOnKeyIdChange(status.keyId, randomUUID());
      if (err) errs.push(err);
    }
    if (errs.length) throw new TransformError(`kmsv2 Provider ${this.name} is not healthy, error: ${errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`}`);
  }

  /**
   * kube's rotateDEKOnKeyIDChange: the same key id extends the current seed's write life;
   * a new one gets a new seed, kept only if the plugin encrypted it under that key id.
   * Returns an error message, or null.
   */
  private async rotateOnKeyIdChange(statusKeyId: string, uid: string): Promise<string | null> {
    const expiration = this.timings.now() + this.timings.writeMaxTtlMs;
    let stateErr: string | null = null;
    try {
      this.currentState();
    } catch (e) {
      stateErr = (e as Error).message;
    }
    const state = this.state;
    if (!stateErr && state && state.keyId === statusKeyId && state.encryptedDEKSourceType === HKDF_SHA256_XNONCE_AES_GCM_SEED) {
      this.state = { ...state, expiration };
      return null;
    }
    let genErr: string | null = null;
    let encryptKeyId = '';
    try {
      const started = performance.now();
      let seed: Buffer;
      try {
        seed = randomBytes(SEED_SIZE);
      } catch (e) {
        this.metrics.dataKeyGeneration(started, e as Error);
        throw e;
      }
      this.metrics.dataKeyGeneration(started, null);
      let resp;
      try {
        resp = await this.service.encrypt(uid, seed);
      } catch (e) {
        throw new TransformError(`failed to encrypt DEK, error: ${(e as Error).message}`);
      }
      encryptKeyId = resp.keyId;
      const candidate = { encryptedData: Buffer.from([0]), keyId: resp.keyId, encryptedDEKSource: resp.ciphertext, annotations: resp.annotations, encryptedDEKSourceType: HKDF_SHA256_XNONCE_AES_GCM_SEED };
      validateEncryptedObject(candidate);
      if (resp.keyId === statusKeyId) {
        const key = cacheKey(HKDF_SHA256_XNONCE_AES_GCM_SEED, resp.ciphertext, resp.keyId, resp.annotations);
        this.state = { transformer: new HkdfGcmTransformer(seed), keyId: resp.keyId, encryptedDEKSource: resp.ciphertext, annotations: resp.annotations, encryptedDEKSourceType: HKDF_SHA256_XNONCE_AES_GCM_SEED, uid, expiration, cacheKey: key };
        return null;
      }
    } catch (e) {
      genErr = (e as Error).message;
    }
    const q = (s: string) => JSON.stringify(s);
    return `failed to rotate DEK uid=${q(uid)}, useSeed=true, errState=${stateErr ?? '<nil>'}, errGen=${genErr ?? '<nil>'}, statusKeyIDHash=${q(keyIdHash(statusKeyId))}, encryptKeyIDHash=${q(keyIdHash(encryptKeyId))}, stateKeyIDHash=${q(keyIdHash(state?.keyId ?? ''))}, expirationTimestamp=${state ? rfc3339(state.expiration) : '0001-01-01T00:00:00Z'}`;
  }

  now(): number {
    return this.timings.now();
  }

  /** kube's getCurrentState: the write state, valid for reads indefinitely. */
  currentState(): KmsState {
    if (!this.state) throw new TransformError('got unexpected nil transformer');
    return this.state;
  }

  /** A decrypted data key's transformer (from the cache, else through the plugin; a miss is counted). */
  readTransformer(o: EncryptedObject): ValueTransformer | Promise<ValueTransformer> {
    const key = cacheKey(o.encryptedDEKSourceType, o.encryptedDEKSource, o.keyId, o.annotations);
    const now = this.timings.now();
    const hit = this.cache.get(key);
    if (hit && hit.expires > now) return hit.t;
    this.metrics.cacheMiss();
    return this.service.decrypt(randomUUID(), { ciphertext: o.encryptedDEKSource, keyId: o.keyId, annotations: o.annotations }).then(
      (plain) => {
        const t = o.encryptedDEKSourceType === HKDF_SHA256_XNONCE_AES_GCM_SEED ? new HkdfGcmTransformer(plain) : new AesGcmTransformer(plain);
        this.remember(key, t);
        return t;
      },
      (e: Error) => {
        throw new TransformError(`failed to decrypt DEK, error: ${e.message}`, (e as TransformError).grpcCode);
      },
    );
  }

  remember(key: string, t: ValueTransformer): void {
    const now = this.timings.now();
    // drop expired entries as the cache grows (kube's cache has its own GC)
    if (this.cache.size > 1000) for (const [k, v] of this.cache) if (v.expires <= now) this.cache.delete(k);
    this.cache.set(key, { t, expires: now + 24 * 3600 * 1000 });
  }
}

/** kube's envelopeTransformer for KMS v2 (its prefix "k8s:enc:kms:v2:<name>:" is added by PrefixTransformers). */
export class KmsV2Transformer implements ValueTransformer {
  constructor(private readonly provider: KmsV2Provider) {}

  toStorage(data: Buffer, key: string): Buffer {
    const state = this.provider.currentState();
    const now = this.provider.now();
    if (now > state.expiration) throw new TransformError(`encryptedDEKSource with keyID hash ${JSON.stringify(keyIdHash(state.keyId))} expired at ${rfc3339(state.expiration)} (current time is ${rfc3339(now)})`);
    // the current seed stays cached so reads of fresh writes never ask the plugin
    this.provider.remember(state.cacheKey, state.transformer);
    const encryptedData = state.transformer.toStorage(data, key);
    const o: EncryptedObject = { encryptedData, keyId: state.keyId, encryptedDEKSource: state.encryptedDEKSource, annotations: state.annotations, encryptedDEKSourceType: state.encryptedDEKSourceType };
    validateEncryptedObject(o);
    return encodeEncryptedObject(o);
  }

  fromStorage(data: Buffer, key: string): FromStorage | Promise<FromStorage> {
    let o: EncryptedObject;
    try {
      o = decodeEncryptedObject(data);
    } catch (e) {
      throw new TransformError(e instanceof ProtoError ? `proto: ${e.message}` : (e as Error).message);
    }
    validateEncryptedObject(o);
    const state = this.provider.currentState(); // reads need a state too, as kube's stateFunc
    const finish = (t: ValueTransformer): FromStorage => {
      const r = t.fromStorage(o.encryptedData, key) as FromStorage;
      return { data: r.data, stale: r.stale || o.keyId !== state.keyId || o.encryptedDEKSourceType !== state.encryptedDEKSourceType };
    };
    const t = this.provider.readTransformer(o);
    return t instanceof Promise ? t.then(finish) : finish(t);
  }
}
