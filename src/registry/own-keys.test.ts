import { afterEach, describe, expect, it } from 'vitest';
import { ownValue, setOwn } from './own-keys.js';

afterEach(() => {
  delete (Object.prototype as any).polluted;
});

describe('own keys', () => {
  it('reads own fields only: inherited members are missing', () => {
    const o = JSON.parse('{"a":1,"__proto__":{"x":1}}');
    expect(ownValue(o, 'a')).toBe(1);
    expect(ownValue(o, '__proto__')).toEqual({ x: 1 });
    expect(ownValue({}, '__proto__')).toBeUndefined();
    expect(ownValue({}, 'toString')).toBeUndefined();
    expect(ownValue({}, 'constructor')).toBeUndefined();
    expect(ownValue([1], 'length')).toBe(1); // (arrays' own length: callers index arrays themselves)
  });

  it('writes __proto__ as a plain field: the prototype and Object.prototype are untouched', () => {
    const o: any = {};
    setOwn(o, '__proto__', { polluted: 'yes' });
    expect(Object.getPrototypeOf(o)).toBe(Object.prototype);
    expect(Object.keys(o)).toEqual(['__proto__']);
    expect(JSON.stringify(o)).toBe('{"__proto__":{"polluted":"yes"}}');
    expect(({} as any).polluted).toBeUndefined();
    // written again, and read back
    setOwn(o, '__proto__', 2);
    expect(ownValue(o, '__proto__')).toBe(2);
    setOwn(o, 'b', 3);
    expect(o.b).toBe(3);
  });
});
