// Checks shared by the storage-failure tests (hardening-disk, hardening-shard-death): a
// request must answer in time (a hang fails the test instead of timing it out), and every
// write a client was told succeeded must read back as written.
import { expect } from 'vitest';
import { request, type TestServer } from './server.js';

/** A request that must answer within `ms`. */
export async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<T>((_, rej) => (t = setTimeout(() => rej(new Error(`${what}: no answer within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(t);
  }
}

/** Every acknowledged ConfigMap (name → its data.v) of `collection` reads back unchanged. */
export async function expectAllStored(srv: TestServer, acked: Map<string, string>, collection = '/api/v1/namespaces/default/configmaps'): Promise<void> {
  const list = await within(request(srv, 'GET', collection), 20_000, 'list');
  expect(list.status).toBe(200);
  const stored = new Map<string, string>(list.json().items.map((i: any) => [i.metadata.name, i.data?.v]));
  for (const [name, v] of acked) expect(stored.get(name) === v, `${name} acknowledged, read back ${stored.has(name) ? 'changed' : 'missing'}`).toBe(true);
}
