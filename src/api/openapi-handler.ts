// Serves /openapi/v2 and /openapi/v3/... with kube-apiserver's negotiation and caching:
//  - v2: Accept is matched clause by clause against JSON and the proto-openapi media types
//    (kube-openapi's order); we serve JSON only, so a client that accepts nothing but the
//    protobuf form (client-go's OpenAPISchema) gets 406, which kubectl treats as "no v2
//    schema" and falls back to v3 or its built-in types. ETag + If-None-Match -> 304.
//  - v3: a request whose ?hash= matches the document gets `Cache-Control: public, immutable`
//    and a one-year Expires; a stale hash is redirected (301) to the current hash URL;
//    ETag / If-None-Match otherwise.
// Documents are built once at start-up (front thread) and sent as shared bytes.
import type { ApiRequest, HeaderList, ResponseSink } from '../http/types.js';
import type { Catalog } from './catalog.js';
import { buildOpenApiV2, buildOpenApiV3 } from './openapi.js';
import { errors } from '../errors.js';

interface Doc {
  body: Buffer;
  etag: string;
  hash: string;
}

function acceptsJson(accept: string | undefined): boolean {
  if (!accept) return true;
  for (const clause of accept.split(',')) {
    const mt = clause.split(';')[0].trim().toLowerCase();
    if (mt === '*/*' || mt === 'application/*' || mt === 'application/json') return true;
  }
  return false;
}

export class OpenApiHandler {
  private v2: Doc;
  private v3 = new Map<string, Doc>();
  private v3Root: Buffer;

  constructor(catalog: Catalog) {
    const v2 = buildOpenApiV2(catalog);
    this.v2 = { body: Buffer.from(v2.body), etag: `"${v2.hash}"`, hash: v2.hash };
    const v3 = buildOpenApiV3(catalog);
    this.v3Root = Buffer.from(v3.root);
    for (const [key, d] of v3.groupVersions) this.v3.set(`/openapi/v3/${key}`, { body: Buffer.from(d.body), etag: `"${d.hash}"`, hash: d.hash });
  }

  /** True when the path is an OpenAPI path and an answer was sent. */
  serve(req: ApiRequest, res: ResponseSink, path: string): boolean {
    if (path === '/openapi/v2') {
      if (!acceptsJson(req.headers['accept'])) throw errors.notAcceptable(['application/json']);
      this.send(req, res, this.v2, [['Cache-Control', 'no-cache, private'], ['Vary', 'Accept']]);
      return true;
    }
    if (path === '/openapi/v3') {
      res.send(200, [['Content-Type', 'application/json'], ['Cache-Control', 'no-cache, private']], this.v3Root);
      return true;
    }
    const doc = this.v3.get(path);
    if (!doc) return false;
    const hash = req.query.get('hash');
    const headers: HeaderList = [];
    if (hash) {
      if (hash !== doc.hash) {
        res.send(301, [['Location', `${path}?hash=${doc.hash}`], ['Content-Type', 'text/html; charset=utf-8']], '');
        return true;
      }
      const expires = new Date(Date.now() + 365 * 24 * 3600 * 1000).toUTCString();
      headers.push(['Vary', 'Accept'], ['Cache-Control', 'public, immutable'], ['Expires', expires]);
    }
    this.send(req, res, doc, headers);
    return true;
  }

  private send(req: ApiRequest, res: ResponseSink, doc: Doc, headers: HeaderList): void {
    headers.push(['Etag', doc.etag]);
    const inm = req.headers['if-none-match'];
    if (inm && inm.split(',').some((t) => t.trim() === doc.etag || t.trim() === '*')) {
      res.send(304, headers, '');
      return;
    }
    res.send(200, [['Content-Type', 'application/json'], ...headers], doc.body);
  }
}
