import { describe, expect, it } from 'vitest';
import { Cacher } from './cacher.js';
import { Expect, type StoredEvent } from './interface.js';
import { MemoryStorage } from './memory-storage.js';

const GR = 'configmaps';
const cm = (name: string, v: string) => ({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name, namespace: 'ns' }, data: { v } });

async function setup(storage: MemoryStorage): Promise<{ cacher: Cacher; rvs: number[] }> {
  const cacher = new Cacher(storage, { watchCacheCapacity: 2, watchCacheSizes: {} });
  await cacher.start();
  const rvs: number[] = [];
  let rv = 0;
  for (let i = 0; i < 5; i++) {
    const obj = cm('a', String(i));
    rv = (await storage.write({ type: i === 0 ? 'ADDED' : 'MODIFIED', gr: GR, key: 'ns/a', expect: i === 0 ? Expect.Absent : rv, obj }, obj)).rv;
    rvs.push(rv);
  }
  return { cacher, rvs };
}

describe('Cacher.replay', () => {
  it('takes the ring when it reaches back, else storage up to the ring, then the ring', async () => {
    const { cacher, rvs } = await setup(new MemoryStorage());
    // the ring holds the last two
    expect((cacher.replay(GR, rvs[2], false) as any[]).map((e) => e.rv)).toEqual(rvs.slice(3));
    const all = cacher.replay(GR, rvs[0], true) as any[];
    expect(all.map((e) => e.rv)).toEqual(rvs.slice(1));
    // the storage part carries the previous state when asked
    expect(JSON.parse(all[0].prev.json.toString()).data).toEqual({ v: '0' });
  });

  it('with a backend that answers later, reads again what the ring dropped meanwhile', async () => {
    class Slow extends MemoryStorage {
      onRead?: () => Promise<void>;
      override eventsSince(gr: string, afterRv: number, uptoRv: number, withPrev: boolean): Promise<StoredEvent[]> {
        const answer = super.eventsSince(gr, afterRv, uptoRv, withPrev);
        const before = this.onRead;
        this.onRead = undefined;
        return (before ? before() : Promise.resolve()).then(() => answer);
      }
    }
    const storage = new Slow();
    const { cacher, rvs } = await setup(storage);
    let last = rvs[rvs.length - 1];
    // while the first read is out, three more writes push the ring on
    storage.onRead = async () => {
      for (let i = 0; i < 3; i++) {
        const obj = cm('a', `later${i}`);
        last = (await storage.write({ type: 'MODIFIED', gr: GR, key: 'ns/a', expect: last, obj }, obj)).rv;
        rvs.push(last);
      }
    };
    const replay = cacher.replay(GR, rvs[0], false);
    expect(replay).toBeInstanceOf(Promise);
    expect(((await replay) as any[]).map((e) => e.rv)).toEqual(rvs.slice(1));
  });
});
