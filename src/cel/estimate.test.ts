import { describe, it, expect } from 'vitest';
import { compile } from './environment.js';
import { estimateCost, maxSize } from './estimate.js';
import { STATIC_ESTIMATED_COST_LIMIT } from './cost.js';

const VARS = { self: 'dyn', oldSelf: 'dyn' };
const est = (rule: string, self: any) => estimateCost(compile(rule, VARS).program!.ast, { self, oldSelf: self });

describe('static cost estimation', () => {
  it('sizes from the schema, unbounded from the largest request', () => {
    expect(maxSize({ type: 'array', maxItems: 7, items: { type: 'string' } })).toBe(7);
    expect(maxSize({ type: 'array', items: { type: 'integer' } })).toBe(Math.floor((3 * 1024 * 1024 - 2) / 2));
    expect(maxSize({ type: 'string', maxLength: 63 })).toBe(63);
  });

  it('a comparison is cheap; a loop costs by the list it walks; nested loops over unbounded lists pass the limit', () => {
    expect(est('self.a <= self.b', { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } } })).toBeLessThan(10);
    const bounded = est('self.all(x, self.exists(y, x == y))', { type: 'array', maxItems: 100, items: { type: 'integer' } });
    expect(bounded).toBeGreaterThan(10_000);
    expect(bounded).toBeLessThan(STATIC_ESTIMATED_COST_LIMIT);
    expect(est('self.all(x, self.exists(y, x == y))', { type: 'array', items: { type: 'integer' } })).toBeGreaterThan(100 * STATIC_ESTIMATED_COST_LIMIT);
    expect(est('self.all(x, x.matches("^[a-z]+$"))', { type: 'array', items: { type: 'string' } })).toBeGreaterThan(100 * STATIC_ESTIMATED_COST_LIMIT);
    expect(est('self.all(x, x.matches("^[a-z]+$"))', { type: 'array', maxItems: 10, items: { type: 'string', maxLength: 64 } })).toBeLessThan(1000);
  });
});
