import { sendJson } from '../http/respond.js';
import type { HandlerContext } from './context.js';

/** Synchronous when the cache is fresh (nearly always): no promise on the hot read path. */
export function handleGet(c: HandlerContext): void | Promise<void> {
  const rv = c.req.rawQuery === '' ? '' : (c.req.query.get('resourceVersion') ?? '');
  const now = c.store.getNow(c.target, c.info.namespace, c.info.name, rv);
  if (now) {
    sendJson(c.req, c.res, 200, now.json);
    return;
  }
  return c.store.get(c.target, c.info.namespace, c.info.name, rv).then((e) => sendJson(c.req, c.res, 200, e.json));
}
