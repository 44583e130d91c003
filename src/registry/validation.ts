// Shared validation of object metadata (apimachinery's ValidateObjectMeta, in part): the name
// rule of the kind, labels, annotations and finalizers. Keys are checked in sorted order so
// that one bad object always yields the same message.
import type { FieldError } from './strategy.js';
import {
  DNS1035_LABEL_MSG,
  DNS1123_LABEL_MSG,
  DNS1123_SUBDOMAIN_MSG,
  DNS1035_LABEL_RE,
  DNS1123_LABEL_RE,
  DNS1123_SUBDOMAIN_RE,
  dns1123SubdomainErrors,
  invalid,
  tooLong,
} from './validation/field.js';

const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const QUALIFIED_NAME_MSG =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

export type NameRule = 'subdomain' | 'label' | 'dns1035' | 'path';

/**
 * The answer of a check that found nothing. Shared and frozen: the common case (a valid
 * object, e.g. the ConfigMaps of a create-heavy load) allocates no arrays, sorts no keys
 * and builds no field paths; those happen only once something is wrong.
 */
const NONE: FieldError[] = Object.freeze([]) as unknown as FieldError[];
const NO_DETAILS: string[] = Object.freeze([]) as unknown as string[];

/** A key that passes IsQualifiedName without further ado (no prefix, short, plain). */
function plainQualifiedName(k: string): boolean {
  const slash = k.indexOf('/');
  if (slash < 0) return k.length <= 63 && QUALIFIED_NAME.test(k);
  const prefix = k.slice(0, slash);
  const name = k.slice(slash + 1);
  return prefix.length > 0 && prefix.length <= 253 && DNS1123_SUBDOMAIN_RE.test(prefix) && name.length > 0 && name.length <= 63 && QUALIFIED_NAME.test(name);
}

/** The details of a name that breaks the rule (IsDNS1123Subdomain and friends, ValidatePathSegmentName). */
export function nameErrors(name: string, rule: NameRule, prefix = false): string[] {
  // A generateName prefix may end in '-' (the random suffix follows it).
  if (prefix && rule !== 'path' && name.endsWith('-')) name = name.slice(0, -1) + 'a';
  if (rule === 'path') {
    if (!prefix && (name === '.' || name === '..')) return [`may not be '${name}'`];
    const out: string[] = [];
    for (const c of ['/', '%']) if (name.includes(c)) out.push(`may not contain '${c}'`);
    return out;
  }
  const max = rule === 'subdomain' ? 253 : 63;
  const re0 = rule === 'subdomain' ? DNS1123_SUBDOMAIN_RE : rule === 'label' ? DNS1123_LABEL_RE : DNS1035_LABEL_RE;
  if (name.length <= max && re0.test(name)) return NO_DETAILS;
  const out: string[] = [];
  if (name.length > max) out.push(`must be no more than ${max} characters`);
  const [re, msg] =
    rule === 'subdomain' ? [DNS1123_SUBDOMAIN_RE, DNS1123_SUBDOMAIN_MSG] : rule === 'label' ? [DNS1123_LABEL_RE, DNS1123_LABEL_MSG] : [DNS1035_LABEL_RE, DNS1035_LABEL_MSG];
  if (!re.test(name)) out.push(msg);
  return out;
}

export function validateName(name: string, rule: NameRule, field = 'metadata.name', prefix = false): FieldError[] {
  const details = nameErrors(name, rule, prefix);
  return details.length === 0 ? NONE : details.map((d) => invalid(field, name, d));
}

/** IsQualifiedName: the details for a key that is not a qualified name. */
export function qualifiedNameErrors(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) name = parts[0];
  else if (parts.length === 2) {
    const prefix = parts[0];
    name = parts[1];
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else errs.push(...dns1123SubdomainErrors(prefix).map((m) => 'prefix part ' + m));
  } else {
    return ['a qualified name ' + QUALIFIED_NAME_MSG + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (name.length > 63) errs.push('name part must be no more than 63 characters');
  if (!QUALIFIED_NAME.test(name)) errs.push('name part ' + QUALIFIED_NAME_MSG);
  return errs;
}

export function labelValueErrors(v: string): string[] {
  const out: string[] = [];
  if (v.length > 63) out.push('must be no more than 63 characters');
  if (!LABEL_VALUE.test(v)) out.push(LABEL_VALUE_MSG);
  return out;
}

export function validateLabels(labels: Record<string, string> | undefined | null, field = 'metadata.labels'): FieldError[] {
  if (!labels || typeof labels !== 'object') return NONE;
  let clean = true;
  for (const k in labels) {
    const v = labels[k];
    if (!plainQualifiedName(k) || (typeof v === 'string' && (v.length > 63 || !LABEL_VALUE.test(v)))) {
      clean = false;
      break;
    }
  }
  if (clean) return NONE;
  const errs: FieldError[] = [];
  for (const k of Object.keys(labels).sort()) {
    for (const m of qualifiedNameErrors(k)) errs.push(invalid(field, k, m));
    const v = labels[k];
    if (typeof v === 'string') for (const m of labelValueErrors(v)) errs.push(invalid(field, v, m));
  }
  return errs;
}

const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;

export function validateAnnotations(ann: Record<string, string> | undefined | null, field = 'metadata.annotations'): FieldError[] {
  if (!ann || typeof ann !== 'object') return NONE;
  let total = 0;
  let clean = true;
  for (const k in ann) {
    if (clean && !plainQualifiedName(k.toLowerCase())) clean = false;
    total += Buffer.byteLength(k) + Buffer.byteLength(String(ann[k] ?? ''));
  }
  if (clean && total <= TOTAL_ANNOTATION_SIZE_LIMIT) return NONE;
  total = 0;
  const errs: FieldError[] = [];
  for (const k of Object.keys(ann).sort()) {
    // Case does not matter in annotation keys.
    for (const m of qualifiedNameErrors(k.toLowerCase())) errs.push(invalid(field, k, m));
    total += Buffer.byteLength(k) + Buffer.byteLength(String(ann[k] ?? ''));
  }
  if (total > TOTAL_ANNOTATION_SIZE_LIMIT) errs.push(tooLong(field, TOTAL_ANNOTATION_SIZE_LIMIT));
  return errs;
}

export function validateFinalizers(finalizers: unknown, field = 'metadata.finalizers'): FieldError[] {
  if (!Array.isArray(finalizers) || finalizers.length === 0) return NONE;
  const errs: FieldError[] = [];
  finalizers.forEach((f, i) => {
    if (typeof f === 'string') for (const m of qualifiedNameErrors(f)) errs.push(invalid(`${field}[${i}]`, f, m));
  });
  return errs;
}

/** The metadata checks of a pod template or job template (labels and annotations only). */
export function validateTemplateMeta(meta: any, path: string): FieldError[] {
  if (!meta?.labels && !meta?.annotations) return NONE;
  return [...validateLabels(meta?.labels, `${path}.labels`), ...validateAnnotations(meta?.annotations, `${path}.annotations`)];
}
