// clientConfig.service → an address to dial. There is no kube-proxy in front of kubeshard, so
// a Service is resolved as kube-aggregator's endpoint routing does it
// (apiserver/pkg/util/proxy ResolveEndpoint, over EndpointSlices as of 1.33): the Service from
// the cache, its port by number, then a ready endpoint of a slice labelled with the Service's
// name that serves that port's name, picked at random. Failures read as kube's.
//
// Thread ownership: none (reads the caller's ObjectSource).
import type { ObjectSource } from '../plugin.js';

export interface Resolved {
  host: string;
  port: number;
}

const SLICE_SERVICE_LABEL = 'kubernetes.io/service-name';

export function resolveServiceEndpoint(objects: ObjectSource, namespace: string, name: string, port: number): Resolved {
  const svc = objects.get('services', namespace, name);
  if (!svc) throw new Error(`service "${name}" not found`);
  const type = svc.spec?.type ?? 'ClusterIP';
  if (type !== 'ClusterIP' && type !== 'LoadBalancer' && type !== 'NodePort') throw new Error(`unsupported service type "${type}"`);
  const svcPort = (Array.isArray(svc.spec?.ports) ? svc.spec.ports : []).find((p: any) => p?.port === port);
  if (!svcPort) throw new Error(`no service port ${port} found for service "${name}"`);
  const portName = svcPort.name ?? '';
  const candidates: Resolved[] = [];
  for (const slice of objects.list('endpointslices.discovery.k8s.io', namespace)) {
    if (slice?.metadata?.labels?.[SLICE_SERVICE_LABEL] !== name) continue;
    const sp = (Array.isArray(slice.ports) ? slice.ports : []).find((p: any) => (p?.name ?? '') === portName && typeof p?.port === 'number');
    if (!sp) continue;
    for (const ep of Array.isArray(slice.endpoints) ? slice.endpoints : []) {
      // an endpoint is ready unless it says otherwise
      if (ep?.conditions?.ready === false) continue;
      const addr = Array.isArray(ep?.addresses) ? ep.addresses[0] : undefined;
      if (typeof addr === 'string' && addr) candidates.push({ host: addr, port: sp.port });
    }
  }
  if (candidates.length === 0) throw new Error(`no endpoints available for service "${name}"`);
  return candidates[Math.floor(Math.random() * candidates.length)];
}
