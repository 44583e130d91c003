// Borrowing between priority levels (kube's apf_controller.go: updateBorrowingLocked,
// seatDemandStats, computeConcurrencyAllocation). Each level has a nominal seat count, a
// lower bound (nominal less its lendablePercent) and an upper bound (nominal plus its
// borrowingLimitPercent, or plus the whole server when that is unset). Every 10 s its seat
// demand (seats held plus seats asked for by waiting requests, on every front thread) over
// the period gives an average, a standard deviation and a high watermark; the smoothed
// demand is max(avg + stdDev, 0.977 × the previous smoothed + 0.023 × (avg + stdDev)). Each
// level's target is max(its floor, smoothed), where the floor is max(lower, min(nominal,
// high watermark)); the server's nominal seats are then shared out as clamp(fairFrac ×
// target, floor, upper) with the one fairFrac that makes them add up to the sum of the
// nominal seats, and each level's current limit is that, rounded.
//
// Demand is sampled (every SAMPLE_MS) rather than integrated at every change as kube's
// integrator does: the request path stays free of it, at the price of missing peaks
// shorter than a sample.
//
// Thread ownership: the main thread runs the loop and owns the statistics; the limits it
// sets are read by every front thread from the shared seat table (SeatSlot.currentLimit).
import type { SeatSlot } from './shared-seats.js';

export const ADJUSTMENT_PERIOD_MS = 10_000;
export const SAMPLE_MS = 100;
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
  /** the period's samples: count, sum, sum of squares, max */
  private n = 0;
  private s = 0;
  private s2 = 0;
  private max = 0;

  sample(v: number): void {
    this.n++;
    this.s += v;
    this.s2 += v * v;
    if (v > this.max) this.max = v;
  }

  /** Ends a period: the statistics of its samples, the smoothed demand moved on. */
  endPeriod(current: number): void {
    if (this.n === 0) this.sample(current);
    this.highWatermark = this.max;
    this.avg = this.s / this.n;
    this.stdDev = Math.sqrt(Math.max(0, this.s2 / this.n - this.avg * this.avg));
    const envelope = this.avg + this.stdDev;
    this.smoothed = Math.max(envelope, SMOOTHING * this.smoothed + (1 - SMOOTHING) * envelope);
    this.n = this.s = this.s2 = 0;
    // the next period's watermark starts from the demand now
    this.max = current;
  }
}

/** What the loop needs of a level. */
export interface BorrowingLevel {
  name: string;
  nominal: number;
  lower: number;
  upper: number;
  slot: SeatSlot;
}

export interface LevelAdjustment {
  demand: SeatDemand;
  target: number;
  current: number;
  /** seconds spent at each utilization and demand ratio (the timing histograms), see the metrics */
  utilization: TimingHistogram;
  demandRatio: TimingHistogram;
}

/**
 * A histogram of time: each sample adds its interval to the bucket of the value then, as
 * kube's timing ratio histograms (priority_level_seat_utilization, demand_seats) count it.
 */
export class TimingHistogram {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(readonly bounds: number[]) {
    this.counts = new Float64Array(bounds.length);
  }
  observe(v: number, seconds: number): void {
    let i = 0;
    while (i < this.bounds.length && v > this.bounds[i]) i++;
    if (i < this.bounds.length) this.counts[i] += seconds;
    this.sum += v * seconds;
    this.count += seconds;
  }
}

export const UTILIZATION_BUCKETS = [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1];
export const DEMAND_BUCKETS = [0.2, 0.4, 0.6, 0.8, 1, 1.2, 1.4, 1.7, 2, 2.8, 4, 6];

/** The main thread's borrowing loop over the levels it is given. */
export class Borrowing {
  readonly byLevel = new Map<string, LevelAdjustment>();
  fairFrac = 0;
  private sampler: NodeJS.Timeout | undefined;
  private adjuster: NodeJS.Timeout | undefined;
  private adjusting = false;

  constructor(
    /** the levels now (the main thread's configuration) */
    private readonly levels: () => BorrowingLevel[],
    private readonly serverCL: number,
  ) {}

  start(): void {
    this.sampler = setInterval(() => this.sample(), SAMPLE_MS);
    this.sampler.unref();
    this.adjuster = setInterval(() => this.adjust(), ADJUSTMENT_PERIOD_MS);
    this.adjuster.unref();
  }

  stop(): void {
    clearInterval(this.sampler);
    clearInterval(this.adjuster);
  }

  private state(name: string): LevelAdjustment {
    let a = this.byLevel.get(name);
    if (!a) this.byLevel.set(name, (a = { demand: new SeatDemand(), target: 0, current: 0, utilization: new TimingHistogram(UTILIZATION_BUCKETS), demandRatio: new TimingHistogram(DEMAND_BUCKETS) }));
    return a;
  }

  /** the denominator kube divides seats by: the current limit, or a tenth of the server's when that is 0 */
  private denominator(current: number): number {
    return current > 0 ? current : Math.max(1, Math.round(this.serverCL / 10));
  }

  sample(): void {
    for (const l of this.levels()) {
      const a = this.state(l.name);
      const executing = l.slot.executing;
      const demand = executing + l.slot.waiting;
      a.demand.sample(demand);
      const d = this.denominator(a.current);
      a.utilization.observe(executing / d, SAMPLE_MS / 1000);
      a.demandRatio.observe(demand / d, SAMPLE_MS / 1000);
    }
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
    for (const l of levels) {
      const a = this.state(l.name);
      a.demand.endPeriod(l.slot.executing + l.slot.waiting);
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
    });
    const names = new Set(levels.map((l) => l.name));
    for (const name of this.byLevel.keys()) if (!names.has(name)) this.byLevel.delete(name);
  }
}
