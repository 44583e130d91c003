// apiserver_storage_size_bytes for the LMDB backend: the size on disk of the shards' database
// files, read when /metrics is scraped (one directory listing and a few stats). kube labels the
// gauge with the etcd cluster's ID; the LMDB store is one local "cluster", labelled "lmdb".
// With etcd the size is etcd's own (etcd_mvcc_db_total_size_in_bytes on etcd's /metrics): not
// reported here.
//
// Thread ownership: none (stateless; the main thread's scrape calls it).
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerOptions } from '../options.js';

export function storageSizeOf(o: Pick<ServerOptions, 'storageBackend'>, dataDir: string): Array<[string, number]> {
  if (o.storageBackend !== 'lmdb') return [];
  let bytes = 0;
  try {
    for (const shard of readdirSync(dataDir)) {
      if (!/^shard-\d+$/.test(shard)) continue;
      for (const f of readdirSync(join(dataDir, shard))) {
        // (st_blocks: the space allocated, as kube's "physically allocated" size; a sparse map counts what it uses)
        const st = statSync(join(dataDir, shard, f));
        if (st.isFile()) bytes += st.blocks * 512;
      }
    }
  } catch {
    return [];
  }
  return [['lmdb', bytes]];
}
