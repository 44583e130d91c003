// resource.Quantity of k8s.io/apimachinery: parsing, comparison and the canonical form
// kube-apiserver stores ("1000m" becomes "1", "1024Mi" becomes "1Gi", "0.5" becomes "500m").
// Exact arithmetic on BigInt: value = mantissa * 10^scale.

export const QUANTITY_REGEX_TEXT = '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$';
export const QUANTITY_ERROR = `quantities must match the regular expression '${QUANTITY_REGEX_TEXT}'`;

type Format = 'BinarySI' | 'DecimalSI' | 'DecimalExponent';

export interface Quantity {
  m: bigint;
  s: number;
  format: Format;
}

const BINARY: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const DECIMAL_SUFFIX: Record<number, string> = Object.fromEntries(Object.entries(DECIMAL).map(([k, v]) => [v, k]));

/** Parses a quantity, or returns undefined when kube's ParseQuantity would reject it. */
export function parseQuantity(input: unknown): Quantity | undefined {
  if (typeof input === 'number') {
    if (!Number.isFinite(input)) return undefined;
    input = String(input);
  }
  if (typeof input !== 'string' || input.length === 0) return undefined;
  const m = /^([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[-+]?[0-9]*)$/.exec(input);
  if (!m) return undefined;
  const [, sign, whole, frac = '', suffix] = m;
  if (whole === '' && frac === '') return undefined;
  let format: Format;
  let exp = 0;
  let mant = BigInt((whole || '0') + frac) * (sign === '-' ? -1n : 1n);
  let scale = -frac.length;
  if (suffix in BINARY) {
    format = 'BinarySI';
    mant *= 1024n ** BigInt(BINARY[suffix]);
  } else if (suffix in DECIMAL) {
    format = 'DecimalSI';
    exp = DECIMAL[suffix];
  } else if (/^[eE][-+]?[0-9]+$/.test(suffix)) {
    format = 'DecimalExponent';
    exp = Number(suffix.slice(1));
  } else return undefined;
  scale += exp;
  // Below nano precision kube rounds up (away from zero).
  if (scale < -9) {
    const div = 10n ** BigInt(-9 - scale);
    const q = mant / div;
    mant = q * div === mant ? q : q + (mant < 0n ? -1n : 1n);
    scale = -9;
  }
  return { m: mant, s: scale, format };
}

function align(a: Quantity, b: Quantity): [bigint, bigint] {
  const s = Math.min(a.s, b.s);
  return [a.m * 10n ** BigInt(a.s - s), b.m * 10n ** BigInt(b.s - s)];
}

export function compareQuantity(a: Quantity, b: Quantity): number {
  const [x, y] = align(a, b);
  return x < y ? -1 : x > y ? 1 : 0;
}

export function isZero(q: Quantity): boolean {
  return q.m === 0n;
}

/** The canonical string kube-apiserver serializes a quantity as. */
export function canonicalQuantity(q: Quantity): string {
  if (q.m === 0n) return '0';
  let format = q.format;
  if (format === 'BinarySI') {
    const abs = q.m < 0n ? -q.m : q.m;
    const intOnly = q.s >= 0 || abs % 10n ** BigInt(-q.s) === 0n;
    const small = compareQuantity(q, { m: -1024n, s: 0, format }) > 0 && compareQuantity(q, { m: 1024n, s: 0, format }) < 0;
    if (!intOnly || small) {
      format = 'DecimalSI';
    } else {
      let n = q.s >= 0 ? q.m * 10n ** BigInt(q.s) : q.m / 10n ** BigInt(-q.s);
      let e = 0;
      while (e < 6 && n % 1024n === 0n && n !== 0n) {
        n /= 1024n;
        e++;
      }
      return n.toString() + (e === 0 ? '' : Object.keys(BINARY)[e - 1]);
    }
  }
  // Decimal: strip factors of ten, then move the exponent down to a multiple of three.
  let m = q.m;
  let e = q.s;
  while (m % 10n === 0n) {
    m /= 10n;
    e++;
  }
  let extra = e % 3;
  if (extra < 0) extra += 3;
  e -= extra;
  m *= 10n ** BigInt(extra);
  if (format === 'DecimalExponent') return m.toString() + (e === 0 ? '' : 'e' + e);
  if (e > 18) {
    m *= 10n ** BigInt(e - 18);
    e = 18;
  }
  return m.toString() + DECIMAL_SUFFIX[e];
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
