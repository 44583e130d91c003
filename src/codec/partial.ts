// PartialObjectMetadata and PartialObjectMetadataList (`as=PartialObjectMetadata;g=meta.k8s.io;v=v1`):
// an object reduced to its metadata, as the metadata-only clients (garbage collector,
// namespace controller, kubectl's metadata informers) ask for it.

export function asPartialObjectMetadata(obj: any, version: 'v1' | 'v1beta1' = 'v1'): Record<string, any> {
  return { kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${version}`, metadata: obj?.metadata ?? {} };
}

export function asPartialObjectMetadataList(items: any[], listMeta: Record<string, unknown>, version: 'v1' | 'v1beta1' = 'v1'): Record<string, any> {
  return {
    kind: 'PartialObjectMetadataList',
    apiVersion: `meta.k8s.io/${version}`,
    metadata: listMeta,
    items: items.map((o) => asPartialObjectMetadata(o, version)),
  };
}
