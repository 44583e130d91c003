// YAML bodies built to make the decoder work far more than their size (found by the fuzz
// suite, test/fuzz): go-yaml's excessive-aliasing rule applies to merge keys too, and the
// walk that applies it stops early, so each is a quick 400.
import { describe, expect, it } from 'vitest';
import { parseBody } from './decode.js';
import { StatusError } from '../errors.js';

function timed(text: string): { ms: number; result: unknown } {
  const t = performance.now();
  let result: unknown;
  try {
    result = parseBody(Buffer.from(text), 'application/yaml');
  } catch (e) {
    expect(e).toBeInstanceOf(StatusError);
    result = e;
  }
  return { ms: performance.now() - t, result };
}

const chain = (n: number, fan: number) => 'm0: &m0 {x: 1}\n' + Array.from({ length: n }, (_, i) => `m${i + 1}: &m${i + 1} {<<: [${Array(fan).fill(`*m${i}`).join(',')}], y${i}: 1}`).join('\n') + '\nmetadata: {name: fz}\n';

describe('YAML merge keys', () => {
  it('refuses nested merges that double at each level (876 bytes took the yaml library 21 s) as excessive aliasing', () => {
    const { ms, result } = timed(chain(24, 2));
    expect((result as StatusError).code).toBe(400);
    expect((result as StatusError).message).toContain('yaml: document contains excessive aliasing');
    expect(ms).toBeLessThan(1000);
  });

  it('refuses maps merging every map before them (2 KB took 20 s)', () => {
    const text = 'm0: &m0 {x: 1}\n' + Array.from({ length: 25 }, (_, i) => `m${i + 1}: &m${i + 1} {<<: [${Array.from({ length: i + 1 }, (_, k) => `*m${k}`).join(',')}], y${i}: 1}`).join('\n') + '\n';
    const { ms, result } = timed(text);
    expect((result as StatusError).code).toBe(400);
    expect(ms).toBeLessThan(1000);
  });

  it('refuses a long chain of merges (600 took 2.7 s)', () => {
    expect((timed(chain(600, 1)).result as StatusError).code).toBe(400);
  });

  it('still merges as YAML 1.1 says: later keys win, merged keys fill in', () => {
    expect(parseBody(Buffer.from('base: &b {x: 1, p: 2}\nm: {<<: *b, p: 3}\n'), 'application/yaml')).toEqual({ base: { x: 1, p: 2 }, m: { x: 1, p: 3 } });
    expect(parseBody(Buffer.from(chain(5, 1)), 'application/yaml')).toMatchObject({ m5: { x: 1, y0: 1, y4: 1 } });
  });

  it('still reads plain aliases shared many times, and refuses the billion laughs', () => {
    expect(parseBody(Buffer.from('a: &a {x: 1}\nl: [*a, *a, *a]\n'), 'application/yaml')).toEqual({ a: { x: 1 }, l: [{ x: 1 }, { x: 1 }, { x: 1 }] });
    let bomb = 'a0: &a0 ["lol"]\n';
    for (let i = 1; i <= 9; i++) bomb += `a${i}: &a${i} [${Array(9).fill(`*a${i - 1}`).join(',')}]\n`;
    expect((timed(bomb).result as StatusError).message).toContain('excessive aliasing');
  });
});
