// The legacy discovery documents (/api, /apis, /apis/{group}, /api/v1, /apis/{group}/{version})
// in the representation the client asks for, as kube-apiserver's discovery handlers write
// them (WriteObjectNegotiated): JSON, YAML or protobuf (CBOR with its gate), no
// conversions (as=Table or as=PartialObjectMetadata are not acceptable), 406 otherwise.
// The documents are fixed for the server's life: each encoding is made once, on the front
// thread, and its bytes reused.
import type { ApiRequest, ResponseSink } from '../http/types.js';
import { sendBody } from '../http/respond.js';
import { negotiateOutput, JSON_MEDIA_TYPE, PROTOBUF_MEDIA_TYPE, YAML_MEDIA_TYPE, CBOR_MEDIA_TYPE } from '../codec/negotiate.js';
import { yamlOf } from '../codec/representation.js';
import { encodeCbor } from '../codec/cbor.js';
import { encodeMessage, envelope, protoRoot } from '../codec/protobuf-encode.js';

export interface DiscoveryDoc {
  /** the JSON bytes */
  body: Buffer;
  /** other encodings, made on first use */
  encoded?: Map<string, Buffer>;
}

function encode(doc: DiscoveryDoc, mediaType: string): Buffer {
  if (mediaType === JSON_MEDIA_TYPE) return doc.body;
  let b = (doc.encoded ??= new Map()).get(mediaType);
  if (!b) {
    const v = JSON.parse(doc.body.toString('utf8'));
    if (mediaType === YAML_MEDIA_TYPE) b = yamlOf(v);
    else if (mediaType === CBOR_MEDIA_TYPE) b = encodeCbor(v);
    else {
      // Unversioned meta kinds (APIVersions, APIGroupList, APIGroup, APIResourceList),
      // registered in v1: that is the envelope's apiVersion.
      const type = protoRoot().lookupType(`k8s.io.apimachinery.pkg.apis.meta.v1.${v.kind}`);
      b = envelope('v1', v.kind, encodeMessage(type, v));
    }
    doc.encoded.set(mediaType, b);
  }
  return b;
}

export function sendDiscoveryDoc(req: ApiRequest, res: ResponseSink, doc: DiscoveryDoc): void {
  const r = negotiateOutput(req.headers['accept'], { conversions: false, table: false });
  const mt = r.mediaType === PROTOBUF_MEDIA_TYPE || r.mediaType === YAML_MEDIA_TYPE || r.mediaType === CBOR_MEDIA_TYPE ? r.mediaType : JSON_MEDIA_TYPE;
  sendBody(req, res, 200, mt, encode(doc, mt));
}
