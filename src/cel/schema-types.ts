// Engine types from Kubernetes schemas, for type checking: the built-in kinds' OpenAPI
// definitions (src/api/schema.ts) and CRDs' structural schemas, as kube's DeclTypes
// (apiserver/pkg/cel/common/schemas.go SchemaDeclType) type `object`, `params` and `self`.
// Objects with properties become named types with those fields; maps, lists and scalars their
// CEL types; int-or-string, preserved unknown fields and date-time are dynamic.
import type { Environment } from '@marcbachmann/cel-js';
import { definitions, type SchemaProp, type SchemaDef } from '../api/schema.js';
import type { JSONSchemaProps } from '../registry/crd/structural.js';

/** Declares the engine's types for a built-in definition; returns the type name of the root. */
export class Declarer {
  private done = new Set<string>();
  /** types whose fields are still being declared: a reference back to one (a cycle) is dyn */
  private open = new Set<string>();
  constructor(
    private env: Environment,
    private prefix: string,
  ) {}

  private typeName(def: string): string {
    return `${this.prefix}_${def.replace(/[^A-Za-z0-9]/g, '_')}`;
  }

  builtin(defName: string): string {
    const name = this.typeName(defName);
    if (this.open.has(name)) return 'dyn';
    if (this.done.has(name)) return name;
    this.open.add(name);
    const d = definitions[defName];
    const fields: Record<string, string> = {};
    for (const [k, p] of Object.entries(d?.p ?? {})) fields[k] = this.prop(p);
    this.env.registerType(name, { fields } as any);
    this.open.delete(name);
    this.done.add(name);
    return name;
  }

  private prop(p: SchemaProp | SchemaDef): string {
    const r = (p as SchemaProp).r;
    if (r) {
      const d = definitions[r];
      if (!d) return 'dyn';
      if (d.p && Object.keys(d.p).length) return this.builtin(r);
      return this.scalar(d.t, d.f);
    }
    if (p.t === 'array') return `list<${(p as SchemaProp).i ? this.prop((p as SchemaProp).i!) : 'dyn'}>`;
    if (p.t === 'object') return (p as SchemaProp).a ? `map<string, ${this.prop((p as SchemaProp).a!)}>` : 'dyn';
    return this.scalar(p.t, p.f);
  }

  private scalar(t?: string, f?: string): string {
    if (f === 'int-or-string') return 'dyn';
    // (date-time is dyn: the engine cannot hold a timestamp in a declared field; kube types it as timestamp)
    if (t === 'string') return f === 'date-time' ? 'dyn' : f === 'byte' ? 'bytes' : 'string';
    if (t === 'integer') return 'int';
    if (t === 'number') return 'double';
    if (t === 'boolean') return 'bool';
    return 'dyn';
  }

  /** A CRD's structural schema (anonymous nested objects get path-derived names). */
  custom(s: JSONSchemaProps | undefined, path: string, resourceRoot = path === 'root'): string {
    if (!s) return 'dyn';
    if (s['x-kubernetes-int-or-string'] || s['x-kubernetes-preserve-unknown-fields']) return 'dyn';
    if (s.type === 'array') return `list<${this.custom(s.items, `${path}_item`)}>`;
    if (s.type === 'object' || s.properties) {
      if (s.properties) {
        const name = `${this.prefix}_${path}`;
        if (!this.done.has(name)) {
          const fields: Record<string, string> = {};
          for (const [k, p] of Object.entries(s.properties)) fields[k] = this.custom(p, `${path}_${k.replace(/[^A-Za-z0-9]/g, '_')}`);
          if (resourceRoot || s['x-kubernetes-embedded-resource']) {
            fields.apiVersion ??= 'string';
            fields.kind ??= 'string';
            fields.metadata = this.builtin('io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta');
          }
          this.env.registerType(name, { fields } as any);
          this.done.add(name);
        }
        return name;
      }
      if (typeof s.additionalProperties === 'object') return `map<string, ${this.custom(s.additionalProperties, `${path}_value`)}>`;
      return 'dyn';
    }
    return this.scalar(s.type, s.format);
  }
}

