// Defaults of the kinds that list network ports outside a Pod or Service, 1.33: core/v1
// Endpoints (SetDefaults_EndpointPort), discovery.k8s.io/v1 EndpointSlice
// (SetDefaults_EndpointPort) and networking.k8s.io/v1 NetworkPolicy (SetDefaults_NetworkPolicy
// and _NetworkPolicyPort).
import { arr, child, isObj } from './common.js';

function tcp(port: unknown): void {
  if (isObj(port) && (port.protocol === undefined || port.protocol === null || port.protocol === '')) port.protocol = 'TCP';
}

export function defaultEndpoints(obj: any): void {
  for (const subset of arr(obj?.subsets)) for (const p of arr(subset?.ports)) tcp(p);
}

export function defaultEndpointSlice(obj: any): void {
  for (const p of arr(obj?.ports)) {
    if (!isObj(p)) continue;
    if (p.name === undefined || p.name === null) p.name = '';
    tcp(p);
  }
}

/** Ports are TCP unless told; policyTypes say Ingress, plus Egress when egress rules are given. */
export function defaultNetworkPolicy(obj: any): void {
  const spec = child(obj, 'spec');
  if (!spec) return;
  for (const rule of [...arr(spec.ingress), ...arr(spec.egress)]) for (const p of arr(rule?.ports)) tcp(p);
  if (!Array.isArray(spec.policyTypes) || spec.policyTypes.length === 0) {
    spec.policyTypes = Array.isArray(spec.egress) && spec.egress.length > 0 ? ['Ingress', 'Egress'] : ['Ingress'];
  }
}
