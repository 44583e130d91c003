import { encodeList } from '../codec/representation.js';
import { encodeContextOf, responseRepresentation, sendEncoded } from './representation.js';
import { listOptions } from '../request/query.js';
import { deleteOptions } from './delete-options.js';
import type { HandlerContext } from './context.js';

export async function handleDeleteCollection(c: HandlerContext): Promise<void> {
  const repr = responseRepresentation(c);
  const lo = listOptions(c.req);
  const deleted = await c.store.deleteCollection(c.target, c.info.namespace, lo, deleteOptions(c.req));
  const rv = c.store.coord.freshRv(c.store.cacheOf(c.target).shard);
  sendEncoded(c, 200, repr, encodeList(deleted.map((json) => ({ json })), { resourceVersion: String(rv) }, repr, encodeContextOf(c, repr)));
}
