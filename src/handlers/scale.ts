// The scale subresource (autoscaling/v1 Scale): get, update, patch and apply, as a view of
// the parent's replicas, status replicas and selector. The parent is a deployment, replica
// set, stateful set or replication controller, or a custom resource whose CRD declares
// subresources.scale (its paths say where the three live). Field ownership follows kube's
// ScaleHandler (src/registry/scale-fields.ts): the write is managed as a write to the Scale,
// and spec.replicas ownership is mapped back onto the parent's replicas field.
import { sendJson } from '../http/respond.js';
import { errors } from '../errors.js';
import { dryRunParam } from '../request/query.js';
import { mediaTypeOf, parseBody, parseJson } from '../codec/decode.js';
import { validateSubresourceBody } from '../registry/field-validation.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import { jsonPatch, mergePatch, strictJsonPatchTypeError } from '../registry/patch.js';
import { strategicMergePatch } from '../registry/strategic-merge.js';
import { refuseDeepPatch } from '../registry/patch-limits.js';
import { checkFields, enforceFieldCheck, fieldValidationMode } from '../registry/field-validation.js';
import { finishApply, planApply, recordUpdate, type ApplyPlan, type ManagedContext, type WriteIdentity } from '../registry/apply.js';
import { ANY, rootNode } from '../registry/schema-walk.js';
import { builtinReplicasPaths, parentManagedFields, scaleManagedFields, SCALE_API_VERSION, type ReplicasPaths } from '../registry/scale-fields.js';
import { boolParam } from '../request/query.js';
import { features } from '../features.js';
import { validateFieldManager, writeIdentity, type OptionsKind } from './field-manager.js';
import { apiVersionOf } from './context.js';
import { decodeApplyBody } from './patch.js';
import { mapSelectorString, selectorString } from '../registry/label-selector.js';
import type { HandlerContext } from './context.js';
import { customScaleAdapter } from './custom-scale.js';
import { writeAdmission } from './admission.js';
import type { AdmissionHooks } from '../admission/request.js';

export function scaleOf(obj: any, mapSelector: boolean): any {
  const m = obj.metadata;
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      creationTimestamp: m.creationTimestamp,
    },
    spec: { replicas: obj.spec?.replicas ?? 0 },
    status: {
      replicas: obj.status?.replicas ?? 0,
      selector: mapSelector ? mapSelectorString(obj.spec?.selector) : selectorString(obj.spec?.selector),
    },
  };
}

/** What the handler needs to know of a scalable parent kind. */
export interface ScaleAdapter {
  /** the Scale view of a parent object */
  view(obj: any): any;
  /** sets the parent's desired replicas. Mutates obj. */
  setReplicas(obj: any, replicas: number): void;
  /** where the parent's replicas field is in its managed fields */
  replicasPaths: ReplicasPaths;
}

function adapterOf(c: HandlerContext): ScaleAdapter {
  const custom = c.target.info.custom;
  if (custom?.scale) return customScaleAdapter(custom, custom.scale);
  const rc = c.target.gr === 'replicationcontrollers';
  return {
    view: (obj) => scaleOf(obj, rc),
    setReplicas: (obj, replicas) => (obj.spec = { ...(obj.spec ?? {}), replicas }),
    replicasPaths: builtinReplicasPaths(c.target.gr),
  };
}

async function current(c: HandlerContext): Promise<any> {
  const e = await c.store.get(c.target, c.info.namespace, c.info.name, '');
  return entryObject(e);
}

/** How a Scale write builds the new Scale from the current one, and records its field ownership on it. */
interface ScaleWrite {
  build: (oldScale: any) => any;
  fields: (oldScale: any, newScale: any) => void;
}

function scaleContext(): ManagedContext {
  return { root: rootNode('autoscaling', 'v1', 'Scale') ?? ANY, hasStatus: true };
}

function scaleIdentity(c: HandlerContext, kind: OptionsKind): WriteIdentity {
  return { ...writeIdentity(c, kind), apiVersion: SCALE_API_VERSION, subresource: 'scale' };
}

function updateFields(c: HandlerContext, kind: OptionsKind): ScaleWrite['fields'] {
  const id = scaleIdentity(c, kind);
  const ctx = scaleContext();
  return (oldScale, newScale) => recordUpdate(oldScale, newScale, id, ctx);
}

function checkScale(scale: any, name: string): number {
  if (scale === null || typeof scale !== 'object' || Array.isArray(scale)) throw errors.badRequest('the body must be a Scale object');
  if (scale.metadata?.name !== undefined && scale.metadata.name !== name) {
    throw errors.badRequest(`the name of the object (${scale.metadata.name}) does not match the name on the URL (${name})`);
  }
  const replicas = scale.spec?.replicas ?? 0;
  if (!Number.isInteger(replicas) || replicas < 0) {
    throw errors.invalid('Scale', 'autoscaling', name, [
      Number.isInteger(replicas)
        ? { field: 'spec.replicas', type: 'FieldValueInvalid', value: replicas, detail: 'must be greater than or equal to 0' }
        : { field: 'spec.replicas', type: 'FieldValueInvalid', value: replicas, detail: 'must be an integer' },
    ]);
  }
  return replicas;
}

/**
 * Writes a new Scale to the parent: spec.replicas only, pinned to the Scale's
 * resourceVersion if it has one, with the Scale's field ownership mapped onto the parent's.
 * Runs again from the fresh parent when a race is lost.
 */
async function writeScale(c: HandlerContext, a: ScaleAdapter, w: ScaleWrite, optionsKind: 'UpdateOptions' | 'PatchOptions'): Promise<void> {
  const name = c.info.name;
  const parentVersion = apiVersionOf(c.target);
  let oldScale: any;
  let newScale: any;
  // Admission sees the Scale (kube admits the subresource's own object), and what a mutating
  // step makes of its replicas is what the parent gets.
  const scaleAdmission = writeAdmission(c, 'UPDATE', optionsKind, { kind: { group: 'autoscaling', version: 'v1', kind: 'Scale' } });
  const admission: AdmissionHooks | undefined = scaleAdmission && {
    admit: (obj) => {
      const r = scaleAdmission.admit(newScale, oldScale);
      const carry = () => {
        const replicas = newScale?.spec?.replicas;
        if (Number.isInteger(replicas) && replicas >= 0) a.setReplicas(obj, replicas);
      };
      return r ? r.then(carry) : carry();
    },
    validate: () => scaleAdmission.validate(newScale, oldScale),
  };
  const r = await c.store.guaranteedUpdate(
    c.target,
    c.info.namespace,
    name,
    {
      dryRun: dryRunParam(c.req.query),
      subresource: '',
      admission,
      fields: (old, obj) => {
        w.fields(oldScale, newScale);
        const mf = parentManagedFields(a.replicasPaths, parentVersion, old?.metadata?.managedFields, newScale.metadata?.managedFields);
        if (mf) obj.metadata.managedFields = mf;
        else delete obj.metadata.managedFields;
      },
    },
    (obj) => {
      oldScale = a.view(obj);
      const mf = scaleManagedFields(a.replicasPaths, obj.metadata.managedFields);
      if (mf) oldScale.metadata.managedFields = mf;
      newScale = w.build(structuredClone(oldScale));
      const replicas = checkScale(newScale, name);
      if (newScale.metadata === null || typeof newScale.metadata !== 'object') newScale.metadata = {};
      const rv: string = newScale.metadata.resourceVersion ?? '';
      if (rv) obj.metadata.resourceVersion = rv;
      else delete obj.metadata.resourceVersion;
      a.setReplicas(obj, replicas);
      return obj;
    },
  );
  sendJson(c.req, c.res, 200, JSON.stringify(a.view(JSON.parse(r.json.toString('utf8')))));
}

const PATCH_TYPES: Record<string, 'merge' | 'strategic' | 'json' | 'apply'> = {
  'application/json-patch+json': 'json',
  'application/merge-patch+json': 'merge',
  // A Scale has no lists, so strategic merges as merge does, but its directives ($patch,
  // $retainKeys, $setElementOrder/...) are still checked, as kube's strategicpatch checks them.
  'application/strategic-merge-patch+json': 'strategic',
  'application/apply-patch+yaml': 'apply',
  'application/apply-patch+cbor': 'apply',
};

/** Server-side apply of a Scale: the configuration owns spec.replicas, with conflicts against the parent's replicas owners. */
function applyWrite(c: HandlerContext): ScaleWrite {
  const fm = c.req.query.get('fieldManager') ?? '';
  validateFieldManager('PatchOptions', fm, fm === '' ? [{ field: 'fieldManager', type: 'FieldValueRequired', detail: 'is required for apply patch' }] : []);
  const force = boolParam(c.req.query, 'force');
  const id = scaleIdentity(c, 'PatchOptions');
  const ctx = scaleContext();
  const config = decodeApplyBody(c, SCALE_API_VERSION, 'Scale', 'v1');
  delete config.metadata.namespace; // the Scale's namespace is the parent's
  const checked = checkFields(config, { group: 'autoscaling', version: 'v1', kind: 'Scale' }, fieldValidationMode(c.req.query, 'patch'), { required: false });
  enforceFieldCheck(checked, 'Scale', SCALE_API_VERSION, 'autoscaling', c.info.name, (c.req.warnings ??= []));
  let plan: ApplyPlan | undefined;
  return {
    build: (oldScale) => {
      delete oldScale.metadata.resourceVersion;
      const p = planApply(oldScale, structuredClone(config), id, ctx);
      plan = p.plan;
      return p.obj;
    },
    fields: (oldScale, newScale) => finishApply(oldScale, newScale, plan!, id, { force }, ctx),
  };
}

export async function handleScale(c: HandlerContext): Promise<void> {
  const a = adapterOf(c);
  switch (c.info.verb) {
    case 'get':
      sendJson(c.req, c.res, 200, JSON.stringify(a.view(await current(c))));
      return;
    case 'update': {
      const body = parseBody(c.req.body, c.req.headers['content-type']);
      const json = mediaTypeOf(c.req.headers['content-type']) === 'application/json';
      validateSubresourceBody(c.target, 'scale', 'update', c.req.query, body, json ? c.req.body : null, (c.req.warnings ??= []), c.info.name);
      checkScale(body, c.info.name);
      await writeScale(c, a, { build: () => structuredClone(body), fields: updateFields(c, 'UpdateOptions') }, 'UpdateOptions');
      return;
    }
    case 'patch': {
      const mt = mediaTypeOf(c.req.headers['content-type']);
      const accepted = Object.keys(PATCH_TYPES).filter((t) => t !== 'application/apply-patch+cbor' || features.enabled('CBORServingAndStorage'));
      const kind = PATCH_TYPES[mt];
      if (!kind || !accepted.includes(mt)) throw errors.unsupportedMediaType(accepted);
      if (kind === 'apply') {
        await writeScale(c, a, applyWrite(c), 'PatchOptions');
        return;
      }
      if (c.req.query.has('force')) {
        validateFieldManager('PatchOptions', '', [{ field: 'force', type: 'FieldValueForbidden', detail: 'may not be specified for non-apply patch' }]);
      }
      const fields = updateFields(c, 'PatchOptions');
      let patch: unknown;
      try {
        patch = parseJson(c.req.body ? c.req.body.toString('utf8') : '');
      } catch (e) {
        throw errors.badRequest(`error decoding patch: ${(e as Error).message}`);
      }
      // (as handlePatch: the engines recurse as deep as the patch nests)
      refuseDeepPatch(patch);
      if (kind === 'json' && fieldValidationMode(c.req.query, 'patch') !== 'Ignore') {
        const why = strictJsonPatchTypeError(patch);
        if (why) throw errors.badRequest(`error decoding patch: ${why}`);
      }
      await writeScale(c, a, {
        build: (scale) => {
          // The patch pins a version only when it names one.
          delete scale.metadata.resourceVersion;
          const out =
            kind === 'merge' ? mergePatch(scale, patch) : kind === 'strategic' ? strategicMergePatch(scale, patch as any, rootNode('autoscaling', 'v1', 'Scale') ?? ANY) : jsonPatch(scale, patch);
          validateSubresourceBody(c.target, 'scale', 'patch', c.req.query, out, kind !== 'json' ? c.req.body : null, (c.req.warnings ??= []), c.info.name);
          return out;
        },
        fields,
      }, 'PatchOptions');
      return;
    }
    default:
      throw errors.methodNotAllowed();
  }
}
