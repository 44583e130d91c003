import { describe, expect, it } from 'vitest';
import { LeaderElector, microTime, type LeaseClient, type LeaseObject } from './leader-election.js';

/** One Lease in memory, with resourceVersion preconditions as the API server applies them. */
class MemoryLeases implements LeaseClient {
  lease: LeaseObject | undefined;
  rv = 0;
  failing = false;
  async get(): Promise<LeaseObject | undefined> {
    if (this.failing) throw new Error('unavailable');
    return this.lease && structuredClone(this.lease);
  }
  async create(l: LeaseObject): Promise<LeaseObject> {
    if (this.failing) throw new Error('unavailable');
    if (this.lease) throw new Error('AlreadyExists');
    this.lease = { ...structuredClone(l), metadata: { ...l.metadata, resourceVersion: String(++this.rv) } };
    return structuredClone(this.lease);
  }
  async update(l: LeaseObject): Promise<LeaseObject> {
    if (this.failing) throw new Error('unavailable');
    if (!this.lease || l.metadata.resourceVersion !== this.lease.metadata.resourceVersion) throw new Error('Conflict');
    this.lease = { ...structuredClone(l), metadata: { ...l.metadata, resourceVersion: String(++this.rv) } };
    return structuredClone(this.lease);
  }
}

function candidate(client: LeaseClient, identity: string, clock: { t: number }, log: string[]) {
  const e = new LeaderElector(client, {
    namespace: 'kube-system',
    name: 'kube-controller-manager',
    identity,
    retryPeriodMs: 5,
    onStartedLeading: () => void log.push(`${identity} started`),
    onStoppedLeading: () => void log.push(`${identity} stopped`),
    now: () => clock.t,
  });
  return e;
}

const settle = () => new Promise((r) => setTimeout(r, 30));

describe('LeaderElector', () => {
  it('writes microsecond times', () => {
    expect(microTime(Date.UTC(2026, 10, 26, 6, 40, 0, 123))).toBe('2026-11-26T06:40:00.123000Z');
  });

  it('one of two candidates leads; the other takes over only after the lease duration as it observed it', async () => {
    const leases = new MemoryLeases();
    const clock = { t: 1_000_000 };
    const log: string[] = [];
    const a = candidate(leases, 'a', clock, log);
    a.start();
    await settle();
    const b = candidate(leases, 'b', clock, log);
    b.start();
    await settle();
    expect(a.isLeader()).toBe(true);
    expect(b.isLeader()).toBe(false);
    expect(leases.lease?.spec?.holderIdentity).toBe('a');
    expect(leases.lease?.spec?.leaseTransitions).toBe(0);

    // a dies without releasing: b waits 15 s by its own clock from when it saw a's last renewal
    await a.stop(false);
    clock.t += 14_000;
    await settle();
    expect(b.isLeader()).toBe(false);
    clock.t += 1_500;
    await settle();
    expect(b.isLeader()).toBe(true);
    expect(leases.lease?.spec?.holderIdentity).toBe('b');
    expect(leases.lease?.spec?.leaseTransitions).toBe(1);
    await b.stop();
    expect(log).toEqual(['a started', 'a stopped', 'b started', 'b stopped']);
  });

  it('a released lease is taken at once', async () => {
    const leases = new MemoryLeases();
    const clock = { t: 5_000_000 };
    const log: string[] = [];
    const a = candidate(leases, 'a', clock, log);
    a.start();
    await settle();
    const b = candidate(leases, 'b', clock, log);
    b.start();
    await settle();
    await a.stop(true);
    expect(leases.lease?.spec?.holderIdentity).toBe('');
    await settle();
    expect(b.isLeader()).toBe(true);
    await b.stop();
  });

  it('a leader that cannot renew within the renew deadline stops leading', async () => {
    const leases = new MemoryLeases();
    const clock = { t: 9_000_000 };
    const log: string[] = [];
    const a = candidate(leases, 'a', clock, log);
    a.start();
    await settle();
    expect(a.isLeader()).toBe(true);
    leases.failing = true;
    clock.t += 9_000;
    await settle();
    expect(a.isLeader()).toBe(true);
    clock.t += 1_500;
    await settle();
    expect(a.isLeader()).toBe(false);
    leases.failing = false;
    await settle();
    // its own record: it renews it again and leads
    expect(a.isLeader()).toBe(true);
    await a.stop();
  });
});

describe('LeaderElector start-up', () => {
  it('start() resolves after the first try, with the controllers started when the Lease was free', async () => {
    const leases = new MemoryLeases();
    const log: string[] = [];
    const e = candidate(leases, 'a', { t: 1_000_000 }, log);
    await e.start();
    expect(e.isLeader()).toBe(true);
    expect(log).toEqual(['a started']);
    await e.stop();
    expect(log).toEqual(['a started', 'a stopped']);
    // released: the next candidate takes it at its first try
    const b = candidate(leases, 'b', { t: 1_000_001 }, log);
    await b.start();
    expect(b.isLeader()).toBe(true);
    await b.stop(false);
  });

  it('a sole candidate (one process on LMDB) takes over at once what a killed earlier run left held', async () => {
    const leases = new MemoryLeases();
    const clock = { t: 1_000_000 };
    const log: string[] = [];
    const old = candidate(leases, 'old', clock, log);
    await old.start();
    await old.stop(false); // killed: the Lease still names it
    const shared = candidate(leases, 'other', clock, log);
    await shared.start();
    expect(shared.isLeader()).toBe(false);
    await shared.stop();
    const sole = new LeaderElector(leases, { namespace: 'kube-system', name: 'kube-controller-manager', identity: 'new', soleCandidate: true, onStartedLeading: () => undefined, onStoppedLeading: () => undefined, now: () => clock.t });
    await sole.start();
    expect(sole.isLeader()).toBe(true);
    expect(leases.lease?.spec?.holderIdentity).toBe('new');
    expect(leases.lease?.spec?.leaseTransitions).toBe(1);
    await sole.stop();
  });
});
