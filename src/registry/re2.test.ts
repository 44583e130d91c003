import { describe, expect, it } from 'vitest';
import { compilePattern } from './re2.js';

const test = (p: string, s: string) => {
  const c = compilePattern(p);
  if (c.error !== undefined) throw new Error(c.error);
  return c.pattern.test(s);
};

describe('compilePattern (Go regexp syntax, linear time)', () => {
  it('matches as Go regexp matches', () => {
    expect(test('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', 'my-name')).toBe(true);
    expect(test('(?i)^abc$', 'ABC')).toBe(true);
    expect(test('^\\d+$', '١٢٣')).toBe(false);
    expect(test('^\\pL+$', 'héllo')).toBe(true);
    expect(test('^\\p{Greek}+$', 'αβγ')).toBe(true);
    expect(test('^[[:alpha:]]+$', 'abc')).toBe(true);
    expect(test('^.$', '😀')).toBe(true);
    expect(test('^\\s$', '\u00a0')).toBe(false);
    expect(test('abc', 'xxabcxx')).toBe(true);
    expect(test('^(?P<x>a)(?<y>b)$', 'ab')).toBe(true);
  });

  it('refuses what Go regexp refuses, in its words', () => {
    expect(compilePattern('(?=a)').error).toBe('error parsing regexp: invalid or unsupported Perl syntax: `(?=`');
    expect(compilePattern('(a)\\1').error).toBe('error parsing regexp: invalid escape sequence: `\\1`');
    expect(compilePattern('+').error).toBe('error parsing regexp: missing argument to repetition operator: `+`');
    expect(compilePattern('a{1001}').error).toBe('error parsing regexp: invalid repeat count: `{1001}`');
  });

  it('runs nested quantifiers in linear time', () => {
    const t = performance.now();
    expect(test('^(a+)+$', 'a'.repeat(200_000) + '!')).toBe(false);
    expect(test('(x+x+)+y', 'x'.repeat(200_000))).toBe(false);
    expect(performance.now() - t).toBeLessThan(500);
  });

  it('compiles a pattern once', () => {
    expect(compilePattern('^cached$')).toBe(compilePattern('^cached$'));
  });
});
