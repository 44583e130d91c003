import { describe, expect, it } from 'vitest';
import { LeaderControllers } from './leader-controllers.js';
import type { Cacher } from '../storage/cacher.js';

/** The cache layer's observe() alone, with a way to send a batch. */
function fakeCacher() {
  let observers: Array<(c: any, e: any[]) => void> = [];
  const cacher = {
    observe(fn: (c: any, e: any[]) => void) {
      observers = [...observers, fn];
      return () => (observers = observers.filter((o) => o !== fn));
    },
    name: 'fake',
  };
  return { cacher: cacher as unknown as Cacher, send: (gr: string) => observers.forEach((o) => o({ gr }, [])), count: () => observers.length };
}

describe('LeaderControllers', () => {
  it('builds fresh controllers each term, and a term that ends leaves no subscription behind', async () => {
    const { cacher, send, count } = fakeCacher();
    const log: string[] = [];
    let built = 0;
    const lc = new LeaderControllers(cacher, [
      {
        name: 'x',
        make: (c) => {
          const id = ++built;
          return {
            start: () => void c.observe((cache: any) => log.push(`${id} saw ${cache.gr}`)),
            stop: () => void log.push(`${id} stopped`),
          };
        },
      },
      { name: 'disabled', make: () => undefined },
    ]);
    await lc.start();
    expect(lc.running).toBe(true);
    send('pods');
    lc.stop();
    expect(count()).toBe(0);
    send('pods');
    await lc.start();
    send('secrets');
    lc.stop();
    expect(log).toEqual(['1 saw pods', '1 stopped', '2 saw secrets', '2 stopped']);
    expect(count()).toBe(0);
  });

  it('a controller that fails to start does not keep the others from starting', async () => {
    const { cacher } = fakeCacher();
    const started: string[] = [];
    const warnings: string[] = [];
    const lc = new LeaderControllers(
      cacher,
      [
        { name: 'bad', make: () => ({ start: () => Promise.reject(new Error('boom')), stop: () => undefined }) },
        { name: 'good', make: () => ({ start: () => void started.push('good'), stop: () => undefined }) },
      ],
      (m) => warnings.push(m),
    );
    await lc.start();
    expect(started).toEqual(['good']);
    expect(warnings).toEqual(['controller bad: boom']);
  });
});
