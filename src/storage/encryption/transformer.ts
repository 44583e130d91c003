// The value transformer seam of encryption at rest, after kube's
// k8s.io/apiserver/pkg/storage/value (Transformer, PrefixTransformers): a backend passes
// every value it writes through toStorage and every value it reads through fromStorage,
// with the storage key (etcd's full key, e.g. /registry/secrets/default/db) as the
// authenticated context, as kube's etcd3 store passes authenticatedDataString(key).
//
// Stateless apart from the metrics it reports to (metrics.ts).
import { performance } from 'node:perf_hooks';
import type { TransformationMetrics } from './metrics.js';

export interface FromStorage {
  data: Buffer;
  /** the value was not written by the first provider (or key): rewriting it would re-encrypt it (kube's stale) */
  stale: boolean;
}

export interface ValueTransformer {
  /** The stored form of `data` under storage key `key`. Throws on failure. */
  toStorage(data: Buffer, key: string, resource?: string): Buffer;
  /**
   * The plain form of a stored value. Synchronous except where a remote call is needed
   * (a KMS v2 data key not yet in the cache): then a promise. Throws (or rejects) on failure.
   */
  fromStorage(data: Buffer, key: string, resource?: string): FromStorage | Promise<FromStorage>;
}

/** A transformer failure; `grpcCode` (Go's code name, e.g. "Unavailable") when a KMS call failed. */
export class TransformError extends Error {
  constructor(
    message: string,
    readonly grpcCode?: string,
  ) {
    super(message);
  }
}

const ENCRYPTED_PREFIX = Buffer.from('k8s:enc:');

/**
 * kube's identity.NewEncryptCheckTransformer: no change either way, but a read of
 * encrypted data is refused. Free on the hot path: no copy, no promise, no metrics.
 */
export const IDENTITY: ValueTransformer & { readonly identity: true } = {
  identity: true,
  toStorage(data) {
    return data;
  },
  fromStorage(data) {
    // JSON starts with '{', protobuf with "k8s\0", CBOR with 0xd9: only encrypted data starts with "k8s:"
    if (data.length >= 8 && data[3] === 0x3a && data.subarray(0, 8).equals(ENCRYPTED_PREFIX)) throw new TransformError('identity transformer tried to read encrypted data');
    return { data, stale: false };
  },
};

export interface PrefixTransformer {
  /** empty for identity */
  prefix: Buffer;
  transformer: ValueTransformer;
}

/** kube's utilerrors.Reduce(NewAggregate(errs)): the one error, or all of them in brackets. */
export function aggregate(errs: Error[]): Error {
  if (errs.length === 1) return errs[0];
  const msgs = [...new Set(errs.map((e) => e.message))];
  return msgs.length === 1 ? errs[0] : new TransformError(`[${msgs.join(', ')}]`);
}

/**
 * kube's value.NewPrefixTransformers: writes with the first transformer, its prefix in
 * front; reads with the first whose prefix the data has, going on to the next match when
 * one fails (two providers of one type share a prefix during a rotation; an identity in
 * front of encrypted data fails quietly). A read not done by the first is stale.
 */
export class PrefixTransformers implements ValueTransformer {
  private readonly labels: string[];
  constructor(
    private readonly entries: PrefixTransformer[],
    private readonly noMatch: string,
    private readonly metrics: TransformationMetrics,
  ) {
    this.labels = entries.map((e) => e.prefix.toString('latin1'));
  }

  toStorage(data: Buffer, key: string, resource = ''): Buffer {
    const start = performance.now();
    const first = this.entries[0];
    let out: Buffer;
    try {
      out = first.transformer.toStorage(data, key, resource);
    } catch (e) {
      this.metrics.transformation(resource, 'to_storage', this.labels[0], start, e as Error);
      throw e;
    }
    this.metrics.transformation(resource, 'to_storage', this.labels[0], start, null);
    return first.prefix.length ? Buffer.concat([first.prefix, out], first.prefix.length + out.length) : out;
  }

  fromStorage(data: Buffer, key: string, resource = ''): FromStorage | Promise<FromStorage> {
    return this.readFrom(data, key, resource, 0, performance.now(), []);
  }

  private readFrom(data: Buffer, key: string, resource: string, from: number, start: number, errs: Error[]): FromStorage | Promise<FromStorage> {
    for (let i = from; i < this.entries.length; i++) {
      const { prefix, transformer } = this.entries[i];
      if (prefix.length && !(data.length >= prefix.length && data.subarray(0, prefix.length).equals(prefix))) continue;
      let r: FromStorage | Promise<FromStorage>;
      try {
        r = transformer.fromStorage(prefix.length ? data.subarray(prefix.length) : data, key, resource);
      } catch (e) {
        this.failed(resource, i, start, e as Error, errs);
        continue;
      }
      if (r instanceof Promise) {
        return r.then(
          (ok) => this.succeeded(resource, i, start, ok),
          (e) => {
            this.failed(resource, i, start, e as Error, errs);
            return this.readFrom(data, key, resource, i + 1, start, errs);
          },
        );
      }
      return this.succeeded(resource, i, start, r);
    }
    if (errs.length) throw aggregate(errs);
    const err = new TransformError(this.noMatch);
    this.metrics.transformation(resource, 'from_storage', 'unknown', start, err);
    throw err;
  }

  private succeeded(resource: string, i: number, start: number, r: FromStorage): FromStorage {
    this.metrics.transformation(resource, 'from_storage', this.labels[i] || 'identity', start, null);
    return i === 0 ? r : { data: r.data, stale: true };
  }

  private failed(resource: string, i: number, start: number, e: Error, errs: Error[]): void {
    // an identity provider's refusal of encrypted data lets the later providers try, unrecorded
    if (!this.entries[i].prefix.length) return;
    this.metrics.transformation(resource, 'from_storage', this.labels[i], start, e);
    errs.push(e);
  }
}
