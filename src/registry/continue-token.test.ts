// Continue tokens come back from any client (found by the fuzz suite, test/fuzz): whatever
// their JSON holds, decoding gives a well-typed token or kube's 400.
import { describe, expect, it } from 'vitest';
import { decodeContinue, encodeContinue } from './continue-token.js';
import { StatusError } from '../errors.js';

const token = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
function code(s: string): number | 'ok' {
  try {
    decodeContinue(s);
    return 'ok';
  } catch (e) {
    expect(e).toBeInstanceOf(StatusError);
    return (e as StatusError).code;
  }
}

describe('decodeContinue', () => {
  it('reads back what encodeContinue wrote', () => {
    expect(decodeContinue(encodeContinue(7, 'ns/a\u0000', 1000))).toEqual({ v: 'meta.k8s.io/v1', rv: 7, start: 'ns/a\u0000', t: 1000 });
  });

  it('refuses a start time that is not a number (the store subtracts it from now: a TypeError, 500)', () => {
    expect(code(token({ v: 'meta.k8s.io/v1', rv: 5, start: 'a', t: [{ toString: 1 }] }))).toBe(400);
    expect(code(token({ v: 'meta.k8s.io/v1', rv: 5, start: 'a', t: 'now' }))).toBe(400);
    expect(code(token({ v: 'meta.k8s.io/v1', rv: 5, start: 'a' }))).toBe('ok');
  });

  it('refuses a resourceVersion beyond the integers a number holds exactly', () => {
    expect(code(token({ v: 'meta.k8s.io/v1', rv: 1e308, start: 'a' }))).toBe(400);
    expect(code(token({ v: 'meta.k8s.io/v1', rv: 0.5, start: 'a' }))).toBe(400);
    expect(code(token({ v: 'meta.k8s.io/v1', rv: -1, start: 'a' }))).toBe('ok');
  });
});
