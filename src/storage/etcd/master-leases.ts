// The lease endpoint reconciler's "master leases" in etcd, where kube-apiserver keeps them
// (pkg/controlplane/reconcilers/lease.go storageLeases): one key per replica,
// `<prefix>/masterleases/<ip>`, held by an etcd lease so that it disappears on its own when
// its replica stops renewing it (a replica killed drops out of the kubernetes endpoints
// after the TTL). The value is what kube writes there: a v1 Endpoints in the storage
// encoding of built-in kinds (protobuf by default), without a name, whose first subset's
// first address is the replica's IP and whose metadata.generation grows at every renewal
// (kube bumps it so that its GuaranteedUpdate writes, and so re-attaches the lease). So
// kube-apiserver and kubeshard replicas on one etcd list each other in the endpoints.
//
// Thread ownership: the main thread (the endpoint reconciler's); the etcd client is the
// backend's.
import { posix } from 'node:path';
import { prefixEnd, type EtcdClient } from './client.js';
import { decodeFromStorage, encodeForStorage, type StorageMediaType } from './codec.js';
import type { MasterLeases } from '../../controllers/endpoint-reconciler.js';

const ENDPOINTS = { group: '', resource: 'endpoints' };

export class EtcdMasterLeases implements MasterLeases {
  private readonly base: string;

  constructor(
    private readonly client: EtcdClient,
    prefix: string,
    private readonly mediaType?: StorageMediaType,
  ) {
    // kube: path.Join(--etcd-prefix, "/masterleases/") + "/" + ip
    this.base = posix.join(prefix || '/', 'masterleases') + '/';
  }

  keyOf(ip: string): string {
    return this.base + ip;
  }

  /** kube's UpdateLease: the key rewritten with a new generation, under a lease of ttlSeconds. */
  async renew(ip: string, ttlSeconds: number): Promise<void> {
    const key = this.keyOf(ip);
    const { kv } = await this.client.get(key);
    let generation = 0;
    if (kv) {
      try {
        generation = Number(decodeFromStorage(ENDPOINTS, kv.value, kv.modRevision).obj.metadata?.generation) || 0;
      } catch {
        // (unreadable: written anew)
      }
    }
    const obj = { apiVersion: 'v1', kind: 'Endpoints', metadata: { generation: generation + 1 }, subsets: [{ addresses: [{ ip }] }] };
    // a lease of its own per renewal, as kube's lease manager attaches one of at least the
    // TTL at each write: the previous one expires unused
    const lease = await this.client.leaseGrant(ttlSeconds);
    await this.client.put(key, encodeForStorage(ENDPOINTS, obj, this.mediaType), { lease: lease.id });
  }

  /** kube's ListLeases: the first address of every lease alive. */
  async list(): Promise<string[]> {
    const r = await this.client.range(this.base, { rangeEnd: prefixEnd(this.base) });
    const out: string[] = [];
    for (const kv of r.kvs) {
      try {
        const ip = decodeFromStorage(ENDPOINTS, kv.value, kv.modRevision).obj.subsets?.[0]?.addresses?.[0]?.ip;
        if (typeof ip === 'string' && ip) out.push(ip);
      } catch {
        // a value neither kube nor kubeshard wrote: not a replica
      }
    }
    return out;
  }

  /** kube's RemoveLease, at a clean shutdown. */
  async remove(ip: string): Promise<void> {
    await this.client.deleteRange(this.keyOf(ip));
  }
}
