// The HTTPS client of the aggregated servers: one connection pool per APIService, verifying
// the backend with the APIService's caBundle under the name <service>.<namespace>.svc (or
// not at all with insecureSkipTLSVerify), and presenting the proxy client certificate
// (--proxy-client-cert-file / --proxy-client-key-file) that the backend trusts to vouch for
// the identity headers (kube-aggregator's BuildTransportConfig and client-go's
// NewAuthProxyRoundTripper).
//
// Thread ownership: one per front thread; its pools are that thread's.
import https from 'node:https';
import { readFileSync, statSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { IncomingMessage, ClientRequest, OutgoingHttpHeaders } from 'node:http';
import type { UserInfo } from '../auth/user.js';
import type { APIServiceView } from './apiservice.js';
import type { Endpoint } from './service-resolver.js';

export interface ProxyClientCert {
  cert: Buffer;
  key: Buffer;
  /** moves when the files are read again */
  generation: number;
}

/** The proxy client certificate as it is now: a fixed pair, or files read again when they change. */
export interface ProxyClientCertSource {
  current(): ProxyClientCert | undefined;
}

const RELOAD_CHECK_MS = 60_000;

/**
 * The proxy client certificate and key files, read at start (a bad pair stops start-up) and
 * again when they change, checked at most each minute (kube's dynamic certificate content
 * reloads them so): a rotated certificate is used from then on, connections included.
 * None when the flags are not given.
 */
export function loadProxyClientCert(certFile: string, keyFile: string, checkMs = RELOAD_CHECK_MS): ProxyClientCertSource | undefined {
  if (!certFile || !keyFile) return undefined;
  const stamp = () => `${statSync(certFile).mtimeMs}:${statSync(keyFile).mtimeMs}`;
  let generation = 0;
  const read = (): ProxyClientCert => {
    const pair = { cert: readFileSync(certFile), key: readFileSync(keyFile), generation: ++generation };
    createSecureContext({ cert: pair.cert, key: pair.key }); // (throws on a pair that does not load)
    return pair;
  };
  let pair: ProxyClientCert;
  try {
    pair = read();
  } catch (e) {
    throw new Error(`--proxy-client-cert-file, --proxy-client-key-file: unable to load the certificate and key: ${(e as Error).message}`);
  }
  let seen = stamp();
  let checked = Date.now();
  return {
    current() {
      if (Date.now() - checked < checkMs) return pair;
      checked = Date.now();
      try {
        const now = stamp();
        if (now !== seen) {
          pair = read();
          seen = now;
        }
      } catch (e) {
        console.warn(`W proxy client certificate: ${(e as Error).message} (the previous one stays in use)`);
      }
      return pair;
    },
  };
}

/**
 * Sets the identity headers on a request's headers (client-go SetAuthProxyHeaders): whatever
 * the client sent under these names is dropped first, so a caller cannot claim another
 * identity. The uid only when given (kube sends it behind the RemoteRequestHeaderUID gate,
 * beta and on by default in 1.33).
 */
export function setAuthProxyHeaders(h: OutgoingHttpHeaders, user: Pick<UserInfo, 'name' | 'groups' | 'extra'>, uid = ''): void {
  for (const k of Object.keys(h)) {
    const l = k.toLowerCase();
    if (l === 'x-remote-user' || l === 'x-remote-uid' || l === 'x-remote-group' || l.startsWith('x-remote-extra-')) delete h[k];
  }
  h['X-Remote-User'] = user.name;
  if (uid) h['X-Remote-Uid'] = uid;
  if (user.groups.length) h['X-Remote-Group'] = [...user.groups];
  for (const [key, values] of Object.entries(user.extra ?? {})) {
    // (the key is escaped as a URL path segment: keys may hold '/' and other characters headers cannot)
    if (values.length) h[`X-Remote-Extra-${encodeURIComponent(key)}`] = [...values];
  }
}

interface Pool {
  key: string;
  /** the APIService view and certificate generation the key was last checked for */
  view: APIServiceView;
  gen: number;
  agent: https.Agent;
  servername: string;
}

export class BackendClient {
  private pools = new Map<string, Pool>();

  constructor(private certs: ProxyClientCertSource | undefined) {}

  /** The pool of an APIService, rebuilt when its TLS settings change. */
  private pool(s: APIServiceView): Pool {
    const cert = this.certs?.current();
    const gen = cert?.generation ?? 0;
    let p = this.pools.get(s.name);
    // (the same APIService object and certificate: the pool as it is, without building its key)
    if (p && p.view === s && p.gen === gen) return p;
    const servername = `${s.service!.name}.${s.service!.namespace}.svc`;
    const key = `${servername}|${s.insecureSkipTLSVerify}|${s.caBundle?.toString('base64') ?? ''}|${gen}`;
    if (p && p.key === key) {
      p.view = s;
      p.gen = gen;
      return p;
    }
    p?.agent.destroy();
    const agent = new https.Agent({
      keepAlive: true,
      ca: s.caBundle && s.caBundle.length ? s.caBundle : undefined,
      rejectUnauthorized: !s.insecureSkipTLSVerify,
      cert: cert?.cert,
      key: cert?.key,
    });
    p = { key, view: s, gen, agent, servername };
    this.pools.set(s.name, p);
    return p;
  }

  /** Drops the pools of APIServices no longer present. */
  retain(names: Set<string>): void {
    for (const [name, p] of this.pools) {
      if (names.has(name)) continue;
      p.agent.destroy();
      this.pools.delete(name);
    }
  }

  request(s: APIServiceView, at: Endpoint, method: string, path: string, headers: OutgoingHttpHeaders, opts: { insecure?: boolean; timeoutMs?: number } = {}): ClientRequest {
    const host = at.host.includes(':') ? `[${at.host}]` : at.host;
    if (opts.insecure) {
      const cert = this.certs?.current();
      // The availability check skips verification (kube: a best-effort GET), still with the client certificate.
      return https.request({ host: at.host, port: at.port, method, path, headers: { host: `${host}:${at.port}`, ...headers }, rejectUnauthorized: false, cert: cert?.cert, key: cert?.key, agent: false, timeout: opts.timeoutMs });
    }
    const p = this.pool(s);
    return https.request({ host: at.host, port: at.port, method, path, headers: { host: `${host}:${at.port}`, ...headers }, agent: p.agent, servername: p.servername, timeout: opts.timeoutMs });
  }

  /** A whole GET, for discovery, OpenAPI and the availability check: status, headers and body. */
  get(s: APIServiceView, at: Endpoint, path: string, headers: OutgoingHttpHeaders, opts: { insecure?: boolean; timeoutMs: number; maxBytes?: number }): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const req = this.request(s, at, 'GET', path, headers, opts);
      const timer = setTimeout(() => req.destroy(Object.assign(new Error('Client.Timeout exceeded while awaiting headers'), { code: 'AGGREGATOR_TIMEOUT' })), opts.timeoutMs);
      req.on('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      req.on('response', (r) => {
        const parts: Buffer[] = [];
        let n = 0;
        r.on('data', (c: Buffer) => {
          n += c.length;
          if (opts.maxBytes && n > opts.maxBytes) return req.destroy(new Error(`response larger than ${opts.maxBytes} bytes`));
          parts.push(c);
        });
        r.on('end', () => {
          clearTimeout(timer);
          resolve({ status: r.statusCode ?? 0, headers: r.headers, body: Buffer.concat(parts) });
        });
        r.on('error', (e) => {
          clearTimeout(timer);
          reject(e);
        });
      });
      req.end();
    });
  }

  close(): void {
    for (const p of this.pools.values()) p.agent.destroy();
    this.pools.clear();
  }
}

/** A dial or TLS failure in Go's words where we know them (what kube's 503 bodies and condition messages carry). */
export function dialErrorText(e: any, at: Endpoint): string {
  const addr = `${at.host.includes(':') ? `[${at.host}]` : at.host}:${at.port}`;
  switch (e?.code) {
    case 'ECONNREFUSED':
      return `dial tcp ${addr}: connect: connection refused`;
    case 'ECONNRESET':
      return `read tcp ${addr}: read: connection reset by peer`;
    case 'EHOSTUNREACH':
      return `dial tcp ${addr}: connect: no route to host`;
    case 'ETIMEDOUT':
      return `dial tcp ${addr}: i/o timeout`;
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
      return 'tls: failed to verify certificate: x509: certificate signed by unknown authority';
    case 'CERT_HAS_EXPIRED':
      return 'tls: failed to verify certificate: x509: certificate has expired or is not yet valid';
    case 'ERR_TLS_CERT_ALTNAME_INVALID':
      return `tls: failed to verify certificate: x509: certificate is not valid for ${e?.host ?? 'this name'}`;
    case 'AGGREGATOR_TIMEOUT':
      return 'context deadline exceeded (Client.Timeout exceeded while awaiting headers)';
    default:
      return String(e?.message ?? e);
  }
}
