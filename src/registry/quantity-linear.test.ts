// Quantities are user data of any length: parsing, canonicalizing and comparing them must be
// linear in their text (a backtracking regular expression made a 240,000-digit quantity cost
// the front thread nearly a minute).
import { describe, expect, it } from 'vitest';
import { canonicalQuantity, compareQuantity, isWholeQuantity, matchesQuantityPattern, parseQuantity, quantitySign } from './quantity.js';

const canon = (s: string) => canonicalQuantity(parseQuantity(s)!);

function timed<T>(f: () => T): [T, number] {
  const t = performance.now();
  const r = f();
  return [r, performance.now() - t];
}

describe('quantity in linear time', () => {
  const digits = '7'.repeat(240_000);

  it('refuses a long number with a bad last character at once', () => {
    const [q, ms] = timed(() => parseQuantity(digits + 'x'));
    expect(q).toBeUndefined();
    expect(ms).toBeLessThan(50);
    const [ok, ms2] = timed(() => matchesQuantityPattern(digits + 'x'));
    expect(ok).toBe(false);
    expect(ms2).toBeLessThan(50);
  });

  it('canonicalizes long numbers and long runs of zeros at once', () => {
    const [c, ms] = timed(() => canon('1' + '0'.repeat(240_000)));
    expect(c).toBe('1' + '0'.repeat(240_000 - 18) + 'E');
    expect(ms).toBeLessThan(50);
    const [c2, ms2] = timed(() => canon(digits + 'm'));
    expect(c2).toBe(digits + 'm');
    expect(ms2).toBeLessThan(50);
    const [c3, ms3] = timed(() => canon('0.' + '0'.repeat(240_000) + '1'));
    expect(c3).toBe('1n');
    expect(ms3).toBeLessThan(50);
  });

  it('takes huge exponents without computing their powers', () => {
    const [c, ms] = timed(() => [canon('1e999999999'), canon('1e-999999999'), canon('-5e-2147483648'), canon('1.5e999999999')]);
    expect(c).toEqual(['1e999999999', '1e-9', '-1e-9', '1500e999999996']);
    expect(ms).toBeLessThan(50);
    const [cmp, ms2] = timed(() => compareQuantity(parseQuantity('1e999999999')!, parseQuantity('1e-999999999')!));
    expect(cmp).toBe(1);
    expect(ms2).toBeLessThan(50);
  });

  it('keeps ParseQuantity decisions on exponents', () => {
    expect(parseQuantity('1e9223372036854775807')).toBeDefined();
    expect(parseQuantity('1e9223372036854775808')).toBeUndefined();
    expect(parseQuantity('1e' + '0'.repeat(100_000) + '3')).toBeDefined();
    // int64 exponents are kept as int32, as kube's suffixer does: 2^32 wraps to 0.
    expect(canon('1e4294967296')).toBe('1');
  });

  it('caps binary quantities at 2^63-1 as kube does', () => {
    expect(canon('8Ei')).toBe('9223372036854775807');
    expect(canon('-100Ei')).toBe('-9223372036854775807');
    expect(canon('7Ei')).toBe('7Ei');
    expect(canon('0.5Ki')).toBe('512');
    expect(canon('0.0000000000001Ki')).toBe('1n');
  });

  it('answers sign and wholeness without the BigInt', () => {
    expect(quantitySign(parseQuantity('-0.1')!)).toBe(-1);
    expect(quantitySign(parseQuantity('-0')!)).toBe(0);
    expect(isWholeQuantity(parseQuantity('1500m')!)).toBe(false);
    expect(isWholeQuantity(parseQuantity('2000m')!)).toBe(true);
    expect(parseQuantity('1500m')!.m * 10n ** BigInt(parseQuantity('1500m')!.s + 3)).toBe(1500n);
  });
});

describe('quantity arithmetic with huge exponents', () => {
  it('adds exactly, and drops only digits a hundred thousand places below the sum', async () => {
    const { addQuantity } = await import('./quantity.js');
    expect(canonicalQuantity(addQuantity(parseQuantity('1.5')!, parseQuantity('250m')!))).toBe('1750m');
    expect(canonicalQuantity(addQuantity(parseQuantity('1Gi')!, parseQuantity('1Gi')!))).toBe('2Gi');
    expect(canonicalQuantity(addQuantity(parseQuantity('-1')!, parseQuantity('1')!))).toBe('0');
    const [sum, ms] = timed(() => canonicalQuantity(addQuantity(parseQuantity('1Ki')!, parseQuantity('1e999999999')!)));
    expect(sum).toBe('1e999999999');
    expect(ms).toBeLessThan(200);
  });

  it('gives milli-values rounded up, saturating past int64', async () => {
    const { milliValue } = await import('./quantity.js');
    expect(milliValue(parseQuantity('1.5')!)).toBe(1500n);
    expect(milliValue(parseQuantity('1n')!)).toBe(1n);
    expect(milliValue(parseQuantity('-1n')!)).toBe(0n);
    expect(milliValue(parseQuantity('-2.0001')!)).toBe(-2000n);
    const [m, ms] = timed(() => milliValue(parseQuantity('1e999999999')!));
    expect(m).toBe(0x7fffffffffffffffn);
    expect(ms).toBeLessThan(50);
  });
});
