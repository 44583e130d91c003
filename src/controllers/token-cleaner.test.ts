import { describe, expect, it } from 'vitest';
import { TokenCleaner } from './token-cleaner.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
function entry(name: string, expiration: string | undefined, ns = 'kube-system', type = 'bootstrap.kubernetes.io/token'): any {
  const obj = { metadata: { name, namespace: ns, uid: `uid-${name}` }, type, data: expiration ? { expiration: b64(expiration) } : {} };
  return { key: `${ns}/${name}`, ns, name, rv: 1, json: Buffer.from(JSON.stringify(obj)) };
}

async function until(f: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !f(); i++) await new Promise((r) => setTimeout(r, 10));
}

describe('TokenCleaner (kube-controller-manager tokencleaner)', () => {
  it('deletes expired bootstrap-token Secrets of kube-system, with the uid precondition, and leaves the rest', async () => {
    const items = new Map<string, any>();
    for (const e of [
      entry('bootstrap-token-old', '2020-01-01T00:00:00Z'),
      entry('bootstrap-token-new', '2999-01-01T00:00:00Z'),
      entry('bootstrap-token-none', undefined),
      entry('bootstrap-token-elsewhere', '2020-01-01T00:00:00Z', 'default'),
      entry('opaque', '2020-01-01T00:00:00Z', 'kube-system', 'Opaque'),
    ])
      items.set(e.key, e);
    const deleted: any[] = [];
    let observer: any;
    const store: any = { cacheOf: () => ({ items }), delete: async (_t: any, ns: string, name: string, o: any) => void deleted.push([ns, name, o.preconditions]) };
    const cacher: any = { observe: (fn: any) => ((observer = fn), () => undefined) };
    const t = new TokenCleaner(store, cacher, { gr: 'secrets' } as any);
    t.start();
    await until(() => deleted.length >= 1);
    expect(deleted).toEqual([['kube-system', 'bootstrap-token-old', { uid: 'uid-bootstrap-token-old' }]]);
    // one expiring in a moment, seen through the cache
    const soon = new Date(Date.now() + 50).toISOString();
    observer({ gr: 'secrets' }, [{ type: 'ADDED', entry: entry('bootstrap-token-soon', soon) }]);
    await until(() => deleted.length >= 2);
    expect(deleted.map((d) => d[1])).toEqual(['bootstrap-token-old', 'bootstrap-token-soon']);
    t.stop();
  });
});
