// list: the collection is the stored bytes of each item inside a small header, with no
// re-encoding of the items; other representations reuse each item's memoized encoding.
import { GZIP_THRESHOLD_BYTES, sendJsonParts, wantsGzip } from '../http/respond.js';
import { JSON_REPRESENTATION } from '../codec/negotiate.js';
import { listOptions } from '../request/query.js';
import { encodeList, jsonListHead, JSON_LIST_TAIL } from '../codec/representation.js';
import { apiVersionOf, type HandlerContext } from './context.js';
import { encodeContextOf, responseRepresentation, sendEncoded } from './representation.js';

export async function handleList(c: HandlerContext): Promise<void> {
  const repr = responseRepresentation(c);
  const opts = listOptions(c.req);
  const r = await c.store.list(c.target, c.info.namespace, opts);
  const meta: Record<string, unknown> = { resourceVersion: String(r.rv) };
  if (r.continueToken) meta.continue = r.continueToken;
  if (r.remainingItemCount !== undefined) meta.remainingItemCount = r.remainingItemCount;
  if (repr === JSON_REPRESENTATION && r.joined) {
    // The cache's items come joined already: header, one slice, tail; nothing is copied,
    // unless the body is to be gzipped.
    const parts = [jsonListHead(c.target.info.listKind, apiVersionOf(c.target), meta), r.joined, JSON_LIST_TAIL];
    const size = parts[0].length + r.joined.length + JSON_LIST_TAIL.length;
    if (size > GZIP_THRESHOLD_BYTES && wantsGzip(c.req)) sendEncoded(c, 200, repr, Buffer.concat(parts));
    else sendJsonParts(c.req, c.res, 200, parts);
    return;
  }
  sendEncoded(c, 200, repr, encodeList(r.sources, meta, repr, encodeContextOf(c, repr)));
}
