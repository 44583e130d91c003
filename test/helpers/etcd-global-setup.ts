// vitest globalSetup: with KUBESHARD_TEST_STORAGE=etcd3, one etcd member for the whole run
// (its data in memory, /dev/shm where there is one: fsync costs nothing there), whose client
// URL every test server started by startServer (test/helpers/server.ts) is pointed at, each
// under its own --etcd-prefix. Without the variable it starts nothing.
//
// Thread ownership: vitest's main process; it owns the etcd child process and stops it in
// the teardown it returns.
import { existsSync } from 'node:fs';
import type { TestProject } from 'vitest/node';
import { etcdAvailable, startCluster } from '../../src/storage/etcd/test-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** the shared etcd's client URL ('' when the run is on LMDB) */
    etcdEndpoint: string;
  }
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (process.env.KUBESHARD_TEST_STORAGE !== 'etcd3') {
    project.provide('etcdEndpoint', '');
    return undefined;
  }
  if (!etcdAvailable()) throw new Error('KUBESHARD_TEST_STORAGE=etcd3: /usr/bin/etcd (Debian etcd-server) is not installed');
  const cluster = await startCluster(1, ['--quota-backend-bytes', String(4 * 1024 ** 3)], undefined, existsSync('/dev/shm') ? '/dev/shm' : undefined);
  project.provide('etcdEndpoint', cluster.endpoints[0]);
  return () => cluster.stop();
}
