import { describe, expect, it } from 'vitest';
import { ServiceAllocator } from './service-allocator.js';
import type { NodePortClaims } from '../../storage/etcd/range-allocation.js';

/** A RangeAllocation in memory: the storage that several allocators share. */
class MemoryClaims implements NodePortClaims {
  bits = new Set<number>();
  async claim(ports: number[]): Promise<number[]> {
    const taken = ports.filter((p) => this.bits.has(p));
    if (!taken.length) for (const p of ports) this.bits.add(p);
    return taken;
  }
  async release(ports: number[]): Promise<void> {
    for (const p of ports) this.bits.delete(p);
  }
  async snapshot(): Promise<Set<number>> {
    return new Set(this.bits);
  }
}

const nodePortService = (name: string, nodePort?: number) => ({ metadata: { name, namespace: 'ns' }, spec: { type: 'NodePort', ports: [{ port: 80, ...(nodePort ? { nodePort } : {}) }] } });

describe('ServiceAllocator on shared storage', () => {
  it('a dynamic NodePort another replica holds is replaced before the commit; an asked one is refused', async () => {
    const claims = new MemoryClaims();
    const alloc = new ServiceAllocator('10.0.0.0/24', { min: 30000, max: 30004 });
    alloc.shared = { nodePorts: claims };
    // another replica holds every port but 30002
    claims.bits = new Set([30000, 30001, 30003, 30004]);
    const svc: any = nodePortService('a');
    const finish = alloc.allocateCreate(svc);
    await finish.claim!();
    await finish(true);
    expect(svc.spec.ports[0].nodePort).toBe(30002);
    expect([...claims.bits].sort()).toEqual([30000, 30001, 30002, 30003, 30004]);

    const alloc2 = new ServiceAllocator('10.0.0.0/24', { min: 30000, max: 30004 });
    alloc2.shared = { nodePorts: claims };
    const asked: any = nodePortService('b', 30002);
    const f2 = alloc2.allocateCreate(asked);
    await expect(f2.claim!()).rejects.toMatchObject({ code: 422, message: expect.stringContaining('provided port is already allocated') });
    await f2(false);
    // the refused write took nothing
    expect(claims.bits.size).toBe(5);
    // a deleted Service gives its ports back in storage
    await alloc.release(svc);
    expect(claims.bits.has(30002)).toBe(false);
  });

  it('repair: ports held by Services are set, ports leaked by a dead replica are cleared after three passes', async () => {
    const claims = new MemoryClaims();
    const alloc = new ServiceAllocator('10.0.0.0/24', { min: 30000, max: 30099 });
    alloc.shared = { nodePorts: claims };
    claims.bits = new Set([30010]); // claimed, its Service never stored
    const services = [nodePortService('held', 30020)];
    await alloc.repairNodePorts(services);
    expect([...claims.bits].sort()).toEqual([30010, 30020]);
    await alloc.repairNodePorts(services);
    expect(claims.bits.has(30010)).toBe(true);
    await alloc.repairNodePorts(services);
    expect([...claims.bits]).toEqual([30020]);
  });
});
