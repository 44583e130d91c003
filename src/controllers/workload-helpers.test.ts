// The pure pieces of the ReplicaSet and Deployment controllers: fenceposts, the pod template
// hash, template equality without the hash label, the deletion order, slow-start batches.
import { describe, it, expect } from 'vitest';
import { computeHash, equalIgnoreHash, resolveFenceposts } from './deployment.js';
import { deletionOrder, slowStartBatch } from './replicaset.js';

describe('deployment helpers', () => {
  it('maxSurge rounds up, maxUnavailable down, and both zero makes maxUnavailable 1', () => {
    expect(resolveFenceposts('25%', '25%', 3)).toEqual([1, 0]);
    expect(resolveFenceposts('25%', '25%', 10)).toEqual([3, 2]);
    expect(resolveFenceposts(0, 0, 5)).toEqual([0, 1]);
    expect(resolveFenceposts(2, '50%', 5)).toEqual([2, 2]);
  });

  it('the pod template hash: stable, in the safe alphabet, changed by the template and by collisionCount', () => {
    const t = { metadata: { labels: { app: 'a' } }, spec: { containers: [{ name: 'c', image: 'x' }] } };
    const h = computeHash(t);
    expect(h).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]{1,10}$/);
    expect(computeHash(structuredClone(t))).toBe(h);
    expect(computeHash({ spec: t.spec, metadata: t.metadata })).toBe(h); // key order does not matter
    expect(computeHash(t, 1)).not.toBe(h);
    expect(computeHash({ ...t, spec: { containers: [{ name: 'c', image: 'y' }] } })).not.toBe(h);
  });

  it('templates equal but for pod-template-hash are equal', () => {
    const a = { metadata: { labels: { app: 'a', 'pod-template-hash': 'abc' } }, spec: { x: 1 } };
    const b = { metadata: { labels: { app: 'a' } }, spec: { x: 1 } };
    expect(equalIgnoreHash(a, b)).toBe(true);
    expect(equalIgnoreHash(a, { ...b, spec: { x: 2 } })).toBe(false);
  });
});

describe('replicaset helpers', () => {
  const pod = (name: string, o: { node?: string; phase?: string; ready?: boolean; created?: string }) => ({
    metadata: { name, creationTimestamp: o.created ?? '2026-01-01T00:00:00Z' },
    spec: { nodeName: o.node },
    status: { phase: o.phase ?? 'Running', conditions: [{ type: 'Ready', status: o.ready ? 'True' : 'False', lastTransitionTime: '2026-01-01T00:00:00Z' }] },
  });

  it('gives up unscheduled, then pending, then not ready, then newer pods first', () => {
    const pods = [
      pod('ready-old', { node: 'n', ready: true, created: '2026-01-01T00:00:00Z' }),
      pod('ready-new', { node: 'n', ready: true, created: '2026-01-02T00:00:00Z' }),
      pod('not-ready', { node: 'n' }),
      pod('pending', { node: 'n', phase: 'Pending' }),
      pod('unscheduled', { phase: 'Pending' }),
    ];
    expect([...pods].sort(deletionOrder).map((p) => p.metadata.name)).toEqual(['unscheduled', 'pending', 'not-ready', 'ready-new', 'ready-old']);
  });

  it('slow start: batches of 1, 2, 4, ... and none after the first failing batch', async () => {
    let calls = 0;
    const ok = await slowStartBatch(10, 1, async () => {
      calls++;
    });
    expect(ok).toEqual({ created: 10 });
    expect(calls).toBe(10);
    calls = 0;
    const failing = await slowStartBatch(100, 1, async () => {
      if (++calls > 2) throw new Error('quota');
    });
    // the batch of 1 passes; in the batch of 2 the second call fails: no batch of 4
    expect(calls).toBe(3);
    expect(failing.created).toBe(2);
    expect(failing.error?.message).toBe('quota');
  });
});
