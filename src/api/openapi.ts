// OpenAPI v3 documents built from the catalog: the root index of group-versions and, per
// group-version, the paths with their operations, GVK extensions and query parameters.
// kubectl reads the PATCH operations' parameters to learn that the server validates fields
// itself (fieldValidation), and the schemas for explain and client-side apply. This first
// cut carries the paths; the component schemas come with the full API-surface issue.
import { createHash } from 'node:crypto';
import type { Catalog } from './catalog.js';
import type { GroupVersionInfo, ResourceInfo } from './catalog-types.js';

const queryParam = (name: string, type = 'string') => ({ name, in: 'query', schema: { type, uniqueItems: true } });

const WRITE_PARAMS = [queryParam('dryRun'), queryParam('fieldManager'), queryParam('fieldValidation'), queryParam('pretty')];
const PATCH_PARAMS = [...WRITE_PARAMS, queryParam('force', 'boolean')];
const LIST_PARAMS = ['allowWatchBookmarks', 'continue', 'fieldSelector', 'labelSelector', 'limit', 'resourceVersion', 'resourceVersionMatch', 'sendInitialEvents', 'timeoutSeconds', 'watch'].map((n) =>
  queryParam(n, n === 'limit' || n === 'timeoutSeconds' ? 'integer' : n === 'watch' || n === 'allowWatchBookmarks' || n === 'sendInitialEvents' ? 'boolean' : 'string'),
);

function gvPath(gv: GroupVersionInfo): string {
  return gv.group ? `apis/${gv.group}/${gv.version}` : `api/${gv.version}`;
}

function op(r: ResourceInfo, action: string, params: object[], kind = r.kind, group = r.group, version = r.version) {
  return {
    operationId: `${action}${kind}`,
    parameters: params,
    responses: { '200': { description: 'OK' } },
    'x-kubernetes-action': action,
    'x-kubernetes-group-version-kind': { group, version, kind },
  };
}

function pathsOf(gv: GroupVersionInfo): Record<string, object> {
  const base = '/' + gvPath(gv);
  const paths: Record<string, object> = {};
  for (const r of gv.resources) {
    const coll = r.namespaced ? `${base}/namespaces/{namespace}/${r.resource}` : `${base}/${r.resource}`;
    const item = `${coll}/{name}`;
    const c: Record<string, object> = {};
    const i: Record<string, object> = {};
    if (r.verbs.includes('list')) c.get = op(r, 'list', LIST_PARAMS);
    if (r.verbs.includes('create')) c.post = op(r, 'post', WRITE_PARAMS);
    if (r.verbs.includes('deletecollection')) c.delete = op(r, 'deletecollection', [queryParam('dryRun'), queryParam('propagationPolicy')]);
    if (r.verbs.includes('get')) i.get = op(r, 'get', []);
    if (r.verbs.includes('update')) i.put = op(r, 'put', WRITE_PARAMS);
    if (r.verbs.includes('patch')) i.patch = op(r, 'patch', PATCH_PARAMS);
    if (r.verbs.includes('delete')) i.delete = op(r, 'delete', [queryParam('dryRun'), queryParam('gracePeriodSeconds', 'integer'), queryParam('propagationPolicy')]);
    if (Object.keys(c).length) paths[coll] = c;
    if (Object.keys(i).length) paths[item] = i;
    for (const s of r.subresources) {
      const p: Record<string, object> = {};
      const g = s.group ?? r.group;
      const v = s.version ?? r.version;
      if (s.verbs.includes('get')) p.get = op(r, 'get', [], s.kind, g, v);
      if (s.verbs.includes('update')) p.put = op(r, 'put', WRITE_PARAMS, s.kind, g, v);
      if (s.verbs.includes('patch')) p.patch = op(r, 'patch', PATCH_PARAMS, s.kind, g, v);
      if (s.verbs.includes('create')) p.post = op(r, 'post', WRITE_PARAMS, s.kind, g, v);
      if (Object.keys(p).length) paths[`${item}/${s.name}`] = p;
    }
  }
  return paths;
}

export interface OpenApiDocs {
  /** the /openapi/v3 index */
  root: string;
  /** "api/v1" or "apis/{g}/{v}" -> { body, hash } */
  groupVersions: Map<string, { body: string; hash: string }>;
}

export function buildOpenApiV3(catalog: Catalog): OpenApiDocs {
  const groupVersions = new Map<string, { body: string; hash: string }>();
  const index: Record<string, { serverRelativeURL: string }> = {};
  for (const gv of catalog.servedGroupVersions()) {
    const body = JSON.stringify({
      openapi: '3.0.0',
      info: { title: 'Kubernetes', version: 'v1.33.0' },
      paths: pathsOf(gv),
      components: { schemas: {} },
    });
    const hash = createHash('sha512').update(body).digest('hex').toUpperCase().slice(0, 128);
    const key = gvPath(gv);
    groupVersions.set(key, { body, hash });
    index[key] = { serverRelativeURL: `/openapi/v3/${key}?hash=${hash}` };
  }
  return { root: JSON.stringify({ paths: index }), groupVersions };
}
