import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'workers/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Integration tests each start a real server process; run files one at a time
    // so that two servers never fight over the 2 cores of the CI machine.
    fileParallelism: false,
    // KUBESHARD_TEST_STORAGE=etcd3: one etcd for the run, every test server on it (test/helpers/server.ts)
    globalSetup: ['test/helpers/etcd-global-setup.ts'],
  },
});
