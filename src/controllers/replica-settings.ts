// What a replica advertises and how fast its leases run: the address the `kubernetes`
// Service's endpoints give for it, and the timings of the controller Lease and the master
// leases.
//
// Thread ownership: pure functions (the environment and the host's interfaces are read at
// each call); any thread.
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { MASTER_LEASE_TTL_SECONDS, RECONCILE_INTERVAL_MS } from './endpoint-reconciler.js';

function isLoopback(ip: string): boolean {
  return isIP(ip) === 4 ? ip.startsWith('127.') : ip === '::1';
}

function isUnspecified(ip: string): boolean {
  return ip === '0.0.0.0' || ip === '::' || ip === '';
}

/**
 * The address of this replica in the kubernetes Service's endpoints. As kube-apiserver's
 * defaulting (ResolveBindAddress): --advertise-address when given; else the bind address,
 * unless it is unspecified or a loopback address, in which case a global unicast address
 * of a host interface (IPv4 first). An explicit loopback advertise address is kept, but
 * kube's Endpoints validation refuses it (ValidateNonSpecialIP), so kube-apiserver writes no
 * endpoints then and says why: so does this server (refused: the message).
 */
export function endpointAddress(advertise: string, bind: string): { ip: string } | { refused: string } {
  let ip = advertise;
  if (!ip) {
    ip = bind;
    if (isUnspecified(ip) || isLoopback(ip)) {
      const found = hostInterfaceAddress();
      if (!found) return { refused: `no global unicast address on the host's interfaces to advertise for --bind-address=${bind}: set --advertise-address` };
      ip = found;
    }
  }
  if (isLoopback(ip)) {
    return { refused: `Endpoints "kubernetes" is invalid: subsets[0].addresses[0].ip: Invalid value: "${ip}": may not be in the loopback range (127.0.0.0/8, ::1/128)` };
  }
  return { ip };
}

/** The first global unicast address of a host interface: IPv4 first, link-local ones skipped (kube's ChooseHostInterface prefers the default route's). */
function hostInterfaceAddress(): string | undefined {
  const all = Object.values(networkInterfaces()).flatMap((l) => l ?? []);
  const usable = all.filter((a) => !a.internal && !(a.family === 'IPv6' && /^fe80:/i.test(a.address)) && !a.address.startsWith('169.254.'));
  return (usable.find((a) => a.family === 'IPv4') ?? usable[0])?.address;
}

export interface LeaseTimings {
  /** the controller Lease (kube-controller-manager's --leader-elect-* defaults: 15 s, 10 s, 2 s) */
  leaseDurationSeconds: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** the master leases of the endpoint reconciler (kube's 15 s TTL, reconciled every 10 s) */
  masterLeaseTtlSeconds: number;
  endpointIntervalMs: number;
}

/**
 * kube's timings, or (KUBESHARD_FAST_LEASES=1, for tests of fail-over: a dead replica is
 * noticed within seconds) the same ratios five times faster: controller Lease 3 s, renew
 * deadline 2 s, retry 0.4 s; master lease TTL 3 s, reconciled every 2 s.
 */
export function leaseTimings(env: NodeJS.ProcessEnv = process.env): LeaseTimings {
  if (env.KUBESHARD_FAST_LEASES === '1') {
    return { leaseDurationSeconds: 3, renewDeadlineMs: 2000, retryPeriodMs: 400, masterLeaseTtlSeconds: 3, endpointIntervalMs: 2000 };
  }
  return { leaseDurationSeconds: 15, renewDeadlineMs: 10_000, retryPeriodMs: 2000, masterLeaseTtlSeconds: MASTER_LEASE_TTL_SECONDS, endpointIntervalMs: RECONCILE_INTERVAL_MS };
}
