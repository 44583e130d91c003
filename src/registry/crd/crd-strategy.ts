// The strategy of CustomResourceDefinitions (apiextensions-apiserver's
// customresourcedefinition strategy and ValidateCustomResourceDefinition, the common
// mistakes with kube's wording): names, group, scope, versions (exactly one storage
// version, at least one served, unique DNS-1035 names), schemas, subresource paths.
// Defaults as kube's SetDefaults: singular and listKind from the kind, conversion None.
// The status (accepted names, conditions) is the CRD controller's (crd-controller.ts).
import { validateRuleCompilation } from './cel-validation.js';
import { validateSelectableFields } from './selectable-fields.js';
import { validateConversion } from './conversion-validation.js';
import { GoValue } from '../../errors.js';
import { Strategy, type FieldError } from '../strategy.js';
import { nameErrors } from '../validation.js';
import { compareVersions } from '../../api/catalog.js';
import { compilePattern } from '../re2.js';

export const CRD_CLEANUP_FINALIZER = 'customresourcecleanup.apiextensions.k8s.io';

function isObj(v: unknown): v is Record<string, any> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function nowTs(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Go's %#v of the versions list, shortened to what a reader needs (kube prints the whole struct). */
function versionsValue(versions: any[]): GoValue {
  return new GoValue(`[]apiextensions.CustomResourceDefinitionVersion{${versions.map((v) => `apiextensions.CustomResourceDefinitionVersion{Name:${JSON.stringify(String(v?.name ?? ''))}, Served:${!!v?.served}, Storage:${!!v?.storage}}`).join(', ')}}`);
}

function validateJsonPath(path: unknown, field: string, under: string, required: boolean, errs: FieldError[]): void {
  if (path === undefined || path === '') {
    if (required) errs.push({ field, type: 'FieldValueRequired', detail: '' });
    return;
  }
  if (typeof path !== 'string' || !path.startsWith('.')) {
    errs.push({ field, type: 'FieldValueInvalid', value: path, detail: 'must be a simple json path starting with .' });
    return;
  }
  if (under && !path.startsWith(`.${under}.`)) errs.push({ field, type: 'FieldValueInvalid', value: path, detail: `should be a json path under .${under}` });
}

/** The structural-schema basics of the root: kube refuses a root that is not an object. */
function validateRootSchema(s: any, field: string, errs: FieldError[]): void {
  if (!isObj(s)) {
    errs.push({ field, type: 'FieldValueRequired', detail: 'schemas are required' });
    return;
  }
  if (s.type !== 'object') {
    if (s.type === undefined || s.type === '') errs.push({ field: `${field}.type`, type: 'FieldValueRequired', detail: 'must not be empty at the root' });
    else errs.push({ field: `${field}.type`, type: 'FieldValueInvalid', value: s.type, detail: 'must be object at the root' });
  }
  // Every node below needs a type unless it preserves unknown fields or is int-or-string.
  const walk = (n: any, at: string) => {
    if (!isObj(n)) return;
    if (isObj(n.properties)) {
      for (const [k, p] of Object.entries<any>(n.properties)) {
        const pf = `${at}.properties[${k}]`;
        if (isObj(p) && !p.type && !p['x-kubernetes-int-or-string'] && !p['x-kubernetes-preserve-unknown-fields'] && !p.anyOf && !p.allOf && !p.oneOf) {
          errs.push({ field: `${pf}.type`, type: 'FieldValueRequired', detail: 'must not be empty for specified object fields' });
        }
        walk(p, pf);
      }
    }
    if (isObj(n.items)) {
      if (!n.items.type && !n.items['x-kubernetes-int-or-string'] && !n.items['x-kubernetes-preserve-unknown-fields']) {
        errs.push({ field: `${at}.items.type`, type: 'FieldValueRequired', detail: 'must not be empty for specified array items' });
      }
      walk(n.items, `${at}.items`);
    } else if (n.type === 'array') {
      errs.push({ field: `${at}.items`, type: 'FieldValueRequired', detail: 'must be specified' });
    }
    if (isObj(n.additionalProperties)) walk(n.additionalProperties, `${at}.additionalProperties`);
    if (isObj(n.additionalProperties) && isObj(n.properties)) {
      errs.push({ field: `${at}.additionalProperties`, type: 'FieldValueForbidden', detail: 'additionalProperties and properties are mutual exclusive' });
    }
  };
  walk(s, field);
}

/**
 * Every `pattern` in a schema must compile as Go's regexp compiles it (RE2 syntax: no
 * backreferences, no lookaround), as kube's structural schema validation requires; the
 * compiled pattern is cached for the validation of the resources.
 */
function validatePatterns(n: unknown, at: string, errs: FieldError[]): void {
  if (!isObj(n)) return;
  if (typeof n.pattern === 'string' && n.pattern !== '') {
    const c = compilePattern(n.pattern);
    if (c.error !== undefined) errs.push({ field: `${at}.pattern`, type: 'FieldValueInvalid', value: n.pattern, detail: `must be a valid regular expression, but isn't: ${c.error}` });
  }
  if (isObj(n.properties)) for (const [k, p] of Object.entries(n.properties)) validatePatterns(p, `${at}.properties[${k}]`, errs);
  validatePatterns(n.items, `${at}.items`, errs);
  validatePatterns(n.additionalProperties, `${at}.additionalProperties`, errs);
  for (const junctor of ['allOf', 'anyOf', 'oneOf'] as const) {
    if (Array.isArray(n[junctor])) n[junctor].forEach((s: unknown, i: number) => validatePatterns(s, `${at}.${junctor}[${i}]`, errs));
  }
  validatePatterns(n.not, `${at}.not`, errs);
}

export function validateCrd(obj: any): FieldError[] {
  const errs: FieldError[] = [];
  const spec = isObj(obj.spec) ? obj.spec : {};
  const names = isObj(spec.names) ? spec.names : {};
  const group: string = typeof spec.group === 'string' ? spec.group : '';
  const plural: string = typeof names.plural === 'string' ? names.plural : '';
  if (obj.metadata.name !== `${plural}.${group}`) {
    errs.push({ field: 'metadata.name', type: 'FieldValueInvalid', value: obj.metadata.name, detail: 'must be spec.names.plural+"."+spec.group' });
  }
  if (!group) errs.push({ field: 'spec.group', type: 'FieldValueRequired', detail: '' });
  else {
    for (const d of nameErrors(group, 'subdomain')) errs.push({ field: 'spec.group', type: 'FieldValueInvalid', value: group, detail: d });
    if (group.split('.').length < 2) errs.push({ field: 'spec.group', type: 'FieldValueInvalid', value: group, detail: 'should be a domain with at least one dot' });
  }
  if (spec.scope === undefined || spec.scope === '') errs.push({ field: 'spec.scope', type: 'FieldValueRequired', detail: '' });
  else if (spec.scope !== 'Cluster' && spec.scope !== 'Namespaced') errs.push({ field: 'spec.scope', type: 'FieldValueNotSupported', value: spec.scope, detail: 'supported values: "Cluster", "Namespaced"' });

  // names
  const label = (field: string, v: unknown, required: boolean) => {
    if (v === undefined || v === '') {
      if (required) errs.push({ field, type: 'FieldValueRequired', detail: '' });
      return;
    }
    for (const d of nameErrors(String(v), 'label')) errs.push({ field, type: 'FieldValueInvalid', value: v, detail: d });
  };
  label('spec.names.plural', names.plural, true);
  label('spec.names.singular', names.singular, false);
  if (!names.kind) errs.push({ field: 'spec.names.kind', type: 'FieldValueRequired', detail: '' });
  if (!names.listKind) errs.push({ field: 'spec.names.listKind', type: 'FieldValueRequired', detail: '' });
  else if (names.kind && names.listKind === names.kind) errs.push({ field: 'spec.names.listKind', type: 'FieldValueInvalid', value: names.listKind, detail: 'kind and listKind may not be the same' });
  if (Array.isArray(names.shortNames)) names.shortNames.forEach((s: unknown, i: number) => label(`spec.names.shortNames[${i}]`, s, true));
  if (Array.isArray(names.categories)) names.categories.forEach((s: unknown, i: number) => label(`spec.names.categories[${i}]`, s, true));

  // versions
  const versions: any[] = Array.isArray(spec.versions) ? spec.versions : [];
  if (versions.length === 0) {
    errs.push({ field: 'spec.versions', type: 'FieldValueInvalid', value: versionsValue(versions), detail: 'must have exactly one version marked as storage version' });
  } else {
    const storage = versions.filter((v) => v?.storage === true).length;
    if (storage !== 1) errs.push({ field: 'spec.versions', type: 'FieldValueInvalid', value: versionsValue(versions), detail: 'must have exactly one version marked as storage version' });
    if (!versions.some((v) => v?.served === true)) errs.push({ field: 'spec.versions', type: 'FieldValueInvalid', value: versionsValue(versions), detail: 'must have at least one version marked as served' });
    const seen = new Set<string>();
    versions.forEach((v, i) => {
      const at = `spec.versions[${i}]`;
      const name = typeof v?.name === 'string' ? v.name : '';
      if (!name) errs.push({ field: `${at}.name`, type: 'FieldValueRequired', detail: '' });
      else {
        for (const d of nameErrors(name, 'dns1035')) errs.push({ field: `${at}.name`, type: 'FieldValueInvalid', value: name, detail: d });
        if (seen.has(name)) errs.push({ field: 'spec.versions', type: 'FieldValueInvalid', value: versionsValue(versions), detail: 'must contain unique version names' });
        seen.add(name);
      }
      validateRootSchema(v?.schema?.openAPIV3Schema, `${at}.schema.openAPIV3Schema`, errs);
      validatePatterns(v?.schema?.openAPIV3Schema, `${at}.schema.openAPIV3Schema`, errs);
      validateRuleCompilation(v?.schema?.openAPIV3Schema, `${at}.schema.openAPIV3Schema`, errs);
      validateSelectableFields(v, at, errs);
      const scale = v?.subresources?.scale;
      if (isObj(scale)) {
        validateJsonPath(scale.specReplicasPath, `${at}.subresources.scale.specReplicasPath`, 'spec', true, errs);
        validateJsonPath(scale.statusReplicasPath, `${at}.subresources.scale.statusReplicasPath`, 'status', true, errs);
        validateJsonPath(scale.labelSelectorPath, `${at}.subresources.scale.labelSelectorPath`, '', false, errs);
        if (typeof scale.labelSelectorPath === 'string' && !scale.labelSelectorPath.startsWith('.spec.') && !scale.labelSelectorPath.startsWith('.status.')) {
          errs.push({ field: `${at}.subresources.scale.labelSelectorPath`, type: 'FieldValueInvalid', value: scale.labelSelectorPath, detail: 'should be a json path under either .spec or .status' });
        }
      }
    });
  }
  validateConversion(spec.conversion, errs);
  return errs;
}

export class CrdStrategy extends Strategy {
  override tracksGeneration = true;

  private defaults(obj: any): void {
    const spec = (obj.spec ??= {});
    const names = (spec.names ??= {});
    if (typeof names.kind === 'string' && names.kind) {
      if (!names.singular) names.singular = names.kind.toLowerCase();
      if (!names.listKind) names.listKind = `${names.kind}List`;
    }
    spec.conversion ??= { strategy: 'None' };
    for (const v of Array.isArray(spec.versions) ? spec.versions : []) {
      if (isObj(v) && v.served === undefined) v.served = false;
      if (isObj(v) && v.storage === undefined) v.storage = false;
    }
  }

  override prepareForCreate(obj: any): void {
    this.defaults(obj);
    const versions: any[] = Array.isArray(obj.spec.versions) ? obj.spec.versions : [];
    const storage = versions.find((v) => v?.storage === true)?.name;
    // kube's create clears the status: the names are accepted by the controller, not the client.
    obj.status = { acceptedNames: { kind: '', plural: '' }, storedVersions: storage ? [storage] : [] };
  }

  override prepareForUpdate(obj: any, old: any): void {
    this.defaults(obj);
    // A new storage version joins storedVersions (objects may now be stored in it).
    const storage = (Array.isArray(obj.spec?.versions) ? obj.spec.versions : []).find((v: any) => v?.storage === true)?.name;
    if (storage && obj.status && Array.isArray(obj.status.storedVersions) && !obj.status.storedVersions.includes(storage)) {
      obj.status.storedVersions = [...obj.status.storedVersions, storage];
    }
    void old;
  }

  override beforeDelete(obj: any): void {
    // kube's CRD delete: the cleanup finalizer and Terminating, then the controller deletes
    // every instance and lifts the finalizer, and the CRD goes.
    const f: string[] = (obj.metadata.finalizers ??= []);
    if (!f.includes(CRD_CLEANUP_FINALIZER)) f.push(CRD_CLEANUP_FINALIZER);
    setCondition(obj, 'Terminating', 'True', 'InstanceDeletionInProgress', 'CustomResource deletion is in progress');
  }

  override validate(obj: any): FieldError[] {
    return validateCrd(obj);
  }

  override validateUpdate(obj: any, old: any): FieldError[] {
    const errs: FieldError[] = [];
    const established = (old.status?.conditions ?? []).some((c: any) => c?.type === 'Established' && c?.status === 'True');
    if (obj.spec?.scope !== old.spec?.scope && established) errs.push({ field: 'spec.scope', type: 'FieldValueInvalid', value: obj.spec?.scope, detail: 'field is immutable' });
    if (obj.spec?.group !== old.spec?.group) errs.push({ field: 'spec.group', type: 'FieldValueInvalid', value: obj.spec?.group, detail: 'field is immutable' });
    return errs;
  }
}

/** A CRD's condition of a type, or undefined. */
export function conditionOf(crd: any, type: string): any {
  return (Array.isArray(crd?.status?.conditions) ? crd.status.conditions : []).find((c: any) => c?.type === type);
}

export function isEstablished(crd: any): boolean {
  return conditionOf(crd, 'Established')?.status === 'True';
}

/** Sets (or replaces) a condition, keeping lastTransitionTime when the status does not change. */
export function setCondition(crd: any, type: string, status: 'True' | 'False', reason: string, message: string): void {
  const st = (crd.status ??= {});
  const list: any[] = Array.isArray(st.conditions) ? st.conditions : (st.conditions = []);
  const cur = list.find((c) => c?.type === type);
  const next = { type, status, lastTransitionTime: cur && cur.status === status ? cur.lastTransitionTime : nowTs(), reason, message };
  if (cur) Object.assign(cur, next);
  else list.push(next);
}

/** The versions of a CRD by kube's priority (for discovery order and preferred version). */
export function sortedVersionNames(crd: any): string[] {
  return (Array.isArray(crd?.spec?.versions) ? crd.spec.versions : []).map((v: any) => v.name).sort(compareVersions);
}
