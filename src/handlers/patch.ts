// patch: JSON merge patch, JSON patch, strategic merge patch (built-in kinds only) and
// server-side apply (spec 4.3, 4.9). Every non-apply patch records Update ownership of
// the fields it changed; an apply owns what its configuration sets.
import { withEscalationCheck } from '../auth/rbac/escalation.js';
import { authorizeAlso } from '../http/filters/authorization.js';
import { responseRepresentation, sendObject } from './representation.js';
import { decodeApplyPatchCbor, parseYaml11, yamlDuplicatesOf } from '../codec/decode.js';
import { boolParam, dryRunParam } from '../request/query.js';
import { errors } from '../errors.js';
import type { Representation } from '../codec/negotiate.js';
import { features } from '../features.js';
import { mediaTypeOf, parseJson } from '../codec/decode.js';
import { checkFields, enforceFieldCheck, fieldValidationMode, validateBody, type FieldValidationMode } from '../registry/field-validation.js';
import { rootNode } from '../registry/schema-walk.js';
import { finishApply, planApply, type ApplyPlan } from '../registry/apply.js';
import { MAX_PATCH_DEPTH, nestsDeeperThan, refuseDeepPatch, refuseOversized } from '../registry/patch-limits.js';
import { strictJsonPatchTypeError } from '../registry/patch.js';
import { apiVersionOf, type HandlerContext } from './context.js';
import { managedContext, updateHook, validateFieldManager, writeIdentity } from './field-manager.js';
import { writeAdmission } from './admission.js';

type PatchKind = 'merge' | 'json' | 'strategic' | 'apply';

const PATCH_TYPES: Record<string, PatchKind> = {
  'application/json-patch+json': 'json',
  'application/merge-patch+json': 'merge',
  'application/strategic-merge-patch+json': 'strategic',
  'application/apply-patch+yaml': 'apply',
  // only with CBORServingAndStorage on
  'application/apply-patch+cbor': 'apply',
};
const APPLY_CBOR = 'application/apply-patch+cbor';

export async function handlePatch(c: HandlerContext): Promise<void> {
  const repr = responseRepresentation(c);
  const mt = mediaTypeOf(c.req.headers['content-type']);
  const builtIn = rootNode(c.target.info.group, c.target.info.version, c.target.info.kind) !== undefined;
  const accepted = Object.keys(PATCH_TYPES).filter((t) => (builtIn || PATCH_TYPES[t] !== 'strategic') && (t !== APPLY_CBOR || features.enabled('CBORServingAndStorage')));
  const kind = PATCH_TYPES[mt];
  // Strategic merge needs the patch markers of a built-in kind; custom resources have none.
  if (!kind || !accepted.includes(mt)) throw errors.unsupportedMediaType(accepted);
  const dryRun = dryRunParam(c.req.query);
  const mode = fieldValidationMode(c.req.query, 'patch');
  if (kind === 'apply') return handleApply(c, dryRun, mode, repr);

  if (c.req.query.has('force')) {
    validateFieldManager('PatchOptions', '', [{ field: 'force', type: 'FieldValueForbidden', detail: 'may not be specified for non-apply patch' }]);
  }
  const fields = updateHook(c, 'PatchOptions');
  let patch: unknown;
  try {
    patch = parseJson(c.req.body ? c.req.body.toString('utf8') : '');
  } catch (e) {
    throw errors.badRequest(`error decoding patch: ${(e as Error).message}`);
  }
  if ((kind === 'merge' || kind === 'strategic') && (patch === null || typeof patch !== 'object' || Array.isArray(patch))) {
    throw errors.badRequest(`error decoding patch: a ${kind === 'merge' ? 'merge' : 'strategic merge'} patch must be a JSON object`);
  }
  // The engines recurse as deep as the patch nests: a body of `[[[[...` is refused whole,
  // before the current object is read (the engines refuse it too, for every other caller).
  refuseDeepPatch(patch);
  if (kind === 'json' && mode !== 'Ignore') {
    const why = strictJsonPatchTypeError(patch);
    if (why) throw errors.badRequest(`error decoding patch: ${why}`);
  }
  // Field validation runs on the patched object; a merge patch's duplicate keys are object paths too.
  const warnings = (c.req.warnings ??= []);
  const raw = kind === 'merge' || kind === 'strategic' ? c.req.body : null;
  const check = (obj: any) => validateBody(obj, c.target.info, mode, raw, warnings, { name: c.info.name, required: !c.target.strategy.handlesRequired });
  const r = await c.store.patch(c.target, c.info.namespace, c.info.name, kind, patch, { dryRun, subresource: c.info.subresource, check, fields, patchBytes: c.req.body?.length ?? 0, admission: writeAdmission(c, 'UPDATE', 'PatchOptions') });
  sendObject(c, repr, r.code, r.json);
}

/** A value a message may embed as text: absent, null or a JSON scalar. */
function isScalarOrAbsent(v: unknown): boolean {
  return v === undefined || v === null || typeof v !== 'object';
}

function isObj(v: unknown): v is Record<string, any> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

async function handleApply(c: HandlerContext, dryRun: boolean, mode: FieldValidationMode, repr: Representation): Promise<void> {
  const fm = c.req.query.get('fieldManager') ?? '';
  validateFieldManager('PatchOptions', fm, fm === '' ? [{ field: 'fieldManager', type: 'FieldValueRequired', detail: 'is required for apply patch' }] : []);
  const force = boolParam(c.req.query, 'force');
  const id = writeIdentity(c, 'PatchOptions');
  const ctx = managedContext(c.target);
  const config = decodeApplyBody(c);
  // The configuration is partial: types and unknown fields are checked, required fields not.
  const checked = checkFields(config, c.target.info, mode, { required: false });
  enforceFieldCheck(checked, c.target.info.kind, apiVersionOf(c.target), c.target.info.group, c.info.name, (c.req.warnings ??= []));
  // Keys given twice (YAML or JSON text): kube re-reads the patch with go-yaml's strict
  // decoder; Strict fails with its error, Warn warns once per duplicate, Ignore says nothing.
  const dups = mode === 'Ignore' ? undefined : yamlDuplicatesOf(config);
  if (dups?.length) {
    if (mode === 'Strict') throw errors.badRequest(`error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  ${dups.join('\n  ')}`);
    for (const d of dups) if (!c.req.warnings!.includes(d)) c.req.warnings!.push(d);
  }
  const name = c.info.name;
  const ns = c.info.namespace;
  let plan: ApplyPlan | undefined;
  const r = await c.store.guaranteedUpdate(
    c.target,
    ns,
    name,
    {
      dryRun,
      subresource: c.info.subresource,
      alwaysCreate: true,
      rejectResourceVersion: true,
      // kube's patch handler retries a too-large write without managedFields, but not an apply's.
      keepManagedFields: true,
      // Weighed where it would go to storage (YAML's aliases make the body no bound on what
      // it decodes to, so always).
      beforeCommit: (obj) => refuseOversized(obj, Infinity),
      // Apply to a missing object creates it, and so needs `create` as well as `patch` (kube's
      // patcher runs its create validation under withAuthorization with the create verb).
      createIfMissing: async () => {
        const d = await authorizeAlso(c.req, 'create');
        if (!d.allowed) throw errors.createForbidden({ group: c.target.info.group, resource: c.target.info.resource }, name, d.reason);
        const p = planApply(null, structuredClone(config), id, ctx);
        plan = p.plan;
        return p.obj;
      },
      fields: withEscalationCheck(c, (old, obj) => finishApply(old, obj, plan!, id, { force }, ctx)),
      admission: writeAdmission(c, 'UPDATE', 'PatchOptions'),
    },
    (current) => {
      delete current.metadata.resourceVersion;
      const p = planApply(current, structuredClone(config), id, ctx);
      plan = p.plan;
      return p.obj;
    },
  );
  sendObject(c, repr, r.code, r.json);
}

/**
 * The apply configuration: YAML (or JSON), a whole object of the target's kind (or of the
 * subresource's: /scale applies an autoscaling/v1 Scale), without managedFields.
 */
export function decodeApplyBody(c: HandlerContext, apiVersion = apiVersionOf(c.target), kind = c.target.info.kind, version = c.target.info.version): Record<string, any> {
  let cfg: unknown;
  if (mediaTypeOf(c.req.headers['content-type']) === APPLY_CBOR) cfg = decodeApplyPatchCbor(c.req.body);
  else {
    const text = c.req.body ? c.req.body.toString('utf8') : '';
    try {
      cfg = parseYaml11(text);
    } catch (e) {
      throw errors.badRequest(`error decoding YAML: ${(e as Error).message}`);
    }
  }
  if (!isObj(cfg)) throw errors.badRequest(`error decoding YAML: the apply configuration must be an object, not ${cfg === null ? 'null' : Array.isArray(cfg) ? 'a list' : typeof cfg}`);
  // The apply engine recurses as deep as the configuration nests (see MAX_PATCH_DEPTH).
  if (nestsDeeperThan(cfg, MAX_PATCH_DEPTH)) throw errors.badRequest(`error decoding YAML: the apply configuration nests deeper than ${MAX_PATCH_DEPTH} levels`);
  if (typeof cfg.kind !== 'string' || cfg.kind === '') throw errors.badRequest(`Object 'Kind' is missing in '${JSON.stringify(cfg)}'`);
  if (typeof cfg.apiVersion !== 'string' || cfg.apiVersion === '') throw errors.badRequest(`Object 'apiVersion' is missing in '${JSON.stringify(cfg)}'`);
  if (cfg.apiVersion !== apiVersion || cfg.kind !== kind) {
    throw errors.badRequest(`the apply configuration's apiVersion and kind (${cfg.apiVersion}, Kind=${cfg.kind}) do not match the request (${apiVersion}, Kind=${kind})`);
  }
  if (cfg.metadata === undefined || cfg.metadata === null) cfg.metadata = {};
  if (!isObj(cfg.metadata)) throw errors.badRequest(`${kind} in version "${version}" cannot be handled as a ${kind}: metadata must be an object`);
  const m = cfg.metadata;
  if (m.managedFields !== undefined && m.managedFields !== null) {
    throw errors.badRequest('metadata.managedFields must be nil');
  }
  delete m.managedFields;
  // A name or namespace that is a map or list is the decoder's type error, named by its JSON
  // kind (String() of a map with a toString key throws; any other value is text).
  for (const f of ['name', 'namespace'] as const) {
    const v = m[f];
    if (!isScalarOrAbsent(v)) throw errors.badRequest(`${kind} in version "${version}" cannot be handled as a ${kind}: json: cannot unmarshal ${Array.isArray(v) ? 'array' : 'object'} into Go struct field ObjectMeta.metadata.${f} of type string`);
  }
  if (m.name !== undefined && m.name !== c.info.name) {
    throw errors.badRequest(`the name of the object (${String(m.name)}) does not match the name on the URL (${c.info.name})`);
  }
  m.name = c.info.name;
  if (c.target.info.namespaced) {
    if (m.namespace !== undefined && m.namespace !== '' && m.namespace !== c.info.namespace) {
      throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    m.namespace = c.info.namespace;
  }
  return cfg;
}
