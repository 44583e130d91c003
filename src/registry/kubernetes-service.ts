// The `kubernetes` Service in `default`, which every cluster has: kube-apiserver's
// controlplane controller creates it at start-up with the first address of the service
// CIDR. Every replica does at its start; one that finds another replica's is done. Its
// endpoints are the lease endpoint reconciler's (controllers/endpoint-reconciler.ts).
import { StatusError } from '../errors.js';
import type { Targets } from '../api/targets.js';
import { objectKey, type Store } from './store.js';
import type { ServiceAllocator } from './allocators/service-allocator.js';

export async function ensureKubernetesService(store: Store, targets: Targets, alloc: ServiceAllocator, port: number): Promise<void> {
  const svcT = targets.resolve('', 'v1', 'services')!;
  if (store.cacheOf(svcT).items.has(objectKey('default', 'kubernetes'))) return;
  const ip = alloc.ips.firstUsable;
  try {
    await store.create(
      svcT,
      'default',
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'kubernetes', namespace: 'default', labels: { component: 'apiserver', provider: 'kubernetes' } },
        spec: {
          type: 'ClusterIP',
          clusterIP: ip,
          clusterIPs: [ip],
          ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: port }],
          sessionAffinity: 'None',
        },
      },
      { dryRun: false },
    );
  } catch (e) {
    // another replica made it first (AlreadyExists), or holds its address already (Invalid, 422)
    if (!(e instanceof StatusError && (e.code === 409 || e.code === 422))) throw e;
  }
}
