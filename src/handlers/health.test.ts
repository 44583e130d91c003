import { describe, it, expect } from 'vitest';
import { healthHandler, StartupSteps, type HealthState } from './health.js';
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

describe('health endpoints: start-up steps, grace period, exclusions (kube 1.33 healthz.go)', () => {
  const steps = () => new StartupSteps(['rbac/bootstrap-roles', 'bootstrap-controller']);

  it('list informer-sync and each start-up step as a poststarthook check, failing "not finished" until done', () => {
    const s = steps();
    s.finish('bootstrap-controller');
    const state: HealthState = { ready: true, shuttingDown: false, storage: () => '', steps: s };
    const r = get(state, '/readyz?verbose');
    expect(r.code).toBe(500);
    expect(r.body).toBe(
      '[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]informer-sync ok\n[-]poststarthook/rbac/bootstrap-roles failed: reason withheld\n[+]poststarthook/bootstrap-controller ok\n[+]shutdown ok\nreadyz check failed\n',
    );
    expect(get(state, '/readyz/poststarthook/rbac/bootstrap-roles')).toEqual({ handled: true, code: 500, body: 'internal server error: not finished\n' });
    s.finish('rbac/bootstrap-roles');
    expect(get(state, '/readyz/poststarthook/rbac/bootstrap-roles').body).toBe('ok');
    expect(get(state, '/healthz?verbose').body).toBe('[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]poststarthook/rbac/bootstrap-roles ok\n[+]poststarthook/bootstrap-controller ok\nhealthz check passed\n');
  });

  it('pass unfinished steps on livez within --livez-grace-period, never on readyz, and never a failing storage', () => {
    const state: HealthState = { ready: false, shuttingDown: false, storage: () => '', steps: steps(), livezGraceUntil: performance.now() + 60_000 };
    expect(get(state, '/livez').code).toBe(200);
    expect(get(state, '/readyz').code).toBe(500);
    expect(get(state, '/readyz/informer-sync').body).toBe('internal server error: informers not started yet\n');
    expect(get({ ...state, livezGraceUntil: performance.now() - 1 }, '/livez').code).toBe(500);
    expect(get({ ...state, storage: () => 'down' }, '/livez').code).toBe(500);
  });

  it('leave an unknown check to the router (404), and take each exclude value whole, warning of unknown ones sorted', () => {
    const state: HealthState = { ready: true, shuttingDown: false, storage: () => '' };
    expect(get(state, '/readyz/nope').handled).toBe(false);
    expect(get(state, '/livez/shutdown').handled).toBe(false);
    expect(get(state, '/livez/informer-sync').handled).toBe(false);
    expect(get(state, '/livez?verbose&exclude=zz&exclude=ping,log&exclude=aa').body).toBe(
      '[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]poststarthook/generic-apiserver-start-informers ok\nwarn: some health checks cannot be excluded: no matches for "aa","ping,log","zz"\nlivez check passed\n',
    );
  });
});
