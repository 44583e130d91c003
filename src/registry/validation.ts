// Shared validation of object metadata (apimachinery's ValidateObjectMeta, in part).
import type { FieldError } from './strategy.js';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

export type NameRule = 'subdomain' | 'label' | 'dns1035' | 'path';

const RULE_TEXT: Record<Exclude<NameRule, 'path'>, string> = {
  subdomain:
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
  label:
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
  dns1035:
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
};

export function validateName(name: string, rule: NameRule, field = 'metadata.name'): FieldError[] {
  const errs: FieldError[] = [];
  if (rule === 'path') {
    if (name === '.' || name === '..') errs.push({ field, type: 'FieldValueInvalid', value: name, detail: `may not be '${name}'` });
    else if (/[/%]/.test(name)) errs.push({ field, type: 'FieldValueInvalid', value: name, detail: "may not contain '/' or '%'" });
    return errs;
  }
  const max = rule === 'subdomain' ? 253 : 63;
  if (name.length > max) errs.push({ field, type: 'FieldValueInvalid', value: name, detail: `must be no more than ${max} characters` });
  const re = rule === 'subdomain' ? DNS1123_SUBDOMAIN : rule === 'label' ? DNS1123_LABEL : DNS1035_LABEL;
  if (!re.test(name)) errs.push({ field, type: 'FieldValueInvalid', value: name, detail: RULE_TEXT[rule] });
  return errs;
}

function validateQualifiedKey(key: string, field: string): FieldError[] {
  const slash = key.lastIndexOf('/');
  const [prefix, name] = slash >= 0 ? [key.slice(0, slash), key.slice(slash + 1)] : ['', key];
  const errs: FieldError[] = [];
  if (slash >= 0 && (prefix === '' || prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))) {
    errs.push({ field, type: 'FieldValueInvalid', value: key, detail: 'prefix part ' + RULE_TEXT.subdomain });
  }
  if (name === '' || name.length > 63 || !QUALIFIED_NAME.test(name)) {
    errs.push({
      field,
      type: 'FieldValueInvalid',
      value: key,
      detail:
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    });
  }
  return errs;
}

export function validateLabels(labels: Record<string, string> | undefined, field = 'metadata.labels'): FieldError[] {
  const errs: FieldError[] = [];
  if (!labels) return errs;
  for (const [k, v] of Object.entries(labels)) {
    errs.push(...validateQualifiedKey(k, field));
    if (v.length > 63 || !LABEL_VALUE.test(v)) {
      errs.push({
        field: `${field}`,
        type: 'FieldValueInvalid',
        value: v,
        detail:
          "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
      });
    }
  }
  return errs;
}

const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;

export function validateAnnotations(ann: Record<string, string> | undefined, field = 'metadata.annotations'): FieldError[] {
  const errs: FieldError[] = [];
  if (!ann) return errs;
  let total = 0;
  for (const [k, v] of Object.entries(ann)) {
    errs.push(...validateQualifiedKey(k.toLowerCase(), field));
    total += k.length + v.length;
  }
  if (total > TOTAL_ANNOTATION_SIZE_LIMIT) {
    errs.push({ field, type: 'FieldValueTooLong', detail: `must have at most ${TOTAL_ANNOTATION_SIZE_LIMIT} bytes` });
  }
  return errs;
}
