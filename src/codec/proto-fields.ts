// How a protobuf message's fields line up with the object's JSON form, shared by the
// protobuf decoder (protobuf.ts) and encoder (protobuf-encode.ts).
//
// Two generated facts (scripts/gen-proto-schema.mjs) bridge the differences: a field whose
// JSON name is not its proto name (aPIGroup is apiGroup, Webhooks is webhooks,
// xKubernetesListType is x-kubernetes-list-type), and a field that holds a Go struct
// embedded with `json:",inline"` (Probe.handler, Volume.volumeSource,
// ConfigMapKeySelector.localObjectReference): on the wire it is one nested message, in JSON
// its fields sit in the parent object.
//
// Thread ownership: derived lazily from the immutable schema, cached per Type on whichever
// thread encodes or decodes; never mutated afterwards.
import protobuf from 'protobufjs';
import { protoInline, protoJsonNames, protoKeepZero } from './proto-schema.js';

export interface FieldMap {
  field: protobuf.Field;
  /** the JSON property name (unused for inline fields) */
  json: string;
  /** an embedded struct whose fields belong to the parent in JSON */
  inline: boolean;
  /**
   * A scalar whose zero value the JSON form keeps (generated fact): a Go field without
   * omitempty (ReplicaSetStatus.replicas, ContainerStatus.ready) or a pointer
   * (DeploymentSpec.replicas, ServiceSpec.allocateLoadBalancerNodePorts). Other zero scalars
   * are omitempty non-pointers, which Go's JSON encoder drops (publishNotReadyAddresses).
   */
  keepZero: boolean;
}

/** The OpenAPI definition name of a message: k8s.io.api.core.v1.Pod -> io.k8s.api.core.v1.Pod. */
export function definitionNameOf(full: string): string {
  return 'io.' + full.replace(/^k8s\.io\./, 'k8s.').replace('apiextensions_apiserver', 'apiextensions-apiserver').replace('kube_aggregator', 'kube-aggregator');
}

const cache = new WeakMap<protobuf.Type, FieldMap[]>();

export function fieldsOf(type: protobuf.Type): FieldMap[] {
  let out = cache.get(type);
  if (out) return out;
  const full = type.fullName.slice(1);
  const names = protoJsonNames[full] ?? {};
  const inline = new Set(protoInline[full] ?? []);
  const keep = new Set(protoKeepZero[full] ?? []);
  out = type.fieldsArray.map((field) => {
    field.resolve();
    const json = names[field.name] ?? field.name;
    return { field, json, inline: inline.has(field.name) && field.resolvedType instanceof protobuf.Type, keepZero: keep.has(json) };
  });
  cache.set(type, out);
  return out;
}

const APIEXT = /^k8s\.io\.apiextensions_apiserver\.pkg\.apis\.apiextensions\.v1(beta1)?\./;

/** The custom-JSON wrapper types of CRD schemas (a schema or a list, a schema or a bool, ...). */
export function apiextensionsKind(type: protobuf.Type): 'JSON' | 'JSONSchemaPropsOrArray' | 'JSONSchemaPropsOrBool' | 'JSONSchemaPropsOrStringArray' | undefined {
  const full = type.fullName.slice(1);
  if (!APIEXT.test(full)) return undefined;
  const name = full.slice(full.lastIndexOf('.') + 1);
  return name === 'JSON' || name === 'JSONSchemaPropsOrArray' || name === 'JSONSchemaPropsOrBool' || name === 'JSONSchemaPropsOrStringArray' ? name : undefined;
}

/** The JSONSchemaProps message a wrapper type refers to. */
export function schemaPropsType(wrapper: protobuf.Type): protobuf.Type {
  const f = wrapper.fields.schema;
  f.resolve();
  return f.resolvedType as protobuf.Type;
}
