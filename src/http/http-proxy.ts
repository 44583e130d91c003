// A plain HTTP request carried on to a backend and its answer streamed back (kube's
// UpgradeAwareHandler for a request without an upgrade, as the proxy subresources use it):
// the client's method, headers (less its credentials, plus X-Forwarded-For) and body go to
// the backend; its status, headers and body come back as they arrive, the backend's
// connection paused while the client's side is backed up.
//
// Not done as kube does: the HTML links of a proxied page are not rewritten under the proxy
// path (kube's proxy.Transport); Location headers of redirects are.
//
// Thread ownership: the thread of the request's front end.
import http from 'node:http';
import https from 'node:https';
import type { ConnectionOptions } from 'node:tls';
import type { ApiRequest, HeaderList, ResponseSink } from './types.js';
import { dialFailure, forwardedHeaders } from './upgrade.js';

/** hop-by-hop headers of the backend's answer, never passed on (the transport frames the body itself) */
const HOP = /^(connection|keep-alive|proxy-connection|transfer-encoding|te|trailer|upgrade|content-length)$/i;

/**
 * Proxies the request to url; prefix is the proxy path of the resource (a Location the backend
 * gives under its own root is rewritten below it). Resolves once the answer is over.
 */
export async function proxyHttp(req: ApiRequest, res: ResponseSink, url: URL, tls: ConnectionOptions, prefix: string): Promise<void> {
  if (req.readBody) {
    const read = req.readBody();
    if (read !== undefined && (await read)) return;
  }
  const body = req.body;
  const headers: Record<string, string> = {};
  for (const [k, v] of forwardedHeaders(req, /^(connection|upgrade|keep-alive|te|trailer|proxy-connection)$/)) headers[k] = v;
  headers.host = url.host;
  if (body) headers['content-length'] = String(body.length);
  const mod = url.protocol === 'https:' ? https : http;
  const answer = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const r = mod.request(url, { ...(url.protocol === 'https:' ? tls : {}), method: req.method, headers, agent: false }, resolve);
    r.once('error', (e: NodeJS.ErrnoException) => reject(dialFailure(e, url)));
    res.onDone(() => r.destroy());
    r.end(body ?? undefined);
  });
  if (res.aborted) {
    answer.destroy();
    return;
  }
  const out: HeaderList = [];
  for (let i = 0; i < answer.rawHeaders.length; i += 2) {
    const k = answer.rawHeaders[i];
    let v = answer.rawHeaders[i + 1];
    if (HOP.test(k)) continue;
    if (/^location$/i.test(k) && v.startsWith('/')) v = prefix.replace(/\/$/, '') + v;
    out.push([k, v]);
  }
  const status = answer.statusCode ?? 502;
  if (req.method === 'HEAD' || status === 204 || status === 304) {
    answer.resume();
    res.send(status, out, '');
    return;
  }
  res.startStream(status, out);
  await new Promise<void>((done) => {
    answer.on('data', (chunk: Buffer) => {
      if (!res.write(chunk)) answer.pause();
    });
    res.onDrain(() => answer.resume());
    answer.on('end', () => {
      res.end();
      done();
    });
    answer.on('error', () => {
      res.close();
      done();
    });
    answer.on('aborted', () => {
      res.close();
      done();
    });
    res.onDone(() => {
      answer.destroy();
      done();
    });
  });
}
