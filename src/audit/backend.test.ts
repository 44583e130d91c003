import { describe, it, expect } from 'vitest';
import { BufferedBackend, TruncatingWriter, type Writer } from './backend.js';
import type { AuditEvent } from './event.js';

function event(i: number, extra: Partial<AuditEvent> = {}): AuditEvent {
  return {
    kind: 'Event',
    apiVersion: 'audit.k8s.io/v1',
    level: 'RequestResponse',
    auditID: `id-${i}`,
    stage: 'ResponseComplete',
    requestURI: '/api/v1/namespaces/a/configmaps',
    verb: 'create',
    user: { username: 'u' },
    requestReceivedTimestamp: '2026-01-01T00:00:00.000000Z',
    stageTimestamp: '2026-01-01T00:00:00.000000Z',
    ...extra,
  };
}

function collector(): Writer & { batches: AuditEvent[][] } {
  const batches: AuditEvent[][] = [];
  return { name: 'test', batches, write: (evs) => (batches.push(evs), true), close: async () => {} };
}

describe('audit backends', () => {
  it('truncation drops the objects of a large event (annotated), drops one still too large, and splits batches', () => {
    const w = collector();
    const t = new TruncatingWriter(w, { enabled: true, maxEventSize: 2000, maxBatchSize: 500 });
    const big = { data: 'x'.repeat(3000) };
    t.write([event(1), event(2, { requestObject: big, responseObject: big }), event(3, { annotations: { huge: 'y'.repeat(3000) } }), event(4)]);
    // about 300 bytes an event: two never fit in 500
    expect(w.batches.map((b) => b.map((e) => e.auditID))).toEqual([['id-1'], ['id-2'], ['id-4']]);
    const w2 = collector();
    new TruncatingWriter(w2, { enabled: true, maxEventSize: 2000, maxBatchSize: 2000 }).write([event(5), event(6), event(7)]);
    expect(w2.batches.map((b) => b.length)).toEqual([3]);
    const cut = w.batches[1][0];
    expect(cut.requestObject).toBeUndefined();
    expect(cut.responseObject).toBeUndefined();
    expect(cut.annotations).toEqual({ 'audit.k8s.io/truncated': 'true' });
  });

  it('batch mode sends full batches, drops events beyond the buffer, and flushes the rest at shutdown', async () => {
    const w = collector();
    const b = new BufferedBackend(w, { bufferSize: 5, maxBatchSize: 2, maxBatchWait: 3600, throttleEnable: false, throttleQPS: 0, throttleBurst: 0 });
    b.process([event(1), event(2), event(3), event(4), event(5), event(6)]);
    // nothing is written on the caller's path
    expect(w.batches.length).toBe(0);
    await new Promise((r) => setImmediate(r));
    expect(w.batches.map((x) => x.length)).toEqual([2, 2]);
    await b.shutdown();
    expect(w.batches.flat().map((e) => e.auditID)).toEqual(['id-1', 'id-2', 'id-3', 'id-4', 'id-5']);
  });
});
