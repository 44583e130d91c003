// Borrowing between priority levels (kube's apf_controller.go: updateBorrowingLocked,
// seatDemandStats, computeConcurrencyAllocation). Each level has a nominal seat count, a
// lower bound (nominal less its lendablePercent) and an upper bound (nominal plus its
// borrowingLimitPercent, or plus the whole server when that is unset). Every 10 s its seat
// demand (seats held plus seats asked for by waiting requests, on every front thread),
// integrated over the period at every change (seat-timing.ts, kube's Integrator), gives a
// time-weighted average, standard deviation and high watermark; the smoothed
// demand is max(avg + stdDev, 0.977 × the previous smoothed + 0.023 × (avg + stdDev)). Each
// level's target is max(its floor, smoothed), where the floor is max(lower, min(nominal,
// high watermark)); the server's nominal seats are then shared out as clamp(fairFrac ×
// target, floor, upper) with the one fairFrac that makes them add up to the sum of the
// nominal seats, and each level's current limit is that, rounded. The adjustment also sets
// the denominator of the level's timing ratio histograms: its current limit, or a tenth of
// the server's seats while that is 0.
//
// Thread ownership: the main thread runs the loop and owns the statistics; the limits it
// sets are read by every front thread from the shared seat table (SeatSlot.currentLimit).
import type { SeatSlot } from './shared-seats.js';
import type { IntegratorResults } from './seat-timing.js';

export const ADJUSTMENT_PERIOD_MS = 10_000;
const SMOOTHING = 0.977;

export interface AllocItem {
  lower: number;
  upper: number;
  target: number;
}

/**
 * Shares requiredSum out among the items as clamp(f × target, lower, upper) for the f that
 * makes them add up to it; when no f does, every item gets its bound on the side that
 * misses. Returns the allocations and f (kube's computeConcurrencyAllocation).
 */
export function computeAllocation(requiredSum: number, items: AllocItem[]): { allocs: number[]; fairFrac: number } {
  const at = (f: number) => items.map((it) => Math.min(it.upper, Math.max(it.lower, f * it.target)));
  const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);
  const lowers = items.map((it) => it.lower);
  if (sum(lowers) >= requiredSum) return { allocs: lowers, fairFrac: 0 };
  // f past which every item with a target sits at its upper bound
  let hi = 1;
  for (const it of items) if (it.target > 0) hi = Math.max(hi, it.upper / it.target);
  if (sum(at(hi)) <= requiredSum) return { allocs: at(hi), fairFrac: hi };
  let lo = 0;
  for (let i = 0; i < 100 && hi - lo > 1e-12 * hi; i++) {
    const mid = (lo + hi) / 2;
    if (sum(at(mid)) < requiredSum) lo = mid;
    else hi = mid;
  }
  return { allocs: at(hi), fairFrac: hi };
}

/** A level's demand over the periods, as kube's seatDemandStats. */
export class SeatDemand {
  avg = 0;
  stdDev = 0;
  highWatermark = 0;
  smoothed = 0;

  /** Ends a period with the integrator's results over it (kube's seatDemandStats.update). */
  update(r: IntegratorResults): void {
    this.highWatermark = r.max;
    if (!(r.duration > 0)) return;
    const deviation = Number.isNaN(r.deviation) ? 0 : r.deviation;
    this.avg = r.average;
    this.stdDev = deviation;
    const envelope = r.average + deviation;
    this.smoothed = Math.max(envelope, SMOOTHING * this.smoothed + (1 - SMOOTHING) * envelope);
  }
}

/** What the loop needs of a level. */
export interface BorrowingLevel {
  name: string;
  nominal: number;
  lower: number;
  upper: number;
  slot: SeatSlot;
  /** the room in its queues: max(1, queueLengthLimit) × max(1, queues) (the waiting requests' denominator) */
  waitRoom: number;
}

export interface LevelAdjustment {
  demand: SeatDemand;
  target: number;
  current: number;
}

/** The main thread's borrowing loop over the levels it is given. */
export class Borrowing {
  readonly byLevel = new Map<string, LevelAdjustment>();
  fairFrac = 0;
  private adjuster: NodeJS.Timeout | undefined;
  private adjusting = false;

  constructor(
    /** the levels now (the main thread's configuration) */
    private readonly levels: () => BorrowingLevel[],
    private readonly serverCL: number,
  ) {}

  start(): void {
    this.adjuster = setInterval(() => this.adjust(), ADJUSTMENT_PERIOD_MS);
    this.adjuster.unref();
  }

  stop(): void {
    clearInterval(this.adjuster);
  }

  private state(name: string): LevelAdjustment {
    let a = this.byLevel.get(name);
    if (!a) this.byLevel.set(name, (a = { demand: new SeatDemand(), target: 0, current: 0 }));
    return a;
  }

  /** the denominator kube divides seats by: the current limit, or a tenth of the server's when that is 0 */
  private denominator(current: number): number {
    return current > 0 ? current : Math.max(1, Math.round(this.serverCL / 10));
  }

  /** One adjustment (kube's updateBorrowingLocked): every level's current limit set in its slot. */
  adjust(): void {
    // (reading the levels may rebuild the configuration, which adjusts: once is enough)
    if (this.adjusting) return;
    this.adjusting = true;
    try {
      this.adjustNow(this.levels());
    } finally {
      this.adjusting = false;
    }
  }

  private adjustNow(levels: BorrowingLevel[]): void {
    const items: AllocItem[] = [];
    const now = performance.now();
    for (const l of levels) {
      const a = this.state(l.name);
      a.demand.update(l.slot.timing.reset(now));
      const floor = Math.max(l.lower, Math.min(l.nominal, a.demand.highWatermark));
      items.push({ lower: floor, upper: l.upper, target: Math.max(floor, a.demand.smoothed) });
    }
    const nominalSum = levels.reduce((s, l) => s + l.nominal, 0);
    const { allocs, fairFrac } = computeAllocation(nominalSum, items);
    this.fairFrac = fairFrac;
    levels.forEach((l, i) => {
      const a = this.state(l.name);
      a.target = items[i].target;
      a.current = Math.round(allocs[i]);
      l.slot.currentLimit = a.current;
      l.slot.timing.setDenominators(now, this.denominator(a.current), l.waitRoom);
    });
    const names = new Set(levels.map((l) => l.name));
    for (const name of this.byLevel.keys()) if (!names.has(name)) this.byLevel.delete(name);
  }
}
