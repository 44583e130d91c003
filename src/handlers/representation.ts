// The negotiated representation of a resource request, and the encoding context of its
// resource: what get, list and watch need to answer in the client's media type.
import { JSON_REPRESENTATION, negotiateOutput, negotiateStream, type Representation } from '../codec/negotiate.js';
import { encodeObject, encodeStatus, type EncodeContext } from '../codec/representation.js';
import { parseIncludeObject } from '../api/table/table.js';
import { errors } from '../errors.js';
import { sendBody } from '../http/respond.js';
import { apiVersionOf, type HandlerContext } from './context.js';
import { viewOf } from '../registry/conversion.js';
import type { CacheEntry } from '../../workers/watch/watch-cache.js';

export function encodeContextOf(c: HandlerContext, r: Representation): EncodeContext {
  const ctx: EncodeContext = { target: c.target, apiVersion: apiVersionOf(c.target), kind: c.target.info.kind, listKind: c.target.info.listKind };
  const conv = c.target.conv;
  if (conv) ctx.view = (e) => viewOf(conv, e as CacheEntry);
  if (r.as?.kind === 'Table') {
    const inc = parseIncludeObject(c.req.query.get('includeObject'));
    if (typeof inc === 'object') throw errors.badRequest(inc.error);
    ctx.table = { includeObject: inc };
  }
  return ctx;
}

/** The response representation (406 when the client accepts nothing we serve). */
export function responseRepresentation(c: HandlerContext): Representation {
  return negotiateOutput(c.req.headers['accept']);
}

/** The watch representation (406 listing the stream types). */
export function streamRepresentation(c: HandlerContext): Representation {
  return negotiateStream(c.req.headers['accept']);
}

export function sendEncoded(c: HandlerContext, code: number, r: Representation, body: Uint8Array): void {
  sendBody(c.req, c.res, code, r.mediaType, body);
}

/** A written object (create, update, patch) in the representation negotiated before the write. */
export function sendObject(c: HandlerContext, r: Representation, code: number, json: Buffer): void {
  // Plain JSON is the stored bytes as they are: no encoding context to build.
  if (r === JSON_REPRESENTATION) return sendEncoded(c, code, r, json);
  sendEncoded(c, code, r, encodeObject({ json }, r, encodeContextOf(c, r)));
}

/** A Status answer (a delete's Success): never converted (kube leaves a Status as it is), in the media type. */
export function sendStatus(c: HandlerContext, r: Representation, code: number, status: string | Record<string, unknown>): void {
  const v = typeof status === 'string' ? JSON.parse(status) : status;
  sendEncoded(c, code, r, encodeStatus(v, r.mediaType));
}
