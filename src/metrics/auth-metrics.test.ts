import { describe, it, expect } from 'vitest';
import { countedFlowControl, timedAuthentication, timedAuthorization } from './auth-metrics.js';
import { ApiserverMetrics } from './apiserver-metrics.js';
import { errors, TooManyRequestsError } from '../errors.js';
import type { ApiRequest, ResponseSink } from '../http/types.js';

const res = {} as ResponseSink;
const req = () => ({}) as ApiRequest;

describe('the timed filters', () => {
  it('authentication: success with the user, failure on a 401, error otherwise; sync and async alike', async () => {
    const m = new ApiserverMetrics();
    const ok = timedAuthentication({ name: 'authentication', run: (r) => void (r.user = { name: 'kubelet', groups: [] } as never) }, m);
    const refused = timedAuthentication({ name: 'authentication', run: () => Promise.reject(errors.unauthorized()) }, m);
    const broken = timedAuthentication({ name: 'authentication', run: () => { throw new Error('boom'); } }, m);
    ok.run(req(), res);
    await expect(refused.run(req(), res)).rejects.toThrow('Unauthorized');
    expect(() => broken.run(req(), res)).toThrow('boom');
    const text = m.render();
    expect(text).toContain('authentication_attempts{result="success"} 1');
    expect(text).toContain('authentication_attempts{result="failure"} 1');
    expect(text).toContain('authentication_attempts{result="error"} 1');
    expect(text).toContain('authenticated_user_requests{username="kubelet"} 1');
  });

  it('authorization: allowed, denied on a 403', () => {
    const m = new ApiserverMetrics();
    timedAuthorization({ name: 'authorization', run: () => {} }, m).run(req(), res);
    expect(() => timedAuthorization({ name: 'authorization', run: () => { throw errors.forbidden({ group: '', resource: 'pods' }, 'p', 'no'); } }, m).run(req(), res)).toThrow();
    expect(m.render()).toContain('authorization_attempts_total{result="allowed"} 1');
    expect(m.render()).toContain('authorization_attempts_total{result="denied"} 1');
  });

  it("flow control's 429s are terminations; other outcomes are not", async () => {
    const seen: number[] = [];
    const f = countedFlowControl({ name: 'flow-control', run: () => Promise.reject(new TooManyRequestsError('queue-full' as never)) }, (_r, code) => seen.push(code));
    await expect(f.run(req(), res)).rejects.toThrow();
    countedFlowControl({ name: 'flow-control', run: () => {} }, (_r, code) => seen.push(code)).run(req(), res);
    expect(seen).toEqual([429]);
  });
});
