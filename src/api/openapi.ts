// OpenAPI documents built from the two committed catalogs: the served group-versions
// (catalog.ts) give the paths and operations, the schema catalog (schema.ts) gives the
// definitions. Nothing here carries upstream description prose.
//
//  - v3: the /openapi/v3 root index of group-versions with their hash URLs, and one document
//    per group-version with components.schemas (refs wrapped in allOf, v3 defaults,
//    x-kubernetes-* markers, x-kubernetes-group-version-kind on the kinds). kubectl explain
//    reads these; kubectl's server-side-validation probe reads the PATCH operations'
//    fieldValidation parameter.
//  - v2: one swagger 2.0 document for everything served, with definitions ($ref direct, no
//    defaults), as kube-apiserver serves at /openapi/v2.
//
// Built once at start-up on the front thread (the served catalog never changes while the
// server runs); the router keeps the bytes.
import { createHash } from 'node:crypto';
import type { Catalog } from './catalog.js';
import type { GroupVersionInfo, ResourceInfo } from './catalog-types.js';
import { definition, definitionOf, type SchemaDef, type SchemaProp } from './schema.js';

type Json = Record<string, unknown>;
type Dialect = 'v2' | 'v3';

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1.';
const QUANTITY = 'io.k8s.apimachinery.pkg.api.resource.Quantity';
const INT_OR_STRING = 'io.k8s.apimachinery.pkg.util.intstr.IntOrString';

const refTo = (d: Dialect, name: string) => (d === 'v3' ? `#/components/schemas/${name}` : `#/definitions/${name}`);

// ---------------------------------------------------------------------------------------
// Schemas

function markers(p: SchemaProp, out: Json): void {
  if (p.lt) out['x-kubernetes-list-type'] = p.lt;
  if (p.lk) out['x-kubernetes-list-map-keys'] = p.lk;
  if (p.mt) out['x-kubernetes-map-type'] = p.mt;
  if (p.ps) out['x-kubernetes-patch-strategy'] = p.ps;
  if (p.pk) out['x-kubernetes-patch-merge-key'] = p.pk;
}

/** `field`: a named property (always wrapped in v3); otherwise an items / map value schema. */
function propSchema(d: Dialect, p: SchemaProp, field = false): Json {
  const out: Json = {};
  if (p.r) {
    // v3 wraps a reference in allOf where it has siblings (a property's default and markers,
    // an item's default), as kube-openapi does; a bare map value stays a plain $ref.
    if (d === 'v3' && ((field && !p.b) || p.d !== undefined)) out.allOf = [{ $ref: refTo(d, p.r) }];
    else out.$ref = refTo(d, p.r);
  }
  if (p.t) out.type = p.t;
  if (p.f) out.format = p.f;
  if (p.i) out.items = propSchema(d, p.i);
  if (p.a) out.additionalProperties = propSchema(d, p.a);
  if (d === 'v3' && p.d !== undefined) out.default = p.d;
  markers(p, out);
  return out;
}

function defSchema(d: Dialect, name: string, def: SchemaDef): Json {
  if (name === INT_OR_STRING) {
    return d === 'v3' ? { format: 'int-or-string', oneOf: [{ type: 'integer' }, { type: 'string' }] } : { type: 'string', format: 'int-or-string' };
  }
  if (name === QUANTITY) return d === 'v3' ? { oneOf: [{ type: 'string' }, { type: 'number' }] } : { type: 'string' };
  const out: Json = {};
  if (def.p) {
    const props: Json = {};
    for (const k of Object.keys(def.p).sort()) props[k] = propSchema(d, def.p[k], true);
    out.properties = props;
  }
  if (def.req) out.required = def.req;
  if (def.t) out.type = def.t;
  if (def.f) out.format = def.f;
  if (def.gvk) out['x-kubernetes-group-version-kind'] = def.gvk.map(([group, version, kind]) => ({ group, kind, version }));
  if (def.mt) out['x-kubernetes-map-type'] = def.mt;
  if (def.u) out['x-kubernetes-unions'] = def.u;
  return out;
}

/**
 * Definitions of custom resources (their CRD's schema, as apiextensions-apiserver publishes
 * it), by definition name ("com.example.stable.v1.CronTab"), each with the built-in
 * definitions it refers to. Set by src/api/custom-resources.ts when the served CRDs change.
 */
const customDefs = new Map<string, { schema: Json; refs: string[] }>();
const customByGvk = new Map<string, string>();

export function setCustomOpenApi(defs: Array<{ gvk: [string, string, string]; name: string; schema: Json; refs: string[] }>): void {
  customDefs.clear();
  customByGvk.clear();
  for (const d of defs) {
    customDefs.set(d.name, { schema: d.schema, refs: d.refs });
    customByGvk.set(d.gvk.join('/'), d.name);
  }
}

function defOf(group: string, version: string, kind: string): string | undefined {
  return definitionOf(group, version, kind) ?? customByGvk.get(`${group}/${version}/${kind}`);
}

/** Every definition reachable from the roots, sorted by name. */
function closure(roots: Iterable<string>): string[] {
  const seen = new Set<string>();
  const stack = [...roots];
  const visit = (p: SchemaProp | undefined) => {
    if (!p) return;
    if (p.r && !seen.has(p.r)) stack.push(p.r);
    visit(p.i);
    visit(p.a);
  };
  while (stack.length) {
    const n = stack.pop()!;
    if (seen.has(n)) continue;
    const custom = customDefs.get(n);
    if (custom) {
      seen.add(n);
      stack.push(...custom.refs);
      continue;
    }
    const def = definition(n);
    if (!def) continue;
    seen.add(n);
    for (const p of Object.values(def.p ?? {})) visit(p);
  }
  return [...seen].sort();
}

function schemasOf(d: Dialect, roots: Iterable<string>): Json {
  const out: Json = {};
  for (const n of closure(roots)) {
    const custom = customDefs.get(n);
    // A custom definition is kept in the v3 form; v2 documents point into #/definitions.
    if (custom) out[n] = d === 'v3' ? custom.schema : JSON.parse(JSON.stringify(custom.schema).replaceAll('#/components/schemas/', '#/definitions/'));
    else out[n] = defSchema(d, n, definition(n)!);
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Paths

interface ParamSpec {
  name: string;
  type: string;
  in?: 'query' | 'path';
}
const q = (name: string, type = 'string'): ParamSpec => ({ name, type });
const PRETTY = q('pretty');
const WRITE = [q('dryRun'), q('fieldManager'), q('fieldValidation')];
const PATCH = [...WRITE, q('force', 'boolean')];
const DELETE = [q('dryRun'), q('gracePeriodSeconds', 'integer'), q('ignoreStoreReadErrorWithClusterBreakingPotential', 'boolean'), q('orphanDependents', 'boolean'), q('propagationPolicy')];
const LIST = [
  q('allowWatchBookmarks', 'boolean'),
  q('continue'),
  q('fieldSelector'),
  q('labelSelector'),
  q('limit', 'integer'),
  q('resourceVersion'),
  q('resourceVersionMatch'),
  q('sendInitialEvents', 'boolean'),
  q('timeoutSeconds', 'integer'),
  q('watch', 'boolean'),
];
const READ_TYPES = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf', 'application/cbor'];
const WATCH_TYPES = [...READ_TYPES, 'application/json;stream=watch', 'application/vnd.kubernetes.protobuf;stream=watch', 'application/cbor-seq'];
// deletecollection takes the delete options and the list options but the watch ones
const DELETE_COLLECTION = [...DELETE, ...LIST.filter((p) => p.name !== 'watch' && p.name !== 'allowWatchBookmarks')].sort((a, b) => (a.name < b.name ? -1 : 1));
const PATCH_TYPES = ['application/apply-patch+yaml', 'application/apply-patch+cbor', 'application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json'];
/**
 * Custom resources take no strategic merge patch (apiextensions-apiserver's patch types), and
 * their documents say so: kubectl's client-side apply picks SMP only where the PATCH
 * operation consumes it, and otherwise sends a JSON merge patch.
 */
const CUSTOM_PATCH_TYPES = PATCH_TYPES.filter((t) => t !== 'application/strategic-merge-patch+json');

function param(d: Dialect, p: ParamSpec): Json {
  const where = p.in ?? 'query';
  const base: Json = { in: where, name: p.name };
  if (where === 'path') base.required = true;
  if (d === 'v3') base.schema = { type: p.type, uniqueItems: true };
  else Object.assign(base, { type: p.type, uniqueItems: true });
  return base;
}

function gvPath(gv: { group: string; version: string }): string {
  return gv.group ? `apis/${gv.group}/${gv.version}` : `api/${gv.version}`;
}

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
/** A response that is text (logs, connect streams), not an object. */
const STRING = '#string';
const TEXT_TYPES = [...READ_TYPES, 'text/plain'];

/** The group as operation ids and tags spell it: core, apps, rbacAuthorization, flowcontrolApiserver. */
function groupWord(group: string): string {
  return group ? group.replace(/\.k8s\.io$/, '').replace(/\.(\w)/g, (_, c) => cap(c)) : 'core';
}

/** The tag of a group-version's operations: core_v1, apps_v1, rbacAuthorization_v1. */
function tagOf(gv: { group: string; version: string }): string {
  return `${groupWord(gv.group)}_${gv.version}`;
}

/** Go-style operation id: deleteAppsV1NamespacedDeployment, listCoreV1PodForAllNamespaces. */
function opId(action: string, r: ResourceInfo, suffix: string, namespaced: boolean, infix = ''): string {
  return `${action}${cap(groupWord(r.group))}${cap(r.version)}${infix}${namespaced ? 'Namespaced' : ''}${r.kind}${suffix}`;
}

const byName = (a: ParamSpec, b: ParamSpec) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

class PathBuilder {
  readonly paths: Json = {};
  readonly roots = new Set<string>();

  constructor(private d: Dialect) {
    this.roots.add(META + 'APIResourceList');
  }

  private body(def: string | undefined, types: string[]): Json | undefined {
    if (!def) return undefined;
    let schema: Json;
    if (def === STRING) schema = { type: 'string' };
    else {
      this.roots.add(def);
      schema = { $ref: refTo(this.d, def) };
    }
    if (this.d === 'v2') return { schema };
    return { content: Object.fromEntries(types.map((t) => [t, { schema }])) };
  }

  /**
   * One operation. Its query parameters are kept aside (`_params`) until the path is
   * complete: parameters every operation of a path shares go to the path (see path()).
   */
  private op(tag: string, action: string, id: string, gvk: [string, string, string] | undefined, params: ParamSpec[], response: string | undefined, request?: { def: string | undefined; types: string[]; optional?: boolean }, codes = ['200'], produces = READ_TYPES): Json {
    const o: Json = { operationId: id };
    if (request && this.d === 'v3') o.requestBody = { ...this.body(request.def, request.types), ...(request.optional ? {} : { required: true }) };
    const responses: Json = {};
    for (const c of codes) {
      const b = this.body(response, produces);
      responses[c] = this.d === 'v3' ? { ...(b ?? {}), description: c === '201' ? 'Created' : c === '202' ? 'Accepted' : 'OK' } : { description: c === '201' ? 'Created' : c === '202' ? 'Accepted' : 'OK', ...(b ?? {}) };
    }
    responses['401'] = { description: 'Unauthorized' };
    o.responses = responses;
    if (this.d === 'v2') {
      o.consumes = request ? request.types : ['*/*'];
      o.produces = produces;
      o.schemes = ['https'];
    }
    o.tags = [tag];
    if (action) o['x-kubernetes-action'] = action;
    if (gvk) o['x-kubernetes-group-version-kind'] = { group: gvk[0], kind: gvk[2], version: gvk[1] };
    Object.defineProperty(o, '_params', { value: [...params].sort(byName), enumerable: false });
    if (request && this.d === 'v2') Object.defineProperty(o, '_body', { value: { in: 'body', name: 'body', ...(request.optional ? {} : { required: true }), ...(this.body(request.def, request.types) ?? {}) }, enumerable: false });
    return o;
  }

  /**
   * A path of operations, as go-restful's OpenAPI builder lays it out: the parameters all
   * operations share (the path parameters, pretty, and for a one-operation path all of its
   * parameters) are the path's, sorted by name; the rest stay on each operation.
   */
  private path(at: string, ops: Json, pathParams: ParamSpec[], pretty = true): void {
    const list = Object.values(ops) as Json[];
    if (!list.length) return;
    const names = (o: Json) => new Set((o._params as ParamSpec[]).map((p) => p.name));
    const shared = list.slice(1).reduce((acc: Set<string>, o) => new Set([...acc].filter((n) => names(o).has(n))), names(list[0]));
    const pathLevel = [...pathParams, ...(pretty ? [PRETTY] : []), ...(list[0]._params as ParamSpec[]).filter((p) => shared.has(p.name))].sort(byName);
    for (const o of list) {
      const own = (o._params as ParamSpec[]).filter((p) => !shared.has(p.name)).map((p) => param(this.d, p));
      if (o._body) own.unshift(o._body as Json);
      if (own.length) o.parameters = own;
    }
    this.paths[at] = { ...ops, parameters: pathLevel.map((p) => param(this.d, p)) };
  }

  add(gv: GroupVersionInfo): void {
    const base = '/' + gvPath(gv);
    const tag = tagOf(gv);
    const nsParam: ParamSpec = { name: 'namespace', type: 'string', in: 'path' };
    const nameParam: ParamSpec = { name: 'name', type: 'string', in: 'path' };
    for (const r of gv.resources) {
      const kindDef = defOf(r.group, r.version, r.kind);
      const listDef = defOf(r.group, r.version, r.listKind);
      const gvk: [string, string, string] = [r.group, r.version, r.kind];
      const ns = r.namespaced;
      const scope = ns ? `namespaces/{namespace}/${r.resource}` : r.resource;
      const coll = `${base}/${scope}`;
      const item = `${coll}/{name}`;
      const collParams = ns ? [nsParam] : [];
      const itemParams = ns ? [nameParam, nsParam] : [nameParam];
      const c: Json = {};
      const i: Json = {};
      const write = { def: kindDef, types: ['*/*'] };
      const deleteBody = { def: META + 'DeleteOptions', types: ['*/*'], optional: true };
      if (r.verbs.includes('deletecollection')) c.delete = this.op(tag, 'deletecollection', opId('delete', r, '', ns, 'Collection'), gvk, DELETE_COLLECTION, META + 'Status', deleteBody);
      if (r.verbs.includes('list')) c.get = this.op(tag, 'list', opId('list', r, '', ns), gvk, LIST, listDef, undefined, ['200'], WATCH_TYPES);
      if (r.verbs.includes('create')) c.post = this.op(tag, 'post', opId('create', r, '', ns), gvk, WRITE, kindDef, write, ['200', '201', '202']);
      if (r.verbs.includes('delete')) i.delete = this.op(tag, 'delete', opId('delete', r, '', ns), gvk, DELETE, r.deleteReturnsObject ? kindDef : META + 'Status', deleteBody, ['200', '202']);
      if (r.verbs.includes('get')) i.get = this.op(tag, 'get', opId('read', r, '', ns), gvk, [], kindDef);
      if (r.verbs.includes('patch')) i.patch = this.op(tag, 'patch', opId('patch', r, '', ns), gvk, PATCH, kindDef, { def: META + 'Patch', types: r.custom ? CUSTOM_PATCH_TYPES : PATCH_TYPES }, ['200', '201']);
      if (r.verbs.includes('update')) i.put = this.op(tag, 'put', opId('replace', r, '', ns), gvk, WRITE, kindDef, write, ['200', '201']);
      this.path(coll, c, collParams);
      this.path(item, i, itemParams);
      if (ns && r.verbs.includes('list')) this.path(`${base}/${r.resource}`, { get: this.op(tag, 'list', opId('list', r, 'ForAllNamespaces', false), gvk, LIST, listDef, undefined, ['200'], WATCH_TYPES) }, []);
      // The deprecated /watch/ paths, still in kube's documents (and served): WatchEvents.
      if (r.verbs.includes('watch')) {
        const watch = (action: string, id: string) => ({ get: this.op(tag, action, id, gvk, LIST, META + 'WatchEvent', undefined, ['200'], WATCH_TYPES) });
        this.path(`${base}/watch/${scope}`, watch('watchlist', opId('watch', r, 'List', ns)), collParams);
        this.path(`${base}/watch/${scope}/{name}`, watch('watch', opId('watch', r, '', ns)), itemParams);
        if (ns) this.path(`${base}/watch/${r.resource}`, watch('watchlist', opId('watch', r, 'ListForAllNamespaces', false)), []);
      }
      for (const s of r.subresources) {
        const p: Json = {};
        const sg = s.group ?? r.group;
        const sv = s.version ?? r.version;
        const sgvk: [string, string, string] = [sg, sv, s.kind];
        const sdef = defOf(sg, sv, s.kind);
        const sub = s.name.charAt(0).toUpperCase() + s.name.slice(1);
        const options = (s.options ?? []).map(([name, type]) => ({ name, type }));
        if (s.connect) {
          // Streams (exec, attach, portforward) and proxies: one connect operation per HTTP
          // method, the options as query parameters, the answer whatever the stream carries.
          const connect = (suffix: string) => {
            const ops: Json = {};
            for (const m of s.connect!) {
              const o = this.op(tag, 'connect', opId(`connect`, r, `${sub}${suffix}`, ns, cap(m.toLowerCase())), sgvk, options, STRING, undefined, ['200'], ['*/*']);
              if (this.d === 'v2') o.consumes = ['*/*'];
              ops[m.toLowerCase()] = o;
            }
            return ops;
          };
          this.path(`${item}/${s.name}`, connect(''), itemParams, false);
          if (s.withPath) this.path(`${item}/${s.name}/{path}`, connect('WithPath'), [...itemParams, { name: 'path', type: 'string', in: 'path' }], false);
          continue;
        }
        if (s.text) {
          this.path(`${item}/${s.name}`, { get: this.op(tag, 'get', opId('read', r, sub, ns), sgvk, options, STRING, undefined, ['200'], TEXT_TYPES) }, itemParams);
          continue;
        }
        if (s.verbs.includes('get')) p.get = this.op(tag, 'get', opId('read', r, sub, ns), sgvk, [], sdef);
        if (s.verbs.includes('patch')) p.patch = this.op(tag, 'patch', opId('patch', r, sub, ns), sgvk, PATCH, sdef, { def: META + 'Patch', types: r.custom ? CUSTOM_PATCH_TYPES : PATCH_TYPES }, ['200', '201']);
        if (s.verbs.includes('create')) p.post = this.op(tag, 'post', opId('create', r, sub, ns), sgvk, WRITE, sdef, { def: sdef, types: ['*/*'] }, ['200', '201', '202']);
        if (s.verbs.includes('update')) p.put = this.op(tag, 'put', opId('replace', r, sub, ns), sgvk, WRITE, sdef, { def: sdef, types: ['*/*'] }, ['200', '201']);
        this.path(`${item}/${s.name}`, p, itemParams);
      }
    }
    if (gv.resources.some((r) => r.verbs.includes('watch'))) this.roots.add(META + 'WatchEvent');
    // The group-version's own discovery document.
    const discovery = this.op(tag, '', `get${cap(groupWord(gv.group))}${cap(gv.version)}APIResources`, undefined, [], META + 'APIResourceList');
    if (this.d === 'v2') discovery.consumes = READ_TYPES;
    this.paths[`${base}/`] = { get: discovery };
  }
}

// ---------------------------------------------------------------------------------------
// Documents

export interface OpenApiDocs {
  /** the /openapi/v3 index */
  root: string;
  /** "api/v1" or "apis/{g}/{v}" -> { body, hash } */
  groupVersions: Map<string, { body: string; hash: string }>;
}

const hashOf = (body: string) => createHash('sha512').update(body).digest('hex').toUpperCase();

export function buildOpenApiV3(catalog: Catalog): OpenApiDocs {
  const groupVersions = new Map<string, { body: string; hash: string }>();
  const index: Record<string, { serverRelativeURL: string }> = {};
  for (const gv of catalog.servedGroupVersions()) {
    const b = new PathBuilder('v3');
    b.add(gv);
    const body = JSON.stringify({
      openapi: '3.0.0',
      info: { title: 'Kubernetes', version: 'unversioned' },
      paths: b.paths,
      components: {
        schemas: schemasOf('v3', b.roots),
        securitySchemes: { BearerToken: { in: 'header', name: 'authorization', type: 'apiKey' } },
      },
    });
    const hash = hashOf(body);
    const key = gvPath(gv);
    groupVersions.set(key, { body, hash });
    index[key] = { serverRelativeURL: `/openapi/v3/${key}?hash=${hash}` };
  }
  return { root: JSON.stringify({ paths: index }), groupVersions };
}

/** The swagger 2.0 document of everything served, and its hash (the ETag). */
export function buildOpenApiV2(catalog: Catalog): { body: string; hash: string } {
  const b = new PathBuilder('v2');
  for (const gv of catalog.servedGroupVersions()) b.add(gv);
  const body = JSON.stringify({
    swagger: '2.0',
    info: { title: 'Kubernetes', version: 'unversioned' },
    paths: b.paths,
    definitions: schemasOf('v2', b.roots),
    securityDefinitions: { BearerToken: { in: 'header', name: 'authorization', type: 'apiKey' } },
    security: [{ BearerToken: [] }],
  });
  return { body, hash: hashOf(body) };
}
