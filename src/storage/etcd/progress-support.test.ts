import { describe, expect, it } from 'vitest';
import { allOrdered, progressRequestsOrdered } from './progress-support.js';

describe('progressRequestsOrdered', () => {
  it('knows the releases that fixed progress answers overtaking events', () => {
    expect(progressRequestsOrdered('3.4.23')).toBe(false);
    expect(progressRequestsOrdered('3.4.30')).toBe(false);
    expect(progressRequestsOrdered('3.4.31')).toBe(true);
    expect(progressRequestsOrdered('3.5.12')).toBe(false);
    expect(progressRequestsOrdered('3.5.13')).toBe(true);
    expect(progressRequestsOrdered('3.6.0-rc.1')).toBe(true);
    expect(progressRequestsOrdered('3.3.27')).toBe(false);
    expect(progressRequestsOrdered('')).toBe(false);
    expect(progressRequestsOrdered('not a version')).toBe(false);
  });
  it('needs every endpoint to have the fix', () => {
    expect(allOrdered(['3.5.13', '3.5.17'])).toBe(true);
    expect(allOrdered(['3.5.13', '3.4.23'])).toBe(false);
    expect(allOrdered(['3.5.13', undefined])).toBe(false);
    expect(allOrdered([])).toBe(false);
  });
});
