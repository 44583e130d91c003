import { describe, expect, it } from 'vitest';
import { endpointAddress, leaseTimings } from './replica-settings.js';

describe('endpointAddress (kube-apiserver\'s advertise address defaulting)', () => {
  it('takes --advertise-address, else a non-loopback bind address', () => {
    expect(endpointAddress('192.0.2.7', '127.0.0.1')).toEqual({ ip: '192.0.2.7' });
    expect(endpointAddress('', '198.51.100.3')).toEqual({ ip: '198.51.100.3' });
  });
  it('a loopback or unspecified bind address gives a host interface address instead', () => {
    for (const bind of ['127.0.0.1', '0.0.0.0', '::']) {
      const r = endpointAddress('', bind);
      if ('ip' in r) expect(r.ip).not.toMatch(/^127\.|^::1$/);
      else expect(r.refused).toMatch(/--advertise-address/);
    }
  });
  it('an explicit loopback advertise address is refused as kube\'s Endpoints validation refuses it', () => {
    expect(endpointAddress('127.0.0.1', '127.0.0.1')).toEqual({
      refused: 'Endpoints "kubernetes" is invalid: subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)',
    });
    expect(endpointAddress('::1', '::1')).toMatchObject({ refused: expect.stringContaining('"::1": may not be in the loopback range') });
  });
});

describe('leaseTimings', () => {
  it("kube's by default, faster with KUBESHARD_FAST_LEASES=1", () => {
    expect(leaseTimings({})).toEqual({ leaseDurationSeconds: 15, renewDeadlineMs: 10_000, retryPeriodMs: 2000, masterLeaseTtlSeconds: 15, endpointIntervalMs: 10_000 });
    expect(leaseTimings({ KUBESHARD_FAST_LEASES: '1' }).leaseDurationSeconds).toBe(3);
  });
});
