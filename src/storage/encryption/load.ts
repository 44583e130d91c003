// Builds the transformers of an EncryptionConfiguration, as kube's LoadEncryptionConfig
// (pkg/server/options/encryptionconfig/config.go): per group-resource, the providers of
// every entry naming it, in order; the AES and secretbox providers choose among their
// keys by the "<name>:" prefix; each provider type has kube's stored prefix.
//
// Thread ownership: the loading thread; the result's KMS providers poll on its event loop
// until closed.
import { readFileSync } from 'node:fs';
import { goQuote } from '../../errors.js';
import { AesCbcTransformer, AesGcmTransformer } from './aes.js';
import { decodeBase64Std, EncryptionConfigError, groupResourceString, parseEncryptionConfig, parseGroupResource, type EncryptionConfiguration, type Key, type ResourceConfiguration } from './config.js';
import { GrpcKmsService, type KmsService } from './kms-service.js';
import { KMS_TIMINGS, KmsV2Provider, KmsV2Transformer, type KmsTimings } from './kmsv2.js';
import type { TransformationMetrics } from './metrics.js';
import { SecretboxTransformer } from './secretbox-transformer.js';
import { IDENTITY, PrefixTransformers, type PrefixTransformer, type ValueTransformer } from './transformer.js';

export const PREFIX = {
  aescbc: 'k8s:enc:aescbc:v1:',
  aesgcm: 'k8s:enc:aesgcm:v1:',
  secretbox: 'k8s:enc:secretbox:v1:',
  kmsv2: 'k8s:enc:kms:v2:',
};

export interface HealthCheck {
  name: string;
  /** resolves when healthy; rejects with the reason */
  check(): Promise<void>;
}

export interface LoadOptions {
  /** --encryption-provider-config-automatic-reload (stricter KMS name rules; one combined health check) */
  reload: boolean;
  metrics: TransformationMetrics;
  /** how a KMS v2 plugin is reached (tests may give their own); default: gRPC over its unix socket */
  kmsService?: (endpoint: string, timeoutSeconds: number) => KmsService;
  kmsTimings?: KmsTimings;
}

/** A loaded configuration: transformers by group-resource string ("secrets", "*.apps", "*.*"), its health checks, its file's hash. */
export interface LoadedConfig {
  transformers: Map<string, ValueTransformer>;
  healthChecks: HealthCheck[];
  hash: string;
  kms: KmsV2Provider[];
  /** how long to keep old KMS connections open after a reload (twice the sum of their timeouts, kube's KMSCloseGracePeriod) */
  closeGracePeriodMs: number;
  close(): void;
}

function keyedPrefixTransformer(keys: Key[], make: (key: Buffer) => ValueTransformer, noMatch: string, prefix: string, metrics: TransformationMetrics, kind: string): PrefixTransformer {
  if (!keys.length) throw new EncryptionConfigError(`${kind} provider has no valid keys`);
  const entries = keys.map((k) => {
    const secret = decodeBase64Std(k.secret);
    if (!secret) throw new EncryptionConfigError(`could not obtain secret for named key ${k.name}: illegal base64 data`);
    return { prefix: Buffer.from(`${k.name}:`), transformer: make(secret) };
  });
  return { prefix: Buffer.from(prefix), transformer: new PrefixTransformers(entries, noMatch, metrics) };
}

/** kube's grYAMLString */
function grYaml(gr: { group: string; resource: string }): string {
  return gr.group === '' && gr.resource === '*' ? '*.' : groupResourceString(gr);
}

/** Builds the transformers of a parsed configuration (KMS providers are started: the first Status check is awaited). */
export async function buildTransformers(config: EncryptionConfiguration, hash: string, opts: LoadOptions): Promise<LoadedConfig> {
  const kms: KmsV2Provider[] = [];
  const close = () => kms.forEach((k) => k.stop());
  try {
    const byResource = new Map<string, PrefixTransformer[]>();
    let timeoutSum = 0;
    for (const rc of config.resources) {
      const list = await providersOf(rc, opts, kms, (t) => (timeoutSum += t));
      for (const r of rc.resources) {
        const gr = parseGroupResource(r);
        const key = groupResourceString(gr);
        // a resource after "*.group" or "*.*" in an earlier entry would never be used: kube refuses it
        const groupWild = groupResourceString({ group: gr.group, resource: '*' });
        if (byResource.has(groupWild)) throw new EncryptionConfigError(`resource ${goQuote(grYaml(gr))} is masked by earlier rule ${goQuote(grYaml({ group: gr.group, resource: '*' }))}`);
        if (byResource.has('*.*')) throw new EncryptionConfigError(`resource ${goQuote(grYaml(gr))} is masked by earlier rule "*.*"`);
        byResource.set(key, [...(byResource.get(key) ?? []), ...list]);
      }
    }
    const transformers = new Map<string, ValueTransformer>();
    for (const [gr, list] of byResource) transformers.set(gr, new PrefixTransformers(list, 'no matching prefix found', opts.metrics));
    const healthChecks: HealthCheck[] = kms.map((k, i) => ({ name: `kms-provider-${i}`, check: () => k.check() }));
    // kube: with reload on, or KMS v2 alone, one check named kms-providers covers every plugin
    const combined: HealthCheck[] =
      opts.reload || kms.length
        ? [
            {
              name: 'kms-providers',
              check: async () => {
                const errs: string[] = [];
                for (const c of healthChecks) await c.check().catch((e: Error) => errs.push(`${c.name}: ${e.message}`));
                if (errs.length) throw new Error(errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`);
              },
            },
          ]
        : [];
    return { transformers, healthChecks: combined, hash, kms, closeGracePeriodMs: 2 * timeoutSum * 1000, close };
  } catch (e) {
    close();
    throw e instanceof EncryptionConfigError ? new EncryptionConfigError(`error while building transformers: ${e.message}`) : e;
  }
}

async function providersOf(rc: ResourceConfiguration, opts: LoadOptions, kms: KmsV2Provider[], addTimeout: (s: number) => void): Promise<PrefixTransformer[]> {
  const out: PrefixTransformer[] = [];
  for (const p of rc.providers) {
    if (p.aesgcm) out.push(keyedPrefixTransformer(p.aesgcm.keys, (k) => new AesGcmTransformer(k), 'no matching key was found for the provided AES transformer', PREFIX.aesgcm, opts.metrics, 'aes'));
    else if (p.aescbc) out.push(keyedPrefixTransformer(p.aescbc.keys, (k) => new AesCbcTransformer(k), 'no matching key was found for the provided AES transformer', PREFIX.aescbc, opts.metrics, 'aes'));
    else if (p.secretbox) out.push(keyedPrefixTransformer(p.secretbox.keys, (k) => new SecretboxTransformer(k), 'no matching key was found for the provided Secretbox transformer', PREFIX.secretbox, opts.metrics, 'secretbox'));
    else if (p.kms) {
      const c = p.kms;
      if (c.apiVersion === 'v1')
        throw new EncryptionConfigError('KMSv1 is deprecated and will only receive security updates going forward. Use KMSv2 instead.  Set --feature-gates=KMSv1=true to use the deprecated KMSv1 feature.');
      const service = (opts.kmsService ?? ((endpoint, timeout) => new GrpcKmsService(endpoint, timeout)))(c.endpoint, c.timeout);
      const provider = new KmsV2Provider(c.name, service, opts.metrics, opts.kmsTimings ?? KMS_TIMINGS);
      kms.push(provider);
      addTimeout(c.timeout);
      await provider.start();
      out.push({ prefix: Buffer.from(`${PREFIX.kmsv2}${c.name}:`), transformer: new KmsV2Transformer(provider) });
    } else if (p.identity) out.push({ prefix: Buffer.alloc(0), transformer: IDENTITY });
    else throw new EncryptionConfigError('provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity');
  }
  return out;
}

/** kube's LoadEncryptionConfig: read, parse, validate and build; errors carry kube's messages. */
export async function loadEncryptionConfig(path: string, opts: LoadOptions): Promise<LoadedConfig> {
  let data: Buffer;
  try {
    data = readFileSync(path);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    const why = err.code === 'ENOENT' ? 'no such file or directory' : err.code === 'EACCES' ? 'permission denied' : err.code === 'EISDIR' ? 'is a directory' : err.message;
    throw new EncryptionConfigError(`error while parsing file: error while loading file: error reading encryption provider configuration file ${goQuote(path)}: open ${path}: ${why}`);
  }
  const { config, hash } = parseEncryptionConfig(data, path, opts.reload);
  return buildTransformers(config, hash, opts);
}
