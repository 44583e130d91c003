import { sendJson } from '../http/respond.js';
import { decodeObject, parseBody } from '../codec/decode.js';
import { dryRunParam } from '../request/query.js';
import { errors } from '../errors.js';
import { apiVersionOf, type HandlerContext } from './context.js';

export async function handleCreate(c: HandlerContext): Promise<void> {
  if (c.info.subresource) throw errors.methodNotAllowed();
  if (c.target.info.namespaced && !c.info.namespace) throw errors.methodNotAllowed();
  const dryRun = dryRunParam(c.req.query);
  const obj = decodeObject(parseBody(c.req.body, c.req.headers['content-type']), apiVersionOf(c.target), c.target.info.kind);
  const r = await c.store.create(c.target, c.info.namespace, obj, { dryRun, warnings: (c.req.warnings ??= []) });
  sendJson(c.req, c.res, r.code, r.json);
}
