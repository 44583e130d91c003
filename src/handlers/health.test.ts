import { describe, it, expect } from 'vitest';
import { healthHandler, type HealthState } from './health.js';
import type { ApiRequest, ResponseSink } from '../http/types.js';

function get(state: HealthState, url: string): { handled: boolean; code: number; body: string } {
  const [path, q = ''] = url.split('?');
  const req = { method: 'GET', path, rawQuery: q, query: new URLSearchParams(q), headers: {}, body: null, remoteAddress: '' } as ApiRequest;
  const out = { handled: false, code: 0, body: '' };
  const res = { aborted: false, send: (code: number, _h: unknown, body: string) => Object.assign(out, { code, body }) } as unknown as ResponseSink;
  out.handled = healthHandler(state)(req, res);
  return out;
}

describe('health endpoints', () => {
  const ok: HealthState = { ready: true, shuttingDown: false, storage: () => '' };
  const full: HealthState = { ready: true, shuttingDown: false, storage: () => 'shard 0: database space exceeded' };

  it('answer ok, or the checks with ?verbose, as kube-apiserver', () => {
    expect(get(ok, '/readyz')).toEqual({ handled: true, code: 200, body: 'ok' });
    expect(get(ok, '/livez/').body).toBe('ok');
    expect(get(ok, '/readyz?verbose').body).toBe(
      '[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]poststarthook/generic-apiserver-start-informers ok\n[+]shutdown ok\nreadyz check passed\n',
    );
    expect(get(ok, '/livez?verbose').body).toBe('[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]poststarthook/generic-apiserver-start-informers ok\nlivez check passed\n');
  });

  it('fail the storage checks with their reason withheld, and show it on the check\'s own path', () => {
    const r = get(full, '/readyz');
    expect(r.code).toBe(500);
    expect(r.body).toBe(
      '[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n[-]etcd-readiness failed: reason withheld\n[+]poststarthook/generic-apiserver-start-informers ok\n[+]shutdown ok\nreadyz check failed\n',
    );
    expect(get(full, '/livez').body).toContain('[-]etcd failed: reason withheld\n');
    expect(get(full, '/healthz').code).toBe(500);
    expect(get(full, '/readyz/etcd')).toEqual({ handled: true, code: 500, body: 'internal server error: shard 0: database space exceeded\n' });
    expect(get(full, '/readyz/ping')).toEqual({ handled: true, code: 200, body: 'ok' });
    expect(get(full, '/livez/etcd-readiness').handled).toBe(false);
  });

  it('skip excluded checks, and warn of names that match none', () => {
    expect(get(full, '/readyz?exclude=etcd&exclude=etcd-readiness').body).toBe('ok');
    expect(get(full, '/readyz?verbose&exclude=etcd&exclude=etcd-readiness&exclude=nope').body).toBe(
      '[+]ping ok\n[+]log ok\n[+]etcd excluded: ok\n[+]etcd-readiness excluded: ok\n[+]poststarthook/generic-apiserver-start-informers ok\n[+]shutdown ok\nwarn: some health checks cannot be excluded: no matches for "nope"\nreadyz check passed\n',
    );
  });

  it('fail readyz while shutting down, and everything before start-up ends', () => {
    expect(get({ ...ok, shuttingDown: true }, '/readyz').body).toContain('[-]shutdown failed: reason withheld\n');
    expect(get({ ...ok, shuttingDown: true }, '/livez').code).toBe(200);
    expect(get({ ...ok, ready: false }, '/livez').code).toBe(500);
  });
});
