// list: the collection is the stored bytes of each item inside a small header, with no
// re-encoding of the items.
import { sendJson } from '../http/respond.js';
import { listOptions } from '../request/query.js';
import { apiVersionOf, type HandlerContext } from './context.js';

const COMMA = Buffer.from(',');
const TAIL = Buffer.from(']}');

export function renderList(kind: string, apiVersion: string, meta: Record<string, unknown>, items: Buffer[]): Buffer {
  const head = Buffer.from(`{"kind":${JSON.stringify(kind)},"apiVersion":${JSON.stringify(apiVersion)},"metadata":${JSON.stringify(meta)},"items":[`);
  const parts: Buffer[] = [head];
  for (let i = 0; i < items.length; i++) {
    if (i > 0) parts.push(COMMA);
    parts.push(items[i]);
  }
  parts.push(TAIL);
  return Buffer.concat(parts);
}

export async function handleList(c: HandlerContext): Promise<void> {
  const opts = listOptions(c.req);
  const r = await c.store.list(c.target, c.info.namespace, opts);
  const meta: Record<string, unknown> = { resourceVersion: String(r.rv) };
  if (r.continueToken) meta.continue = r.continueToken;
  if (r.remainingItemCount !== undefined) meta.remainingItemCount = r.remainingItemCount;
  sendJson(c.req, c.res, 200, renderList(c.target.info.listKind, apiVersionOf(c.target), meta, r.items));
}
