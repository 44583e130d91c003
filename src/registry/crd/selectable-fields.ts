// CRD selectableFields (spec.versions[].selectableFields, GA in 1.32): the field labels a
// custom resource's list and watch accept in a field selector, beside metadata.name and
// metadata.namespace, each read from the object at its jsonPath ("" when absent; integers and
// booleans as their decimal or true/false text), as apiextensions-apiserver's
// customResourceStrategy does; and their validation as kube's
// ValidateCustomResourceSelectableFields (a simple path to a string, boolean or integer field
// of the version's schema, not in metadata, no duplicates, at most 8).
//
// Thread ownership: none (pure functions; the field labels are registered by the front
// thread's CustomResources.publish).
import type { FieldError } from '../strategy.js';
import type { CustomVersion } from '../../api/custom-resources.js';
import { setCustomFieldLabels } from '../../request/field-labels.js';

/** kube's MaxSelectableFields. */
export const MAX_SELECTABLE_FIELDS = 8;

const isObj = (v: unknown): v is Record<string, any> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The properties a jsonPath names and the schema it ends at (kube's ValidFieldPath without
 * array notation), or the reason it names nothing.
 */
export function resolveFieldPath(jsonPath: string, schema: any): { path: string[]; schema: any } | { error: string } {
  const path: string[] = [];
  let s = schema;
  let rest = jsonPath;
  while (rest.length) {
    if (rest[0] !== '.') return { error: `expected [ or . but got: ${rest.split(/[.[\]]/)[0] || rest[0]}` };
    rest = rest.slice(1);
    const m = /^[^.[\]]*/.exec(rest)![0];
    if (!m) return { error: 'unexpected end of JSON path' };
    rest = rest.slice(m.length);
    if (!isObj(s) || (!isObj(s.properties) && !isObj(s.additionalProperties))) return { error: 'does not refer to a valid field' };
    if (isObj(s.properties)) {
      if (!Object.prototype.hasOwnProperty.call(s.properties, m)) return { error: 'does not refer to a valid field' };
      s = s.properties[m];
    } else s = s.additionalProperties;
    path.push(m);
  }
  return { path, schema: s };
}

/** The errors of one version's selectableFields (kube's messages, under `at`). */
export function validateSelectableFields(version: any, at: string, errs: FieldError[]): void {
  const fields: unknown = version?.selectableFields;
  if (!Array.isArray(fields) || fields.length === 0) return;
  const root = version?.schema?.openAPIV3Schema;
  if (!isObj(root)) {
    errs.push({ field: `${at}.selectableFields`, type: 'FieldValueInvalid', value: '', detail: 'selectableFields may only be set when version.schema.openAPIV3Schema is not included' });
    return;
  }
  const unique = new Set<string>();
  fields.forEach((f: any, i: number) => {
    const field = `${at}.selectableFields[${i}].jsonPath`;
    const jsonPath = f?.jsonPath;
    if (typeof jsonPath !== 'string' || jsonPath === '') {
      errs.push({ field, type: 'FieldValueRequired', detail: '' });
      return;
    }
    const r = resolveFieldPath(jsonPath, root);
    if ('error' in r) {
      errs.push({ field, type: 'FieldValueInvalid', value: jsonPath, detail: `is an invalid path: ${r.error}` });
      return;
    }
    if (r.path[0] === 'metadata') errs.push({ field, type: 'FieldValueInvalid', value: jsonPath, detail: 'must not point to fields in metadata' });
    const t = isObj(r.schema) ? r.schema.type : undefined;
    if (t !== 'string' && t !== 'boolean' && t !== 'integer') {
      errs.push({ field, type: 'FieldValueInvalid', value: jsonPath, detail: 'must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.' });
    }
    const key = r.path.join('.');
    if (unique.has(key)) errs.push({ field, type: 'FieldValueDuplicate', value: jsonPath });
    else unique.add(key);
  });
  if (unique.size > MAX_SELECTABLE_FIELDS) {
    errs.push({ field: `${at}.selectableFields`, type: 'FieldValueTooMany', value: unique.size, detail: `must have at most ${MAX_SELECTABLE_FIELDS} items` });
  }
}

/** The field label of a jsonPath (".spec.color" -> "spec.color"). */
export function fieldLabelOf(jsonPath: string): string {
  return jsonPath.startsWith('.') ? jsonPath.slice(1) : jsonPath;
}

function reader(path: string[]): (obj: any) => string {
  return (obj) => {
    let cur = obj;
    for (const p of path) {
      if (!isObj(cur)) return '';
      cur = cur[p];
    }
    if (typeof cur === 'string') return cur;
    if (typeof cur === 'number' || typeof cur === 'boolean') return String(cur);
    return '';
  };
}

function labelsOf(cv: CustomVersion): Array<[string, (obj: any) => string]> {
  const out: Array<[string, (obj: any) => string]> = [];
  for (const jsonPath of cv.selectableFields ?? []) {
    const r = resolveFieldPath(jsonPath, cv.schema);
    if ('error' in r) continue;
    out.push([fieldLabelOf(jsonPath), reader(r.path)]);
  }
  return out;
}

/**
 * Registers the field labels of every served version: `<resource>.<group>@<version>` says
 * which labels a request of that version accepts; `<resource>.<group>` reads them all from a
 * stored object (the storage version's path first, a label only another version declares at
 * that version's path). Returns the resources whose labels changed: the selectable values
 * memoized on their cached objects are stale.
 */
export function publishSelectableFields(versions: CustomVersion[]): string[] {
  const byGr = new Map<string, CustomVersion[]>();
  const signatures = new Map<string, string>();
  for (const cv of versions) {
    const gr = `${cv.plural}.${cv.group}`;
    byGr.set(gr, [...(byGr.get(gr) ?? []), cv]);
  }
  const regs: Array<{ key: string; namespaced: boolean; fields: Array<[string, (obj: any) => string]> }> = [];
  for (const [gr, cvs] of byGr) {
    const stored: Array<[string, (obj: any) => string]> = [];
    const seen = new Set<string>();
    const ordered = [...cvs.filter((c) => c.version === c.storageVersion), ...cvs.filter((c) => c.version !== c.storageVersion)];
    for (const cv of ordered) {
      const fields = labelsOf(cv);
      regs.push({ key: `${gr}@${cv.version}`, namespaced: cv.namespaced, fields });
      for (const [l, f] of fields) if (!seen.has(l)) seen.add(l), stored.push([l, f]);
    }
    regs.push({ key: gr, namespaced: cvs[0].namespaced, fields: stored });
    signatures.set(gr, JSON.stringify(cvs.map((c) => [c.version, c.selectableFields ?? []])));
  }
  setCustomFieldLabels(regs);
  const changed: string[] = [];
  for (const gr of new Set([...byGr.keys(), ...published.keys()])) {
    if (signatures.get(gr) !== published.get(gr)) changed.push(gr);
  }
  published = signatures;
  return changed;
}

/** the selectableFields each resource was last published with */
let published = new Map<string, string>();
