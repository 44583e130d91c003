// list: the collection is the stored bytes of each item inside a small header, with no
// re-encoding of the items.
import { sendJson, sendJsonParts } from '../http/respond.js';
import { listOptions } from '../request/query.js';
import { apiVersionOf, type HandlerContext } from './context.js';

const COMMA = Buffer.from(',');
const TAIL = Buffer.from(']}');

function listHead(kind: string, apiVersion: string, meta: Record<string, unknown>): Buffer {
  return Buffer.from(`{"kind":${JSON.stringify(kind)},"apiVersion":${JSON.stringify(apiVersion)},"metadata":${JSON.stringify(meta)},"items":[`);
}

export function renderList(kind: string, apiVersion: string, meta: Record<string, unknown>, items: Buffer[]): Buffer {
  const head = listHead(kind, apiVersion, meta);
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
  if (r.joined) {
    // The cache's items come joined already: header, one slice, tail; nothing is copied.
    sendJsonParts(c.req, c.res, 200, [listHead(c.target.info.listKind, apiVersionOf(c.target), meta), r.joined, TAIL]);
    return;
  }
  sendJson(c.req, c.res, 200, renderList(c.target.info.listKind, apiVersionOf(c.target), meta, r.items));
}
