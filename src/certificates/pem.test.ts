import { describe, expect, it } from 'vitest';
import { pemBlocks } from './pem.js';

describe('pemBlocks (Go encoding/pem rules, linear time)', () => {
  it('reads blocks in order, CRLF or LF, and skips a block whose first END names another type', () => {
    const text = 'x\n-----BEGIN A-----\nAAA\n-----END A-----\n-----BEGIN B-----\r\nBB\n-----END C-----\n-----BEGIN C-----\nCC\n-----END C-----\n';
    expect(pemBlocks(text)).toEqual([
      { type: 'A', body: 'AAA\n' },
      { type: 'C', body: 'CC\n' },
    ]);
    expect(pemBlocks(text, 1)).toEqual([{ type: 'A', body: 'AAA\n' }]);
    expect(pemBlocks('-----BEGIN a-----\nx\n-----END a-----\n')).toEqual([]);
    expect(pemBlocks('no pem here')).toEqual([]);
  });

  it('answers a text of many BEGIN lines and no END at once', () => {
    const t = Date.now();
    expect(pemBlocks('-----BEGIN A-----\n'.repeat(200_000))).toEqual([]);
    expect(pemBlocks('-----BEGIN A-----\n-----END B-----\n'.repeat(100_000))).toEqual([]);
    // (a bound on work, not a timing test: the quadratic scan took minutes here)
    expect(Date.now() - t).toBeLessThan(5_000);
  });
});
