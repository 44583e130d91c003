// Address and port ranges for Services (kube-apiserver's ipallocator and portallocator).
//
// Thread ownership: the front thread. Every reservation is synchronous, so two creates
// that race on the front thread can never be handed the same value; a reservation is
// made before the commit is sent to a shard and undone when the commit fails.
import { randomInt } from 'node:crypto';

export type AllocateOutcome = 'ok' | 'taken' | 'outofrange';

function ipToInt(ip: string): number | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(ip);
  if (!m) return null;
  const parts = m.slice(1).map(Number);
  if (parts.some((p) => p > 255)) return null;
  return ((parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]) >>> 0;
}

function intToIp(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

/** A set of integers in [first, last] handed out at random, or on request. */
class IntRange {
  private used = new Set<number>();
  constructor(
    readonly first: number,
    readonly last: number,
  ) {}

  get free(): number {
    return this.last - this.first + 1 - this.used.size;
  }

  has(n: number): boolean {
    return this.used.has(n);
  }

  take(n: number): AllocateOutcome {
    if (n < this.first || n > this.last) return 'outofrange';
    if (this.used.has(n)) return 'taken';
    this.used.add(n);
    return 'ok';
  }

  /**
   * A free value, or null when the range is full. The first `offset` values are the static
   * band, kept for clients that ask for a value: a random probe and a scan from it in the
   * dynamic band above it first, then the same in the static band (kube's
   * randomScanStrategyWithOffset).
   */
  next(offset = 0): number | null {
    const span = this.last - this.first + 1;
    if (this.used.size >= span) return null;
    const lowSpan = offset > 0 && offset < span ? offset : 0;
    return this.scan(this.first + lowSpan, this.last) ?? (lowSpan > 0 ? this.scan(this.first, this.first + lowSpan - 1) : null);
  }

  private scan(lo: number, hi: number): number | null {
    const span = hi - lo + 1;
    if (span <= 0) return null;
    const start = randomInt(span);
    for (let i = 0; i < span; i++) {
      const n = lo + ((start + i) % span);
      if (!this.used.has(n)) {
        this.used.add(n);
        return n;
      }
    }
    return null;
  }

  release(n: number): void {
    this.used.delete(n);
  }
}

/**
 * IPv4 ClusterIPs of one CIDR. The network and broadcast addresses are never handed out
 * (as kube's bitmap allocator); the first usable address belongs to the `kubernetes`
 * Service, which start-up creates with it.
 */
/**
 * The size of the static band at the bottom of a range: min(max(min, size/step), max), or
 * 0 for a range too small to have one (kube's calculateRangeOffset, one for IPs and one for
 * ports, with their own constants).
 */
export function rangeOffset(size: number, min: number, max: number, step: number): number {
  if (size <= min) return 0;
  const offset = Math.floor(size / step);
  return offset < min ? min : offset > max ? max : offset;
}

export class IpAllocator {
  readonly cidr: string;
  private range: IntRange;
  readonly firstUsable: string;
  /** the network address, which a dry run is answered with (kube's dry-run AllocateNext) */
  readonly network: string;
  /** the static band: the first addresses after the network address */
  readonly offset: number;
  private base: number;
  private size: number;

  constructor(cidr: string) {
    const [ip, bitsText] = cidr.split('/');
    const bits = Number(bitsText);
    const n = ipToInt(ip);
    if (n === null || !(bits >= 0 && bits <= 30)) throw new Error(`invalid service CIDR ${cidr}`);
    const size = 2 ** (32 - bits);
    const base = n - (n % size);
    this.cidr = `${intToIp(base)}/${bits}`;
    this.range = new IntRange(base + 1, base + size - 2);
    this.firstUsable = intToIp(base + 1);
    this.network = intToIp(base);
    this.base = base;
    this.size = size;
    this.offset = rangeOffset(size, 16, 256, 16);
  }

  /** Whether ip is in the CIDR at all (network and broadcast addresses included). */
  inCidr(ip: string): boolean {
    const n = ipToInt(ip);
    return n !== null && n >= this.base && n < this.base + this.size;
  }

  contains(ip: string): boolean {
    const n = ipToInt(ip);
    return n !== null && n >= this.range.first && n <= this.range.last;
  }

  allocate(ip: string): AllocateOutcome {
    const n = ipToInt(ip);
    return n === null ? 'outofrange' : this.range.take(n);
  }

  allocateNext(): string | null {
    const n = this.range.next(this.offset);
    return n === null ? null : intToIp(n);
  }

  release(ip: string): void {
    const n = ipToInt(ip);
    if (n !== null) this.range.release(n);
  }

  isAllocated(ip: string): boolean {
    const n = ipToInt(ip);
    return n !== null && this.range.has(n);
  }
}

/** NodePorts of --service-node-port-range, inclusive at both ends. */
export class PortAllocator {
  private range: IntRange;
  /** the static band: the lowest ports of the range */
  readonly offset: number;
  constructor(readonly min: number, readonly max: number) {
    this.range = new IntRange(min, max);
    this.offset = rangeOffset(max - min + 1, 16, 128, 32);
  }

  get rangeText(): string {
    return `${this.min}-${this.max}`;
  }

  allocate(port: number): AllocateOutcome {
    return this.range.take(port);
  }

  allocateNext(): number | null {
    return this.range.next(this.offset);
  }

  release(port: number): void {
    this.range.release(port);
  }

  isAllocated(port: number): boolean {
    return this.range.has(port);
  }
}
