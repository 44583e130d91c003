// Helpers of the defaulters (the SetDefaults_* functions of k8s.io/kubernetes pkg/apis/*/v1).
// Defaulting runs where kube runs it: when a request body is decoded, so on create, update
// and patch alike. Defaulters mutate the object in place and tolerate malformed input: a
// wrong type is left for validation to report.
import { errors } from '../../errors.js';
import type { ResourceInfo } from '../../api/catalog-types.js';

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
