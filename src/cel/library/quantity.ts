// kube's quantity library (apiserver/pkg/cel/library/quantity.go) over resource.Quantity's
// grammar: quantity(), isQuantity(), and sign, isInteger, asInteger, asApproximateFloat, add,
// sub, isLessThan, isGreaterThan, compareTo. The value is kept exact, as a numerator over a
// power of ten.
import type { Environment } from '@marcbachmann/cel-js';
import { def, fail } from './def.js';

const BIN: Record<string, bigint> = { Ki: 1n << 10n, Mi: 1n << 20n, Gi: 1n << 30n, Ti: 1n << 40n, Pi: 1n << 50n, Ei: 1n << 60n };
const DEC: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;

export class Quantity {
  static celTypeName = 'kubernetes.Quantity';
  /** value = num / 10^scale */
  constructor(
    readonly num: bigint,
    readonly scale: number,
    readonly text: string,
  ) {}
  private aligned(o: Quantity): [bigint, bigint, number] {
    const s = Math.max(this.scale, o.scale);
    return [this.num * 10n ** BigInt(s - this.scale), o.num * 10n ** BigInt(s - o.scale), s];
  }
  compareTo(o: Quantity): bigint {
    const [a, b] = this.aligned(o);
    return a < b ? -1n : a > b ? 1n : 0n;
  }
  equals(o: unknown): boolean {
    return o instanceof Quantity && this.compareTo(o) === 0n;
  }
  plus(o: Quantity, sign: bigint): Quantity {
    const [a, b, s] = this.aligned(o);
    return new Quantity(a + sign * b, s, '');
  }
  isInteger(): boolean {
    return this.scale <= 0 || this.num % 10n ** BigInt(this.scale) === 0n;
  }
  toString(): string {
    return this.text || (this.scale > 0 ? `${Number(this.num) / 10 ** this.scale}` : String(this.num));
  }
}

export function parseQuantity(s: string): Quantity | null {
  const m = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE]([+-]?\d+))?$/.exec(s);
  if (!m) return null;
  const [, sign, digits, suffix, exp] = m;
  const [whole, frac = ''] = digits.split('.');
  let num = BigInt((whole || '0') + frac);
  let scale = frac.length;
  if (suffix && BIN[suffix]) num *= BIN[suffix];
  else {
    const e = suffix !== undefined ? DEC[suffix] : exp !== undefined ? Number(exp) : 0;
    if (Math.abs(e) > 1000) return null;
    scale -= e;
  }
  if (scale < 0) {
    num *= 10n ** BigInt(-scale);
    scale = 0;
  }
  if (sign === '-') num = -num;
  return new Quantity(num, scale, s);
}

const fromInt = (i: bigint) => new Quantity(i, 0, '');

export function registerQuantity(env: Environment): void {
  env.registerType('Quantity', Quantity as any);
  def(env, 'quantity(string): Quantity', (s: string) => parseQuantity(s) ?? fail('quantities must match the regular expression \'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$\''));
  def(env, 'isQuantity(string): bool', (s: string) => parseQuantity(s) !== null);
  def(env, 'Quantity.sign(): int', (q: Quantity) => (q.num > 0n ? 1n : q.num < 0n ? -1n : 0n));
  def(env, 'Quantity.isInteger(): bool', (q: Quantity) => {
    if (!q.isInteger()) return false;
    const v = q.num / 10n ** BigInt(q.scale);
    return v <= INT64_MAX && v >= INT64_MIN;
  });
  def(env, 'Quantity.asInteger(): int', (q: Quantity) => {
    const v = q.isInteger() ? q.num / 10n ** BigInt(q.scale) : null;
    if (v === null || v > INT64_MAX || v < INT64_MIN) fail('cannot convert value to integer');
    return v;
  });
  def(env, 'Quantity.asApproximateFloat(): double', (q: Quantity) => Number(q.num) / 10 ** q.scale);
  def(env, 'Quantity.add(Quantity): Quantity', (a: Quantity, b: Quantity) => a.plus(b, 1n));
  def(env, 'Quantity.add(int): Quantity', (a: Quantity, b: bigint) => a.plus(fromInt(b), 1n));
  def(env, 'Quantity.sub(Quantity): Quantity', (a: Quantity, b: Quantity) => a.plus(b, -1n));
  def(env, 'Quantity.sub(int): Quantity', (a: Quantity, b: bigint) => a.plus(fromInt(b), -1n));
  def(env, 'Quantity.isLessThan(Quantity): bool', (a: Quantity, b: Quantity) => a.compareTo(b) < 0n);
  def(env, 'Quantity.isGreaterThan(Quantity): bool', (a: Quantity, b: Quantity) => a.compareTo(b) > 0n);
  def(env, 'Quantity.compareTo(Quantity): int', (a: Quantity, b: Quantity) => a.compareTo(b));
  try {
    env.registerOperator('Quantity == Quantity', (a: Quantity, b: Quantity) => a.equals(b));
  } catch {
    /* the engine compares custom types itself */
  }
}
