import { describe, it, expect } from 'vitest';
import { humanDuration } from './duration.js';

const s = 1000, m = 60 * s, h = 60 * m, d = 24 * h;

describe('humanDuration', () => {
  it('prints ages as kubectl users read them', () => {
    const cases: Array<[number, string]> = [
      [-5 * s, '<invalid>'],
      [-1500, '0s'],
      [0, '0s'],
      [5 * s, '5s'],
      [119 * s, '119s'],
      [2 * m, '2m'],
      [3 * m + 4 * s, '3m4s'],
      [9 * m + 59 * s, '9m59s'],
      [10 * m + 30 * s, '10m'],
      [179 * m, '179m'],
      [3 * h, '3h'],
      [7 * h + 59 * m, '7h59m'],
      [8 * h + 30 * m, '8h'],
      [47 * h, '47h'],
      [2 * d, '2d'],
      [2 * d + 3 * h, '2d3h'],
      [8 * d + 5 * h, '8d'],
      [729 * d, '729d'],
      [2 * 365 * d, '2y'],
      [3 * 365 * d + 10 * d, '3y10d'],
      [9 * 365 * d, '9y'],
    ];
    for (const [ms, want] of cases) expect([ms, humanDuration(ms)]).toEqual([ms, want]);
  });
});
