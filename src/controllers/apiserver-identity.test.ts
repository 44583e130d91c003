import { describe, expect, it } from 'vitest';
import { ApiserverIdentity, apiserverId, IDENTITY_LABEL, type IdentityLeaseClient } from './apiserver-identity.js';
import type { LeaseObject } from './leader-election.js';

class MemoryLeases implements IdentityLeaseClient {
  items = new Map<string, LeaseObject>();
  rv = 0;
  async get(ns: string, name: string) {
    const l = this.items.get(`${ns}/${name}`);
    return l && structuredClone(l);
  }
  async create(l: LeaseObject) {
    const k = `${l.metadata.namespace}/${l.metadata.name}`;
    if (this.items.has(k)) throw new Error('AlreadyExists');
    const s = { ...structuredClone(l), metadata: { ...l.metadata, resourceVersion: String(++this.rv) } };
    this.items.set(k, s);
    return structuredClone(s);
  }
  async update(l: LeaseObject) {
    const k = `${l.metadata.namespace}/${l.metadata.name}`;
    if (this.items.get(k)?.metadata.resourceVersion !== l.metadata.resourceVersion) throw new Error('Conflict');
    return this.create((this.items.delete(k), l));
  }
  async list(ns: string) {
    return [...this.items.values()].filter((l) => l.metadata.namespace === ns).map((l) => structuredClone(l));
  }
  async delete(l: LeaseObject) {
    this.items.delete(`${l.metadata.namespace}/${l.metadata.name}`);
  }
}

describe('apiserver identity', () => {
  it('names the identity as kube does: apiserver- and base32 of a SHA-256 over the length-prefixed hostname and component', () => {
    const id = apiserverId('node-a');
    expect(id).toMatch(/^apiserver-[a-z2-7]{26}$/);
    expect(apiserverId('node-a')).toBe(id);
    expect(apiserverId('node-b')).not.toBe(id);
  });

  it('creates and renews its Lease, and collects expired identity Leases only', async () => {
    const leases = new MemoryLeases();
    let now = Date.UTC(2026, 10, 26, 7, 0, 0);
    const ident = new ApiserverIdentity(leases, { now: () => now });
    await ident.renew();
    const mine = await leases.get('kube-system', ident.id);
    expect((mine!.metadata as any).labels[IDENTITY_LABEL]).toBe('kube-apiserver');
    expect(mine!.spec!.holderIdentity).toBe(ident.holder);
    expect(mine!.spec!.leaseDurationSeconds).toBe(3600);
    now += 10_000;
    await ident.renew();
    expect(Date.parse((await leases.get('kube-system', ident.id))!.spec!.renewTime!)).toBe(now);

    const old = (name: string, ns: string, labelled: boolean) =>
      leases.create({ metadata: { name, namespace: ns, ...(labelled ? { labels: { [IDENTITY_LABEL]: 'kube-apiserver' } } : {}) }, spec: { leaseDurationSeconds: 3600, renewTime: new Date(now - 2 * 3600_000).toISOString() } });
    await old('apiserver-gone', 'kube-system', true);
    await old('not-identity', 'kube-system', false);
    await old('apiserver-elsewhere', 'default', true);
    expect(await ident.collect()).toBe(1);
    expect(await leases.get('kube-system', 'apiserver-gone')).toBeUndefined();
    expect(await leases.get('kube-system', 'not-identity')).toBeDefined();
    expect(await leases.get('default', 'apiserver-elsewhere')).toBeDefined();
    expect(await leases.get('kube-system', ident.id)).toBeDefined();
  });
});
