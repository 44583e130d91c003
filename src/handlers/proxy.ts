// pods/proxy, nodes/proxy and services/proxy: kube's ProxyREST of each kind with its
// ResourceLocation (pkg/registry/core/{pod,node,service}/strategy.go and
// service/storage/rest.go): the name may carry a scheme and a port ("https:web:8443"); the
// rest of the path after /proxy goes on to the location found, through the HTTP proxy
// (src/http/http-proxy.ts), or, for an upgrade, through the front end's upgrade carrier.
//   pods: the pod's IP, the port given or its first container port (http unless named);
//   nodes: the node's agent with the kubelet client credentials, unless another port is named;
//   services: a ready endpoint address of the service port named (or the only one).
// As kube, an address that is not a global unicast one (loopback, link-local) is refused.
import { isIP } from 'node:net';
import type { ConnectionOptions } from 'node:tls';
import { errors } from '../errors.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import { nodeLocation } from '../kubelet/kubelet-client.js';
import { proxyHttp } from '../http/http-proxy.js';
import type { HandlerContext } from './context.js';

/** kube's SplitSchemeNamePort: "name", "name:port" or "scheme:name:port". */
export function splitSchemeNamePort(id: string): { scheme: string; name: string; port: string } | undefined {
  const parts = id.split(':');
  let scheme = '';
  let name = '';
  let port = '';
  if (parts.length === 1) name = parts[0];
  else if (parts.length === 2) [name, port] = parts;
  else if (parts.length === 3) [scheme, name, port] = parts;
  else return undefined;
  if (name === '' || (scheme !== '' && scheme !== 'http' && scheme !== 'https')) return undefined;
  return { scheme, name, port };
}

/** Go's IP.IsGlobalUnicast, which kube's IsProxyableIP asks of a pod's or an endpoint's address. */
export function isGlobalUnicast(ip: string): boolean {
  const v = isIP(ip);
  if (v === 4) {
    const [a, b] = ip.split('.').map(Number);
    if (a === 0 || a === 127 || (a === 169 && b === 254) || a >= 224) return false;
    return ip !== '255.255.255.255';
  }
  if (v === 6) {
    const l = ip.toLowerCase();
    return !(l === '::' || l === '::1' || l.startsWith('fe8') || l.startsWith('fe9') || l.startsWith('fea') || l.startsWith('feb') || l.startsWith('ff'));
  }
  return false;
}

const hostPort = (host: string, port: string | number) => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);

/** The path after /proxy, as the client sent it (its trailing slash kept: kube's JoinPreservingTrailingSlash). */
function restPath(c: HandlerContext): string {
  const parts = c.info.parts ?? [];
  const rest = parts.slice(3).map(encodeURIComponent).join('/');
  const trailing = c.req.path.endsWith('/') && rest !== '' ? '/' : '';
  return `/${rest}${trailing}`;
}

/** The request's path up to its /proxy segment (where a backend's own root lies for the client). */
function proxyPrefix(c: HandlerContext): string {
  const segs = c.req.path.split('/');
  for (let k = 2; k < segs.length; k++) {
    if (segs[k] === 'proxy' && segs[k - 2] === c.info.resource && decodeURIComponent(segs[k - 1]) === c.info.name) return segs.slice(0, k + 1).join('/');
  }
  return c.req.path;
}

export async function handleProxy(c: HandlerContext): Promise<void> {
  const id = c.info.name;
  const kind = c.target.info.resource;
  const split = splitSchemeNamePort(id);
  const singular = kind === 'pods' ? 'pod' : kind === 'nodes' ? 'node' : 'service';
  if (!split) throw errors.badRequest(`invalid ${singular} request ${JSON.stringify(id)}`);
  let base: URL;
  let tls: ConnectionOptions = { rejectUnauthorized: false };
  if (kind === 'pods') {
    const pod = entryObject(await c.store.get(c.target, c.info.namespace, split.name, ''));
    let port = split.port;
    if (!port) {
      for (const ctr of Array.isArray(pod.spec?.containers) ? pod.spec.containers : []) {
        const p = ctr?.ports?.[0]?.containerPort;
        if (p) {
          port = String(p);
          break;
        }
      }
    }
    const ip: string = pod.status?.podIP ?? '';
    if (!isGlobalUnicast(ip)) throw errors.badRequest('address not allowed');
    base = new URL(`${split.scheme || 'http'}://${port ? hostPort(ip, port) : ip.includes(':') ? `[${ip}]` : ip}`);
  } else if (kind === 'nodes') {
    const loc = await nodeLocation(c, split.name);
    if (!split.port || split.port === String(loc.port)) {
      base = new URL(`https://${loc.hostPort}`);
      tls = loc.tls;
    } else {
      base = new URL(`${split.scheme || 'http'}://${hostPort(loc.host, split.port)}`);
    }
  } else {
    base = await serviceLocation(c, split);
  }
  const url = new URL(restPath(c) + (c.req.rawQuery ? `?${c.req.rawQuery}` : ''), base);
  if (c.req.upgrade) {
    await c.req.upgrade.proxy({ url, tls });
    return;
  }
  await proxyHttp(c.req, c.res, url, tls, proxyPrefix(c));
}

/** kube's service ResourceLocation: a ready address of the endpoints of the service port asked for. */
async function serviceLocation(c: HandlerContext, split: { scheme: string; name: string; port: string }): Promise<URL> {
  const svc = entryObject(await c.store.get(c.target, c.info.namespace, split.name, ''));
  const ports: any[] = Array.isArray(svc.spec?.ports) ? svc.spec.ports : [];
  const sp = ports.find((p) => (split.port === '' ? ports.length === 1 : p?.name === split.port || String(p?.port) === split.port));
  if (!sp) throw errors.serviceUnavailable(`no service port ${JSON.stringify(split.port)} found for service ${JSON.stringify(split.name)}`);
  const epTarget = c.targets.resolve('', 'v1', 'endpoints')!;
  let eps: any;
  try {
    eps = entryObject(await c.store.get(epTarget, c.info.namespace, split.name, ''));
  } catch {
    eps = undefined;
  }
  const candidates: string[] = [];
  for (const ss of Array.isArray(eps?.subsets) ? eps.subsets : []) {
    const port = (Array.isArray(ss?.ports) ? ss.ports : []).find((p: any) => (p?.name ?? '') === (sp.name ?? ''));
    if (!port) continue;
    for (const a of Array.isArray(ss.addresses) ? ss.addresses : []) if (a?.ip && isGlobalUnicast(a.ip)) candidates.push(hostPort(a.ip, port.port));
  }
  if (candidates.length === 0) throw errors.serviceUnavailable(`no endpoints available for service ${JSON.stringify(split.name)}`);
  return new URL(`${split.scheme || 'http'}://${candidates[Math.floor(Math.random() * candidates.length)]}`);
}
