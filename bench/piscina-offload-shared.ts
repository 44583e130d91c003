// What piscina-offload.ts and its pool's task share: the representations and the encoding
// context of the lists they convert.
import type { EncodeContext } from '../src/codec/representation.js';
import { JSON_MEDIA_TYPE, PROTOBUF_MEDIA_TYPE, type Representation } from '../src/codec/negotiate.js';

/** Table with its default includeObject=Metadata (kubectl get), Table with includeObject=Object, protobuf */
export type Conversion = 'table' | 'table-object' | 'protobuf';

export function representationOf(c: Conversion): Representation {
  if (c === 'protobuf') return { mediaType: PROTOBUF_MEDIA_TYPE, pretty: false };
  return { mediaType: JSON_MEDIA_TYPE, as: { kind: 'Table', group: 'meta.k8s.io', version: 'v1' }, pretty: false } as Representation;
}

export function listContext(resource: 'configmaps' | 'pods', c: Conversion): EncodeContext {
  const kind = resource === 'pods' ? 'Pod' : 'ConfigMap';
  const info = { group: '', version: 'v1', resource, kind, listKind: `${kind}List` };
  return { target: { info, gr: resource } as any, apiVersion: 'v1', kind, listKind: `${kind}List`, table: { includeObject: c === 'table-object' ? 'Object' : 'Metadata' } };
}
