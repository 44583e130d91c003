#!/usr/bin/env node
// Compiles the protobuf descriptors of Kubernetes 1.33 (../shared/k8s-api-1.33/proto-descriptors)
// into src/codec/proto-schema.ts: message names, field names, numbers and types only
// (protobufjs's JSON form, without comments), plus the map from group/version/kind to the
// message that encodes it. The server loads this at start; it reads nothing outside the repo.
//
//   node scripts/gen-proto-schema.mjs [path-to-k8s-api-1.33]
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const pb = require('protobufjs');
require('protobufjs/ext/descriptor');

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = resolve(process.argv[2] ?? process.env.KUBESHARD_API_DATA ?? join(root, '..', 'shared', 'k8s-api-1.33'));
const pbRoot = pb.Root.fromDescriptor(readFileSync(join(dataDir, 'proto-descriptors', 'k8s-1.33.protoset')));
const json = pbRoot.toJSON();

// Strip everything that is not a name, a number or a type. The edition stays: the messages
// are proto2, whose explicit field presence makes protobufjs write a set zero (replicas: 0),
// which Go's pointer fields need; without it protobufjs assumes proto3 and drops zeros.
function prune(node) {
  if (node === null || typeof node !== 'object') return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === 'comment' || k === 'options') continue;
    out[k] = typeof v === 'object' ? prune(v) : v;
  }
  return out;
}
const schema = prune(json);

// group/version/kind -> full message name, for every kind of the catalog and the meta kinds.
const PKG_OF_GROUP = { '': 'core', 'rbac.authorization.k8s.io': 'rbac', 'flowcontrol.apiserver.k8s.io': 'flowcontrol', 'internal.apiserver.k8s.io': 'apiserverinternal' };
const messages = [];
(function walk(ns, prefix) {
  for (const [name, v] of Object.entries(ns.nested ?? {})) {
    const full = prefix ? `${prefix}.${name}` : name;
    if (v.fields) messages.push(full);
    walk(v, full);
  }
})(json, '');
const discovery = JSON.parse(readFileSync(join(dataDir, 'discovery', 'derived-discovery-1.33.json'), 'utf8'));
const kinds = {};
function find(group, version, kind) {
  const pkgName = PKG_OF_GROUP[group] ?? group.split('.')[0];
  const cands = messages.filter((m) => m.endsWith(`.${version}.${kind}`));
  return cands.find((m) => m.split('.').slice(-3, -2)[0] === pkgName) ?? (cands.length === 1 ? cands[0] : undefined);
}
for (const gv of discovery.groupVersions) {
  const [group, version] = gv.groupVersion.includes('/') ? gv.groupVersion.split('/') : ['', gv.groupVersion];
  for (const r of gv.resources) {
    const g = r.group ?? group;
    const v = r.version ?? version;
    for (const k of [r.kind, r.name.includes('/') ? null : r.kind + 'List']) {
      if (!k) continue;
      const m = find(g, v, k);
      if (m) kinds[`${g ? g + '/' : ''}${v}/${k}`] = m;
    }
  }
}
for (const k of ['DeleteOptions', 'Status', 'WatchEvent', 'ListOptions', 'Table', 'PartialObjectMetadata', 'PartialObjectMetadataList']) {
  const m = messages.find((x) => x === `k8s.io.apimachinery.pkg.apis.meta.v1.${k}`);
  if (m) {
    kinds[`meta.k8s.io/v1/${k}`] = m;
    kinds[`v1/${k}`] ??= m;
  }
}

// Proto field names are not always the JSON names (Go's go-to-protobuf lower-cases only the
// first letter: aPIGroup, uID, Webhooks, xKubernetesListType), and a Go struct embedded
// with `json:",inline"` is one message field on the wire (Probe.handler, Volume.volumeSource,
// ConfigMapKeySelector.localObjectReference) whose own fields sit in the parent's JSON.
// Both facts come from comparing each message with its OpenAPI definition: protoJsonNames
// maps the differing field names, protoInline lists the inline fields.
const swagger = JSON.parse(readFileSync(join(dataDir, 'openapi-v2', 'swagger.json'), 'utf8'));
const defOf = (m) => 'io.' + m.replace(/^k8s\.io\./, 'k8s.').replace('apiextensions_apiserver', 'apiextensions-apiserver').replace('kube_aggregator', 'kube-aggregator');
const norm = (n) => n.replace(/[^A-Za-z0-9]/g, '').toLowerCase();
const msgNode = (full) => full.split('.').reduce((n, part) => n?.nested?.[part], schema);
const inline = {};
const renamed = new Map(); // message -> Map(protoName -> jsonName), checked for consistency
const unresolved = [];
/** A message all of whose fields (or, for its own inline structs, theirs) are JSON properties of the parent. */
function fitsInline(full, byNorm, depth = 0) {
  const fields = msgNode(full)?.fields;
  if (!fields || depth > 3) return false;
  return Object.entries(fields).every(([x, f]) => byNorm.has(norm(x)) || (f.type.startsWith('.') && fitsInline(f.type.slice(1), byNorm, depth + 1)));
}
function resolveAgainst(full, props, owner) {
  const node = msgNode(full);
  const byNorm = new Map(Object.keys(props).map((p) => [norm(p), p]));
  for (const [name, f] of Object.entries(node.fields)) {
    if (name in props) continue;
    const json = byNorm.get(norm(name));
    if (json) {
      const m = renamed.get(full) ?? new Map();
      if (m.has(name) && m.get(name) !== json) throw new Error(`${full}.${name}: JSON name ${m.get(name)} vs ${json}`);
      renamed.set(full, m.set(name, json));
      continue;
    }
    const sub = f.type.startsWith('.') ? f.type.slice(1) : undefined;
    if (sub && fitsInline(sub, byNorm)) {
      (inline[full] ??= []).includes(name) || inline[full].push(name);
      resolveAgainst(sub, props, owner);
      continue;
    }
    unresolved.push(`${owner}: ${full}.${name}`);
  }
}
for (const full of messages) {
  const props = swagger.definitions[defOf(full)]?.properties;
  // Definitions without properties are the special wire types (Time, Quantity, IntOrString,
  // RawExtension, JSONSchemaPropsOr*, ...), which the codec converts by message name.
  if (props) resolveAgainst(full, props, defOf(full));
}
const jsonNames = Object.fromEntries([...renamed].map(([full, m]) => [full, Object.fromEntries(m)]));
if (unresolved.length) console.warn(`fields with no JSON counterpart (left as they are):\n  ${unresolved.join('\n  ')}`);

const body = [
  '// Generated by scripts/gen-proto-schema.mjs from the Kubernetes 1.33 protobuf descriptors. Do not edit.',
  '/* eslint-disable */',
  `export const protoKinds: Record<string, string> = ${JSON.stringify(kinds)};`,
  '/** Message fields whose JSON name differs from the proto name (message -> proto name -> JSON name). */',
  `export const protoJsonNames: Record<string, Record<string, string>> = ${JSON.stringify(jsonNames)};`,
  '/** Fields holding a Go struct embedded inline: its fields belong to the parent in JSON. */',
  `export const protoInline: Record<string, string[]> = ${JSON.stringify(inline)};`,
  `export const protoSchema: any = ${JSON.stringify(schema)};`,
  '',
].join('\n');
writeFileSync(join(root, 'src', 'codec', 'proto-schema.ts'), body);
console.log(`wrote src/codec/proto-schema.ts: ${messages.length} messages, ${Object.keys(kinds).length} kinds, ${renamed.size} messages with renamed fields, ${Object.keys(inline).length} with inline fields, ${body.length} bytes`);
