// CBOR request bodies that have no JSON form (found by the fuzz suite, test/fuzz): each is a
// 400 Status, never an exception of another type (a 500) or a stack overflow.
import { describe, expect, it } from 'vitest';
import { decodeCbor } from './cbor.js';
import { StatusError } from '../errors.js';

const SD = 'd9d9f7';
const body = (hex: string) => Buffer.from(SD + hex, 'hex');

function code(hex: string): number | 'ok' {
  try {
    decodeCbor(body(hex));
    return 'ok';
  } catch (e) {
    expect(e).toBeInstanceOf(StatusError);
    return (e as StatusError).code;
  }
}

describe('decodeCbor', () => {
  it('reads integers within int64 as numbers, and refuses larger ones with a 400', () => {
    expect(decodeCbor(body('a1616a1b7fffffffffffffff'))).toEqual({ j: 2 ** 63 - 1 });
    expect(code('a1616a1b8000000000000000')).toBe(400); // 2^63
    expect(code('a1616a3b8000000000000000')).toBe(400); // -2^63 - 1
    expect(code('a1616ac249010000000000000000')).toBe(400); // a bignum tag
  });

  it('refuses value sharing (a cycle) and a value reached twice with a 400', () => {
    expect(code('d81c81d81d00')).toBe(400); // 28([29(0)]): an array holding itself
    expect(code('82d81ca0d81d00')).toBe(400); // [28({}), 29(0)]: one map twice
  });

  it('refuses what JSON cannot hold: NaN, infinities, undefined, sets', () => {
    expect(code('a16178f97e00')).toBe(400);
    expect(code('a16178f97c00')).toBe(400);
    expect(code('a16178f7')).toBe(400);
    expect(code('a16178d90102820102')).toBe(400);
  });

  it('answers nesting far deeper than JSON allows with a 400, not a stack overflow', () => {
    expect(code('81'.repeat(20_000) + '01')).toBe(400);
    expect(code('a16161'.repeat(20_000) + '01')).toBe(400);
  });

  it('gives byte strings as base64, an unknown tag as its content, a time tag as RFC 3339', () => {
    expect(decodeCbor(body('a4616242686961749f01ff6175d9c350026164c100'))).toEqual({ b: 'aGk=', t: [1], u: 2, d: '1970-01-01T00:00:00Z' });
  });
});
