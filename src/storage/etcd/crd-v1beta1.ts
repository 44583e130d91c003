// CustomResourceDefinitions as kube keeps them in etcd: apiextensions.k8s.io/v1beta1 JSON.
// kube-apiserver's apiextensions storage encodes every object of its group to v1beta1 (its
// EncodeVersioner, kept "until issue 82292 is resolved": v1beta1 can hoist one schema for
// all versions) while kubeshard serves and keeps v1. These are the two directions of kube's
// conversion through its internal version (apiextensions v1 and v1beta1 conversion.go):
//
// v1 -> v1beta1: spec.version is the first version's name; a per-version schema,
//   subresources, printer columns or selectable fields identical in every version is
//   hoisted to spec.validation / subresources / additionalPrinterColumns / selectableFields
//   (each on its own) and dropped from the versions; printer columns name their path
//   JSONPath; conversion.webhook.{clientConfig, conversionReviewVersions} become
//   conversion.{webhookClientConfig, conversionReviewVersions}; preserveUnknownFields is
//   written (false included).
// v1beta1 -> v1: the reverse; top-level fields are copied into every version; with no
//   versions, one is made from spec.version (served, storage); preserveUnknownFields absent
//   means true (v1beta1 defaulting).
//
// Thread ownership: pure functions; any thread.
import { isDeepStrictEqual } from 'node:util';

const V1 = 'apiextensions.k8s.io/v1';
const V1BETA1 = 'apiextensions.k8s.io/v1beta1';

function pick(src: Record<string, any>, keys: string[]): Record<string, any> {
  const out: Record<string, any> = {};
  for (const k of keys) if (src[k] !== undefined) out[k] = src[k];
  return out;
}

const renameKey = (o: Record<string, any>, from: string, to: string): Record<string, any> => {
  const out: Record<string, any> = {};
  for (const [k, v] of Object.entries(o)) out[k === from ? to : k] = v;
  return out;
};

// spec field orders of the Go structs (their JSON order)
const V1BETA1_SPEC = ['group', 'version', 'names', 'scope', 'validation', 'subresources', 'versions', 'additionalPrinterColumns', 'selectableFields', 'conversion', 'preserveUnknownFields'];
const V1_SPEC = ['group', 'names', 'scope', 'versions', 'conversion', 'preserveUnknownFields'];
const V1BETA1_VERSION = ['name', 'served', 'storage', 'deprecated', 'deprecationWarning', 'schema', 'subresources', 'additionalPrinterColumns', 'selectableFields'];
const V1_VERSION = ['name', 'served', 'storage', 'deprecated', 'deprecationWarning', 'schema', 'subresources', 'additionalPrinterColumns', 'selectableFields'];

/** A v1 CRD in kube's storage form (v1beta1). */
export function crdToV1beta1(crd: Record<string, any>): Record<string, any> {
  const spec: Record<string, any> = { ...(crd.spec ?? {}) };
  const versions: Record<string, any>[] = (spec.versions ?? []).map((v: any) => ({ ...v }));
  const out: Record<string, any> = {};
  if (versions.length) {
    out.version = versions[0].name;
    // each per-version field is hoisted on its own when every version has the same value
    const hoist = (perVersion: string, top: string, map: (x: any) => any = (x) => x) => {
      const first = versions[0][perVersion];
      if (!versions.every((v) => isDeepStrictEqual(v[perVersion], first))) return;
      if (first !== undefined) out[top] = map(first);
      for (const v of versions) delete v[perVersion];
    };
    hoist('schema', 'validation');
    hoist('subresources', 'subresources');
    hoist('additionalPrinterColumns', 'additionalPrinterColumns', (cols: any[]) => cols.map((c) => renameKey(c, 'jsonPath', 'JSONPath')));
    hoist('selectableFields', 'selectableFields');
  }
  const v1beta1Versions = versions.map((v) => {
    const o = pick(v, V1BETA1_VERSION);
    if (o.additionalPrinterColumns) o.additionalPrinterColumns = o.additionalPrinterColumns.map((c: any) => renameKey(c, 'jsonPath', 'JSONPath'));
    return o;
  });
  let conversion = spec.conversion;
  if (conversion?.webhook) {
    const { webhook, ...rest } = conversion;
    conversion = { ...rest };
    if (webhook.clientConfig !== undefined) conversion.webhookClientConfig = webhook.clientConfig;
    if (webhook.conversionReviewVersions !== undefined) conversion.conversionReviewVersions = webhook.conversionReviewVersions;
  }
  const merged: Record<string, any> = {
    ...spec,
    ...out,
    versions: v1beta1Versions,
    conversion,
    preserveUnknownFields: !!spec.preserveUnknownFields,
  };
  const ordered = pick(merged, V1BETA1_SPEC);
  for (const k of Object.keys(merged)) if (!(k in ordered) && merged[k] !== undefined) ordered[k] = merged[k];
  const res: Record<string, any> = { ...crd, apiVersion: V1BETA1, spec: ordered };
  return { kind: res.kind, apiVersion: res.apiVersion, ...res };
}

/** A CRD read from kube's storage (v1beta1) as kubeshard keeps it (v1). */
export function crdToV1(crd: Record<string, any>): Record<string, any> {
  if (crd.apiVersion === V1) return crd;
  const spec: Record<string, any> = { ...(crd.spec ?? {}) };
  let versions: Record<string, any>[] = (spec.versions ?? []).map((v: any) => ({ ...v }));
  if (!versions.length && spec.version) versions = [{ name: spec.version, served: true, storage: true }];
  const cols = (c: any[]) => c.map((x) => renameKey(x, 'JSONPath', 'jsonPath'));
  versions = versions.map((v) => {
    const o: Record<string, any> = { ...v };
    if (spec.validation !== undefined && o.schema === undefined) o.schema = spec.validation;
    if (spec.subresources !== undefined && o.subresources === undefined) o.subresources = spec.subresources;
    if (spec.additionalPrinterColumns !== undefined && o.additionalPrinterColumns === undefined) o.additionalPrinterColumns = spec.additionalPrinterColumns;
    if (spec.selectableFields !== undefined && o.selectableFields === undefined) o.selectableFields = spec.selectableFields;
    if (o.additionalPrinterColumns) o.additionalPrinterColumns = cols(o.additionalPrinterColumns);
    return pick(o, V1_VERSION);
  });
  let conversion = spec.conversion;
  if (conversion && (conversion.webhookClientConfig !== undefined || conversion.conversionReviewVersions !== undefined)) {
    const { webhookClientConfig, conversionReviewVersions, ...rest } = conversion;
    conversion = { ...rest };
    if (conversion.strategy === 'Webhook') {
      const webhook: Record<string, any> = {};
      if (webhookClientConfig !== undefined) webhook.clientConfig = webhookClientConfig;
      if (conversionReviewVersions !== undefined) webhook.conversionReviewVersions = conversionReviewVersions;
      conversion.webhook = webhook;
    }
  }
  const preserve = spec.preserveUnknownFields === undefined ? true : !!spec.preserveUnknownFields;
  const merged: Record<string, any> = { ...spec, versions, conversion };
  delete merged.version;
  delete merged.validation;
  delete merged.subresources;
  delete merged.additionalPrinterColumns;
  delete merged.selectableFields;
  // v1's preserveUnknownFields is omitempty
  if (preserve) merged.preserveUnknownFields = true;
  else delete merged.preserveUnknownFields;
  const ordered = pick(merged, V1_SPEC);
  for (const k of Object.keys(merged)) if (!(k in ordered) && merged[k] !== undefined) ordered[k] = merged[k];
  return { ...crd, apiVersion: V1, spec: ordered };
}
