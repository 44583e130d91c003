// Label and field selectors (k8s.io/apimachinery/pkg/labels and /fields).
// A parse error is a 400 BadRequest, as kube-apiserver gives it.
import { errors } from '../errors.js';

export type LabelOp = 'exists' | '!exists' | '=' | '!=' | 'in' | 'notin' | 'gt' | 'lt';
export interface LabelRequirement {
  key: string;
  op: LabelOp;
  values: string[];
}
export type LabelSelector = LabelRequirement[];

const KEY_RE = /^([a-z0-9A-Z]([-a-z0-9A-Z.]*[a-z0-9A-Z])?\/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?$/;

function splitTerms(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    else if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out.map((t) => t.trim()).filter((t) => t !== '');
}

function badLabel(msg: string): never {
  throw errors.badRequest(`unable to parse requirement: ${msg}`);
}

export function parseLabelSelector(s: string | null): LabelSelector | null {
  if (s === null || s.trim() === '') return null;
  const reqs: LabelSelector = [];
  for (const term of splitTerms(s)) {
    let m: RegExpExecArray | null;
    if ((m = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(term))) {
      const values = m[3].split(',').map((v) => v.trim()).filter((v) => v !== '');
      reqs.push({ key: m[1], op: m[2] as LabelOp, values });
    } else if ((m = /^!\s*(\S+)$/.exec(term))) {
      reqs.push({ key: m[1], op: '!exists', values: [] });
    } else if ((m = /^([^=!<>\s]+)\s*(==|=|!=|<|>)\s*([^=!<>\s]*)$/.exec(term))) {
      const op: LabelOp = m[2] === '!=' ? '!=' : m[2] === '<' ? 'lt' : m[2] === '>' ? 'gt' : '=';
      if ((op === 'gt' || op === 'lt') && !/^-?\d+$/.test(m[3])) badLabel(`for 'Gt', 'Lt' operators, the value must be an integer`);
      reqs.push({ key: m[1], op, values: [m[3]] });
    } else if ((m = /^([^=!<>\s()]+)$/.exec(term))) {
      reqs.push({ key: m[1], op: 'exists', values: [] });
    } else {
      badLabel(`found '${term}', expected: identifier`);
    }
    const last = reqs[reqs.length - 1];
    if (!KEY_RE.test(last.key) || last.key.length > 317) badLabel(`invalid label key "${last.key}"`);
  }
  return reqs;
}

export function matchLabels(sel: LabelSelector | null, labels: Record<string, string> | undefined): boolean {
  if (!sel) return true;
  for (const r of sel) {
    const has = labels !== undefined && Object.prototype.hasOwnProperty.call(labels, r.key);
    const v = has ? labels![r.key] : undefined;
    switch (r.op) {
      case 'exists':
        if (!has) return false;
        break;
      case '!exists':
        if (has) return false;
        break;
      case '=':
        if (v !== r.values[0]) return false;
        break;
      case '!=':
        if (v === r.values[0]) return false;
        break;
      case 'in':
        if (!has || !r.values.includes(v!)) return false;
        break;
      case 'notin':
        if (has && r.values.includes(v!)) return false;
        break;
      case 'gt':
      case 'lt': {
        if (!has || !/^-?\d+$/.test(v!)) return false;
        const n = Number(v);
        const want = Number(r.values[0]);
        if (r.op === 'gt' ? !(n > want) : !(n < want)) return false;
        break;
      }
    }
  }
  return true;
}

export interface FieldRequirement {
  field: string;
  op: '=' | '!=';
  value: string;
}
export type FieldSelector = FieldRequirement[];

function unescapeField(s: string): string {
  return s.replace(/\\(.)/g, '$1');
}

export function parseFieldSelector(s: string | null): FieldSelector | null {
  if (s === null || s.trim() === '') return null;
  const reqs: FieldSelector = [];
  // split on unescaped commas
  const terms = s.split(/(?<!\\),/);
  for (const raw of terms) {
    const term = raw.trim();
    if (term === '') continue;
    const m = /^([^=!]+?)(==|=|!=)(.*)$/.exec(term);
    if (!m) throw errors.badRequest(`invalid selector: '${s}'; can't understand '${term}'`);
    reqs.push({ field: m[1].trim(), op: m[2] === '!=' ? '!=' : '=', value: unescapeField(m[3]) });
  }
  return reqs;
}

/** If the selector pins one field to one value (e.g. metadata.name=x), that value. */
export function exactField(sel: FieldSelector | null, field: string): string | undefined {
  if (!sel) return undefined;
  for (const r of sel) if (r.field === field && r.op === '=') return r.value;
  return undefined;
}

export function fieldValue(obj: any, path: string): string {
  let cur = obj;
  for (const p of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return '';
    cur = cur[p];
  }
  if (cur === undefined || cur === null) return '';
  return typeof cur === 'string' ? cur : String(cur);
}

export function matchFields(sel: FieldSelector | null, obj: unknown): boolean {
  if (!sel) return true;
  for (const r of sel) {
    const v = fieldValue(obj, r.field);
    if (r.op === '=' ? v !== r.value : v === r.value) return false;
  }
  return true;
}

/** Matches a field selector against an object's selectable fields (canonical label -> value). */
export function matchFieldMap(sel: FieldSelector | null, fields: Record<string, string>): boolean {
  if (!sel) return true;
  for (const r of sel) {
    const v = fields[r.field] ?? '';
    if (r.op === '=' ? v !== r.value : v === r.value) return false;
  }
  return true;
}
