// Aggregated discovery (/api and /apis with `as=APIGroupDiscoveryList`), negotiated clause
// by clause as kube-apiserver's aggregated handler does: the first acceptable clause wins;
// an aggregated clause (g=apidiscovery.k8s.io, v=v2 or v2beta1) gets the aggregated document
// in its media type (JSON, YAML, protobuf; CBOR with its gate), a plain clause the legacy
// document. Each encoding is made once, with its own ETag; If-None-Match answers 304.
//
// Thread ownership: built and cached on the front thread; the documents never change
// during the server's life.
import { createHash } from 'node:crypto';
import type { ApiRequest, ResponseSink } from '../http/types.js';
import { sendBody } from '../http/respond.js';
import { parseAccept, servedMediaTypes, PROTOBUF_MEDIA_TYPE, YAML_MEDIA_TYPE, CBOR_MEDIA_TYPE, type MediaType, type AcceptClause } from '../codec/negotiate.js';
import { yamlOf } from '../codec/representation.js';
import { encodeCbor } from '../codec/cbor.js';
import { encodeMessage, envelope, protoRoot } from '../codec/protobuf-encode.js';

type Version = 'v2' | 'v2beta1';

interface Encoded {
  body: Buffer;
  etag: string;
}

function matches(c: AcceptClause, mt: MediaType): boolean {
  const [type, sub] = mt.split('/');
  return (c.type === '*' || c.type === type) && (c.subType === '*' || c.subType === sub);
}

/** The aggregated form a request asks for first, or undefined when it asks for the legacy one first (or none). */
export function aggregatedChoice(accept: string | undefined): { mediaType: MediaType; version: Version } | undefined {
  if (!accept || !accept.includes('APIGroupDiscoveryList')) return undefined;
  const served = servedMediaTypes();
  for (const c of parseAccept(accept)) {
    if (c.q <= 0) continue;
    const mt = served.find((m) => matches(c, m));
    if (!mt) continue;
    if (c.params.as === undefined) return undefined; // a plain clause first: the legacy document
    if (c.params.as !== 'APIGroupDiscoveryList' || c.params.g !== 'apidiscovery.k8s.io') continue;
    if (c.params.v === 'v2' || c.params.v === 'v2beta1') return { mediaType: mt, version: c.params.v };
  }
  return undefined;
}

export class AggregatedDiscovery {
  private cache = new Map<string, Encoded>();

  /** `json(which, version)`: the JSON document of /api ('api') or /apis ('apis'). */
  constructor(private json: (which: 'api' | 'apis', version: Version) => Buffer) {}

  private encoded(which: 'api' | 'apis', version: Version, mt: MediaType): Encoded {
    const key = `${which}:${version}:${mt}`;
    let e = this.cache.get(key);
    if (!e) {
      const json = this.json(which, version);
      let body: Buffer;
      if (mt === YAML_MEDIA_TYPE) body = yamlOf(JSON.parse(json.toString('utf8')));
      else if (mt === CBOR_MEDIA_TYPE) body = encodeCbor(JSON.parse(json.toString('utf8')));
      else if (mt === PROTOBUF_MEDIA_TYPE) {
        const type = protoRoot().lookupType(`k8s.io.api.apidiscovery.${version}.APIGroupDiscoveryList`);
        body = envelope(`apidiscovery.k8s.io/${version}`, 'APIGroupDiscoveryList', encodeMessage(type, JSON.parse(json.toString('utf8'))));
      } else body = json;
      e = { body, etag: `"${createHash('sha512').update(body).digest('hex')}"` };
      this.cache.set(key, e);
    }
    return e;
  }

  /** Answers when the request asks for the aggregated form first; false to fall back to the legacy document. */
  serve(req: ApiRequest, res: ResponseSink, which: 'api' | 'apis'): boolean {
    const choice = aggregatedChoice(req.headers['accept']);
    if (!choice) return false;
    const { body, etag } = this.encoded(which, choice.version, choice.mediaType);
    if ((req.headers['if-none-match'] ?? '').split(',').some((t) => t.trim() === etag)) {
      res.send(304, [['Etag', etag], ['Vary', 'Accept'], ['Cache-Control', 'public']], '');
      return true;
    }
    const contentType = `${choice.mediaType};g=apidiscovery.k8s.io;v=${choice.version};as=APIGroupDiscoveryList`;
    sendBody(req, res, 200, contentType, body, [['Vary', 'Accept'], ['Etag', etag]]);
    return true;
  }
}
