import { responseRepresentation, sendObject } from './representation.js';
import { decodeObject, parseBody } from '../codec/decode.js';
import { dryRunParam } from '../request/query.js';
import { errors } from '../errors.js';
import { apiVersionOf, type HandlerContext } from './context.js';
import { fieldValidationMode, validateBody, isJsonMediaType } from '../registry/field-validation.js';
import { mediaTypeOf } from '../codec/decode.js';
import { updateHook } from './field-manager.js';
import { writeAdmission } from './admission.js';

export async function handleCreate(c: HandlerContext): Promise<void> {
  const repr = responseRepresentation(c);
  if (c.info.subresource) throw errors.methodNotAllowed();
  if (c.target.info.namespaced && !c.info.namespace) throw errors.methodNotAllowed();
  const dryRun = dryRunParam(c.req.query);
  const mode = fieldValidationMode(c.req.query, 'create');
  const obj = decodeObject(parseBody(c.req.body, c.req.headers['content-type']), apiVersionOf(c.target), c.target.info.kind);
  const raw = isJsonMediaType(mediaTypeOf(c.req.headers['content-type'])) ? c.req.body : null;
  validateBody(obj, c.target.info, mode, raw, (c.req.warnings ??= []), { required: !c.target.strategy.handlesRequired });
  const fields = updateHook(c, 'CreateOptions');
  const r = await c.store.create(c.target, c.info.namespace, obj, { dryRun, warnings: (c.req.warnings ??= []), fields, rejectResourceVersion: true, admission: writeAdmission(c, 'CREATE', 'CreateOptions'), user: c.req.user });
  sendObject(c, repr, r.code, r.json);
}
