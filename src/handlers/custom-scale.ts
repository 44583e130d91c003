// The scale subresource of a custom resource (autoscaling/v1 Scale), as the CRD's
// subresources.scale maps it: spec.replicas <-> specReplicasPath, status.replicas from
// statusReplicasPath, status.selector from labelSelectorPath (a string, when set).
import { sendJson } from '../http/respond.js';
import { errors } from '../errors.js';
import { dryRunParam } from '../request/query.js';
import { mediaTypeOf, parseBody } from '../codec/decode.js';
import { validateSubresourceBody } from '../registry/field-validation.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import { jsonPatch, mergePatch } from '../registry/patch.js';
import type { HandlerContext } from './context.js';
import type { ScaleSpec } from '../api/custom-resources.js';

function segs(path: string): string[] {
  return path.replace(/^\./, '').split('.');
}

function read(obj: any, path: string | undefined): unknown {
  if (!path) return undefined;
  return segs(path).reduce<any>((o, k) => (o && typeof o === 'object' ? o[k] : undefined), obj);
}

function write(obj: any, path: string, v: unknown): void {
  const s = segs(path);
  let o = obj;
  for (const k of s.slice(0, -1)) {
    if (o[k] === null || typeof o[k] !== 'object' || Array.isArray(o[k])) o[k] = {};
    o = o[k];
  }
  o[s[s.length - 1]] = v;
}

export function customScaleOf(obj: any, spec: ScaleSpec): any {
  const m = obj.metadata;
  const sel = read(obj, spec.labelSelectorPath);
  const status: Record<string, unknown> = { replicas: Number(read(obj, spec.statusReplicasPath) ?? 0) || 0 };
  if (typeof sel === 'string' && sel) status.selector = sel;
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion, creationTimestamp: m.creationTimestamp },
    spec: { replicas: Number(read(obj, spec.specReplicasPath) ?? 0) || 0 },
    status,
  };
}

async function writeScale(c: HandlerContext, spec: ScaleSpec, scale: any): Promise<void> {
  if (scale === null || typeof scale !== 'object' || Array.isArray(scale)) throw errors.badRequest('the body must be a Scale object');
  const name = c.info.name;
  if (scale.metadata?.name !== undefined && scale.metadata.name !== name) {
    throw errors.badRequest(`the name of the object (${scale.metadata.name}) does not match the name on the URL (${name})`);
  }
  const replicas = scale.spec?.replicas ?? 0;
  if (!Number.isInteger(replicas) || replicas < 0) {
    throw errors.invalid('Scale', 'autoscaling', name, [{ field: 'spec.replicas', type: 'FieldValueInvalid', value: replicas, detail: 'must be greater than or equal to 0' }]);
  }
  const rv: string = scale.metadata?.resourceVersion ?? '';
  const r = await c.store.guaranteedUpdate(c.target, c.info.namespace, name, { dryRun: dryRunParam(c.req.query), subresource: '' }, (obj) => {
    if (rv) obj.metadata.resourceVersion = rv;
    else delete obj.metadata.resourceVersion;
    write(obj, spec.specReplicasPath, replicas);
    return obj;
  });
  sendJson(c.req, c.res, 200, JSON.stringify(customScaleOf(JSON.parse(r.json.toString('utf8')), spec)));
}

export async function handleCustomScale(c: HandlerContext, spec: ScaleSpec): Promise<void> {
  const current = async () => entryObject(await c.store.get(c.target, c.info.namespace, c.info.name, ''));
  switch (c.info.verb) {
    case 'get':
      sendJson(c.req, c.res, 200, JSON.stringify(customScaleOf(await current(), spec)));
      return;
    case 'update': {
      const body = parseBody(c.req.body, c.req.headers['content-type']);
      const json = mediaTypeOf(c.req.headers['content-type']) === 'application/json';
      validateSubresourceBody(c.target, 'scale', 'update', c.req.query, body, json ? c.req.body : null, (c.req.warnings ??= []), c.info.name);
      await writeScale(c, spec, body);
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
      const scale = customScaleOf(await current(), spec);
      delete scale.metadata.resourceVersion;
      const out = kind === 'merge' ? mergePatch(scale, patch) : jsonPatch(scale, patch);
      validateSubresourceBody(c.target, 'scale', 'patch', c.req.query, out, kind === 'merge' ? c.req.body : null, (c.req.warnings ??= []), c.info.name);
      await writeScale(c, spec, out);
      return;
    }
    default:
      throw errors.methodNotAllowed();
  }
}
