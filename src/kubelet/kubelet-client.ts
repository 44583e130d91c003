// How the API server reaches a node's agent (kube's pkg/kubelet/client: KubeletClientConfig
// and NodeConnectionInfoGetter): the Node's address of the first preferred type that it has,
// the port from its status.daemonEndpoints (else --kubelet-port), HTTPS with the
// --kubelet-client-certificate, verified against --kubelet-certificate-authority when given.
// Used by pods/log, exec, attach, portforward and the proxy subresources.
//
// Thread ownership: stateless after start-up (the files are read once); any thread.
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { errors } from '../errors.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import type { HandlerContext } from '../handlers/context.js';

export interface KubeletClient {
  /** --kubelet-preferred-address-types */
  preferredAddressTypes: string[];
  /** --kubelet-port */
  port: number;
  /** TLS options of every connection to an agent */
  tls: ConnectionOptions;
}

export const DEFAULT_ADDRESS_TYPES = ['Hostname', 'InternalDNS', 'InternalIP', 'ExternalDNS', 'ExternalIP'];

export function kubeletClient(o: { kubeletClientCertificate: string; kubeletClientKey: string; kubeletCertificateAuthority: string; kubeletPreferredAddressTypes: string[]; kubeletPort: number }): KubeletClient {
  const tls: ConnectionOptions = { rejectUnauthorized: false };
  if (o.kubeletClientCertificate) {
    tls.cert = readFileSync(o.kubeletClientCertificate);
    tls.key = readFileSync(o.kubeletClientKey);
  }
  if (o.kubeletCertificateAuthority) {
    tls.ca = readFileSync(o.kubeletCertificateAuthority);
    tls.rejectUnauthorized = true;
  }
  return { preferredAddressTypes: o.kubeletPreferredAddressTypes, port: o.kubeletPort, tls };
}

export const DEFAULT_KUBELET_CLIENT: KubeletClient = { preferredAddressTypes: DEFAULT_ADDRESS_TYPES, port: 10250, tls: { rejectUnauthorized: false } };

export interface NodeLocation {
  host: string;
  port: number;
  /** host:port, the host in brackets when it is IPv6 */
  hostPort: string;
  tls: ConnectionOptions;
}

/** kube's GetPreferredNodeAddress and NodeConnectionInfoGetter.GetConnectionInfo. */
export async function nodeLocation(c: HandlerContext, nodeName: string): Promise<NodeLocation> {
  const client = c.kubelet ?? DEFAULT_KUBELET_CLIENT;
  const node = entryObject(await c.store.get(c.targets.resolve('', 'v1', 'nodes')!, '', nodeName, ''));
  const addrs: any[] = Array.isArray(node.status?.addresses) ? node.status.addresses : [];
  let host = '';
  for (const t of client.preferredAddressTypes) {
    const a = addrs.find((x) => x?.type === t && x.address);
    if (a) {
      host = a.address;
      break;
    }
  }
  if (!host) {
    const known = addrs.map((a) => `{${a?.type} ${a?.address}}`).join(' ');
    throw errors.noPreferredAddress(known);
  }
  const p = node.status?.daemonEndpoints?.kubeletEndpoint?.Port;
  const port = typeof p === 'number' && p > 0 ? p : client.port;
  const hostPort = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  const tls: ConnectionOptions = { ...client.tls };
  // SNI carries names only; an address is verified against the certificate's IP SANs
  if (!/^[\d.]+$/.test(host) && !host.includes(':')) tls.servername = host;
  return { host, port, hostPort, tls };
}

/** How a connection to host failed, in Go's words (net.Dial's errors). */
export function dialError(e: NodeJS.ErrnoException, host: string): string {
  switch (e.code) {
    case 'ECONNREFUSED':
      return 'connect: connection refused';
    case 'EHOSTUNREACH':
      return 'connect: no route to host';
    case 'ENOTFOUND':
      return `lookup ${host}: no such host`;
    case 'ETIMEDOUT':
      return 'i/o timeout';
    default:
      return e.message;
  }
}
