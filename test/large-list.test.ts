// Large lists: the cache's items are sent as pre-joined bytes, streamed behind the
// socket's backpressure (larger than what the kernel takes at once), and the memoized bytes
// follow every change. Asserts what a client sees: complete, ordered, parseable lists.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { request, startServer, type TestServer } from './helpers/server.js';

let s: TestServer;
const NS = 'big';
const CM = `/api/v1/namespaces/${NS}/configmaps`;
const N = 600;
const name = (i: number) => `cm-${String(i).padStart(4, '0')}`;

beforeAll(async () => {
  s = await startServer({ args: ['--controllers=*,-root-ca-certificate-publisher-controller'] }); // only the fixtures' config maps
  expect((await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: NS } })).status).toBe(201);
  expect((await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: 'other' } })).status).toBe(201);
  await request(s, 'POST', '/api/v1/namespaces/other/configmaps', { metadata: { name: 'elsewhere' } });
  let next = 0;
  await Promise.all(
    Array.from({ length: 24 }, async () => {
      while (next < N) {
        const i = next++;
        const r = await request(s, 'POST', CM, { metadata: { name: name(i), labels: { half: String(i % 2) } }, data: { v: String(i).repeat(8000).slice(0, 8000) } });
        expect(r.status).toBe(201);
      }
    }),
  );
}, 120_000);
afterAll(async () => {
  await s?.stop();
  s?.cleanup();
});

function names(list: any): string[] {
  return list.items.map((o: any) => o.metadata.name);
}

describe('large lists', () => {
  it('are complete and ordered, consistent and at resourceVersion=0, several at once', async () => {
    const all = Array.from({ length: N }, (_, i) => name(i));
    const replies = await Promise.all([request(s, 'GET', CM), request(s, 'GET', `${CM}?resourceVersion=0`), request(s, 'GET', CM), request(s, 'GET', `${CM}?resourceVersion=0`)]);
    for (const r of replies) {
      expect(r.status).toBe(200);
      expect(Number(r.headers['content-length'])).toBe(Buffer.byteLength(r.body));
      const list = r.json();
      expect(list.kind).toBe('ConfigMapList');
      expect(names(list)).toEqual(all);
      expect(list.items[7].data.v.length).toBe(8000);
    }
    expect(replies[0].body.length).toBeGreaterThan(4_000_000);
  });

  it('follow every change (no stale bytes)', async () => {
    const before = (await request(s, 'GET', CM)).json();
    await request(s, 'PATCH', `${CM}/${name(3)}`, { data: { v: 'changed' } }, { 'content-type': 'application/merge-patch+json' });
    await request(s, 'DELETE', `${CM}/${name(5)}`);
    await request(s, 'POST', CM, { metadata: { name: 'cm-zzzz' } });
    const after = (await request(s, 'GET', CM)).json();
    expect(Number(after.metadata.resourceVersion)).toBeGreaterThan(Number(before.metadata.resourceVersion));
    expect(after.items.find((o: any) => o.metadata.name === name(3)).data.v).toBe('changed');
    expect(names(after)).not.toContain(name(5));
    expect(names(after).at(-1)).toBe('cm-zzzz');
    expect(after.items.length).toBe(N);
    const all = (await request(s, 'GET', '/api/v1/configmaps')).json();
    expect(names(all)).toContain('elsewhere');
    expect(all.items.length).toBeGreaterThanOrEqual(N + 1);
  });

  it('in chunks add up to the whole list', async () => {
    const whole = names((await request(s, 'GET', CM)).json());
    const seen: string[] = [];
    let cont = '';
    for (let page = 0; page < 20; page++) {
      const r = (await request(s, 'GET', `${CM}?limit=70${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`)).json();
      seen.push(...names(r));
      cont = r.metadata.continue ?? '';
      if (!cont) break;
      expect(r.metadata.remainingItemCount).toBe(whole.length - seen.length);
    }
    expect(seen).toEqual(whole);
    const odd = (await request(s, 'GET', `${CM}?labelSelector=half%3D1`)).json();
    expect(names(odd).length).toBeGreaterThan(0);
    expect(odd.items.every((o: any) => o.metadata.labels.half === '1')).toBe(true);
  });
});
