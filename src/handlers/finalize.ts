// namespaces/finalize: PUT of a Namespace whose spec.finalizers replaces the stored ones.
import { sendJson } from '../http/respond.js';
import { dryRunParam } from '../request/query.js';
import { decodeObject, parseBody } from '../codec/decode.js';
import type { HandlerContext } from './context.js';
import { writeAdmission } from './admission.js';

export async function handleFinalize(c: HandlerContext): Promise<void> {
  // Decoded as a Namespace first: a body of another type or kind is 400, as kube's update path answers.
  const body = decodeObject(parseBody(c.req.body, c.req.headers['content-type']), 'v1', 'Namespace');
  const json = await c.namespaces.finalizeSubresource(c.info.name, body, dryRunParam(c.req.query), writeAdmission(c, 'UPDATE', 'UpdateOptions'));
  sendJson(c.req, c.res, 200, json);
}
