import { encodeObject, type Encodable } from '../codec/representation.js';
import { JSON_REPRESENTATION, type Representation } from '../codec/negotiate.js';
import { sendJson } from '../http/respond.js';
import type { HandlerContext } from './context.js';
import { encodeContextOf, responseRepresentation, sendEncoded } from './representation.js';

function send(c: HandlerContext, r: Representation, e: Encodable): void {
  if (r === JSON_REPRESENTATION) sendJson(c.req, c.res, 200, e.json);
  else sendEncoded(c, 200, r, encodeObject(e, r, encodeContextOf(c, r)));
}

/** Synchronous when the cache is fresh (nearly always): no promise on the hot read path. */
export function handleGet(c: HandlerContext): void | Promise<void> {
  // Negotiated first, as kube does: a 406 costs no read.
  const r = responseRepresentation(c);
  const rv = c.req.rawQuery === '' ? '' : (c.req.query.get('resourceVersion') ?? '');
  const now = c.store.getNow(c.target, c.info.namespace, c.info.name, rv);
  if (now) {
    send(c, r, now);
    return;
  }
  return c.store.get(c.target, c.info.namespace, c.info.name, rv).then((e) => send(c, r, e));
}
