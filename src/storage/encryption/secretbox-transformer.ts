// kube's secretbox provider (k8s.io/apiserver/pkg/storage/value/encrypt/secretbox): a
// random 24-byte nonce, then NaCl's box. The storage key is not authenticated (kube's
// secretbox takes none). Stateless apart from its key.
import { randomBytes } from 'node:crypto';
import { SECRETBOX_OVERHEAD, secretboxOpen, secretboxSeal } from './secretbox.js';
import { TransformError, type FromStorage, type ValueTransformer } from './transformer.js';

const NONCE = 24;

export class SecretboxTransformer implements ValueTransformer {
  constructor(private readonly key: Buffer) {}

  toStorage(data: Buffer): Buffer {
    const nonce = randomBytes(NONCE);
    return Buffer.concat([nonce, secretboxSeal(data, nonce, this.key)]);
  }

  fromStorage(data: Buffer): FromStorage {
    if (data.length < SECRETBOX_OVERHEAD + NONCE) throw new TransformError('the stored data was shorter than the required size');
    const out = secretboxOpen(data.subarray(NONCE), data.subarray(0, NONCE), this.key);
    // kube's message for a box that does not open, odd as it reads
    if (!out) throw new TransformError('output array was not large enough for encryption');
    return { data: out, stale: false };
  }
}
