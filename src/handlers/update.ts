import { sendJson } from '../http/respond.js';
import { decodeObject, parseBody } from '../codec/decode.js';
import { dryRunParam } from '../request/query.js';
import { errors } from '../errors.js';
import { apiVersionOf, type HandlerContext } from './context.js';

export async function handleUpdate(c: HandlerContext): Promise<void> {
  const dryRun = dryRunParam(c.req.query);
  const obj = decodeObject(parseBody(c.req.body, c.req.headers['content-type']), apiVersionOf(c.target), c.target.info.kind);
  if (obj.metadata.name !== undefined && obj.metadata.name !== c.info.name) {
    throw errors.badRequest(`the name of the object (${obj.metadata.name}) does not match the name on the URL (${c.info.name})`);
  }
  const r = await c.store.update(c.target, c.info.namespace, c.info.name, obj, { dryRun, subresource: c.info.subresource });
  sendJson(c.req, c.res, r.code, r.json);
}
