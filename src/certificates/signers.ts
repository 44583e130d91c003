// The kubernetes.io signers' checks of a request (kube-controller-manager's csrsigning
// isRequestForSignerFn, and pkg/apis/certificates' kubelet client/serving validation):
// kube-apiserver-client takes any subject with client usages; kube-apiserver-client-kubelet
// wants O=system:nodes, CN=system:node:<name>, no SANs and exactly the kubelet client
// usages; kubelet-serving wants the node's subject, a DNS or IP SAN and the serving usages.
//
// Thread ownership: none (pure functions).
import type { ParsedCsr } from './x509.js';

export const KUBE_APISERVER_CLIENT = 'kubernetes.io/kube-apiserver-client';
export const KUBE_APISERVER_CLIENT_KUBELET = 'kubernetes.io/kube-apiserver-client-kubelet';
export const KUBELET_SERVING = 'kubernetes.io/kubelet-serving';
export const SIGNERS = [KUBE_APISERVER_CLIENT, KUBE_APISERVER_CLIENT_KUBELET, KUBELET_SERVING];

const sameSet = (a: string[], b: string[]) => new Set(a).size === b.length && b.every((x) => a.includes(x));
const NODE_PREFIX = 'system:node:';

function nodeSubject(csr: ParsedCsr): string | null {
  if (csr.organizations.length !== 1 || csr.organizations[0] !== 'system:nodes') return 'subject organization is not system:nodes';
  return null;
}

/** kube's ValidateKubeletClientCSR; null when the request is one. */
export function kubeletClientError(csr: ParsedCsr, usages: string[]): string | null {
  const e = nodeSubject(csr);
  if (e) return e;
  if (csr.dnsNames.length) return 'DNS subjectAltNames are not allowed';
  if (csr.emailAddresses.length) return 'Email subjectAltNames are not allowed';
  if (csr.ipAddresses.length) return 'IP subjectAltNames are not allowed';
  if (csr.uris.length) return 'URI subjectAltNames are not allowed';
  if (!csr.commonName.startsWith(NODE_PREFIX)) return 'subject common name does not begin with system:node:';
  if (!sameSet(usages, ['client auth', 'digital signature', 'key encipherment']) && !sameSet(usages, ['client auth', 'digital signature'])) {
    return 'usages did not match [client auth digital signature key encipherment]';
  }
  return null;
}

/** kube's ValidateKubeletServingCSR. */
export function kubeletServingError(csr: ParsedCsr, usages: string[]): string | null {
  if (!sameSet(usages, ['digital signature', 'key encipherment', 'server auth']) && !sameSet(usages, ['digital signature', 'server auth'])) {
    return 'usages did not match [digital signature key encipherment server auth]';
  }
  const e = nodeSubject(csr);
  if (e) return e;
  if (csr.dnsNames.length === 0 && csr.ipAddresses.length === 0) return 'DNS or IP subjectAltName is required';
  if (csr.emailAddresses.length) return 'Email subjectAltNames are not allowed';
  if (csr.uris.length) return 'URI subjectAltNames are not allowed';
  if (!csr.commonName.startsWith(NODE_PREFIX)) return 'subject common name does not begin with system:node:';
  return null;
}

/** kube's validAPIServerClientUsages. */
export function apiServerClientError(usages: string[]): string | null {
  let clientAuth = false;
  for (const u of usages) {
    if (u === 'client auth') clientAuth = true;
    else if (u !== 'digital signature' && u !== 'key encipherment') return `invalid usage for client certificate: ${u}`;
  }
  return clientAuth ? null : 'missing required usage for client certificate: client auth';
}

/** Why the signer refuses the request (null: it signs it); only for the three signers. */
export function signerError(signerName: string, csr: ParsedCsr, usages: string[]): string | null {
  switch (signerName) {
    case KUBE_APISERVER_CLIENT:
      return apiServerClientError(usages);
    case KUBE_APISERVER_CLIENT_KUBELET:
      return kubeletClientError(csr, usages);
    case KUBELET_SERVING:
      return kubeletServingError(csr, usages);
    default:
      return null;
  }
}
