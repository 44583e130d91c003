// metav1.LabelSelector: validation (ValidateLabelSelector), matching, and the JSON form a
// field error prints it in (field order and omitempty as the Go struct).
import type { FieldError } from '../strategy.js';
import { qualifiedNameErrors, validateLabels } from '../validation.js';
import {
  invalid,
  isObj,
  required,
  sortedKeys,
} from './field.js';

const OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'];

export function selectorValue(sel: any): unknown {
  if (!isObj(sel)) return null;
  const out: any = {};
  if (isObj(sel.matchLabels) && Object.keys(sel.matchLabels).length) out.matchLabels = sortedKeys(sel.matchLabels);
  if (Array.isArray(sel.matchExpressions) && sel.matchExpressions.length) {
    out.matchExpressions = sel.matchExpressions.map((e: any) => {
      const r: any = { key: e?.key ?? '', operator: e?.operator ?? '' };
      if (Array.isArray(e?.values) && e.values.length) r.values = e.values;
      return r;
    });
  }
  return out;
}

/** A label map as an error prints it: sorted keys, null when absent. */
export function labelsValue(labels: unknown): unknown {
  return isObj(labels) ? sortedKeys(labels) : null;
}

export function validateLabelSelector(sel: any, path: string): FieldError[] {
  const errs: FieldError[] = [];
  if (!isObj(sel)) return errs;
  (Array.isArray(sel.matchExpressions) ? sel.matchExpressions : []).forEach((e: any, i: number) => {
    const ip = `${path}.matchExpressions[${i}]`;
    if (!isObj(e)) return;
    const values = Array.isArray(e.values) ? e.values : [];
    switch (e.operator) {
      case 'In':
      case 'NotIn':
        if (values.length === 0) errs.push(required(`${ip}.values`, "must be specified when `operator` is 'In' or 'NotIn'"));
        break;
      case 'Exists':
      case 'DoesNotExist':
        if (values.length > 0) errs.push({ field: `${ip}.values`, type: 'FieldValueForbidden', detail: "may not be specified when `operator` is 'Exists' or 'DoesNotExist'" });
        break;
      default:
        errs.push(invalid(`${ip}.operator`, e.operator ?? '', 'not a valid selector operator'));
    }
    for (const m of qualifiedNameErrors(String(e.key ?? ''))) errs.push(invalid(`${ip}.key`, e.key ?? '', m));
  });
  errs.push(...validateLabels(sel.matchLabels, `${path}.matchLabels`));
  return errs;
}

/** Whether a (valid) selector selects the labels. A missing selector selects nothing. */
export function selectorMatches(sel: any, labels: unknown): boolean {
  if (!isObj(sel)) return false;
  const l: Record<string, string> = isObj(labels) ? labels : {};
  for (const [k, v] of Object.entries(isObj(sel.matchLabels) ? sel.matchLabels : {})) if (l[k] !== v) return false;
  for (const e of Array.isArray(sel.matchExpressions) ? sel.matchExpressions : []) {
    const has = Object.prototype.hasOwnProperty.call(l, e?.key);
    const values: string[] = Array.isArray(e?.values) ? e.values : [];
    switch (e?.operator) {
      case 'In':
        if (!has || !values.includes(l[e.key])) return false;
        break;
      case 'NotIn':
        if (has && values.includes(l[e.key])) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

export function selectorEmpty(sel: any): boolean {
  return (
    !isObj(sel) ||
    (Object.keys(isObj(sel.matchLabels) ? sel.matchLabels : {}).length === 0 &&
      (Array.isArray(sel.matchExpressions) ? sel.matchExpressions.length : 0) === 0)
  );
}

