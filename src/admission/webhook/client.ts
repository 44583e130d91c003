// The HTTPS client of one webhook's clientConfig (kube's util/webhook ClientManager.HookClient
// and the REST client under it): a POST of the AdmissionReview over HTTP/1.1 with keep-alive,
// the server verified against the hook's caBundle (the system roots without one), to
// clientConfig.url or to `https://<service>.<namespace>.svc:<port><path>` dialled at an
// endpoint of the Service (service-resolver.ts), with TLS server name `<service>.<namespace>.svc`.
// Errors read as Go's net/http and client-go's phrase them, since kube puts them in the Status
// a client sees: `Post "https://...?timeout=10s": dial tcp 127.0.0.1:1: connect: connection refused`.
//
// Thread ownership: the front thread; each client owns its pool of kept-alive sockets.
import { StatusError, StatusReason, goQuote, type StatusDetails } from '../../errors.js';
import type { ObjectSource } from '../plugin.js';
import { resolveServiceEndpoint } from './service-resolver.js';
import { DeadlineExceeded, HttpsPool } from './https-pool.js';

/** The bytes kube's REST client keeps of an unstructured error body (maxUnstructuredResponseTextBytes). */
const MAX_UNSTRUCTURED_TEXT = 2048;
/** A response larger than this is refused (an object is at most ~1.5 MiB; a patch or review a few times that). */
const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

/** The call itself failed: `reason` is Go's text of the error (without the "failed to call webhook: " kube adds). */
export class TransportError extends Error {}

/** No client can be made of the hook's clientConfig (kube's GetRESTClient error): `message` is Go's text. */
export class ClientConfigError extends Error {}

/** The webhook answered outside 2xx: the Status client-go makes of the answer. */
export class ResponseStatusError extends Error {
  constructor(readonly status: StatusError) {
    super(status.message);
  }
}

export interface ClientConfig {
  url?: string;
  service?: { namespace: string; name: string; path?: string; port?: number };
  caBundle?: string;
}

interface Target {
  /** the URL as Go prints it, before the timeout parameter */
  base: string;
  /** the request path (with the URL's query, if any) */
  path: string;
  /** where to dial (a URL's host), or the Service to resolve */
  host?: string;
  port: number;
  service?: { namespace: string; name: string; port: number };
  /** TLS server name and Host header */
  servername: string;
  hostHeader: string;
}

/** A URL hostname without IPv6 brackets. */
const bare = (h: string) => (h.startsWith('[') && h.endsWith(']') ? h.slice(1, -1) : h);
const isIp = (h: string) => /^[0-9.]+$/.test(h) || h.includes(':');

export class WebhookClient {
  private readonly pool?: HttpsPool;
  private readonly target: Target | { error: string };

  constructor(
    cc: ClientConfig,
    private readonly objects: ObjectSource,
  ) {
    let ca: string | undefined;
    if (typeof cc.caBundle === 'string' && cc.caBundle) ca = Buffer.from(cc.caBundle, 'base64').toString('utf8');
    this.target = targetOf(cc);
    // One pool per client config: its sockets stay open between calls (kube caches a client
    // per config, its transport keeps connections alive). HTTP/1.1 only, as kube asks.
    // A caBundle that is not PEM fails each call, as kube's client does (not the configuration's admission).
    try {
      if (ca !== undefined && !/-----BEGIN CERTIFICATE-----/.test(ca)) throw new Error('no PEM certificate');
      this.pool = new HttpsPool(ca);
    } catch {
      this.target = { error: 'unable to load root certificates: unable to parse bytes as PEM block' };
    }
  }

  close(): void {
    this.pool?.close();
  }

  /** The URL kube would print for a call with this timeout. */
  urlFor(timeoutSeconds: number): string {
    return 'error' in this.target ? '' : `${this.target.base}${this.target.path.includes('?') ? '&' : '?'}timeout=${timeoutSeconds}s`;
  }

  /**
   * POSTs the body; resolves with the parsed JSON of a 2xx answer. Rejects with a
   * TransportError (Go's text of what failed) or a ResponseStatusError (a non-2xx answer).
   */
  async post(body: string, timeoutSeconds: number): Promise<any> {
    const t = this.target;
    if ('error' in t || !this.pool) throw new ClientConfigError('error' in t ? t.error : 'no client');
    const url = this.urlFor(timeoutSeconds);
    let host: string;
    let port: number;
    if (t.service) {
      try {
        ({ host, port } = resolveServiceEndpoint(this.objects, t.service.namespace, t.service.name, t.service.port));
      } catch (e) {
        throw new TransportError(`Post ${goQuote(url)}: ${(e as Error).message}`);
      }
    } else {
      host = t.host!;
      port = t.port;
    }
    const path = `${t.path}${t.path.includes('?') ? '&' : '?'}timeout=${timeoutSeconds}s`;
    let res;
    try {
      res = await this.pool.request({
        host,
        port,
        servername: isIp(t.servername) ? undefined : t.servername,
        head: `POST ${path} HTTP/1.1\r\nHost: ${t.hostHeader}\r\nUser-Agent: kube-apiserver-admission\r\nContent-Type: application/json\r\nAccept: application/json, */*\r\n`,
        body,
        maxBytes: MAX_RESPONSE_BYTES,
        timeoutMs: timeoutSeconds * 1000,
      });
    } catch (e) {
      throw new TransportError(`Post ${goQuote(url)}: ${e instanceof DeadlineExceeded ? e.message : goNetError(e, host, port, t.servername)}`);
    }
    const contentType = res.headers.get('content-type') ?? '';
    if (res.status < 200 || res.status > 206) throw new ResponseStatusError(responseError(res.status, contentType, res.body, Number(res.headers.get('retry-after')) || 0));
    try {
      return JSON.parse(res.body.toString('utf8'));
    } catch (e) {
      throw new TransportError(`couldn't get version/kind; json parse error: ${(e as Error).message}`);
    }
  }
}

function targetOf(cc: ClientConfig): Target | { error: string } {
  if (cc.service && typeof cc.service.name === 'string') {
    const port = typeof cc.service.port === 'number' && cc.service.port > 0 ? cc.service.port : 443;
    const servername = `${cc.service.name}.${cc.service.namespace}.svc`;
    const hostHeader = `${servername}:${port}`;
    const p = typeof cc.service.path === 'string' && cc.service.path ? cc.service.path : '/';
    return { base: `https://${hostHeader}${p}`, path: p, port, service: { namespace: cc.service.namespace, name: cc.service.name, port }, servername, hostHeader };
  }
  if (typeof cc.url !== 'string' || !cc.url) return { error: 'webhook configuration must have either service or URL' };
  let u: URL;
  try {
    u = new URL(cc.url);
  } catch (e) {
    return { error: `Unparsable URL: parse ${goQuote(cc.url)}: invalid URL` };
  }
  const host = bare(u.hostname);
  const port = u.port ? Number(u.port) : 443;
  const p = (u.pathname || '/') + u.search;
  return { base: `${u.protocol}//${u.host}${u.pathname || '/'}${u.search}`, path: p, host, port, servername: host, hostHeader: u.host };
}

/** Node's error of a request, as Go's net/http and crypto/tls would word it. */
export function goNetError(e: any, host: string, port: number, servername: string): string {
  const addr = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  switch (e?.code) {
    case 'ECONNREFUSED':
      return `dial tcp ${addr}: connect: connection refused`;
    case 'EHOSTUNREACH':
      return `dial tcp ${addr}: connect: no route to host`;
    case 'ENETUNREACH':
      return `dial tcp ${addr}: connect: network is unreachable`;
    case 'ETIMEDOUT':
      return `dial tcp ${addr}: i/o timeout`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `dial tcp: lookup ${host}: no such host`;
    case 'ECONNRESET':
      return e.message === 'socket hang up' ? 'EOF' : `read tcp ${addr}: read: connection reset by peer`;
    case 'EPIPE':
      return `write tcp ${addr}: write: broken pipe`;
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
    case 'UNABLE_TO_GET_ISSUER_CERT':
    case 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY':
      return 'tls: failed to verify certificate: x509: certificate signed by unknown authority';
    case 'CERT_HAS_EXPIRED':
    case 'CERT_NOT_YET_VALID':
      return 'tls: failed to verify certificate: x509: certificate has expired or is not yet valid';
    case 'ERR_TLS_CERT_ALTNAME_INVALID': {
      const names = String(e.cert?.subjectaltname ?? '')
        .split(/,\s*/)
        .map((s) => s.replace(/^(DNS|IP Address):/, ''))
        .filter(Boolean);
      return names.length
        ? `tls: failed to verify certificate: x509: certificate is valid for ${names.join(', ')}, not ${servername}`
        : 'tls: failed to verify certificate: x509: certificate relies on legacy Common Name field, use SANs instead';
    }
    default:
      return String(e?.message ?? e);
  }
}

/**
 * client-go's error for a non-2xx answer: the Status the body holds, else
 * NewGenericServerResponse with the text of a text/* body ("unknown" otherwise).
 */
export function responseError(code: number, contentType: string, body: Buffer, retryAfter: number): StatusError {
  if (contentType.includes('json')) {
    try {
      const s = JSON.parse(body.toString('utf8'));
      if (s && s.kind === 'Status' && typeof s.message === 'string') {
        return new StatusError(typeof s.code === 'number' && s.code ? s.code : code, typeof s.reason === 'string' ? (s.reason as StatusReason) : '', s.message, s.details ?? undefined);
      }
    } catch {
      // not a Status: the generic answer below
    }
  }
  const serverMessage = contentType.startsWith('text/') ? body.subarray(0, MAX_UNSTRUCTURED_TEXT).toString('utf8').trim() : 'unknown';
  let reason: StatusReason | '' = 'Unknown' as StatusReason;
  let message = `the server responded with the status code ${code} but did not return more information`;
  switch (code) {
    case 409:
      reason = StatusReason.AlreadyExists;
      message = 'the server reported a conflict';
      break;
    case 404:
      reason = StatusReason.NotFound;
      message = 'the server could not find the requested resource';
      break;
    case 400:
      reason = StatusReason.BadRequest;
      message = 'the server rejected our request for an unknown reason';
      break;
    case 401:
      reason = StatusReason.Unauthorized;
      message = 'the server has asked for the client to provide credentials';
      break;
    case 403:
      reason = StatusReason.Forbidden;
      message = serverMessage;
      break;
    case 405:
      reason = StatusReason.MethodNotAllowed;
      message = 'the server does not allow this method on the requested resource';
      break;
    case 422:
      reason = StatusReason.Invalid;
      message = 'the server rejected our request due to an error in our request';
      break;
    case 504:
      reason = StatusReason.Timeout;
      message = 'the server was unable to return a response in the time allotted, but may still be processing the request';
      break;
    case 429:
      reason = StatusReason.TooManyRequests;
      message = 'the server has received too many requests and has asked us to try again later';
      break;
    default:
      if (code >= 500) {
        reason = StatusReason.InternalError;
        message = `an error on the server (${goQuote(serverMessage)}) has prevented the request from succeeding`;
      }
  }
  const details: StatusDetails = { causes: [{ reason: 'UnexpectedServerResponse', message: serverMessage }] };
  if (retryAfter > 0) details.retryAfterSeconds = retryAfter;
  return new StatusError(code, reason, message, details);
}
