// Label and field selectors (k8s.io/apimachinery/pkg/labels and /fields).
// A parse error is a 400 BadRequest, as kube-apiserver gives it.
import { errors, goQuote } from '../errors.js';
import { labelValueErrors, qualifiedNameErrors } from '../registry/validation.js';

export type LabelOp = 'exists' | '!exists' | '=' | '!=' | 'in' | 'notin' | 'gt' | 'lt';
export interface LabelRequirement {
  key: string;
  op: LabelOp;
  values: string[];
}
export type LabelSelector = LabelRequirement[];

// ---- labels.Parse: kube's lexer and recursive-descent parser, with its error texts ----

type Tok = 'err' | 'eos' | ')' | ',' | '!' | '==' | '=' | '>' | 'id' | 'in' | '<' | '!=' | 'notin' | '(';
const LITERAL_TOKENS: Record<string, Tok> = { ')': ')', ',': ',', '!': '!', '==': '==', '=': '=', '>': '>', in: 'in', '<': '<', '!=': '!=', notin: 'notin', '(': '(' };
const BINARY_OPERATORS = 'in, notin, =, ==, !=, gt, lt';

function isSpace(ch: string): boolean {
  return ch === ' ' || ch === '\t' || ch === '\r' || ch === '\n';
}
function isSpecial(ch: string): boolean {
  return ch === '=' || ch === '!' || ch === '(' || ch === ')' || ch === ',' || ch === '>' || ch === '<';
}

function lex(s: string): Array<[Tok, string]> {
  const out: Array<[Tok, string]> = [];
  let pos = 0;
  for (;;) {
    while (pos < s.length && isSpace(s[pos])) pos++;
    if (pos >= s.length) {
      out.push(['eos', '']);
      return out;
    }
    if (isSpecial(s[pos])) {
      // the longest run of special characters that is still an operator
      let buf = '';
      let best: [Tok, string] | null = null;
      while (pos < s.length && isSpecial(s[pos])) {
        buf += s[pos];
        const t = LITERAL_TOKENS[buf];
        if (t) best = [t, buf];
        else if (best) break;
        pos++;
      }
      // (the character that ended a match was not consumed)
      out.push(best ?? ['err', `error expected: keyword found '${buf}'`]);
      continue;
    }
    const from = pos;
    while (pos < s.length && !isSpecial(s[pos]) && !isSpace(s[pos])) pos++;
    const word = s.slice(from, pos);
    const t = LITERAL_TOKENS[word];
    out.push([t === 'in' || t === 'notin' ? t : 'id', word]);
  }
}

/** A field.Error rendered as apimachinery prints it. */
function fieldInvalid(path: string, value: string, detail: string): string {
  return `${path}: Invalid value: ${goQuote(value)}: ${detail}`;
}

/** utilerrors.NewAggregate(...).Error(): one message as is, several in brackets, duplicates once. */
function aggregate(msgs: string[]): string {
  const uniq = [...new Set(msgs)];
  return uniq.length === 1 ? uniq[0] : `[${uniq.join(', ')}]`;
}

function keyError(key: string): string | null {
  const errs = qualifiedNameErrors(key);
  // the parser's path is nil, which field.Path prints as "<nil>"
  return errs.length ? fieldInvalid('<nil>', key, errs.join('; ')) : null;
}

const OPS: Record<string, LabelOp> = { in: 'in', notin: 'notin', '=': '=', '==': '=', '!=': '!=', '>': 'gt', '<': 'lt' };

function parseRequirements(sel: string): LabelSelector {
  const toks = lex(sel);
  let p = 0;
  // in "values" context the words in / notin are plain identifiers
  const look = (values: boolean): [Tok, string] => {
    const [t, l] = toks[p];
    return values && (t === 'in' || t === 'notin') ? ['id', l] : [t, l];
  };
  const take = (values: boolean): [Tok, string] => {
    const r = look(values);
    p++;
    return r;
  };
  const fail = (msg: string): never => {
    throw errors.badRequest(msg);
  };
  const reqFail = (msg: string): never => fail(`unable to parse requirement: ${msg}`);

  const requirement = (): LabelRequirement => {
    let [t, lit] = take(true);
    let notExists = false;
    if (t === '!') {
      notExists = true;
      [t, lit] = take(true);
    }
    if (t !== 'id') reqFail(`found '${lit}', expected: identifier`);
    const kErr = keyError(lit);
    if (kErr) reqFail(kErr);
    const key = lit;
    const [next] = look(true);
    if (notExists || next === 'eos' || next === ',') {
      // a unary requirement; `!key` followed by anything else is left to the caller to reject
      return { key, op: notExists ? '!exists' : 'exists', values: [] };
    }
    const [ot, olit] = take(false);
    const op = OPS[ot];
    if (!op || ot === '!') reqFail(`found '${olit}', expected: ${BINARY_OPERATORS}`);
    let values: string[];
    if (op === 'in' || op === 'notin') {
      const [pt, plit] = take(true);
      if (pt !== '(') reqFail(`found '${plit}' expected: '('`);
      const [vt, vlit] = look(true);
      const set = new Set<string>();
      if (vt === ')') {
        take(true);
        set.add(''); // "()" is the empty value
      } else if (vt === 'id' || vt === ',') {
        for (;;) {
          const [it, ilit] = take(true);
          if (it === 'id') {
            set.add(ilit);
            const [t2, l2] = look(true);
            if (t2 === ',') continue;
            if (t2 === ')') break;
            reqFail(`found '${l2}', expected: ',' or ')'`);
          } else if (it === ',') {
            if (set.size === 0) set.add('');
            const [t2] = look(true);
            if (t2 === ')') {
              set.add('');
              break;
            }
            if (t2 === ',') set.add('');
          } else reqFail(`found '${ilit}', expected: ',', or identifier`);
        }
        if (take(true)[0] !== ')') reqFail(`found '${vlit}', expected: ')'`);
      } else reqFail(`found '${vlit}', expected: ',', ')' or identifier`);
      values = [...set];
    } else {
      const [vt] = look(true);
      if (vt === 'eos' || vt === ',') values = [''];
      else {
        const [it, ilit] = take(true);
        if (it !== 'id') reqFail(`found '${ilit}', expected: identifier`);
        values = [ilit];
      }
    }
    // NewRequirement's checks, over the values in sorted order (a sets.String's List())
    values.sort();
    const errs: string[] = [];
    if (op === 'gt' || op === 'lt') {
      values.forEach((v, i) => {
        if (!/^[-+]?[0-9]+$/.test(v) || BigInt(v) > 0x7fffffffffffffffn || BigInt(v) < -0x8000000000000000n) {
          errs.push(fieldInvalid(`values[${i}]`, v, "for 'Gt', 'Lt' operators, the value must be an integer"));
        }
      });
    }
    values.forEach((v, i) => {
      const ve = labelValueErrors(v);
      if (ve.length) errs.push(fieldInvalid(`values[${i}][${key}]`, v, ve.join('; ')));
    });
    if (errs.length) reqFail(aggregate(errs));
    return { key, op, values };
  };

  const reqs: LabelSelector = [];
  for (;;) {
    const [t, lit] = look(true);
    if (t === 'eos') return reqs;
    if (t !== 'id' && t !== '!') fail(`found '${lit}', expected: !, identifier, or 'end of string'`);
    reqs.push(requirement());
    const [t2, l2] = take(true);
    if (t2 === 'eos') return reqs;
    if (t2 !== ',') fail(`found '${l2}', expected: ',' or 'end of string'`);
    const [t3, l3] = look(true);
    if (t3 !== 'id' && t3 !== '!') fail(`found '${l3}', expected: identifier after ','`);
  }
}

/** labels.Parse; a selector it refuses is a 400 with its message, as in ListResource. */
export function parseLabelSelector(s: string | null): LabelSelector | null {
  if (s === null) return null;
  const reqs = parseRequirements(s);
  return reqs.length === 0 ? null : reqs;
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

/** fields.UnescapeValue: only \\, \, and \= are escapes; a bare , or = in a value is refused. */
function unescapeFieldValue(s: string): string {
  if (!/[\\,=]/.test(s)) return s;
  let out = '';
  let inSlash = false;
  for (const c of s) {
    if (inSlash) {
      if (c !== '\\' && c !== ',' && c !== '=') throw errors.badRequest(`invalid field selector: invalid escape sequence: \\${c}`);
      out += c;
      inSlash = false;
    } else if (c === '\\') inSlash = true;
    else if (c === ',' || c === '=') {
      // Go prints the rune with %v: its code point, not the character
      throw errors.badRequest(`invalid field selector: unescaped character in value: ${c.codePointAt(0)}`);
    } else out += c;
  }
  if (inSlash) throw errors.badRequest('invalid field selector: invalid escape sequence: \\');
  return out;
}

/** fields.splitTerms: commas not preceded by a backslash escape end a term. */
function splitFieldTerms(s: string): string[] {
  const terms: string[] = [];
  let from = 0;
  let inSlash = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (inSlash) inSlash = false;
    else if (c === '\\') inSlash = true;
    else if (c === ',') {
      terms.push(s.slice(from, i));
      from = i + 1;
    }
  }
  terms.push(s.slice(from));
  return terms;
}

/**
 * fields.ParseSelector, as the ListOptions conversion runs it: terms sorted (so the first
 * bad term in sorted order is the one reported), split at the first "!=", "==" or "=" with
 * nothing trimmed (a spaced label is an unknown label later), values unescaped. A term with
 * neither field nor value ("=") selects everything, as its Transform does.
 */
export function parseFieldSelector(s: string | null): FieldSelector | null {
  if (s === null || s === '') return null;
  const reqs: FieldSelector = [];
  const terms = splitFieldTerms(s).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  for (const term of terms) {
    if (term === '') continue;
    let at = -1;
    let op = '';
    for (let i = 0; i < term.length && at < 0; i++) {
      for (const o of ['!=', '==', '=']) {
        if (term.startsWith(o, i)) {
          at = i;
          op = o;
          break;
        }
      }
    }
    if (at < 0) throw errors.badRequest(`invalid selector: '${s}'; can't understand '${term}'`);
    const field = term.slice(0, at);
    const value = unescapeFieldValue(term.slice(at + op.length));
    if (field === '' && value === '') continue;
    reqs.push({ field, op: op === '!=' ? '!=' : '=', value });
  }
  return reqs.length ? reqs : null;
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
  // a field selector names a scalar; a map or list there (whose own toString may be any
  // value in a decoded object, e.g. {"toString": null}) matches as the empty value
  return typeof cur === 'string' ? cur : typeof cur === 'object' ? '' : String(cur);
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
