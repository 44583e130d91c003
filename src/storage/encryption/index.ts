// Encryption at rest: what the storage backends and the server import (see
// encryption-transformers.ts for how a backend calls it).
export { EncryptionTransformers, noEncryption, type EncryptionOptions, type ResourceTransformer } from './encryption-transformers.js';
export { EncryptionConfigError } from './config.js';
export type { HealthCheck } from './load.js';
export type { FromStorage } from './transformer.js';
