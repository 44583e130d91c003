import { sendJson } from '../http/respond.js';
import type { HandlerContext } from './context.js';

export async function handleGet(c: HandlerContext): Promise<void> {
  const e = await c.store.get(c.target, c.info.namespace, c.info.name, c.req.query.get('resourceVersion') ?? '');
  sendJson(c.req, c.res, 200, e.json);
}
