import { describe, expect, it } from 'vitest';
import { parseArgs } from '../options.js';
import { createStorage } from './factory.js';

describe('createStorage', () => {
  it('builds the LMDB backend by default, and refuses etcd3 with a clear message until it is built', () => {
    expect(createStorage(parseArgs([]), '/nonexistent/never-started').name).toBe('lmdb');
    expect(() => createStorage(parseArgs(['--storage-backend=etcd3']), '/nonexistent')).toThrowError('etcd3 storage backend not built yet');
  });
});
