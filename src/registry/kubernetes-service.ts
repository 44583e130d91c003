// The `kubernetes` Service in `default`, which every cluster has: kube-apiserver's
// controlplane controller creates it at start-up with the first address of the service
// CIDR, and an Endpoints object pointing at the server itself.
import type { Targets } from '../api/targets.js';
import { objectKey, type Store } from './store.js';
import type { ServiceAllocator } from './allocators/service-allocator.js';

export async function ensureKubernetesService(store: Store, targets: Targets, alloc: ServiceAllocator, address: string, port: number): Promise<void> {
  const svcT = targets.resolve('', 'v1', 'services')!;
  if (!store.cacheOf(svcT).items.has(objectKey('default', 'kubernetes'))) {
    const ip = alloc.ips.firstUsable;
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
  }
  const epT = targets.resolve('', 'v1', 'endpoints');
  if (epT && !store.cacheOf(epT).items.has(objectKey('default', 'kubernetes')) && /^\d+\.\d+\.\d+\.\d+$/.test(address)) {
    await store.create(
      epT,
      'default',
      {
        apiVersion: 'v1',
        kind: 'Endpoints',
        metadata: { name: 'kubernetes', namespace: 'default', labels: { 'endpointslice.kubernetes.io/skip-mirror': 'true' } },
        subsets: [{ addresses: [{ ip: address }], ports: [{ name: 'https', port, protocol: 'TCP' }] }],
      },
      { dryRun: false },
    );
  }
}
