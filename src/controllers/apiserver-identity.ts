// The API server's identity Lease (kube's APIServerIdentity, GA in 1.33): every replica
// keeps a Lease named after its identity in kube-system, labelled
// `apiserver.kubernetes.io/identity: kube-apiserver` and with its hostname, and renews it
// every 10 s (kube's lease controller: the same one the kubelet's node lease uses); a
// garbage collector that every replica runs deletes the identity Leases whose holder
// stopped renewing them more than their duration ago (kube's apiserverleasegc). Clients
// count live replicas from these Leases (`kubectl get leases -n kube-system -l
// apiserver.kubernetes.io/identity=kube-apiserver`).
//
// The identity is kube's: "apiserver-" and the lower-case unpadded base32 of the first 16
// bytes of SHA-256 over the hostname and the component name, each with a two-byte length.
// Several replicas on one machine (scripts/local-cluster.sh) would share it, as several
// kube-apiservers on one host do; KUBESHARD_HOSTNAME names each replica's host apart, as a
// container's hostname does.
//
// Thread ownership: the main thread; its writes go through the generic store.
import { createHash, randomUUID } from 'node:crypto';
import { hostname as osHostname } from 'node:os';
import { microTime, type LeaseClient, type LeaseObject } from './leader-election.js';

export const IDENTITY_LABEL = 'apiserver.kubernetes.io/identity';
export const HOSTNAME_LABEL = 'kubernetes.io/hostname';
const COMPONENT = 'kube-apiserver';
/** kube's IdentityLeaseDurationSeconds, IdentityLeaseRenewIntervalPeriod, IdentityLeaseGCPeriod */
export const IDENTITY_LEASE_SECONDS = 3600;
export const IDENTITY_RENEW_MS = 10_000;
export const IDENTITY_GC_MS = 3600_000;

export function serverHostname(): string {
  return process.env.KUBESHARD_HOSTNAME || osHostname();
}

/** RFC 4648 base32, lower case, no padding. */
function base32(b: Buffer): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of b) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out;
}

function lengthPrefixed(s: string): Buffer {
  const b = Buffer.from(s);
  const len = Buffer.alloc(2);
  len.writeUInt16BE(b.length);
  return Buffer.concat([len, b]);
}

/** kube's APIServerID for a host. */
export function apiserverId(host: string): string {
  const hash = createHash('sha256').update(Buffer.concat([lengthPrefixed(host), lengthPrefixed(COMPONENT)])).digest();
  return 'apiserver-' + base32(hash.subarray(0, 16));
}

/** The Leases of kube-system, for the garbage collector. */
export interface IdentityLeaseClient extends LeaseClient {
  list(namespace: string): Promise<LeaseObject[]>;
  delete(lease: LeaseObject): Promise<void>;
}

export class ApiserverIdentity {
  readonly id: string;
  readonly holder: string;
  private renewTimer: NodeJS.Timeout | undefined;
  private gcTimer: NodeJS.Timeout | undefined;
  private readonly host: string;

  constructor(
    private readonly client: IdentityLeaseClient,
    private readonly o: { renewMs?: number; gcMs?: number; leaseSeconds?: number; now?: () => number; log?: (m: string) => void } = {},
  ) {
    this.host = serverHostname();
    this.id = apiserverId(this.host);
    this.holder = `${this.id}_${randomUUID()}`;
  }

  start(): void {
    const renew = () => {
      this.renew().catch((err) => this.o.log?.(`apiserver identity lease: ${(err as Error).message}`));
      this.renewTimer = setTimeout(renew, this.o.renewMs ?? IDENTITY_RENEW_MS);
      this.renewTimer.unref?.();
    };
    renew();
    const gc = () => {
      this.collect().catch((err) => this.o.log?.(`apiserver identity lease gc: ${(err as Error).message}`));
      this.gcTimer = setTimeout(gc, this.o.gcMs ?? IDENTITY_GC_MS);
      this.gcTimer.unref?.();
    };
    this.gcTimer = setTimeout(gc, this.o.gcMs ?? IDENTITY_GC_MS);
    this.gcTimer.unref?.();
  }

  stop(): void {
    clearTimeout(this.renewTimer);
    clearTimeout(this.gcTimer);
  }

  /** Creates the Lease, or renews it (kube's lease controller: a new renewTime, the labels kept right). */
  async renew(): Promise<void> {
    const now = microTime((this.o.now ?? Date.now)());
    const labels = { [IDENTITY_LABEL]: COMPONENT, [HOSTNAME_LABEL]: this.host };
    const cur = await this.client.get('kube-system', this.id);
    if (!cur) {
      await this.client.create({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: this.id, namespace: 'kube-system', labels },
        spec: { holderIdentity: this.holder, leaseDurationSeconds: this.o.leaseSeconds ?? IDENTITY_LEASE_SECONDS, renewTime: now },
      });
      return;
    }
    const meta = cur.metadata as LeaseObject['metadata'] & { labels?: Record<string, string> };
    await this.client.update({
      ...cur,
      metadata: { ...meta, labels: { ...(meta.labels ?? {}), ...labels } },
      spec: { ...cur.spec, holderIdentity: this.holder, leaseDurationSeconds: this.o.leaseSeconds ?? IDENTITY_LEASE_SECONDS, renewTime: now },
    });
  }

  /** kube's apiserverleasegc: identity Leases of kube-system not renewed within their duration are deleted. */
  async collect(): Promise<number> {
    const now = (this.o.now ?? Date.now)();
    let n = 0;
    for (const l of await this.client.list('kube-system')) {
      const labels = (l.metadata as { labels?: Record<string, string> }).labels ?? {};
      if (labels[IDENTITY_LABEL] !== COMPONENT) continue;
      const renewed = Date.parse(l.spec?.renewTime ?? '');
      const seconds = l.spec?.leaseDurationSeconds ?? 0;
      if (!Number.isFinite(renewed) || renewed + seconds * 1000 >= now) continue;
      try {
        await this.client.delete(l);
        n++;
      } catch {
        // (gone already, or renewed in between: the precondition refused it)
      }
    }
    return n;
  }
}
