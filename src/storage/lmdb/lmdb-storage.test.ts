// The storage conformance suite (src/storage/conformance.ts) on the LMDB backend: real shard
// workers over LMDB environments in a temp dir, one per test. The shard workers run the
// built JavaScript (dist/, from `npx tsc -p tsconfig.json`), as the server tests do: the suite
// and the backend are taken from there too, so that the classes it checks errors against
// (WriteRejected, CompactedError) are the ones the backend throws.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { storageConformance } from '../../../dist/src/storage/conformance.js';
import { LmdbStorage } from '../../../dist/src/storage/lmdb/lmdb-storage.js';

storageConformance('lmdb', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kubeshard-lmdb-conformance-'));
  const opts = { dataDir: dir, shardCount: 1, shardMap: {}, retentionMs: 300_000, compactIntervalMs: 60_000, treeIntervalMs: 0 };
  const storage = new LmdbStorage(opts);
  return {
    storage,
    reopen: () => new LmdbStorage(opts),
    compact: () => storage.compact(0),
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
});
