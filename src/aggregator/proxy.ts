// Proxies a request for an aggregated group-version to its backend: kube-aggregator's
// proxyHandler.ServeHTTP. The request has been authenticated and authorized by this server
// first; the backend learns who is calling from the identity headers (X-Remote-User,
// X-Remote-Group, X-Remote-Extra-*), sent over the proxy client certificate it trusts, never
// from the client's own credentials (Authorization and Impersonate-* are not forwarded).
// The answer streams through as it comes (a watch stays open, chunk by chunk, with the
// client's backpressure pausing the backend); a small answer with a length is sent whole.
//
// Thread ownership: runs on the front thread that holds the request.
import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import type { ApiRequest, HeaderList, ResponseSink } from '../http/types.js';
import type { APIServiceView } from './apiservice.js';
import { dialErrorText, setAuthProxyHeaders, type BackendClient } from './backend-client.js';
import type { ServiceResolver } from './service-resolver.js';
import { features } from '../features.js';

/** Answers under this size with a Content-Length are sent in one piece; the rest stream. */
const WHOLE_BODY_BYTES = 1 << 20;

/** Headers that belong to one connection (RFC 9110 7.6.1), never forwarded either way. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'trailers', 'transfer-encoding', 'upgrade']);

/**
 * kube's proxyError: Go's http.Error, a plain-text body of the message and a newline
 * (clients read a 503 as ServiceUnavailable, "the server is currently unable to handle the request").
 */
export function proxyError(res: ResponseSink, message: string, code: number): void {
  if (res.aborted) return;
  res.send(code, [['Content-Type', 'text/plain; charset=utf-8'], ['X-Content-Type-Options', 'nosniff']], `${message}\n`);
}

/** The request's headers as the backend gets them. */
function forwardedHeaders(req: ApiRequest): OutgoingHttpHeaders {
  const h: OutgoingHttpHeaders = {};
  const connectionListed = new Set((req.headers['connection'] ?? '').split(',').map((t) => t.trim().toLowerCase()));
  for (const [k, v] of Object.entries(req.headers)) {
    if (k.startsWith(':') || k === 'host' || k === 'content-length' || HOP_BY_HOP.has(k) || connectionListed.has(k)) continue;
    // the client's credentials stay here (kube's authentication filter removes Authorization;
    // the impersonation filter its headers)
    if (k === 'authorization' || k.startsWith('impersonate-')) continue;
    h[k] = v;
  }
  const xff = req.headers['x-forwarded-for'];
  h['x-forwarded-for'] = xff ? `${xff}, ${req.remoteAddress}` : req.remoteAddress;
  if (req.body && req.body.length) h['content-length'] = String(req.body.length);
  return h;
}

/** The backend's response headers as the client gets them. */
function returnedHeaders(r: IncomingMessage): HeaderList {
  const out: HeaderList = [];
  const connectionListed = new Set(String(r.headers['connection'] ?? '').split(',').map((t) => t.trim().toLowerCase()));
  const raw = r.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const l = raw[i].toLowerCase();
    // (the transport sets the length and date of what it sends)
    if (HOP_BY_HOP.has(l) || connectionListed.has(l) || l === 'content-length' || l === 'date') continue;
    out.push([raw[i], raw[i + 1]]);
  }
  return out;
}

/** The query as kube re-encodes it (url.Values.Encode: sorted by key). */
function encodedQuery(req: ApiRequest): string {
  if (!req.rawQuery) return '';
  const q = new URLSearchParams(req.query);
  q.sort();
  const s = q.toString();
  return s ? `?${s}` : '';
}

export function proxyToService(req: ApiRequest, res: ResponseSink, s: APIServiceView, resolver: ServiceResolver, client: BackendClient): void | Promise<void> {
  // The Available condition gates the proxy, as kube's handlingInfo.serviceAvailable does.
  if (!s.available) return proxyError(res, 'service unavailable', 503);
  const user = req.user;
  if (!user) return proxyError(res, 'missing user', 500);
  let at;
  try {
    at = resolver.resolve(s.service!.namespace, s.service!.name, s.service!.port);
  } catch (e) {
    console.warn(`W error resolving ${s.service!.namespace}/${s.service!.name}: ${(e as Error).message}`);
    return proxyError(res, 'service unavailable', 503);
  }
  const headers = forwardedHeaders(req);
  setAuthProxyHeaders(headers, user, features.enabled('RemoteRequestHeaderUID') ? user.uid : '');
  const target = at;
  // The backend limits the request itself: its seat here is given back (kube's RequestDelegated).
  req.delegated?.();
  return new Promise<void>((done) => {
    const out = client.request(s, target, req.method, req.path + encodedQuery(req), headers);
    let answered = false;
    res.onAborted(() => out.destroy());
    out.on('error', (e) => {
      if (!answered) {
        answered = true;
        // kube's responder.Error: the transport's error as a 503
        proxyError(res, dialErrorText(e, target), 503);
      } else if (!res.aborted) res.close();
      done();
    });
    out.on('response', (r) => {
      answered = true;
      r.on('error', () => {
        if (!res.aborted) res.close();
        done();
      });
      const status = r.statusCode ?? 502;
      const h = returnedHeaders(r);
      const length = Number(r.headers['content-length']);
      if (Number.isFinite(length) && length <= WHOLE_BODY_BYTES) {
        const parts: Buffer[] = [];
        r.on('data', (c: Buffer) => parts.push(c));
        r.on('end', () => {
          if (!res.aborted) res.send(status, h, Buffer.concat(parts));
          done();
        });
        return;
      }
      // A stream (a watch, a large list): each chunk goes on as it arrives.
      res.startStream(status, h);
      res.onDrain(() => r.resume());
      r.on('data', (c: Buffer) => {
        if (res.aborted) return;
        if (!res.write(c)) r.pause();
      });
      r.on('end', () => {
        if (!res.aborted) res.end();
        done();
      });
    });
    out.end(req.body && req.body.length ? req.body : undefined);
  });
}
