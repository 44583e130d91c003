import { responseRepresentation, sendObject } from './representation.js';
import { decodeObject, parseBody } from '../codec/decode.js';
import { dryRunParam } from '../request/query.js';
import { errors } from '../errors.js';
import { apiVersionOf, type HandlerContext } from './context.js';
import { fieldValidationMode, validateBody, isJsonMediaType } from '../registry/field-validation.js';
import { mediaTypeOf } from '../codec/decode.js';
import { updateHook } from './field-manager.js';
import { writeAdmission } from './admission.js';

export async function handleUpdate(c: HandlerContext): Promise<void> {
  const repr = responseRepresentation(c);
  const dryRun = dryRunParam(c.req.query);
  const mode = fieldValidationMode(c.req.query, 'update');
  const obj = decodeObject(parseBody(c.req.body, c.req.headers['content-type']), apiVersionOf(c.target), c.target.info.kind);
  const raw = isJsonMediaType(mediaTypeOf(c.req.headers['content-type'])) ? c.req.body : null;
  validateBody(obj, c.target.info, mode, raw, (c.req.warnings ??= []), { name: c.info.name, required: !c.target.strategy.handlesRequired });
  if (obj.metadata.name !== undefined && obj.metadata.name !== c.info.name) {
    throw errors.badRequest(`the name of the object (${obj.metadata.name}) does not match the name on the URL (${c.info.name})`);
  }
  const fields = updateHook(c, 'UpdateOptions');
  const r = await c.store.update(c.target, c.info.namespace, c.info.name, obj, { dryRun, subresource: c.info.subresource, fields, admission: writeAdmission(c, 'UPDATE', 'UpdateOptions') });
  sendObject(c, repr, r.code, r.json);
}
