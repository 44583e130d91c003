// kube's AES transformers (k8s.io/apiserver/pkg/storage/value/encrypt/aes), stored byte
// for byte as kube stores them, on Node's crypto:
// - CBC: a random 16-byte IV, then the PKCS#7-padded ciphertext (no authentication).
// - GCM: a random 12-byte nonce, then ciphertext and 16-byte tag; the storage key is the
//   additional authenticated data, so a value copied under another key does not decrypt.
// - the KMS v2 seed mode (NewHKDFExtendedNonceGCMTransformer): a random 32-byte info,
//   a key derived from the seed by HKDF-Expand(SHA-256, seed, info), then GCM as above.
//
// Stateless apart from each transformer's key.
import { createCipheriv, createDecipheriv, createHmac, randomBytes, type CipherGCMTypes } from 'node:crypto';
import { TransformError, type FromStorage, type ValueTransformer } from './transformer.js';

const SHORT = 'the stored data was shorter than the required size';

function algorithm(key: Buffer, mode: 'cbc' | 'gcm'): string {
  if (key.length !== 16 && key.length !== 24 && key.length !== 32) throw new TransformError(`crypto/aes: invalid key size ${key.length}`);
  return `aes-${key.length * 8}-${mode}`;
}

export class AesCbcTransformer implements ValueTransformer {
  private readonly alg: string;
  constructor(private readonly key: Buffer) {
    this.alg = algorithm(key, 'cbc');
  }

  toStorage(data: Buffer): Buffer {
    const iv = randomBytes(16);
    const c = createCipheriv(this.alg, this.key, iv); // PKCS#7 padding is Node's default
    return Buffer.concat([iv, c.update(data), c.final()]);
  }

  fromStorage(data: Buffer): FromStorage {
    if (data.length < 16) throw new TransformError(SHORT);
    const body = data.subarray(16);
    if (body.length % 16 !== 0) throw new TransformError('the stored data is not a multiple of the block size');
    const d = createDecipheriv(this.alg, this.key, data.subarray(0, 16));
    d.setAutoPadding(false); // checked below, with kube's messages
    const out = Buffer.concat([d.update(body), d.final()]);
    const pad = out.length ? out[out.length - 1] : 0;
    if (pad === 0 || pad > out.length) throw new TransformError('invalid PKCS7 data (empty or not padded)');
    for (let i = out.length - pad; i < out.length; i++) if (out[i] !== pad) throw new TransformError('invalid padding on input');
    return { data: out.subarray(0, out.length - pad), stale: false };
  }
}

/** AES-GCM with a random 96-bit nonce; the storage key authenticated (kube's NewGCMTransformer). */
export class AesGcmTransformer implements ValueTransformer {
  private readonly alg: string;
  constructor(private readonly key: Buffer) {
    this.alg = algorithm(key, 'gcm');
  }

  toStorage(data: Buffer, key: string): Buffer {
    return gcmSeal(this.alg, this.key, data, key, null);
  }

  fromStorage(data: Buffer, key: string): FromStorage {
    return { data: gcmOpen(this.alg, this.key, data, key), stale: false };
  }
}

function gcmSeal(alg: string, aesKey: Buffer, data: Buffer, key: string, info: Buffer | null): Buffer {
  const nonce = randomBytes(12);
  const c = createCipheriv(alg as CipherGCMTypes, aesKey, nonce);
  c.setAAD(Buffer.from(key));
  const body = c.update(data);
  c.final();
  const parts: Buffer[] = [nonce, body, c.getAuthTag()];
  if (info) parts.unshift(info);
  return Buffer.concat(parts);
}

function gcmOpen(alg: string, aesKey: Buffer, data: Buffer, key: string): Buffer {
  if (data.length < 12) throw new TransformError(SHORT);
  // Go's AEAD Open fails alike on a short message and on a wrong tag
  if (data.length < 12 + 16) throw new TransformError('cipher: message authentication failed');
  const d = createDecipheriv(alg as CipherGCMTypes, aesKey, data.subarray(0, 12));
  d.setAAD(Buffer.from(key));
  d.setAuthTag(data.subarray(data.length - 16));
  const out = d.update(data.subarray(12, data.length - 16));
  try {
    d.final();
  } catch {
    throw new TransformError('cipher: message authentication failed');
  }
  return out;
}

/** The seed size, info size and derived key size of the KMS v2 seed mode. */
export const SEED_SIZE = 32;

/** HKDF-Expand(SHA-256, prk, info) to 32 bytes (one block: T(1) = HMAC(prk, info || 0x01)); no extract step, as kube. */
function hkdfExpand32(prk: Buffer, info: Buffer): Buffer {
  return createHmac('sha256', prk).update(info).update(Buffer.from([1])).digest();
}

/** kube's extendedNonceGCM: a fresh key per write, derived from the seed and 32 random bytes stored in front. */
export class HkdfGcmTransformer implements ValueTransformer {
  constructor(private readonly seed: Buffer) {
    if (seed.length < SEED_SIZE) throw new TransformError(`invalid seed length ${seed.length} used for key generation`);
  }

  toStorage(data: Buffer, key: string): Buffer {
    const info = randomBytes(SEED_SIZE);
    return gcmSeal('aes-256-gcm', hkdfExpand32(this.seed, info), data, key, info);
  }

  fromStorage(data: Buffer, key: string): FromStorage {
    if (data.length < SEED_SIZE) throw new TransformError(SHORT);
    const derived = hkdfExpand32(this.seed, data.subarray(0, SEED_SIZE));
    return { data: gcmOpen('aes-256-gcm', derived, data.subarray(SEED_SIZE), key), stale: false };
  }
}
