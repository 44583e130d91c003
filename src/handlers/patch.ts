// patch: JSON merge patch and JSON patch. Strategic merge and server-side apply come with
// the write-path issue; until then they are 415 with the accepted types listed.
import { sendJson } from '../http/respond.js';
import { dryRunParam } from '../request/query.js';
import { errors } from '../errors.js';
import { mediaTypeOf } from '../codec/decode.js';
import type { HandlerContext } from './context.js';
import { fieldValidationMode, validateBody } from '../registry/field-validation.js';

const PATCH_TYPES: Record<string, 'merge' | 'json'> = {
  'application/merge-patch+json': 'merge',
  'application/json-patch+json': 'json',
};

export async function handlePatch(c: HandlerContext): Promise<void> {
  const mt = mediaTypeOf(c.req.headers['content-type']);
  const kind = PATCH_TYPES[mt];
  if (!kind) throw errors.unsupportedMediaType(Object.keys(PATCH_TYPES));
  const dryRun = dryRunParam(c.req.query);
  const mode = fieldValidationMode(c.req.query, 'patch');
  let patch: unknown;
  try {
    patch = JSON.parse(c.req.body ? c.req.body.toString('utf8') : '');
  } catch (e) {
    throw errors.badRequest(`error decoding patch: ${(e as Error).message}`);
  }
  if (kind === 'merge' && (patch === null || typeof patch !== 'object' || Array.isArray(patch))) {
    throw errors.badRequest('error decoding patch: a merge patch must be a JSON object');
  }
  // Field validation runs on the patched object; a merge patch's duplicate keys are object paths too.
  const warnings = (c.req.warnings ??= []);
  const raw = kind === 'merge' ? c.req.body : null;
  const check = (obj: any) => validateBody(obj, c.target.info, mode, raw, warnings, { name: c.info.name });
  const r = await c.store.patch(c.target, c.info.namespace, c.info.name, kind, patch, { dryRun, subresource: c.info.subresource, check });
  sendJson(c.req, c.res, r.code, r.json);
}
