// resource.Quantity of k8s.io/apimachinery: parsing, comparison and the canonical form
// kube-apiserver stores ("1000m" becomes "1", "1024Mi" becomes "1Gi", "0.5" becomes "500m").
//
// Every step is linear in the length of the text: a quantity is user data, and a request may
// hold one of a megabyte. Parsing is a single scan (kube's parseQuantityString), and a parsed
// quantity keeps its magnitude as a decimal digit string with an exponent, so rounding,
// canonicalizing and comparing are string work; the BigInt mantissa `m`, whose conversion
// from a long digit string is super-linear in V8, is made only when a caller asks for it.
// Exact arithmetic otherwise: value = m * 10^s.

export const QUANTITY_REGEX_TEXT = '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$';
export const QUANTITY_ERROR = `quantities must match the regular expression '${QUANTITY_REGEX_TEXT}'`;

type Format = 'BinarySI' | 'DecimalSI' | 'DecimalExponent';

export interface Quantity {
  readonly m: bigint;
  readonly s: number;
  format: Format;
}

const BINARY: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const DECIMAL_SUFFIX: Record<number, string> = Object.fromEntries(Object.entries(DECIMAL).map(([k, v]) => [v, k]));
const SUFFIX_CHARS = 'eEinumkKMGTP';
// kube caps BinarySI quantities at 2^63-1 in magnitude (decimal ones are not capped).
const MAX_INT64 = '9223372036854775807';

/** A value as sign, decimal digits without leading or trailing zeros ('' for zero) and exponent. */
interface Decimal {
  neg: boolean;
  digits: string;
  exp: number;
}

/** A parsed quantity: the digit form is what this module works on; m is made on demand. */
class ParsedQuantity implements Quantity {
  private big?: bigint;
  constructor(readonly d: Decimal, public format: Format) {}
  get s(): number {
    return this.d.exp;
  }
  get m(): bigint {
    if (this.big === undefined) {
      const abs = this.d.digits === '' ? 0n : BigInt(this.d.digits);
      this.big = this.d.neg ? -abs : abs;
    }
    return this.big;
  }
}

const isDigit = (c: number) => c >= 48 && c <= 57;

function trimmed(neg: boolean, digits: string, exp: number): Decimal {
  let a = 0;
  while (a < digits.length && digits.charCodeAt(a) === 48) a++;
  let b = digits.length;
  while (b > a && digits.charCodeAt(b - 1) === 48) b--;
  if (a === b) return { neg: false, digits: '', exp: 0 };
  return { neg, digits: digits.slice(a, b), exp: exp + (digits.length - b) };
}

/** The decimal form of any quantity (parsed here, or built by a caller from m and s). */
function decimalOf(q: Quantity): Decimal {
  if (q instanceof ParsedQuantity) return q.d;
  const neg = q.m < 0n;
  return trimmed(neg, (neg ? -q.m : q.m).toString(), q.s);
}

/** Adds one to a string of decimal digits. */
function increment(digits: string): string {
  let i = digits.length - 1;
  while (i >= 0 && digits.charCodeAt(i) === 57) i--;
  if (i < 0) return '1' + '0'.repeat(digits.length);
  return digits.slice(0, i) + String.fromCharCode(digits.charCodeAt(i) + 1) + '0'.repeat(digits.length - 1 - i);
}

/** Multiplies a string of decimal digits by a small integer (at most 2^20), one pass. */
function multiplySmall(digits: string, by: number): string {
  const out: number[] = new Array(digits.length);
  let carry = 0;
  for (let i = digits.length - 1; i >= 0; i--) {
    const v = (digits.charCodeAt(i) - 48) * by + carry;
    out[i] = v % 10;
    carry = Math.floor(v / 10);
  }
  let head = '';
  while (carry > 0) {
    head = String(carry % 10) + head;
    carry = Math.floor(carry / 10);
  }
  return head + out.join('');
}

/** Below nano precision kube rounds up, away from zero: 0.1n becomes 1n. */
function roundToNano(d: Decimal): Decimal {
  if (d.digits === '' || d.exp >= -9) return d;
  const keep = d.digits.length - (-9 - d.exp);
  // The digits dropped are not all zero (there are no trailing zeros), so the kept part goes up by one.
  return trimmed(d.neg, keep <= 0 ? '1' : increment(d.digits.slice(0, keep)), -9);
}

/** Magnitude comparison of two decimals. */
function compareAbs(a: Decimal, b: Decimal): number {
  if (a.digits === '' || b.digits === '') return (a.digits === '' ? 0 : 1) - (b.digits === '' ? 0 : 1);
  const ta = a.digits.length + a.exp;
  const tb = b.digits.length + b.exp;
  if (ta !== tb) return ta < tb ? -1 : 1;
  // Same leading position: digit strings compare as text (a prefix is the smaller one, the
  // longer having non-zero digits past it).
  return a.digits === b.digits ? 0 : a.digits < b.digits ? -1 : 1;
}

function compareDecimal(a: Decimal, b: Decimal): number {
  const sa = a.digits === '' ? 0 : a.neg ? -1 : 1;
  const sb = b.digits === '' ? 0 : b.neg ? -1 : 1;
  if (sa !== sb) return sa < sb ? -1 : 1;
  return sa * compareAbs(a, b);
}

const MAX_DECIMAL = trimmed(false, MAX_INT64, 0);

/** A decimal exponent suffix ("e-3", "E12"): strconv.ParseInt(.., 10, 64), then kept as int32 as kube does. */
function exponentOf(text: string): number | undefined {
  let i = 0;
  let neg = false;
  if (text[0] === '+' || text[0] === '-') {
    neg = text[0] === '-';
    i = 1;
  }
  if (i === text.length) return undefined;
  for (let j = i; j < text.length; j++) if (!isDigit(text.charCodeAt(j))) return undefined;
  while (i < text.length - 1 && text.charCodeAt(i) === 48) i++;
  // More than 19 significant digits is out of int64's range whatever they are.
  if (text.length - i > 19) return undefined;
  let v = BigInt(text.slice(i));
  if (neg) v = -v;
  if (v > 0x7fffffffffffffffn || v < -0x8000000000000000n) return undefined;
  return Number(BigInt.asIntN(32, v));
}

/**
 * Whether text matches apimachinery's splitREString, '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$',
 * by one scan instead of a backtracking regular expression (quadratic on a long run of digits
 * that fails at its end). Greedy is exact here: what may follow the number never starts with
 * a digit or a dot unless the number could have taken it.
 */
export function matchesQuantityPattern(str: string): boolean {
  const end = str.length;
  let pos = str[0] === '+' || str[0] === '-' ? 1 : 0;
  const start = pos;
  while (pos < end && (isDigit(str.charCodeAt(pos)) || str[pos] === '.')) pos++;
  if (pos === start) return false;
  while (pos < end && SUFFIX_CHARS.includes(str[pos])) pos++;
  if (pos < end && (str[pos] === '+' || str[pos] === '-')) pos++;
  while (pos < end && isDigit(str.charCodeAt(pos))) pos++;
  return pos === end;
}

/**
 * Parses a quantity, or returns undefined when kube's ParseQuantity would reject it. One pass
 * over the text, as apimachinery's parseQuantityString: sign, digits, optional fraction, then
 * suffix letters, an optional sign and digits.
 */
export function parseQuantity(input: unknown): Quantity | undefined {
  if (typeof input === 'number') {
    if (!Number.isFinite(input)) return undefined;
    input = String(input);
  }
  if (typeof input !== 'string' || input.length === 0) return undefined;
  const str = input;
  const end = str.length;
  let pos = 0;
  let neg = false;
  if (str[0] === '+' || str[0] === '-') {
    neg = str[0] === '-';
    pos = 1;
  }
  const wholeStart = pos;
  while (pos < end && isDigit(str.charCodeAt(pos))) pos++;
  const whole = str.slice(wholeStart, pos);
  let frac = '';
  if (pos < end && str[pos] === '.') {
    const fracStart = ++pos;
    while (pos < end && isDigit(str.charCodeAt(pos))) pos++;
    frac = str.slice(fracStart, pos);
  }
  // A number needs a digit ("." and "+" alone are refused).
  if (whole === '' && frac === '') return undefined;
  const suffixStart = pos;
  while (pos < end && SUFFIX_CHARS.includes(str[pos])) pos++;
  if (pos < end && (str[pos] === '+' || str[pos] === '-')) pos++;
  while (pos < end && isDigit(str.charCodeAt(pos))) pos++;
  if (pos < end) return undefined;
  const suffix = str.slice(suffixStart);

  let format: Format;
  let exp: number;
  let binary = 0;
  if (suffix in DECIMAL) {
    format = 'DecimalSI';
    exp = DECIMAL[suffix];
  } else if (suffix in BINARY) {
    format = 'BinarySI';
    exp = 0;
    binary = BINARY[suffix];
  } else if (suffix.length > 1 && (suffix[0] === 'e' || suffix[0] === 'E')) {
    const e = exponentOf(suffix.slice(1));
    if (e === undefined) return undefined;
    format = 'DecimalExponent';
    exp = e;
  } else return undefined;

  let digits = whole + frac;
  exp -= frac.length;
  // BinarySI: times 1024 per step of the suffix (Ki is one, Ei six), a linear pass each.
  for (let i = 0; i < binary; i++) digits = multiplySmall(digits, 1024);
  let d = roundToNano(trimmed(neg, digits, exp));
  if (format === 'BinarySI') {
    if (compareAbs(d, MAX_DECIMAL) > 0) d = { ...MAX_DECIMAL, neg: d.neg };
    // Between zero and one a binary quantity is written as a decimal one.
    if (d.digits !== '' && d.digits.length + d.exp <= 0) format = 'DecimalSI';
  }
  return new ParsedQuantity(d, format);
}

export function compareQuantity(a: Quantity, b: Quantity): number {
  return compareDecimal(decimalOf(a), decimalOf(b));
}

export function isZero(q: Quantity): boolean {
  return decimalOf(q).digits === '';
}

/** -1, 0 or 1, as Quantity.Sign(). */
export function quantitySign(q: Quantity): number {
  const d = decimalOf(q);
  return d.digits === '' ? 0 : d.neg ? -1 : 1;
}

/** Whether the value has no fractional part. */
export function isWholeQuantity(q: Quantity): boolean {
  const d = decimalOf(q);
  return d.digits === '' || d.exp >= 0;
}

// A sum is exact while it spans at most this many digits. Past it (a term like 1e999999999
// beside 1m, whose exact sum has a billion digits) the digits below the span are dropped:
// kube's inf.Dec would build the billion digits, holding its thread as long.
const SUM_DIGITS = 100_000;

/** a + b, in a's format (b's when a is zero), as Quantity.Add. */
export function addQuantity(a: Quantity, b: Quantity): Quantity {
  let da = decimalOf(a);
  let db = decimalOf(b);
  const format = da.digits === '' ? b.format : a.format;
  if (da.digits === '') return new ParsedQuantity(db, format);
  if (db.digits === '') return new ParsedQuantity(da, format);
  const top = Math.max(da.digits.length + da.exp, db.digits.length + db.exp);
  const cut = top - SUM_DIGITS;
  const clip = (d: Decimal): Decimal => {
    if (d.exp >= cut) return d;
    const keep = d.digits.length - (cut - d.exp);
    return keep <= 0 ? { neg: false, digits: '', exp: 0 } : trimmed(d.neg, d.digits.slice(0, keep), cut);
  };
  da = clip(da);
  db = clip(db);
  const lo = Math.min(da.digits === '' ? Infinity : da.exp, db.digits === '' ? Infinity : db.exp);
  const big = (d: Decimal) => (d.digits === '' ? 0n : (d.neg ? -1n : 1n) * BigInt(d.digits) * 10n ** BigInt(d.exp - lo));
  const m = big(da) + big(db);
  const neg = m < 0n;
  return new ParsedQuantity(trimmed(neg, (neg ? -m : m).toString(), lo === Infinity ? 0 : lo), format);
}

/**
 * Quantity.MilliValue(): the value in thousandths, rounded up (toward positive infinity).
 * kube's is an int64; a value past it saturates here instead of wrapping.
 */
export function milliValue(q: Quantity): bigint {
  const d = decimalOf(q);
  if (d.digits === '') return 0n;
  const e = d.exp + 3;
  if (d.digits.length + e > 19) return d.neg ? -0x7fffffffffffffffn : 0x7fffffffffffffffn;
  if (e >= 0) return (d.neg ? -1n : 1n) * BigInt(d.digits) * 10n ** BigInt(e);
  // Digits below a thousandth are dropped; they are not all zero (no trailing zeros), so a
  // positive value goes up by one.
  const keep = d.digits.length + e;
  const whole = keep <= 0 ? 0n : BigInt(d.digits.slice(0, keep));
  return d.neg ? -whole : whole + 1n;
}

/** The canonical string kube-apiserver serializes a quantity as. */
export function canonicalQuantity(q: Quantity): string {
  const d = decimalOf(q);
  if (d.digits === '') return '0';
  const sign = d.neg ? '-' : '';
  let format = q.format;
  if (format === 'BinarySI') {
    // Parsed binary values are capped at 2^63-1 in magnitude, so BigInt work here is small; one
    // that is not whole, or under 1024 in magnitude, is written as a decimal one, and so is a
    // sum past 10^40 (whose powers of 1024 would be a long division for nothing).
    if (d.exp < 0 || compareAbs(d, { neg: false, digits: '1024', exp: 0 }) < 0 || d.digits.length + d.exp > 40) {
      format = 'DecimalSI';
    } else {
      let n = BigInt(d.digits) * 10n ** BigInt(d.exp);
      let e = 0;
      while (e < 6 && n % 1024n === 0n) {
        n /= 1024n;
        e++;
      }
      return sign + n.toString() + (e === 0 ? '' : Object.keys(BINARY)[e - 1]);
    }
  }
  // Decimal: the exponent moves down to a multiple of three.
  let digits = d.digits;
  let e = d.exp;
  let extra = e % 3;
  if (extra < 0) extra += 3;
  e -= extra;
  digits += '0'.repeat(extra);
  // A parsed DecimalSI value's exponent past E is only as large as the zeros its text had (a
  // request body holds fewer than 4M); a sum with a huge exponent in another format cannot be
  // written out in zeros.
  if (format === 'DecimalExponent' || e - 18 > 1 << 22) return sign + digits + (e === 0 ? '' : 'e' + e);
  if (e > 18) {
    digits += '0'.repeat(e - 18);
    e = 18;
  }
  return sign + digits + DECIMAL_SUFFIX[e];
}

/** Canonicalizes a map of quantities in place; returns the names of the entries that do not parse. */
export function canonicalizeQuantities(map: any): string[] {
  const bad: string[] = [];
  if (!map || typeof map !== 'object') return bad;
  for (const k of Object.keys(map)) {
    const q = parseQuantity(map[k]);
    if (!q) bad.push(k);
    else map[k] = canonicalQuantity(q);
  }
  return bad;
}
