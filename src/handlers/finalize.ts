// namespaces/finalize: PUT of a Namespace whose spec.finalizers replaces the stored ones.
import { sendJson } from '../http/respond.js';
import { dryRunParam } from '../request/query.js';
import { parseBody } from '../codec/decode.js';
import type { HandlerContext } from './context.js';

export async function handleFinalize(c: HandlerContext): Promise<void> {
  const body = parseBody(c.req.body, c.req.headers['content-type']);
  const json = await c.namespaces.finalizeSubresource(c.info.name, body, dryRunParam(c.req.query));
  sendJson(c.req, c.res, 200, json);
}
