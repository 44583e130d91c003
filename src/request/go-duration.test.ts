import { describe, it, expect } from 'vitest';
import { parseGoDuration } from './go-duration.js';

describe("Go's time.ParseDuration", () => {
  it('takes what Go takes', () => {
    expect(parseGoDuration('0')).toBe(0);
    expect(parseGoDuration('1m30s')).toBe(90);
    expect(parseGoDuration('1.5h')).toBe(5400);
    expect(parseGoDuration('-2s')).toBe(-2);
    expect(parseGoDuration('+300ms')).toBeCloseTo(0.3);
    expect(parseGoDuration('2us')).toBeCloseTo(2e-6);
    expect(parseGoDuration('2µs')).toBeCloseTo(2e-6);
    expect(parseGoDuration('.5s')).toBe(0.5);
    expect(parseGoDuration('1.s')).toBe(1);
  });

  it("refuses what Go refuses, with Go's messages", () => {
    expect(() => parseGoDuration('bad')).toThrow('time: invalid duration "bad"');
    expect(() => parseGoDuration('')).toThrow('time: invalid duration ""');
    expect(() => parseGoDuration('5')).toThrow('time: missing unit in duration "5"');
    expect(() => parseGoDuration('5x')).toThrow('time: unknown unit "x" in duration "5x"');
    expect(() => parseGoDuration('1s.')).toThrow('time: invalid duration "1s."');
    expect(() => parseGoDuration('-')).toThrow('time: invalid duration "-"');
  });
});
