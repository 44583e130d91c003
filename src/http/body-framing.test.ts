import { describe, it, expect } from 'vitest';
import { frameOf } from './body-framing.js';

describe('frameOf', () => {
  it('reads a Content-Length, and repeats of it that agree', () => {
    expect(frameOf('120', undefined)).toBe(120);
    expect(frameOf('120, 120', undefined)).toBe(120);
    expect(frameOf(' 7 ', undefined)).toBe(7);
  });
  it('refuses repeats that disagree, and values that are not plain numbers, with 400', () => {
    for (const cl of ['5, 30', '0, 5', '-1', '+5', '5x', '', '0x10', '1e3', '9999999999999999999']) {
      expect(frameOf(cl, undefined), cl).toEqual({ status: 400, text: '400 Bad Request' });
    }
  });
  it('takes chunked, and refuses any other Transfer-Encoding with 501', () => {
    expect(frameOf(undefined, 'chunked')).toBe(-1);
    expect(frameOf(undefined, 'Chunked')).toBe(-1);
    for (const te of ['gzip', 'gzip, chunked', 'chunked, chunked', 'identity']) {
      expect(frameOf(undefined, te), te).toEqual({ status: 501, text: 'Unsupported transfer encoding' });
    }
  });
});
