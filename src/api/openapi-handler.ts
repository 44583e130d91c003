// Serves /openapi/v2 and /openapi/v3/... with kube-apiserver's negotiation and caching:
//  - v2: Accept is matched clause by clause (highest q first) against JSON and the two
//    spellings of the proto-openapi media type, in kube-openapi's order; the protobuf form
//    (openapi-v2-proto.ts) is what client-go's OpenAPISchema() asks for, alone. Nothing
//    matching is 406. Each form has its own ETag; If-None-Match -> 304.
//  - v3: a request whose ?hash= matches the document gets `Cache-Control: public, immutable`
//    and a one-year Expires; a stale hash is redirected (301) to the current hash URL;
//    ETag / If-None-Match otherwise (and `no-cache, private` without a hash). JSON only.
// Documents are built once, on first use (front thread), and sent as shared bytes.
import type { ApiRequest, HeaderList, ResponseSink } from '../http/types.js';
import type { Catalog } from './catalog.js';
import { buildOpenApiV2, buildOpenApiV3 } from './openapi.js';
import { encodeOpenApiV2Proto } from './openapi-v2-proto.js';
import { createHash } from 'node:crypto';
import { errors } from '../errors.js';
import { mergeOpenApiV2, type AggregatedOpenApi } from '../aggregator/openapi-downloader.js';

interface Doc {
  body: Buffer;
  etag: string;
  hash: string;
}

const V2_PROTO = 'com.github.proto-openapi.spec.v2@v1.0+protobuf';
const V2_PROTO_ALT = 'com.github.proto-openapi.spec.v2.v1.0+protobuf';
const V2_PROTO_RETURNED = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';

/** 'json' | 'proto' for the first Accept clause (by q, then order) we can serve; undefined for none. */
function negotiate(accept: string | undefined, offers: Array<[string, 'json' | 'proto']>): 'json' | 'proto' | undefined {
  const clauses = (accept && accept.trim() ? accept : '*/*')
    .split(',')
    .map((c, i) => {
      const [mt, ...params] = c.split(';').map((x) => x.trim());
      const qp = params.find((p) => p.startsWith('q='));
      const [type, sub = ''] = mt.toLowerCase().split('/');
      return { type, sub, q: qp ? Number(qp.slice(2)) : 1, i };
    })
    .filter((c) => c.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i);
  for (const c of clauses) {
    if (c.type !== 'application' && c.type !== '*') continue;
    for (const [sub, form] of offers) if (c.sub === sub || c.sub === '*') return form;
  }
  return undefined;
}

export class OpenApiHandler {
  // Built on first use, not at start-up: the documents take a few hundred milliseconds and
  // most servers are asked for them rarely (kubectl explain / apply, once per cache).
  private v2Docs?: { json: Doc; proto: Doc };
  private v3Docs?: { root: Buffer; byPath: Map<string, Doc> };

  /** aggregated: the OpenAPI of the group-versions other servers serve (API aggregation), merged in */
  constructor(
    private catalog: Catalog,
    private aggregated?: AggregatedOpenApi,
  ) {}

  private get v2(): Doc {
    return (this.v2Docs ??= this.buildV2()).json;
  }

  private get v2Proto(): Doc {
    return (this.v2Docs ??= this.buildV2()).proto;
  }

  private buildV2(): { json: Doc; proto: Doc } {
    let v2 = buildOpenApiV2(this.catalog);
    const specs = this.aggregated?.v2Specs() ?? [];
    if (specs.length) {
      const body = JSON.stringify(mergeOpenApiV2(JSON.parse(v2.body), specs));
      v2 = { body, hash: createHash('sha512').update(body).digest('hex').toUpperCase() };
    }
    const pb = encodeOpenApiV2Proto(JSON.parse(v2.body));
    const pbHash = createHash('sha512').update(pb).digest('hex').toUpperCase();
    return { json: { body: Buffer.from(v2.body), etag: `"${v2.hash}"`, hash: v2.hash }, proto: { body: pb, etag: `"${pbHash}"`, hash: pbHash } };
  }

  private get v3(): { root: Buffer; byPath: Map<string, Doc> } {
    if (!this.v3Docs) {
      const v3 = buildOpenApiV3(this.catalog);
      const byPath = new Map<string, Doc>();
      for (const [key, d] of v3.groupVersions) byPath.set(`/openapi/v3/${key}`, { body: Buffer.from(d.body), etag: `"${d.hash}"`, hash: d.hash });
      let root = v3.root;
      const extra = this.aggregated?.v3Docs();
      if (extra?.size) {
        const index = JSON.parse(root);
        for (const [key, d] of extra) {
          if (byPath.has(`/openapi/v3/${key}`)) continue;
          byPath.set(`/openapi/v3/${key}`, { body: Buffer.from(d.body), etag: `"${d.hash}"`, hash: d.hash });
          index.paths[key] = { serverRelativeURL: `/openapi/v3/${key}?hash=${d.hash}` };
        }
        root = JSON.stringify(index);
      }
      this.v3Docs = { root: Buffer.from(root), byPath };
    }
    return this.v3Docs;
  }

  /** True when the path is an OpenAPI path and an answer was sent. */
  serve(req: ApiRequest, res: ResponseSink, path: string): boolean {
    if (path === '/openapi/v2') {
      const form = negotiate(req.headers['accept'], [['json', 'json'], [V2_PROTO, 'proto'], [V2_PROTO_ALT, 'proto']]);
      if (!form) throw errors.notAcceptable(['application/json', `application/${V2_PROTO}`]);
      const headers: HeaderList = [['Cache-Control', 'no-cache, private'], ['Vary', 'Accept']];
      if (form === 'json') this.send(req, res, this.v2, headers);
      else this.send(req, res, this.v2Proto, headers, V2_PROTO_RETURNED);
      return true;
    }
    if (path === '/openapi/v3') {
      res.send(200, [['Content-Type', 'application/json'], ['Cache-Control', 'no-cache, private']], this.v3.root);
      return true;
    }
    if (!path.startsWith('/openapi/v3/')) return false;
    const doc = this.v3.byPath.get(path);
    if (!doc) return false;
    // Only the JSON form of the v3 documents is served (what client-go's openapi3 and kubectl
    // ask for); a client asking for the proto-openapi v3 form alone gets 406.
    if (!negotiate(req.headers['accept'], [['json', 'json']])) throw errors.notAcceptable(['application/json']);
    const hash = req.query.get('hash');
    const headers: HeaderList = [['Vary', 'Accept']];
    if (!hash) headers.push(['Cache-Control', 'no-cache, private']);
    else {
      if (hash !== doc.hash) {
        res.send(301, [['Location', `${path}?hash=${doc.hash}`], ['Content-Type', 'text/html; charset=utf-8']], '');
        return true;
      }
      const expires = new Date(Date.now() + 365 * 24 * 3600 * 1000).toUTCString();
      headers.push(['Cache-Control', 'public, immutable'], ['Expires', expires]);
    }
    this.send(req, res, doc, headers);
    return true;
  }

  private send(req: ApiRequest, res: ResponseSink, doc: Doc, headers: HeaderList, contentType = 'application/json'): void {
    headers.push(['Etag', doc.etag]);
    const inm = req.headers['if-none-match'];
    if (inm && inm.split(',').some((t) => t.trim() === doc.etag || t.trim() === '*')) {
      res.send(304, headers, '');
      return;
    }
    res.send(200, [['Content-Type', contentType], ...headers], doc.body);
  }
}
