#!/usr/bin/env node
// Compiles the Kubernetes 1.33 API facts in ../shared/k8s-api-1.33 into the project's own
// catalog, src/api/catalog-data.ts: group-versions, resources, kinds, scope, verbs,
// subresources, short names, categories, storage version hashes, which group-versions
// a default cluster serves, and from the OpenAPI documents which deletes answer with the
// object and which subresources are connect or text ones. Facts only; no upstream
// description text is carried over.
//
//   node scripts/gen-catalog.mjs [path-to-k8s-api-1.33]
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = resolve(process.argv[2] ?? process.env.KUBESHARD_API_DATA ?? join(root, '..', 'shared', 'k8s-api-1.33'));
const discovery = JSON.parse(readFileSync(join(dataDir, 'discovery', 'derived-discovery-1.33.json'), 'utf8'));

// Where kube-apiserver 1.33 stores a resource served in more than one version, by
// group/resource: [storage group, storage version, storage resource]. Every other resource
// is stored in the one version it is served in. kube keeps one storage per group-resource
// (its DefaultResourceEncoding, the ResourceEncodingOverrides of
// pkg/kubeapiserver/default_storage_factory_builder.go, which keep a new version out of
// storage for a release, and its cohabitating resources: events.k8s.io events live in the
// core events key space, encoded as core/v1 Events).
const STORAGE = {
  'autoscaling/horizontalpodautoscalers': ['autoscaling', 'v2'],
  'events.k8s.io/events': ['', 'v1', 'events'],
  'admissionregistration.k8s.io/validatingadmissionpolicies': ['admissionregistration.k8s.io', 'v1'],
  'admissionregistration.k8s.io/validatingadmissionpolicybindings': ['admissionregistration.k8s.io', 'v1'],
  'coordination.k8s.io/leasecandidates': ['coordination.k8s.io', 'v1alpha2'],
  'certificates.k8s.io/clustertrustbundles': ['certificates.k8s.io', 'v1alpha1'],
  'networking.k8s.io/ipaddresses': ['networking.k8s.io', 'v1beta1'],
  'networking.k8s.io/servicecidrs': ['networking.k8s.io', 'v1beta1'],
  'resource.k8s.io/deviceclasses': ['resource.k8s.io', 'v1beta1'],
  'resource.k8s.io/resourceclaims': ['resource.k8s.io', 'v1beta1'],
  'resource.k8s.io/resourceclaimtemplates': ['resource.k8s.io', 'v1beta1'],
  'resource.k8s.io/resourceslices': ['resource.k8s.io', 'v1beta1'],
  'storage.k8s.io/volumeattributesclasses': ['storage.k8s.io', 'v1beta1'],
};

function stabilityOf(version) {
  if (/^v\d+$/.test(version)) return 'ga';
  if (/^v\d+beta\d+$/.test(version)) return 'beta';
  return 'alpha';
}

// A default 1.33 cluster serves GA group-versions only: every beta it still has was
// introduced after 1.22 and so is off by default (spec 9.2), and alphas are always off.
function enabledByDefault(group, version) {
  return stabilityOf(version) === 'ga';
}

// Deprecation (kube's prerelease-lifecycle data, spec 7.5 and 9.4), as of release 1.33.
// GA kinds are deprecated when their OpenAPI definition says so (only the release number is
// read from it); a replacement is named where kube names one. Pre-release kinds follow
// prerelease-lifecycle-gen: deprecated three minors after the release that introduced them
// (the `introduced` tags below), and betas are removed three minors after that.
const CURRENT_MINOR = 33;
const swagger = JSON.parse(readFileSync(join(dataDir, 'openapi-v2', 'swagger.json'), 'utf8'));
const GA_DEPRECATED = new Map();
for (const def of Object.values(swagger.definitions)) {
  const gvk = def['x-kubernetes-group-version-kind']?.[0];
  const m = /deprecated in v1\.(\d+)\+/i.exec(def.description ?? '');
  if (gvk && m && /^v\d+$/.test(gvk.version)) GA_DEPRECATED.set(`${gvk.group}/${gvk.version}/${gvk.kind}`, Number(m[1]));
}
const REPLACEMENT = {
  '/v1/Endpoints': 'discovery.k8s.io/v1 EndpointSlice',
};
const INTRODUCED = {
  'admissionregistration.k8s.io/v1alpha1': 32,
  'admissionregistration.k8s.io/v1beta1': 28,
  'certificates.k8s.io/v1alpha1': 26,
  'certificates.k8s.io/v1beta1': 33,
  'coordination.k8s.io/v1alpha2': 32,
  'coordination.k8s.io/v1beta1': 33,
  'internal.apiserver.k8s.io/v1alpha1': 20,
  'networking.k8s.io/v1beta1': 31,
  'resource.k8s.io/v1alpha3': 31,
  'resource.k8s.io/v1beta1': 32,
  'resource.k8s.io/v1beta2': 33,
  'storage.k8s.io/v1alpha1': 29,
  'storage.k8s.io/v1beta1': 31,
  'storagemigration.k8s.io/v1alpha1': 30,
};
const INTRODUCED_KIND = {
  'resource.k8s.io/v1alpha3/DeviceTaintRule': 33,
};
function deprecationOf(group, version, kind) {
  const stability = stabilityOf(version);
  if (stability === 'ga') {
    const minor = GA_DEPRECATED.get(`${group}/${version}/${kind}`);
    if (minor === undefined || minor > CURRENT_MINOR) return undefined;
    const d = { deprecated: `1.${minor}` };
    const r = REPLACEMENT[`${group}/${version}/${kind}`];
    if (r) d.replacement = r;
    return d;
  }
  const introduced = INTRODUCED_KIND[`${group}/${version}/${kind}`] ?? INTRODUCED[`${group}/${version}`];
  if (introduced === undefined) throw new Error(`${group}/${version}: no prerelease-lifecycle introduced release`);
  const deprecated = introduced + 3;
  if (deprecated > CURRENT_MINOR) return undefined;
  const d = { deprecated: `1.${deprecated}` };
  if (stability === 'beta') d.removed = `1.${deprecated + 3}`;
  return d;
}

function hashOf(group, version, kind) {
  return createHash('sha256').update(`${group}/${version}/${kind}`).digest().subarray(0, 8).toString('base64');
}

// Facts the OpenAPI v3 documents hold about operations: which kinds' DELETE answers with
// the object rather than a Status (kube's ReturnDeletedObject), and the subresources that
// are not objects - connect ones (exec, attach, portforward, proxy: their HTTP methods,
// query options, and a /{path} form) and text ones (log) - with their query options.
function openApiDoc(group, version) {
  try {
    return JSON.parse(readFileSync(join(dataDir, 'openapi-v3', group ? `apis/${group}/${version}.json` : `api/${version}.json`), 'utf8'));
  } catch {
    return undefined;
  }
}
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch'];
function queryOptions(pathItem) {
  return (pathItem.parameters ?? []).filter((q) => q.in === 'query' && q.name !== 'pretty').map((q) => [q.name, q.schema?.type ?? 'string']);
}

const out = [];
for (const gv of discovery.groupVersions) {
  const [group, version] = gv.groupVersion.includes('/') ? gv.groupVersion.split('/') : ['', gv.groupVersion];
  const doc = openApiDoc(group, version);
  const itemPath = (r) => `/${group ? `apis/${group}` : 'api'}/${version}/${r.namespaced ? 'namespaces/{namespace}/' : ''}${r.name.split('/')[0]}/{name}`;
  const byName = new Map();
  for (const r of gv.resources) {
    if (!r.name.includes('/')) {
      const [storageGroup, storageVersion, storageResource] = STORAGE[`${group}/${r.name}`] ?? [group, version, r.name];
      const info = {
        group,
        version,
        resource: r.name,
        kind: r.kind,
        listKind: r.kind + 'List',
        namespaced: !!r.namespaced,
        verbs: [...(r.verbs ?? [])],
        singularName: r.singularName ?? r.kind.toLowerCase(),
        shortNames: [...(r.shortNames ?? [])],
        categories: [...(r.categories ?? [])],
        subresources: [],
        // Only stored kinds have a storage version: the create-only virtual ones (bindings, reviews) have none.
        storageVersionHash: r.verbs?.includes('get') || r.verbs?.includes('list') ? hashOf(storageGroup, storageVersion, r.kind) : '',
      };
      // Only where it differs from the served group-version (and resource).
      if (storageGroup !== group || storageVersion !== version) info.storageVersion = storageGroup ? `${storageGroup}/${storageVersion}` : storageVersion;
      if (storageGroup !== group || (storageResource ?? r.name) !== r.name) info.storageResource = storageGroup ? `${storageResource ?? r.name}.${storageGroup}` : storageResource ?? r.name;
      byName.set(r.name, info);
      const dep = deprecationOf(group, version, r.kind);
      if (dep) info.deprecation = dep;
      const del = doc?.paths?.[itemPath(r)]?.delete?.responses?.['200']?.content?.['application/json']?.schema?.$ref;
      if (del && !del.endsWith('.meta.v1.Status')) byName.get(r.name).deleteReturnsObject = true;
    }
  }
  for (const r of gv.resources) {
    if (!r.name.includes('/')) continue;
    const [parent, sub] = r.name.split('/');
    const p = byName.get(parent);
    if (!p) throw new Error(`${gv.groupVersion}: subresource ${r.name} has no parent`);
    const s = { name: sub, kind: r.kind, verbs: [...(r.verbs ?? [])] };
    if (r.group !== undefined) s.group = r.group;
    if (r.version !== undefined) s.version = r.version;
    const item = doc?.paths?.[`${itemPath(r)}/${sub}`];
    const ops = item ? METHODS.filter((m) => item[m]) : [];
    if (ops.some((m) => item[m]['x-kubernetes-action'] === 'connect')) {
      s.connect = ops.map((m) => m.toUpperCase());
      s.options = queryOptions(item);
      if (doc.paths[`${itemPath(r)}/${sub}/{path}`]) s.withPath = true;
    } else if (item?.get?.responses?.['200']?.content?.['text/plain']) {
      s.text = true;
      s.options = queryOptions(item);
    }
    p.subresources.push(s);
  }
  out.push({ group, version, groupVersion: gv.groupVersion, enabledByDefault: enabledByDefault(group, version), resources: [...byName.values()] });
}

const lines = [
  '// Generated by scripts/gen-catalog.mjs from the Kubernetes 1.33 API definitions. Do not edit.',
  "import type { GroupVersionInfo } from './catalog-types.js';",
  '',
  'export const catalogData: GroupVersionInfo[] = [',
];
for (const gv of out) {
  lines.push(`  { group: ${JSON.stringify(gv.group)}, version: ${JSON.stringify(gv.version)}, groupVersion: ${JSON.stringify(gv.groupVersion)}, enabledByDefault: ${gv.enabledByDefault}, resources: [`);
  for (const r of gv.resources) lines.push(`    ${JSON.stringify(r)},`);
  lines.push('  ] },');
}
lines.push('];', '');
writeFileSync(join(root, 'src', 'api', 'catalog-data.ts'), lines.join('\n'));
console.log(`wrote src/api/catalog-data.ts: ${out.length} group-versions, ${out.reduce((n, g) => n + g.resources.length, 0)} resources`);
