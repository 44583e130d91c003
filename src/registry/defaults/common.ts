// Helpers of the defaulters (the SetDefaults_* functions of k8s.io/kubernetes pkg/apis/*/v1).
// Defaulting runs where kube runs it: when a request body is decoded, so on create, update
// and patch alike. Defaulters mutate the object in place and tolerate malformed input: a
// wrong type is left for validation to report.
import { errors } from '../../errors.js';
import type { ResourceInfo } from '../../api/catalog-types.js';
import { definitions } from '../../api/schema.js';

export function isObj(v: unknown): v is Record<string, any> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The object at obj[key], created as {} when absent (a non-object is left alone and null returned). */
export function child(obj: any, key: string): Record<string, any> | null {
  if (!isObj(obj)) return null;
  if (obj[key] === undefined || obj[key] === null) obj[key] = {};
  return isObj(obj[key]) ? obj[key] : null;
}

export function arr(v: unknown): any[] {
  return Array.isArray(v) ? v : [];
}

/** Sets obj[key] = value when it is unset (undefined, null or the empty string, as Go's zero values). */
export function def(obj: any, key: string, value: unknown): void {
  if (isObj(obj) && (obj[key] === undefined || obj[key] === null || obj[key] === '')) obj[key] = value;
}

/** A body kube-apiserver fails to decode: 400 BadRequest, worded as its codec words it. */
export function decodeError(info: Pick<ResourceInfo, 'kind' | 'version'>, detail: string): Error {
  return errors.badRequest(`${info.kind} in version "${info.version}" cannot be handled as a ${info.kind}: ${detail}`);
}

/** A v3 default that is more than Go's zero value (zero values are what an omitted field means anyway). */
function meaningful(d: unknown): boolean {
  if (d === undefined || d === null || d === '' || d === 0 || d === false) return false;
  return !(typeof d === 'object' && Object.keys(d as object).length === 0);
}

const declared = new Map<string, ReadonlyArray<readonly [string, unknown]>>();

/**
 * The declarative defaults (+default markers) of a definition, as the catalog's v3 facts
 * carry them: [property, value] for each that is not a zero value. Memoized per definition.
 */
export function declaredDefaults(defName: string): ReadonlyArray<readonly [string, unknown]> {
  let out = declared.get(defName);
  if (!out) {
    const props = definitions[defName]?.p ?? {};
    out = Object.entries(props)
      .filter(([, p]) => meaningful(p.d))
      .map(([k, p]) => [k, p.d] as const);
    declared.set(defName, out);
  }
  return out;
}

/** Sets the declarative defaults of obj's definition where obj leaves them unset. */
export function applyDeclaredDefaults(obj: unknown, defName: string): void {
  if (!isObj(obj)) return;
  for (const [k, v] of declaredDefaults(defName)) def(obj, k, structuredClone(v));
}

/**
 * For each member of a one-of holder (a Volume, a PersistentVolumeSpec) that is set, the
 * declarative defaults of the member's own definition (RBD pool, ScaleIO storage mode, ...).
 */
export function applyMemberDefaults(holder: unknown, holderDef: string): void {
  if (!isObj(holder)) return;
  const props = definitions[holderDef]?.p;
  if (!props) return;
  for (const k in holder) {
    const ref = props[k]?.r;
    if (ref && isObj(holder[k])) applyDeclaredDefaults(holder[k], ref);
  }
}
