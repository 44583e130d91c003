import { describe, it, expect } from 'vitest';
import { BodyBudget } from './body-budget.js';

describe('BodyBudget', () => {
  it('charges what fits, refuses what does not, and takes back what is given', () => {
    const b = new BodyBudget(100);
    expect(b.take(60)).toBe(true);
    expect(b.take(50)).toBe(false);
    expect(b.used).toBe(60);
    b.force(50);
    expect(b.used).toBe(110);
    expect(b.take(1)).toBe(false);
    b.give(110);
    expect(b.take(100)).toBe(true);
  });
});
