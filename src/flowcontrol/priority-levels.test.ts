import { describe, it, expect } from 'vitest';
import { LevelState, limitBounds, levelMaxSeats, totalWork, type Waiter } from './priority-levels.js';
import { levelFromObject } from './classifier.js';

const level = (queues: number, handSize: number, queueLengthLimit = 50, extra: Record<string, unknown> = {}) =>
  levelFromObject({ metadata: { name: 'l' }, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 10, ...extra, limitResponse: { type: 'Queue', queuing: { queues, handSize, queueLengthLimit } } } } });

describe("kube's fair queuing", () => {
  it('a flow with a backlog does not hold up a newcomer of another flow: the least virtual finish goes first', () => {
    const st = new LevelState(level(8, 1));
    st.limit = 1;
    expect(st.tryTake()).not.toBeNull();
    const order: string[] = [];
    const waiter = (name: string, queue: number, seats = 1): Waiter => ({ queue, since: performance.now(), state: 'queued', seats, settle: (g) => g && order.push(name) });
    for (let i = 1; i <= 5; i++) expect(st.enqueue(waiter(`a${i}`, 0))).toBeNull();
    expect(st.enqueue(waiter('b1', 1))).toBeNull();
    for (let i = 0; i < 6; i++) st.release();
    // round robin would also alternate; virtual time keeps b1 from waiting behind all of a
    expect(order).toEqual(['a1', 'b1', 'a2', 'a3', 'a4', 'a5']);
  });

  it('a wide request counts as its seats: a narrow flow gets several turns for its one', () => {
    const st = new LevelState(level(8, 1));
    st.limit = 4;
    expect(st.tryTake(4)).not.toBeNull();
    const order: string[] = [];
    const waiter = (name: string, queue: number, seats: number): Waiter => ({ queue, since: performance.now(), state: 'queued', seats, work: totalWork(seats, 0, 0), settle: (g) => g && order.push(name) });
    st.enqueue(waiter('wide1', 0, 4));
    st.enqueue(waiter('wide2', 0, 4));
    for (let i = 1; i <= 5; i++) st.enqueue(waiter(`n${i}`, 1, 1));
    st.release(4);
    for (let i = 0; i < 10 && order.length < 7; i++) st.release(st.executing);
    // wide1 (finish R+0.012) after n1..n4 (R+0.003..0.012, n4 ties and the search starts past the last queue served)
    expect(order[0]).toBe('n1');
    expect(order.indexOf('wide1')).toBeGreaterThan(2);
    expect(st.executing).toBeLessThanOrEqual(4);
  });

  it('a request wider than the whole limit runs alone', () => {
    const st = new LevelState(level(2, 1));
    st.limit = 2;
    const wide = st.tryTake(5);
    expect(wide).not.toBeNull();
    expect(st.tryTake(1)).toBeNull();
    st.finish(wide!);
    expect(st.executing).toBe(0);
  });

  it('queue-full only when the seats are all taken and the queue holds queueLengthLimit requests', () => {
    const st = new LevelState(level(1, 1, 2));
    st.limit = 1;
    const w = (): Waiter => ({ queue: 0, since: 0, state: 'queued', settle: () => {} });
    expect(st.enqueue(w())).toBeNull();
    expect(st.enqueue(w())).toBeNull();
    // a free seat: the queue may grow past its limit (the request is dispatched next)
    expect(st.enqueue(w())).toBeNull();
    st.slot.take(1);
    expect(st.enqueue(w())).toBe('queue-full');
  });

  it("bounds and the most seats a request may hold, as kube's controller computes them", () => {
    const cfg = level(64, 6, 50, { lendablePercent: 50, borrowingLimitPercent: 20 });
    expect(limitBounds(cfg, 40, 600)).toEqual({ lower: 20, upper: 48 });
    expect(limitBounds(level(64, 6), 40, 600)).toEqual({ lower: 40, upper: 640 });
    expect(levelMaxSeats(cfg, 245)).toBe(10);
    expect(levelMaxSeats(cfg, 40)).toBe(6);
    expect(levelMaxSeats(cfg, 5)).toBe(1);
  });
});
