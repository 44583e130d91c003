// Picks and builds the storage backend named by --storage-backend, as kube's
// storagebackend/factory.Create does by its config's type. The caller wraps it in the cache
// layer (src/storage/cacher.ts) and starts that.
import { etcdServersOverrides, type ServerOptions } from '../options.js';
import type { Storage } from './interface.js';
import { EtcdStorage } from './etcd/etcd-storage.js';
import { EtcdOverrideStorage } from './etcd/etcd-overrides.js';
import { LmdbStorage, type LmdbFrontData } from './lmdb/lmdb-storage.js';
import { serveSnapshots } from './lmdb/snapshot.js';

/**
 * The backend for options o, its data under dataDir. front: set on another front thread than
 * the main one (issue 18): its index, and what the main thread's backend readied for it
 * (Storage.connectFront).
 */
export function createStorage(o: ServerOptions, dataDir: string, front?: { index: number; data: unknown }): Storage {
  switch (o.storageBackend) {
    case 'etcd3': {
      // every front thread has its own instance, client and watch, as every replica does;
      // only the main thread's compacts (one compactor per process is enough: the replicas
      // already take turns through etcd)
      const etcd = (servers: string[], owns?: (gr: string) => boolean) =>
        new EtcdStorage({
          endpoints: servers,
          caFile: o.etcdCafile || undefined,
          certFile: o.etcdCertfile || undefined,
          keyFile: o.etcdKeyfile || undefined,
          prefix: o.etcdPrefix,
          mediaType: o.storageMediaType,
          compactionIntervalMs: front ? 0 : o.etcdCompactionIntervalSeconds * 1000,
          maxObjectBytes: o.maxObjectSizeBytes,
          ttlSeconds: eventTtl(o),
          owns,
        });
      const overrides = etcdServersOverrides(o.etcdServersOverrides);
      if (!overrides.length) return etcd(o.etcdServers);
      // kube's --etcd-servers-overrides: the overridden group-resources on their own servers
      // (one instance per distinct server list, with the same TLS files and prefix, as kube)
      const byServers = new Map<string, string[]>();
      for (const { gr, servers } of overrides) {
        const k = servers.join(';');
        byServers.set(k, [...(byServers.get(k) ?? []), gr]);
      }
      const byGr = new Map<string, EtcdStorage>();
      for (const [servers, grs] of byServers) {
        const own = new Set(grs);
        const s = etcd(servers.split(';'), (gr) => own.has(gr));
        for (const gr of grs) byGr.set(gr, s);
      }
      return new EtcdOverrideStorage(etcd(o.etcdServers, (gr) => !byGr.has(gr)), byGr);
    }
    default:
      return new LmdbStorage({
        dataDir,
        shardCount: o.shards,
        shardMap: o.shardMap,
        retentionMs: o.historyRetentionSeconds * 1000,
        compactIntervalMs: Math.max(1000, Math.min(60_000, (o.historyRetentionSeconds * 1000) / 5)),
        treeIntervalMs: o.storageBatchIntervalSeconds * 1000,
        maxObjectBytes: o.maxObjectSizeBytes,
        ttlSeconds: eventTtl(o),
        front: front && { index: front.index, ...(front.data as LmdbFrontData) },
      });
  }
}

/**
 * kube's Event registry (pkg/registry/core/event/storage) gives every write of an Event a
 * TTL of --event-ttl, in whole seconds; events.k8s.io Events are the same objects, stored
 * under the core "events" resource. 0: they never expire.
 */
function eventTtl(o: ServerOptions): Record<string, number> | undefined {
  const s = Math.floor(o.eventTtlSeconds);
  return s > 0 ? { events: s } : undefined;
}

/**
 * The running server's snapshot socket (`kubeshard snapshot save`), for a backend that has
 * one: the LMDB shards. etcd has its own (`etcdctl snapshot save`): null.
 */
export async function serveStorageSnapshots(storage: Storage, o: ServerOptions, dataDir: string, warn: (m: string) => void): Promise<{ close(): Promise<void> } | null> {
  if (!(storage instanceof LmdbStorage)) return null;
  return serveSnapshots(storage, dataDir, { shardCount: o.shards, shardMap: o.shardMap }, warn);
}
