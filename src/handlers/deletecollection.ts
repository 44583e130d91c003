import { sendJson } from '../http/respond.js';
import { listOptions } from '../request/query.js';
import { deleteOptions } from './delete-options.js';
import { renderList } from './list.js';
import { apiVersionOf, type HandlerContext } from './context.js';

export async function handleDeleteCollection(c: HandlerContext): Promise<void> {
  const lo = listOptions(c.req);
  const deleted = await c.store.deleteCollection(c.target, c.info.namespace, lo, deleteOptions(c.req));
  const rv = c.store.coord.freshRv(c.store.cacheOf(c.target).shard);
  sendJson(c.req, c.res, 200, renderList(c.target.info.listKind, apiVersionOf(c.target), { resourceVersion: String(rv) }, deleted));
}
