import { describe, expect, it } from 'vitest';
import { EndpointReconciler, type MasterLeases } from './endpoint-reconciler.js';
import type { ObjectClient } from './object-client.js';

class Memory implements ObjectClient {
  items = new Map<string, any>();
  writes = 0;
  private rv = 0;
  async get(ns: string, name: string) {
    const o = this.items.get(`${ns}/${name}`);
    return o && structuredClone(o);
  }
  async create(o: any) {
    const k = `${o.metadata.namespace}/${o.metadata.name}`;
    if (this.items.has(k)) throw new Error('AlreadyExists');
    this.writes++;
    this.items.set(k, { ...structuredClone(o), metadata: { ...o.metadata, resourceVersion: String(++this.rv) } });
    return this.get(o.metadata.namespace, o.metadata.name);
  }
  async update(o: any) {
    const k = `${o.metadata.namespace}/${o.metadata.name}`;
    if (o.metadata.resourceVersion && this.items.get(k)?.metadata.resourceVersion !== o.metadata.resourceVersion) throw new Error('Conflict');
    this.items.delete(k);
    return this.create(o);
  }
  async list() {
    return [...this.items.values()];
  }
  async delete(o: any) {
    this.items.delete(`${o.metadata.namespace}/${o.metadata.name}`);
  }
}

/** Leases shared by several replicas, with expiry by a fake clock. */
class SharedLeases {
  expires = new Map<string, number>();
  now = 0;
  view(): MasterLeases {
    return {
      renew: async (ip, ttl) => void this.expires.set(ip, this.now + ttl * 1000),
      list: async () => [...this.expires].filter(([, t]) => t > this.now).map(([ip]) => ip),
      remove: async (ip) => void this.expires.delete(ip),
    };
  }
}

describe('EndpointReconciler', () => {
  it('lists every live replica, sorted, in the Endpoints and the EndpointSlice; drops one that stops or expires', async () => {
    const eps = new Memory();
    const slices = new Memory();
    const leases = new SharedLeases();
    const a = new EndpointReconciler(leases.view(), eps, slices, '10.0.0.2', 6443);
    const b = new EndpointReconciler(leases.view(), eps, slices, '10.0.0.1', 6443);
    const c = new EndpointReconciler(leases.view(), eps, slices, '10.0.0.3', 6443);
    await a.reconcile();
    await b.reconcile();
    await c.reconcile();
    const ep = await eps.get('default', 'kubernetes');
    expect(ep.subsets).toEqual([{ addresses: [{ ip: '10.0.0.1' }, { ip: '10.0.0.2' }, { ip: '10.0.0.3' }], ports: [{ name: 'https', port: 6443, protocol: 'TCP' }] }]);
    expect(ep.metadata.labels['endpointslice.kubernetes.io/skip-mirror']).toBe('true');
    const slice = await slices.get('default', 'kubernetes');
    expect(slice.metadata.labels['kubernetes.io/service-name']).toBe('kubernetes');
    expect(slice.endpoints.map((e: any) => e.addresses[0])).toEqual(['10.0.0.1', '10.0.0.2', '10.0.0.3']);
    expect(slice.endpoints[0].conditions).toEqual({ ready: true });

    // an unchanged set writes nothing
    const before = eps.writes + slices.writes;
    await a.reconcile();
    expect(eps.writes + slices.writes).toBe(before);

    // a clean stop removes the replica at once
    await b.stop();
    expect((await eps.get('default', 'kubernetes')).subsets[0].addresses).toEqual([{ ip: '10.0.0.2' }, { ip: '10.0.0.3' }]);

    // a replica killed drops out once its lease expires (15 s), at the next pass of another
    leases.now += 10_000;
    await a.reconcile();
    leases.now += 6_000;
    await a.reconcile();
    expect((await eps.get('default', 'kubernetes')).subsets[0].addresses).toEqual([{ ip: '10.0.0.2' }]);
    expect((await slices.get('default', 'kubernetes')).endpoints).toEqual([{ addresses: ['10.0.0.2'], conditions: { ready: true } }]);
  });
});
