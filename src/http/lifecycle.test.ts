import { describe, it, expect } from 'vitest';
import { ServerLifecycle, isLongRunning } from './lifecycle.js';
import type { ApiRequest, HeaderList, ResponseSink } from './types.js';

function req(verb: string, path = '/api/v1/namespaces/default/configmaps', extra: Partial<ApiRequest> = {}): ApiRequest {
  return { method: 'GET', path, rawQuery: '', query: new URLSearchParams(), headers: {}, body: null, remoteAddress: '', requestInfo: { isResourceRequest: true, verb, subresource: '' } as any, ...extra } as ApiRequest;
}

function sink() {
  const done: Array<() => void> = [];
  const out = { status: 0, headers: [] as HeaderList, body: '', closeAfter: false, ended: false };
  const res = {
    aborted: false,
    send: (status: number, headers: HeaderList, body: string) => Object.assign(out, { status, headers, body: String(body) }),
    onDone: (f: () => void) => done.push(f),
    closeAfterResponse: () => (out.closeAfter = true),
    end: () => (out.ended = true),
  } as unknown as ResponseSink;
  return { res, out, finish: () => done.splice(0).forEach((f) => f()) };
}

describe('the graceful shutdown filter (kube WithRetryAfter, WithWaitGroup, WithWatchTerminationDuringShutdown)', () => {
  it('knows kube\'s long-running requests', () => {
    expect(isLongRunning({ isResourceRequest: true, verb: 'watch', subresource: '' } as any)).toBe(true);
    expect(isLongRunning({ isResourceRequest: true, verb: 'get', subresource: 'log' } as any)).toBe(true);
    expect(isLongRunning({ isResourceRequest: true, verb: 'create', subresource: 'exec' } as any)).toBe(true);
    expect(isLongRunning({ isResourceRequest: true, verb: 'list', subresource: '' } as any)).toBe(false);
  });

  it('with send-retry-after: drains what is in flight, 429s new requests but probes, closing their connections', async () => {
    const l = new ServerLifecycle({ sendRetryAfter: true, watchGraceMs: 0 });
    const f = l.filter();
    const a = sink();
    expect(f.run(req('list'), a.res)).toBeUndefined();
    expect(l.inFlightRequests).toBe(1);
    let drained = false;
    const d = l.stopAccepting().then(() => (drained = true));
    const b = sink();
    expect(f.run(req('get'), b.res)).toBe(true);
    expect(b.out).toMatchObject({ status: 429, body: 'The apiserver is shutting down, please try again later.\n', closeAfter: true });
    expect(b.out.headers).toContainEqual(['Retry-After', '5']);
    expect(f.run(req('get', '/readyz'), sink().res)).toBeUndefined();
    expect(f.run(req('get', '/api', { headers: { 'user-agent': 'kube-apiserver/v1.33.0' } } as any), sink().res)).toBeUndefined();
    await Promise.resolve();
    expect(drained).toBe(false);
    a.finish();
    await d;
    expect(drained).toBe(true);
  });

  it('without it: 503 with Retry-After: 1 on a connection still open; watches end within their grace period', async () => {
    const l = new ServerLifecycle({ sendRetryAfter: false, watchGraceMs: 5000 });
    const f = l.filter();
    const w = sink();
    const wr = req('watch');
    expect(f.run(wr, w.res)).toBeUndefined();
    let ended = 0;
    wr.onServerShutdown!(() => {
      ended++;
      w.finish();
    });
    await l.stopAccepting();
    expect(ended).toBe(1);
    expect(l.openWatches).toBe(0);
    const b = sink();
    expect(f.run(req('get'), b.res)).toBe(true);
    expect(b.out.status).toBe(503);
    expect(JSON.parse(b.out.body)).toMatchObject({ kind: 'Status', message: 'apiserver is shutting down', reason: 'ServiceUnavailable', code: 503 });
    const nw = sink();
    expect(f.run(req('watch'), nw.res)).toBe(true);
    expect(nw.out.status).toBe(503);
  });
});
