// Field-error constructors and small checks shared by the per-kind validators, after
// k8s.io/apimachinery/pkg/util/validation/field: each returns the FieldError the store turns
// into one cause of a 422 Invalid (errors.invalid renders the message as kube does).
import type { FieldError } from '../strategy.js';
import { setOwn } from '../own-keys.js';

/** A JSON object (not null, not an array). */
export const isObj = (v: unknown): v is Record<string, any> => v !== null && typeof v === 'object' && !Array.isArray(v);
/** The items of a JSON array, or none when it is not one. */
export const list = (v: unknown): any[] => (Array.isArray(v) ? v : []);
/** Set to something: Go's non-nil pointer (an explicit null counts as unset, as kube decodes it). */
export const present = (v: unknown): boolean => v !== undefined && v !== null;

export type Errs = FieldError[];

export const required = (field: string, detail = ''): FieldError => ({ field, type: 'FieldValueRequired', ...(detail ? { detail } : {}) });
export const invalid = (field: string, value: unknown, detail = ''): FieldError => ({ field, type: 'FieldValueInvalid', value, ...(detail ? { detail } : {}) });
export const duplicate = (field: string, value: unknown): FieldError => ({ field, type: 'FieldValueDuplicate', value });
export const forbidden = (field: string, detail: string): FieldError => ({ field, type: 'FieldValueForbidden', detail });
export const notFound = (field: string, value: unknown): FieldError => ({ field, type: 'FieldValueNotFound', value });
export const tooLong = (field: string, max: number): FieldError => ({
  field,
  type: 'FieldValueTooLong',
  detail: `may not be more than ${max} ${max === 1 ? 'byte' : 'bytes'}`,
});
export const tooMany = (field: string, actual: number, max: number): FieldError => ({
  field,
  type: 'FieldValueTooMany',
  value: actual,
  detail: `must have at most ${max} ${max === 1 ? 'item' : 'items'}`,
});
export function notSupported(field: string, value: unknown, supported: readonly string[]): FieldError {
  return {
    field,
    type: 'FieldValueNotSupported',
    value,
    ...(supported.length ? { detail: 'supported values: ' + supported.map((v) => JSON.stringify(v)).join(', ') } : {}),
  };
}

/** apimachinery's FieldImmutableErrorMsg. */
export const IMMUTABLE = 'field is immutable';

/** The deep-equality kube's ValidateImmutableField uses (semantic equality on JSON values). */
export function sameValue(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

export function canonicalJson(v: unknown): string {
  if (v === undefined) return 'null';
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return '[' + v.map(canonicalJson).join(',') + ']';
  const keys = Object.keys(v as object).filter((k) => (v as any)[k] !== undefined).sort();
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalJson((v as any)[k])).join(',') + '}';
}

export function immutable(field: string, now: unknown, before: unknown): FieldError[] {
  return sameValue(now, before) ? [] : [invalid(field, sortedKeys(now), IMMUTABLE)];
}

/** A map with its keys in order, as Go's encoding/json prints maps. */
export function sortedKeys<T>(v: T): T {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(sortedKeys) as T;
  const out: any = {};
  for (const k of Object.keys(v as object).sort()) if ((v as any)[k] !== undefined) setOwn(out, k, sortedKeys((v as any)[k]));
  return out;
}

export function isInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v);
}

export function nonNegative(v: unknown, field: string): FieldError[] {
  return isInt(v) && v < 0 ? [invalid(field, v, 'must be greater than or equal to 0')] : [];
}

export function positive(v: unknown, field: string): FieldError[] {
  return isInt(v) && v <= 0 ? [invalid(field, v, 'must be greater than 0')] : [];
}

export const DNS1123_LABEL_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const DNS1123_SUBDOMAIN_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export const DNS1035_LABEL_RE = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

export const DNS1123_LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
export const DNS1123_SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
export const DNS1035_LABEL_MSG =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/** IsDNS1123Label: the detail strings for a value that is not one (empty when it is). */
export function dns1123LabelErrors(v: string): string[] {
  const out: string[] = [];
  if (v.length > 63) out.push('must be no more than 63 characters');
  if (!DNS1123_LABEL_RE.test(v)) out.push(DNS1123_LABEL_MSG);
  return out;
}

export function dns1123SubdomainErrors(v: string): string[] {
  const out: string[] = [];
  if (v.length > 253) out.push('must be no more than 253 characters');
  if (!DNS1123_SUBDOMAIN_RE.test(v)) out.push(DNS1123_SUBDOMAIN_MSG);
  return out;
}

export function dns1035LabelErrors(v: string): string[] {
  const out: string[] = [];
  if (v.length > 63) out.push('must be no more than 63 characters');
  if (!DNS1035_LABEL_RE.test(v)) out.push(DNS1035_LABEL_MSG);
  return out;
}

/** One Invalid error per detail, as kube loops over IsDNS1123Label's messages. */
export function each(field: string, value: unknown, details: string[]): FieldError[] {
  return details.map((d) => invalid(field, value, d));
}

/** IsValidPortNum */
export function validPort(v: unknown): boolean {
  return isInt(v) && v >= 1 && v <= 65535;
}
export const PORT_RANGE_MSG = 'must be between 1 and 65535, inclusive';

/** IsValidPortName: the details for an invalid IANA_SVC_NAME. */
export function portNameErrors(port: string): string[] {
  const out: string[] = [];
  if (port.length < 1 || port.length > 15) out.push('must be no more than 15 characters');
  if (!/^[-a-z0-9]+$/.test(port)) out.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
  if (!/[a-z]/.test(port)) out.push('must contain at least one letter (a-z)');
  if (port.includes('--')) out.push("must not contain consecutive hyphens");
  if (port.length > 0 && (port[0] === '-' || port[port.length - 1] === '-')) out.push("must not begin or end with a hyphen");
  return out;
}
