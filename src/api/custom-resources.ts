// The custom resources the served CustomResourceDefinitions define, as the catalog, the
// discovery documents and OpenAPI see them (apiextensions-apiserver's crdHandler, discovery
// controller and OpenAPI controller, folded into one rebuild per change of the served set).
//
// Thread ownership: the front thread. The CRD controller (src/registry/crd/crd-controller.ts)
// calls publish() with the established CRDs; everything here is rebuilt from them.
import { createHash } from 'node:crypto';
import type { Catalog } from './catalog.js';
import type { GroupVersionInfo, ResourceInfo, SubresourceInfo } from './catalog-types.js';
import { setCustomOpenApi } from './openapi.js';
import { nodeOfProp, type TypeNode } from '../registry/schema-walk.js';
import { typeNode, type JSONSchemaProps } from '../registry/crd/structural.js';
import { publishSelectableFields } from '../registry/crd/selectable-fields.js';
import { retainConverters, type ConversionSpec, type ConverterKey } from '../registry/crd/conversion-webhook.js';

/** The verbs of a custom resource, in the order kube's CRD discovery lists them. */
export const CUSTOM_VERBS = ['delete', 'deletecollection', 'get', 'list', 'patch', 'create', 'update', 'watch'];
const SUB_VERBS = ['get', 'patch', 'update'];

export interface ScaleSpec {
  specReplicasPath: string;
  statusReplicasPath: string;
  labelSelectorPath?: string;
}

export interface PrinterColumn {
  name: string;
  type: string;
  format?: string;
  description?: string;
  priority?: number;
  jsonPath: string;
}

/** One served version of one CRD. */
export interface CustomVersion {
  crdName: string;
  group: string;
  version: string;
  plural: string;
  kind: string;
  listKind: string;
  namespaced: boolean;
  storageVersion: string;
  schema?: JSONSchemaProps;
  status: boolean;
  scale?: ScaleSpec;
  columns: PrinterColumn[];
  /** deletion under way: reads and deletes are served, creates refused */
  terminating: boolean;
  /** selectableFields[].jsonPath (src/registry/crd/selectable-fields.ts) */
  selectableFields?: string[];
  /** spec.conversion (strategy None or Webhook), for src/registry/conversion.ts */
  conversion?: ConversionSpec;
}

function isObj(v: unknown): v is Record<string, any> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function storageVersionHash(group: string, version: string, kind: string): string {
  return createHash('sha256').update(`${group}/${version}/${kind}`).digest().subarray(0, 8).toString('base64');
}

/** kube's REST-friendly definition name of a group/version/kind: the group reversed ("com.example.stable.v1.CronTab"). */
export function customDefinitionName(group: string, version: string, kind: string): string {
  return `${group.split('.').reverse().join('.')}.${version}.${kind}`;
}

/** The served versions of a CRD (the names it accepted), each as the catalog needs it. */
export function servedVersions(crd: any): CustomVersion[] {
  const spec = crd?.spec ?? {};
  const names = crd?.status?.acceptedNames?.plural ? crd.status.acceptedNames : spec.names ?? {};
  const versions: any[] = Array.isArray(spec.versions) ? spec.versions : [];
  const storage = versions.find((v) => v?.storage)?.name ?? versions[0]?.name;
  const out: CustomVersion[] = [];
  for (const v of versions) {
    if (!v?.served || typeof v.name !== 'string') continue;
    const scale = v.subresources?.scale;
    out.push({
      crdName: crd.metadata.name,
      group: spec.group,
      version: v.name,
      plural: names.plural,
      kind: names.kind,
      listKind: names.listKind || `${names.kind}List`,
      namespaced: spec.scope !== 'Cluster',
      storageVersion: storage,
      schema: isObj(v.schema?.openAPIV3Schema) ? v.schema.openAPIV3Schema : undefined,
      status: isObj(v.subresources?.status),
      scale: isObj(scale) ? { specReplicasPath: scale.specReplicasPath, statusReplicasPath: scale.statusReplicasPath, labelSelectorPath: scale.labelSelectorPath } : undefined,
      columns: Array.isArray(v.additionalPrinterColumns) ? v.additionalPrinterColumns : [],
      terminating: !!crd.metadata.deletionTimestamp,
      ...(spec.conversion?.strategy === 'Webhook' ? { conversion: spec.conversion } : {}),
      ...(Array.isArray(v.selectableFields) && v.selectableFields.length ? { selectableFields: v.selectableFields.map((f: any) => f?.jsonPath).filter((p: unknown) => typeof p === 'string') } : {}),
    });
  }
  return out;
}

function resourceInfo(cv: CustomVersion, crd: any): ResourceInfo {
  const names = crd?.status?.acceptedNames?.plural ? crd.status.acceptedNames : crd.spec.names;
  const subresources: SubresourceInfo[] = [];
  if (cv.status) subresources.push({ name: 'status', kind: cv.kind, verbs: SUB_VERBS });
  if (cv.scale) subresources.push({ name: 'scale', kind: 'Scale', group: 'autoscaling', version: 'v1', verbs: SUB_VERBS });
  return {
    group: cv.group,
    version: cv.version,
    resource: cv.plural,
    kind: cv.kind,
    listKind: cv.listKind,
    namespaced: cv.namespaced,
    verbs: CUSTOM_VERBS,
    singularName: names.singular || cv.kind.toLowerCase(),
    shortNames: Array.isArray(names.shortNames) ? names.shortNames : [],
    categories: Array.isArray(names.categories) ? names.categories : [],
    subresources,
    storageVersionHash: storageVersionHash(cv.group, cv.storageVersion, cv.kind),
    // Another served version reads and writes the storage version's objects through the
    // CRD's conversion (strategy None: only apiVersion changes; Webhook: the CRD's webhook).
    ...(cv.version !== cv.storageVersion ? { storageVersion: `${cv.group}/${cv.storageVersion}` } : {}),
    custom: cv,
  };
}

// ------------------------------------------------------------------ schema lookups

const schemas = new Map<string, { schema?: JSONSchemaProps; root: TypeNode }>();
const OBJECT_META = nodeOfProp({ r: 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' });
const SCALAR: TypeNode = { kind: 'scalar' };

/** The apply view of a custom object: the schema's fields, with ObjectMeta for metadata. */
function rootNodeOf(schema: JSONSchemaProps | undefined): TypeNode {
  const inner = typeNode(schema);
  return {
    kind: 'struct',
    valueStruct: true,
    fields: (k) => (k === 'metadata' ? OBJECT_META : k === 'apiVersion' || k === 'kind' ? SCALAR : inner.fields ? inner.fields(k) : inner.kind === 'map' ? inner.elem : undefined),
  };
}

/** The schema of a served custom kind, for field validation and server-side apply; undefined for built-ins. */
export function customSchemaOf(group: string, version: string, kind: string): { schema?: JSONSchemaProps; root: TypeNode } | undefined {
  // (asked on every write of every kind: without custom resources, no key to build)
  if (schemas.size === 0) return undefined;
  return schemas.get(`${group}/${version}/${kind}`);
}

// ------------------------------------------------------------------ OpenAPI

function openApiDefs(cv: CustomVersion): Array<{ gvk: [string, string, string]; name: string; schema: Record<string, unknown>; refs: string[] }> {
  const name = customDefinitionName(cv.group, cv.version, cv.kind);
  const meta = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';
  const listMeta = 'io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta';
  const s: Record<string, any> = structuredClone(cv.schema ?? { type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
  s.type ??= 'object';
  s.properties = {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    metadata: { $ref: `#/components/schemas/${meta}` },
    ...(s.properties ?? {}),
  };
  s.properties.metadata = { $ref: `#/components/schemas/${meta}` };
  s['x-kubernetes-group-version-kind'] = [{ group: cv.group, kind: cv.kind, version: cv.version }];
  const list = {
    type: 'object',
    required: ['items'],
    properties: {
      apiVersion: { type: 'string' },
      items: { type: 'array', items: { $ref: `#/components/schemas/${name}` } },
      kind: { type: 'string' },
      metadata: { $ref: `#/components/schemas/${listMeta}` },
    },
    'x-kubernetes-group-version-kind': [{ group: cv.group, kind: cv.listKind, version: cv.version }],
  };
  return [
    { gvk: [cv.group, cv.version, cv.kind], name, schema: s, refs: [meta] },
    { gvk: [cv.group, cv.version, cv.listKind], name: customDefinitionName(cv.group, cv.version, cv.listKind), schema: list, refs: [listMeta] },
  ];
}

// ------------------------------------------------------------------ the served set

export class CustomResources {
  private signature = '';

  constructor(private catalog: Catalog) {}

  /**
   * Serves exactly these CRDs (established, valid). Rebuilds the catalog's custom part, the
   * schema lookups and the OpenAPI definitions, only when what is served changed. Returns
   * the resources whose selectableFields changed (src/registry/crd/selectable-fields.ts).
   */
  publish(crds: any[]): string[] {
    const sig = JSON.stringify(crds.map((c) => [c.metadata.name, c.metadata.deletionTimestamp ?? '', c.spec, c.status?.acceptedNames]));
    if (sig === this.signature) return [];
    this.signature = sig;
    const byGv = new Map<string, GroupVersionInfo>();
    const defs: ReturnType<typeof openApiDefs> = [];
    const converters: ConverterKey[] = [];
    const all: CustomVersion[] = [];
    schemas.clear();
    for (const crd of crds) {
      for (const cv of servedVersions(crd)) {
        const key = `${cv.group}/${cv.version}`;
        let gv = byGv.get(key);
        if (!gv) byGv.set(key, (gv = { group: cv.group, version: cv.version, groupVersion: key, enabledByDefault: true, resources: [] }));
        gv.resources.push(resourceInfo(cv, crd));
        schemas.set(`${cv.group}/${cv.version}/${cv.kind}`, { schema: cv.schema, root: rootNodeOf(cv.schema) });
        defs.push(...openApiDefs(cv));
        if (cv.conversion) converters.push(cv);
        all.push(cv);
      }
    }
    retainConverters(converters);
    const relabelled = publishSelectableFields(all);
    setCustomOpenApi(defs);
    this.catalog.setCustom([...byGv.values()]);
    return relabelled;
  }
}
