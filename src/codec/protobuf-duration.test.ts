// metav1.Duration's text is user data: read in one pass, not by a global regular expression
// that re-read a long run of digits from each of its positions.
import { describe, expect, it } from 'vitest';
import { parseDuration } from './protobuf-encode.js';

describe('parseDuration', () => {
  it('reads Go duration text', () => {
    expect(parseDuration('1h2m3.5s')).toBe(3_723_500_000_000);
    expect(parseDuration('150ms')).toBe(150_000_000);
    expect(parseDuration('-2µs')).toBe(-2000);
    expect(parseDuration('5m')).toBe(300e9);
  });
  it('is linear on a long run of digits without a unit', () => {
    const t = performance.now();
    expect(parseDuration('1'.repeat(200_000) + 'x')).toBe(0);
    expect(performance.now() - t).toBeLessThan(200);
  });
});
