#!/usr/bin/env node
// Compiles the type definitions of Kubernetes 1.33 (../shared/k8s-api-1.33/openapi-v2 and
// openapi-v3) into the project's own compact schema catalog, src/api/schema-data.ts.
//
// Facts only: per definition, its properties with type, format, reference, item and map
// value schemas, required fields, the x-kubernetes-* merge markers (list type, list map
// keys, map type, patch strategy and merge key), the zero-value defaults that the v3
// documents carry, and the group/version/kinds a definition encodes. No description text.
//
//   node scripts/gen-schema.mjs [path-to-k8s-api-1.33]
//
// The format (see src/api/schema.ts for the types):
//   SchemaDef  { t?, f?, p?: {name: Prop}, req?: [..], gvk?: [[group, version, kind]..], mt?, u? }
//   Prop       { r?: defName, t?, f?, i?: Prop, a?: Prop, lt?, lk?, mt?, ps?, pk?, d? }
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = resolve(process.argv[2] ?? process.env.KUBESHARD_API_DATA ?? join(root, '..', 'shared', 'k8s-api-1.33'));
const swagger = JSON.parse(readFileSync(join(dataDir, 'openapi-v2', 'swagger.json'), 'utf8'));

// v3 documents: the per-property defaults (v2 carries none).
const v3Defaults = new Map(); // defName -> { prop -> default }
const v3Bare = new Map(); // defName -> Set of props whose v3 schema is a bare $ref
function walkV3(dir) {
  for (const f of readdirSync(dir)) {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) walkV3(p);
    else if (f.endsWith('.json')) {
      const doc = JSON.parse(readFileSync(p, 'utf8'));
      for (const [name, s] of Object.entries(doc.components?.schemas ?? {})) {
        for (const [pn, pv] of Object.entries(s.properties ?? {})) {
          if (pv.default !== undefined) {
            let m = v3Defaults.get(name);
            if (!m) v3Defaults.set(name, (m = {}));
            m[pn] = pv.default;
          }
          if (pv.items?.default !== undefined) {
            let m = v3Defaults.get(name + '[]');
            if (!m) v3Defaults.set(name + '[]', (m = {}));
            m[pn] = pv.items.default;
          }
          if (pv.additionalProperties?.default !== undefined) {
            let m = v3Defaults.get(name + '{}');
            if (!m) v3Defaults.set(name + '{}', (m = {}));
            m[pn] = pv.additionalProperties.default;
          }
          if (pv.additionalProperties?.items?.default !== undefined) {
            let m = v3Defaults.get(name + '{}[]');
            if (!m) v3Defaults.set(name + '{}[]', (m = {}));
            m[pn] = pv.additionalProperties.items.default;
          }
          // v3 wraps a property's $ref in allOf when it has siblings; a bare $ref is a fact
          // the documents keep (the few references upstream leaves undocumented).
          if (pv.$ref) {
            let m = v3Bare.get(name);
            if (!m) v3Bare.set(name, (m = new Set()));
            m.add(pn);
          }
        }
      }
    }
  }
}
walkV3(join(dataDir, 'openapi-v3'));

const REF = '#/definitions/';
function prop(s) {
  const o = {};
  if (s.$ref) o.r = s.$ref.slice(REF.length);
  if (s.type) o.t = s.type;
  if (s.format) o.f = s.format;
  if (s.items) o.i = prop(s.items);
  if (s.additionalProperties && typeof s.additionalProperties === 'object') o.a = prop(s.additionalProperties);
  if (s['x-kubernetes-list-type']) o.lt = s['x-kubernetes-list-type'];
  if (s['x-kubernetes-list-map-keys']) o.lk = s['x-kubernetes-list-map-keys'];
  if (s['x-kubernetes-map-type']) o.mt = s['x-kubernetes-map-type'];
  if (s['x-kubernetes-patch-strategy']) o.ps = s['x-kubernetes-patch-strategy'];
  if (s['x-kubernetes-patch-merge-key']) o.pk = s['x-kubernetes-patch-merge-key'];
  return o;
}

const defs = {};
for (const [name, d] of Object.entries(swagger.definitions)) {
  const o = {};
  if (d.type) o.t = d.type;
  if (d.format) o.f = d.format;
  if (d.properties) {
    o.p = {};
    const dflt = v3Defaults.get(name) ?? {};
    const itemDflt = v3Defaults.get(name + '[]') ?? {};
    const valueDflt = v3Defaults.get(name + '{}') ?? {};
    const valueItemDflt = v3Defaults.get(name + '{}[]') ?? {};
    const bare = v3Bare.get(name) ?? new Set();
    for (const [pn, pv] of Object.entries(d.properties)) {
      const p = prop(pv);
      if (dflt[pn] !== undefined) p.d = dflt[pn];
      if (itemDflt[pn] !== undefined && p.i) p.i.d = itemDflt[pn];
      if (valueDflt[pn] !== undefined && p.a) p.a.d = valueDflt[pn];
      if (valueItemDflt[pn] !== undefined && p.a?.i) p.a.i.d = valueItemDflt[pn];
      if (bare.has(pn) && p.r) p.b = 1;
      o.p[pn] = p;
    }
  }
  if (d.required?.length) o.req = d.required;
  if (d['x-kubernetes-group-version-kind']) o.gvk = d['x-kubernetes-group-version-kind'].map((g) => [g.group, g.version, g.kind]);
  if (d['x-kubernetes-map-type']) o.mt = d['x-kubernetes-map-type'];
  if (d['x-kubernetes-unions']) o.u = d['x-kubernetes-unions'];
  defs[name] = o;
}

const json = JSON.stringify(defs);
const out = [
  '// Generated by scripts/gen-schema.mjs from the Kubernetes 1.33 API definitions. Do not edit.',
  '// Facts only (names, types, markers); see src/api/schema.ts for the format.',
  "import type { SchemaDef } from './schema.js';",
  '',
  `export const schemaDefs: Record<string, SchemaDef> = JSON.parse(${JSON.stringify(json)});`,
  '',
];
writeFileSync(join(root, 'src', 'api', 'schema-data.ts'), out.join('\n'));
console.log(`wrote src/api/schema-data.ts: ${Object.keys(defs).length} definitions, ${json.length} bytes`);
