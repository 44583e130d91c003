import { describe, it, expect, vi, afterEach } from 'vitest';
import { requestTimeoutFilter } from './request-timeout.js';
import type { ApiRequest, HeaderList, ResponseSink } from '../types.js';

afterEach(() => vi.useRealTimers());

function req(verb: string, rawQuery = '', subresource = ''): ApiRequest {
  return { method: 'GET', path: '/api/v1/namespaces/default/configmaps', rawQuery, query: new URLSearchParams(rawQuery), headers: {}, body: null, remoteAddress: '', requestInfo: { isResourceRequest: true, verb, subresource, apiGroup: '', apiVersion: 'v1' } as any } as ApiRequest;
}

function sink(started = false) {
  const done: Array<() => void> = [];
  const out = { status: 0, headers: [] as HeaderList, body: '', closed: false };
  const res = {
    aborted: false,
    send: (status: number, headers: HeaderList, body: string | Uint8Array) => {
      Object.assign(out, { status, headers, body: String(body) });
      done.splice(0).forEach((f) => f());
    },
    onDone: (f: () => void) => done.push(f),
    statusSent: () => started,
    close: () => (out.closed = true),
  } as unknown as ResponseSink;
  return { res, out, finish: () => done.splice(0).forEach((f) => f()) };
}

describe('the request deadline (kube WithRequestDeadline, WithTimeoutForNonLongRunningRequests)', () => {
  it('answers 504 past --request-timeout, or a shorter ?timeout=, and not once the handler has answered', () => {
    vi.useFakeTimers();
    const f = requestTimeoutFilter(60);
    const a = sink();
    f.run(req('list'), a.res);
    vi.advanceTimersByTime(59_999);
    expect(a.out.status).toBe(0);
    vi.advanceTimersByTime(1);
    expect(a.out.status).toBe(504);
    expect(JSON.parse(a.out.body)).toEqual({ metadata: {}, status: 'Failure', message: 'Timeout: request did not complete within the allotted timeout', reason: 'Timeout', details: {}, code: 504 });
    const b = sink();
    f.run(req('get', 'timeout=1500ms'), b.res);
    vi.advanceTimersByTime(1500);
    expect(b.out.status).toBe(504);
    const c = sink();
    f.run(req('get', 'timeout=2s'), c.res);
    c.finish();
    vi.advanceTimersByTime(60_000);
    expect(c.out.status).toBe(0);
  });

  it('closes the connection of a response already under way, and leaves long-running requests alone', () => {
    vi.useFakeTimers();
    const f = requestTimeoutFilter(1);
    const a = sink(true);
    f.run(req('list'), a.res);
    vi.advanceTimersByTime(1000);
    expect(a.out).toMatchObject({ status: 0, closed: true });
    const w = sink();
    f.run(req('watch'), w.res);
    f.run(req('get', '', 'log'), w.res);
    vi.advanceTimersByTime(10_000);
    expect(w.out.status).toBe(0);
  });

  it("answers a write as kube's finisher past 34 s, when that comes first", () => {
    vi.useFakeTimers();
    const f = requestTimeoutFilter(60);
    const a = sink();
    f.run(req('create'), a.res);
    vi.advanceTimersByTime(34_000);
    expect(a.out.status).toBe(504);
    expect(JSON.parse(a.out.body)).toMatchObject({ kind: 'Status', message: 'Timeout: request did not complete within requested timeout - context deadline exceeded', reason: 'Timeout', code: 504 });
  });

  it('refuses a ?timeout= Go cannot parse', () => {
    expect(() => requestTimeoutFilter(60).run(req('get', 'timeout=1x'), sink().res)).toThrow('invalid timeout specified in the request URL - time: unknown unit "x" in duration "1x"');
  });
});
