// The `kubernetes` Service's endpoints with several API server replicas: kube's lease
// endpoint reconciler (pkg/controlplane/reconcilers/lease.go, the default
// --endpoint-reconciler-type). Each replica keeps a "master lease" for its advertised
// address: a storage key that expires on its own (an etcd lease of 15 s, renewed every
// 10 s), and writes the Endpoints `default/kubernetes` and its EndpointSlice to list the
// addresses of every lease alive, sorted, so that replicas agree and rewrite nothing while
// the set is unchanged. A replica that shuts down removes its lease and reconciles at once;
// one killed drops out when its lease expires.
//
// Where the leases live is the storage backend's business (MasterLeases): in etcd, keys
// under <prefix>/masterleases/ with etcd leases, as kube-apiserver writes them; with the
// embedded LMDB there is one process, so the only lease is this server's own.
//
// Thread ownership: the main thread; the writes go through the generic store.
import type { ObjectClient } from './object-client.js';

/** The advertised addresses of the live replicas (kube's reconcilers.Leases). */
export interface MasterLeases {
  /** writes (or refreshes) this replica's lease; it expires after ttlSeconds unless renewed */
  renew(ip: string, ttlSeconds: number): Promise<void>;
  /** the addresses of every lease alive */
  list(): Promise<string[]>;
  remove(ip: string): Promise<void>;
}

/** One process: its own lease only. */
export class LocalMasterLeases implements MasterLeases {
  private ips = new Set<string>();
  async renew(ip: string): Promise<void> {
    this.ips.add(ip);
  }
  async list(): Promise<string[]> {
    return [...this.ips];
  }
  async remove(ip: string): Promise<void> {
    this.ips.delete(ip);
  }
}

/** kube's DefaultEndpointReconcilerInterval and DefaultEndpointReconcilerTTL */
export const RECONCILE_INTERVAL_MS = 10_000;
export const MASTER_LEASE_TTL_SECONDS = 15;

function ipv4Sort(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export class EndpointReconciler {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly leases: MasterLeases,
    private readonly endpoints: ObjectClient,
    private readonly slices: ObjectClient | undefined,
    private readonly ip: string,
    private readonly port: number,
    private readonly o: { intervalMs?: number; ttlSeconds?: number; log?: (m: string) => void } = {},
  ) {}

  start(): void {
    const run = () => {
      if (this.stopped) return;
      this.reconcile().catch((err) => this.o.log?.(`kubernetes endpoints: ${(err as Error).message}`));
      this.timer = setTimeout(run, this.o.intervalMs ?? RECONCILE_INTERVAL_MS);
      this.timer.unref?.();
    };
    run();
  }

  /** Stops reconciling, leaving this replica's lease to expire (a start-up that failed). */
  halt(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** kube's RemoveEndpoints at shutdown: this replica's lease goes, and the endpoints follow at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    try {
      await this.leases.remove(this.ip);
      // (the last replica leaves the endpoints as they are: kube refuses to erase them all)
      const left = await this.leases.list();
      if (left.length) await this.write(left);
    } catch (err) {
      this.o.log?.(`kubernetes endpoints at shutdown: ${(err as Error).message}`);
    }
  }

  /** One pass: renew this replica's lease, then make the Endpoints and the EndpointSlice list every live one. */
  async reconcile(): Promise<void> {
    await this.leases.renew(this.ip, this.o.ttlSeconds ?? MASTER_LEASE_TTL_SECONDS);
    try {
      await this.write(await this.leases.list());
    } catch (err) {
      // another replica rewrote them meanwhile (409): once more, from what it wrote
      if ((err as { code?: number }).code !== 409) throw err;
      await this.write(await this.leases.list());
    }
  }

  private ports() {
    return [{ name: 'https', port: this.port, protocol: 'TCP' }];
  }

  private async write(ips: string[]): Promise<void> {
    // kube refuses to erase every endpoint of the kubernetes Service
    if (ips.length === 0) throw new Error('no API server IP addresses were listed in storage, refusing to erase all endpoints for the kubernetes Service');
    ips = [...new Set(ips)].sort(ipv4Sort);
    const cur = await this.endpoints.get('default', 'kubernetes');
    // One port for every address (kube's format): replicas share --secure-port in kube's
    // deployments. Replicas on one machine cannot, and would each rewrite the port to theirs
    // at every pass: the port of the first address listed stands, the others keep it.
    const curPorts = cur?.subsets?.[0]?.ports;
    const ports = ips[0] === this.ip || !Array.isArray(curPorts) || curPorts.length !== 1 ? this.ports() : curPorts;
    const subsets = [{ addresses: ips.map((ip) => ({ ip })), ports }];
    const labels = { 'endpointslice.kubernetes.io/skip-mirror': 'true' };
    if (!cur) {
      await this.endpoints.create({ apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'kubernetes', namespace: 'default', labels }, subsets });
    } else if (JSON.stringify(cur.subsets ?? []) !== JSON.stringify(subsets) || cur.metadata?.labels?.['endpointslice.kubernetes.io/skip-mirror'] !== 'true') {
      await this.endpoints.update({ ...cur, metadata: { ...cur.metadata, labels: { ...(cur.metadata?.labels ?? {}), ...labels } }, subsets });
    }
    if (!this.slices) return;
    // kube's endpointSliceFromEndpoints: one slice named after the Service, ready endpoints
    const curSlice = await this.slices.get('default', 'kubernetes');
    const slicePorts = curSlice?.ports;
    const sPorts = ips[0] === this.ip || !Array.isArray(slicePorts) || slicePorts.length !== 1 ? this.ports() : slicePorts;
    const slice = {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'kubernetes', namespace: 'default', labels: { 'kubernetes.io/service-name': 'kubernetes' } },
      addressType: this.ip.includes(':') ? 'IPv6' : 'IPv4',
      endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })),
      ports: sPorts,
    };
    if (!curSlice) {
      await this.slices.create(slice);
      return;
    }
    const same =
      JSON.stringify(curSlice.endpoints ?? []) === JSON.stringify(slice.endpoints) &&
      JSON.stringify(curSlice.ports ?? []) === JSON.stringify(slice.ports) &&
      curSlice.metadata?.labels?.['kubernetes.io/service-name'] === 'kubernetes';
    if (same) return;
    await this.slices.update({ ...curSlice, metadata: { ...curSlice.metadata, labels: { ...(curSlice.metadata?.labels ?? {}), ...slice.metadata.labels } }, addressType: slice.addressType, endpoints: slice.endpoints, ports: slice.ports });
  }
}
