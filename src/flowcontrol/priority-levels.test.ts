import { describe, it, expect } from 'vitest';
import { HIGH_R, LevelState, R_DECREMENT, limitBounds, levelMaxSeats, totalWork, type Waiter } from './priority-levels.js';
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

  it("notes kube's dispatch metrics at each dispatch from a queue: R, the dispatched queue's S, and S's bounds over the queues with waiters", () => {
    const st = new LevelState(level(4, 1));
    st.limit = 1;
    expect(st.lastDispatch.dispatched).toBe(false);
    const first = st.tryTake(1, 0);
    // a newcomer that gets its seats is kube's enqueue-then-dispatch: its queue was the only one waiting
    expect(st.lastDispatch).toMatchObject({ dispatched: true, r: 0, s: 0, sMin: 0, sMax: 0, dsMin: 0, dsMax: 0 });
    const granted: string[] = [];
    const waiter = (name: string, queue: number): Waiter => ({ queue, since: performance.now(), state: 'queued', seats: 1, settle: (g) => g && granted.push(name) });
    st.enqueue(waiter('q0', 0));
    st.enqueue(waiter('q1', 1));
    st.finish(first!);
    expect(granted).toEqual(['q1']);
    const d = st.lastDispatch;
    // queue 0 started on by the first request's work, less what it did not use of its estimate; queue 1 at R
    expect(d.sMax).toBeGreaterThan(d.sMin);
    expect(d.s).toBe(d.sMin);
    expect(d.r).toBeGreaterThan(0);
    expect(d.r).toBeLessThanOrEqual(st.currentR);
    expect(d.dsMin).toBeLessThanOrEqual(d.sMin);
  });

  it('winds R back as kube does near its overflow, counting the epoch advance', () => {
    const st = new LevelState(level(2, 1));
    st.limit = 1;
    const running = st.tryTake(1, 0);
    expect(running).not.toBeNull();
    st.currentR = HIGH_R - 1e-3;
    st.queues[0].nextDispatchR = HIGH_R;
    st.queues[1].nextDispatchR = 12345;
    st.syncTime(performance.now() + 1000);
    expect(st.epochAdvances).toEqual({ success: 1, failure: 0 });
    expect(st.currentR).toBeLessThan(HIGH_R - R_DECREMENT + 10);
    expect(st.queues[0].nextDispatchR).toBeCloseTo(HIGH_R - R_DECREMENT, -3);
    // an idle queue restarts at 0
    expect(st.queues[1].nextDispatchR).toBe(0);
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
