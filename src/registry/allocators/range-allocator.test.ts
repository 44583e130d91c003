import { describe, it, expect } from 'vitest';
import { IpAllocator, PortAllocator } from './range-allocator.js';

describe('IpAllocator', () => {
  it('hands out distinct addresses inside the CIDR, never network or broadcast', () => {
    const a = new IpAllocator('10.0.0.0/29'); // 8 addresses, 6 usable
    const got = new Set<string>();
    for (let i = 0; i < 6; i++) got.add(a.allocateNext()!);
    expect(got.size).toBe(6);
    expect(got.has('10.0.0.0')).toBe(false);
    expect(got.has('10.0.0.7')).toBe(false);
    expect(a.allocateNext()).toBeNull();
    a.release('10.0.0.3');
    expect(a.allocateNext()).toBe('10.0.0.3');
  });
  it('refuses taken and out-of-range addresses', () => {
    const a = new IpAllocator('10.96.0.0/12');
    expect(a.firstUsable).toBe('10.96.0.1');
    expect(a.allocate('10.96.0.10')).toBe('ok');
    expect(a.allocate('10.96.0.10')).toBe('taken');
    expect(a.allocate('10.112.0.1')).toBe('outofrange');
    expect(a.allocate('bogus')).toBe('outofrange');
  });
});

describe('PortAllocator', () => {
  it('stays in the inclusive range', () => {
    const p = new PortAllocator(30000, 30004);
    const got = new Set<number>();
    for (let i = 0; i < 5; i++) got.add(p.allocateNext()!);
    expect([...got].sort()).toEqual([30000, 30001, 30002, 30003, 30004]);
    expect(p.allocateNext()).toBeNull();
    expect(p.allocate(30005)).toBe('outofrange');
    expect(p.allocate(30001)).toBe('taken');
  });
});

describe('static and dynamic bands (kube calculateRangeOffset)', () => {
  it('band sizes: IPs min(max(16, size/16), 256), ports min(max(16, size/32), 128), none for small ranges', () => {
    expect(new IpAllocator('10.96.0.0/12').offset).toBe(256);
    expect(new IpAllocator('10.0.0.0/24').offset).toBe(16);
    expect(new IpAllocator('10.0.0.0/20').offset).toBe(256);
    expect(new IpAllocator('10.0.0.0/28').offset).toBe(0);
    expect(new PortAllocator(30000, 32767).offset).toBe(86);
    expect(new PortAllocator(30000, 30299).offset).toBe(16);
    expect(new PortAllocator(30000, 30015).offset).toBe(0);
  });
  it('dynamic allocations take the upper band first, then the static band', () => {
    const a = new IpAllocator('10.0.0.0/24'); // static 10.0.0.1-10.0.0.16
    const first: string[] = [];
    for (let i = 0; i < 238; i++) first.push(a.allocateNext()!);
    expect(first.every((ip) => Number(ip.split('.')[3]) > 16)).toBe(true);
    expect(Number(a.allocateNext()!.split('.')[3])).toBeLessThanOrEqual(16);
    const p = new PortAllocator(30000, 30299); // static 30000-30015
    const ports: number[] = [];
    for (let i = 0; i < 284; i++) ports.push(p.allocateNext()!);
    expect(ports.every((n) => n >= 30016)).toBe(true);
    expect(p.allocateNext()!).toBeLessThan(30016);
  });
});
