// Picks and builds the storage backend named by --storage-backend, as kube's
// storagebackend/factory.Create does by its config's type. The caller wraps it in the cache
// layer (src/storage/cacher.ts) and starts that.
import { etcdServersOverrides, type ServerOptions } from '../options.js';
import type { Storage } from './interface.js';
import { EtcdStorage } from './etcd/etcd-storage.js';
import { LmdbStorage, type LmdbFrontData } from './lmdb/lmdb-storage.js';
import { serveSnapshots } from './lmdb/snapshot.js';

/**
 * The backend for options o, its data under dataDir. front: set on another front thread than
 * the main one (issue 18): its index, and what the main thread's backend readied for it
 * (Storage.connectFront).
 */
export function createStorage(o: ServerOptions, dataDir: string, front?: { index: number; data: unknown }): Storage {
  switch (o.storageBackend) {
    case 'etcd3':
      // kube-apiserver gives each overridden resource a storage of its own on its servers;
      // one EtcdStorage follows one cluster's revision space, and the seam has no backend
      // that joins several yet
      if (etcdServersOverrides(o.etcdServersOverrides).length) {
        throw new Error('--etcd-servers-overrides: per-resource etcd servers are not supported yet; store every resource on --etcd-servers');
      }
      // every front thread has its own instance, client and watch, as every replica does;
      // only the main thread's compacts (one compactor per process is enough: the replicas
      // already take turns through etcd)
      return new EtcdStorage({
        endpoints: o.etcdServers,
        caFile: o.etcdCafile || undefined,
        certFile: o.etcdCertfile || undefined,
        keyFile: o.etcdKeyfile || undefined,
        prefix: o.etcdPrefix,
        mediaType: o.storageMediaType,
        compactionIntervalMs: front ? 0 : o.etcdCompactionIntervalSeconds * 1000,
        maxObjectBytes: o.maxObjectSizeBytes,
      });
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

/**
 * The running server's snapshot socket (`kubeshard snapshot save`), for a backend that has
 * one: the LMDB shards. etcd has its own (`etcdctl snapshot save`): null.
 */
export async function serveStorageSnapshots(storage: Storage, o: ServerOptions, dataDir: string, warn: (m: string) => void): Promise<{ close(): Promise<void> } | null> {
  if (!(storage instanceof LmdbStorage)) return null;
  return serveSnapshots(storage, dataDir, { shardCount: o.shards, shardMap: o.shardMap }, warn);
}
