// Picks and builds the storage backend named by --storage-backend, as kube's
// storagebackend/factory.Create does by its config's type. The caller wraps it in the cache
// layer (src/storage/cacher.ts) and starts that.
import type { ServerOptions } from '../options.js';
import type { Storage } from './interface.js';
import { LmdbStorage, type LmdbFrontData } from './lmdb/lmdb-storage.js';

/**
 * The backend for options o, its data under dataDir. front: set on another front thread than
 * the main one (issue 18): its index, and what the main thread's backend readied for it
 * (Storage.connectFront).
 */
export function createStorage(o: ServerOptions, dataDir: string, front?: { index: number; data: unknown }): Storage {
  switch (o.storageBackend) {
    case 'etcd3':
      throw new Error('--storage-backend=etcd3: etcd3 storage backend not built yet');
    default:
      return new LmdbStorage({
        dataDir,
        shardCount: o.shards,
        shardMap: o.shardMap,
        retentionMs: o.historyRetentionSeconds * 1000,
        compactIntervalMs: Math.max(1000, Math.min(60_000, (o.historyRetentionSeconds * 1000) / 5)),
        treeIntervalMs: o.storageBatchIntervalSeconds * 1000,
        maxObjectBytes: o.maxObjectSizeBytes,
        front: front && { index: front.index, ...(front.data as LmdbFrontData) },
      });
  }
}
