import { describe, it, expect } from 'vitest';
import { Borrowing, SeatDemand, computeAllocation } from './borrowing.js';
import { SharedSeats } from './shared-seats.js';

describe('seat borrowing', () => {
  it('shares the seats out as clamp(fairFrac × target, lower, upper), adding up to the sum asked for', () => {
    const { allocs, fairFrac } = computeAllocation(100, [
      { lower: 10, upper: 100, target: 10 },
      { lower: 0, upper: 100, target: 30 },
      { lower: 5, upper: 8, target: 5 },
    ]);
    expect(allocs.reduce((a, b) => a + b, 0)).toBeCloseTo(100, 6);
    expect(allocs[2]).toBeCloseTo(8, 6); // at its upper bound
    expect(allocs[1] / allocs[0]).toBeCloseTo(3, 6);
    expect(fairFrac).toBeCloseTo(2.3, 6);
    // too little to go round: the lower bounds
    expect(computeAllocation(5, [{ lower: 4, upper: 9, target: 4 }, { lower: 3, upper: 9, target: 3 }]).allocs).toEqual([4, 3]);
  });

  it('smooths demand: max(avg + stdDev, 0.977 × previous + 0.023 × (avg + stdDev))', () => {
    const d = new SeatDemand();
    d.update({ duration: 10, average: 10, deviation: 0, max: 10 });
    expect([d.avg, d.stdDev, d.highWatermark, d.smoothed]).toEqual([10, 0, 10, 10]);
    d.update({ duration: 10, average: 0, deviation: 0, max: 0 });
    expect(d.smoothed).toBeCloseTo(9.77, 6);
    // a period of no time keeps the statistics, not the watermark (kube's seatDemandStats.update)
    d.update({ duration: 0, average: NaN, deviation: NaN, max: 3 });
    expect([d.avg, d.highWatermark]).toEqual([0, 3]);
  });

  it('a busy level borrows the seats an idle one may lend, and gives them back', () => {
    const seats = new SharedSeats();
    const busy = { name: 'busy', nominal: 10, lower: 5, upper: 30, slot: seats.level('busy'), waitRoom: 1 };
    const idle = { name: 'idle', nominal: 10, lower: 1, upper: 30, slot: seats.level('idle'), waitRoom: 1 };
    const b = new Borrowing(() => [busy, idle], 20);
    busy.slot.take(10);
    busy.slot.addWaiting(10);
    // the demand as the request path notes it: 20 seats, from a moment ago
    busy.slot.timing.note(performance.now() - 50, 10, 10, 10, 10);
    b.adjust();
    expect(busy.slot.currentLimit).toBe(19);
    expect(idle.slot.currentLimit).toBe(1);
    expect(busy.slot.currentLimit! + idle.slot.currentLimit!).toBe(20);
  });
});
