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

  it('refuses --etcd-servers-overrides at start-up with a clear message (not supported yet)', () => {
    const o = parseArgs(['--storage-backend=etcd3', '--etcd-servers=http://127.0.0.1:1', '--etcd-servers-overrides=/events#http://127.0.0.1:4002']);
    expect(() => createStorage(o as any, '/nonexistent')).toThrowError('--etcd-servers-overrides: per-resource etcd servers are not supported yet');
  });
});
