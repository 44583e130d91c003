import { describe, expect, it } from 'vitest';
import { RateLimitedTimedQueue, TokenBucket } from './node-eviction-queue.js';
import { computeZoneState, zoneKey } from './node-zones.js';
import { labelsToReconcile } from './node-lifecycle.js';

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe('TokenBucket (client-go token bucket, burst 1)', () => {
  it('starts full and refills at qps', () => {
    const c = clock();
    const b = new TokenBucket(0.1, 1, c.now);
    expect(b.tryAccept()).toBe(true);
    expect(b.tryAccept()).toBe(false);
    c.advance(9_999);
    expect(b.tryAccept()).toBe(false);
    c.advance(1);
    expect(b.tryAccept()).toBe(true);
  });
  it('never accepts at qps 0', () => {
    const b = new TokenBucket(0, 1);
    expect(b.tryAccept()).toBe(false);
  });
});

describe('RateLimitedTimedQueue (--node-eviction-rate)', () => {
  it('lets one node through per 1/qps seconds', () => {
    const c = clock();
    const q = new RateLimitedTimedQueue(0.1, c.now);
    for (const n of ['a', 'b', 'c']) expect(q.add(n, `uid-${n}`)).toBe(true);
    const done: string[] = [];
    const pass = () => q.try((v) => (done.push(v), { ok: true }));
    pass();
    expect(done).toEqual(['a']);
    c.advance(5_000);
    pass();
    expect(done).toEqual(['a']);
    c.advance(5_000);
    pass();
    expect(done).toEqual(['a', 'b']);
    c.advance(10_000);
    pass();
    expect(done).toEqual(['a', 'b', 'c']);
  });

  it('keeps processed nodes in its set until removed, so they are not queued twice', () => {
    const c = clock();
    const q = new RateLimitedTimedQueue(100, c.now);
    q.add('a', 'u');
    q.try(() => ({ ok: true }));
    expect(q.length).toBe(0);
    expect(q.add('a', 'u')).toBe(false);
    expect(q.remove('a')).toBe(true);
    expect(q.add('a', 'u')).toBe(true);
  });

  it('retries a failed item after its wait', () => {
    const c = clock();
    const q = new RateLimitedTimedQueue(1000, c.now);
    q.add('a', 'u');
    let calls = 0;
    q.try(() => (calls++, { ok: false, retryMs: 50 }));
    expect(calls).toBe(1);
    c.advance(10);
    q.try(() => (calls++, { ok: true }));
    expect(calls).toBe(1);
    c.advance(100);
    q.try(() => (calls++, { ok: true }));
    expect(calls).toBe(2);
    expect(q.length).toBe(0);
  });

  it('stops at rate 0 (a disrupted zone) and resumes when the rate comes back', () => {
    const c = clock();
    const q = new RateLimitedTimedQueue(0.1, c.now);
    q.swapLimiter(0);
    q.add('a', 'u');
    const done: string[] = [];
    c.advance(60_000);
    q.try((v) => (done.push(v), { ok: true }));
    expect(done).toEqual([]);
    // (kube's SwapLimiter: the old limiter was refusing, so the new one starts drained)
    q.swapLimiter(0.01);
    q.try((v) => (done.push(v), { ok: true }));
    expect(done).toEqual([]);
    c.advance(100_000);
    q.try((v) => (done.push(v), { ok: true }));
    expect(done).toEqual(['a']);
    expect(q.qps).toBe(0.01);
  });
});

describe('zones (kube ComputeZoneState, GetZoneKey)', () => {
  it('full disruption without a Ready node, partial at the threshold with more than 2 not Ready', () => {
    expect(computeZoneState(['Unknown'], 0.55).state).toBe('FullDisruption');
    expect(computeZoneState(['True', 'Unknown'], 0.55).state).toBe('Normal');
    expect(computeZoneState(['True', 'Unknown', 'False'], 0.55).state).toBe('Normal');
    expect(computeZoneState(['True', 'Unknown', 'False', 'Unknown'], 0.55).state).toBe('PartialDisruption');
    expect(computeZoneState(['True', 'True', 'Unknown', 'False', 'Unknown', 'True', 'True'], 0.55)).toEqual({ notReady: 3, state: 'Normal' });
    expect(computeZoneState([], 0.55).state).toBe('Normal');
  });
  it('zone keys from the region and zone labels', () => {
    expect(zoneKey(undefined)).toBe('');
    expect(zoneKey({ 'topology.kubernetes.io/zone': 'a' })).toBe(':\u0000:a');
    expect(zoneKey({ 'failure-domain.beta.kubernetes.io/region': 'r', 'topology.kubernetes.io/zone': 'a' })).toBe('r:\u0000:a');
  });
});

describe('node labels (kube reconcileNodeLabels)', () => {
  it('sets the beta os and arch labels from the stable ones', () => {
    expect(labelsToReconcile({ 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64' })).toEqual({ 'beta.kubernetes.io/os': 'linux', 'beta.kubernetes.io/arch': 'amd64' });
    expect(labelsToReconcile({ 'kubernetes.io/os': 'linux', 'beta.kubernetes.io/os': 'windows' })).toEqual({ 'beta.kubernetes.io/os': 'linux' });
    expect(labelsToReconcile({ 'kubernetes.io/os': 'linux', 'beta.kubernetes.io/os': 'linux' })).toBeUndefined();
    expect(labelsToReconcile({ 'beta.kubernetes.io/os': 'linux' })).toBeUndefined();
  });
});
