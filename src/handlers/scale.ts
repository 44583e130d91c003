// The scale subresource (autoscaling/v1 Scale) of deployments, replicasets, statefulsets
// and replicationcontrollers: get, update and patch, as views of the parent's
// spec.replicas, status.replicas and selector.
import { sendJson } from '../http/respond.js';
import { errors } from '../errors.js';
import { dryRunParam } from '../request/query.js';
import { mediaTypeOf, parseBody } from '../codec/decode.js';
import { validateSubresourceBody } from '../registry/field-validation.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import { jsonPatch, mergePatch } from '../registry/patch.js';
import { mapSelectorString, selectorString } from '../registry/label-selector.js';
import type { HandlerContext } from './context.js';
import { handleCustomScale } from './custom-scale.js';

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

function isRc(c: HandlerContext): boolean {
  return c.target.gr === 'replicationcontrollers';
}

async function current(c: HandlerContext): Promise<any> {
  const e = await c.store.get(c.target, c.info.namespace, c.info.name, '');
  return entryObject(e);
}

/** Writes a new Scale to the parent: spec.replicas only, pinned to the Scale's resourceVersion if it has one. */
async function writeScale(c: HandlerContext, scale: any): Promise<void> {
  if (scale === null || typeof scale !== 'object' || Array.isArray(scale)) throw errors.badRequest('the body must be a Scale object');
  const name = c.info.name;
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
  const rv: string = scale.metadata?.resourceVersion ?? '';
  const r = await c.store.guaranteedUpdate(c.target, c.info.namespace, name, { dryRun: dryRunParam(c.req.query), subresource: '' }, (obj) => {
    if (rv) obj.metadata.resourceVersion = rv;
    else delete obj.metadata.resourceVersion;
    obj.spec = { ...(obj.spec ?? {}), replicas };
    return obj;
  });
  sendJson(c.req, c.res, 200, JSON.stringify(scaleOf(JSON.parse(r.json.toString('utf8')), isRc(c))));
}

export async function handleScale(c: HandlerContext): Promise<void> {
  const custom = c.target.info.custom?.scale;
  if (custom) return handleCustomScale(c, custom);
  switch (c.info.verb) {
    case 'get':
      sendJson(c.req, c.res, 200, JSON.stringify(scaleOf(await current(c), isRc(c))));
      return;
    case 'update': {
      const body = parseBody(c.req.body, c.req.headers['content-type']);
      const json = mediaTypeOf(c.req.headers['content-type']) === 'application/json';
      validateSubresourceBody(c.target, 'scale', 'update', c.req.query, body, json ? c.req.body : null, (c.req.warnings ??= []), c.info.name);
      await writeScale(c, body);
      return;
    }
    case 'patch': {
      const mt = mediaTypeOf(c.req.headers['content-type']);
      const kinds: Record<string, 'merge' | 'json'> = {
        'application/merge-patch+json': 'merge',
        'application/strategic-merge-patch+json': 'merge', // a Scale has no lists: strategic is merge
        'application/json-patch+json': 'json',
      };
      const kind = kinds[mt];
      if (!kind) throw errors.unsupportedMediaType(Object.keys(kinds));
      let patch: unknown;
      try {
        patch = JSON.parse(c.req.body ? c.req.body.toString('utf8') : '');
      } catch (e) {
        throw errors.badRequest(`error decoding patch: ${(e as Error).message}`);
      }
      const scale = scaleOf(await current(c), isRc(c));
      delete scale.metadata.resourceVersion;
      const out = kind === 'merge' ? mergePatch(scale, patch) : jsonPatch(scale, patch);
      validateSubresourceBody(c.target, 'scale', 'patch', c.req.query, out, kind === 'merge' ? c.req.body : null, (c.req.warnings ??= []), c.info.name);
      await writeScale(c, out);
      return;
    }
    default:
      throw errors.methodNotAllowed();
  }
}
