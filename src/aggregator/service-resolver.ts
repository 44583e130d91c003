// Where an APIService's Service is reached: kube-aggregator's ServiceResolver. With
// --enable-aggregator-routing (apiserver/pkg/util/proxy ResolveEndpoint) a ready endpoint
// of the Service's EndpointSlices, on the port of the slice named as the Service's port;
// without it kube dials the Service's clusterIP (ResolveCluster), which nothing routes here
// (there is no kube-proxy), so a ClusterIP Service is still reached through its endpoints
// and only an ExternalName Service is dialled by name, as kube does.
//
// Thread ownership: stateless; reads the calling thread's caches.
import { ENDPOINTSLICES_GR, SERVICES_GR } from './apiservice.js';

/** Reads current objects from the thread's caches (server.ts cachedObjects). */
export interface ObjectReader {
  get(gr: string, ns: string, name: string): any | undefined;
  list(gr: string, ns: string): any[];
}

export interface Endpoint {
  host: string;
  port: number;
}

export class ResolveError extends Error {}

const ROUTABLE_TYPES = new Set(['ClusterIP', 'LoadBalancer', 'NodePort']);

export class ServiceResolver {
  constructor(
    private objects: ObjectReader,
    /** --enable-aggregator-routing */
    private endpointRouting: boolean,
  ) {}

  resolve(namespace: string, name: string, port: number): Endpoint {
    const svc = this.objects.get(SERVICES_GR, namespace, name);
    if (!svc) throw new ResolveError(`service "${name}" not found`);
    const type = svc.spec?.type ?? 'ClusterIP';
    if (!this.endpointRouting && type === 'ExternalName') return { host: String(svc.spec?.externalName ?? ''), port };
    if (!ROUTABLE_TYPES.has(type)) throw new ResolveError(`unsupported service type "${type}"`);
    const svcPort = (svc.spec?.ports ?? []).find((p: any) => p?.port === port);
    if (!svcPort) throw new ResolveError(`no service port ${port} found for service "${name}"`);
    const candidates = readyEndpoints(this.objects.list(ENDPOINTSLICES_GR, namespace), name, svcPort.name ?? '');
    if (candidates.length === 0) throw new ResolveError(`no endpoints available for service "${name}"`);
    // (kube picks one at random, spreading requests over the backends)
    return candidates[Math.floor(Math.random() * candidates.length)];
  }
}

/** The Service's EndpointSlices (kubernetes.io/service-name label). */
export function slicesOf(slices: any[], service: string): any[] {
  return slices.filter((s) => s?.metadata?.labels?.['kubernetes.io/service-name'] === service);
}

/** Ready endpoints (ready unset counts as ready) on the slice port named portName. */
export function readyEndpoints(slices: any[], service: string, portName: string): Endpoint[] {
  const out: Endpoint[] = [];
  for (const s of slicesOf(slices, service)) {
    const p = (s.ports ?? []).find((x: any) => (x?.name ?? '') === portName && typeof x?.port === 'number');
    if (!p) continue;
    for (const e of s.endpoints ?? []) {
      if (e?.conditions?.ready === false) continue;
      const addr = e?.addresses?.[0];
      if (typeof addr === 'string') out.push({ host: addr, port: p.port });
    }
  }
  return out;
}

/** kube's hasAvailableEndpoint: a slice with a ready endpoint and a port of that name. */
export function hasAvailableEndpoint(slices: any[], service: string, portName: string): boolean {
  return slicesOf(slices, service).some(
    (s) => (s.endpoints ?? []).some((e: any) => e?.conditions?.ready !== false) && (s.ports ?? []).some((p: any) => (p?.name ?? '') === portName && p?.port != null),
  );
}
