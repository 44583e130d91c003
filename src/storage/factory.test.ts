import { describe, expect, it } from 'vitest';
import { parseArgs } from '../options.js';
import { createStorage } from './factory.js';

describe('createStorage', () => {
  it('builds the LMDB backend by default, and etcd3 from the --etcd-* flags', async () => {
    expect(createStorage(parseArgs([]), '/nonexistent/never-started').name).toBe('lmdb');
    const etcd = createStorage(parseArgs(['--storage-backend=etcd3', '--etcd-servers=http://127.0.0.1:1']), '/nonexistent');
    expect(etcd.name).toBe('etcd3');
    await etcd.close();
  });

  it('--etcd-servers-overrides: the same backend interface over one instance per cluster', async () => {
    const o = parseArgs(['--storage-backend=etcd3', '--etcd-servers=http://127.0.0.1:1', '--etcd-servers-overrides=/events#http://127.0.0.1:2,coordination.k8s.io/leases#http://127.0.0.1:2']);
    const s = createStorage(o as any, '/nonexistent');
    expect(s.name).toBe('etcd3');
    expect(typeof s.latestRv).toBe('function');
    await s.close();
  });
});
