import { describe, it, expect } from 'vitest';
import { matchFields, matchLabels, parseFieldSelector, parseLabelSelector } from './selectors.js';

describe('label selectors', () => {
  const labels = { app: 'web', tier: 'front', n: '5' };
  const m = (s: string) => matchLabels(parseLabelSelector(s), labels);
  it('equality and inequality', () => {
    expect(m('app=web')).toBe(true);
    expect(m('app==web')).toBe(true);
    expect(m('app!=web')).toBe(false);
    expect(m('app=web,tier=back')).toBe(false);
  });
  it('set-based', () => {
    expect(m('app in (web, api)')).toBe(true);
    expect(m('app notin (web)')).toBe(false);
    expect(m('missing notin (x)')).toBe(true);
    expect(m('tier')).toBe(true);
    expect(m('!tier')).toBe(false);
    expect(m('!missing')).toBe(true);
    expect(m('n>3,n<6')).toBe(true);
  });
  it('rejects garbage with 400', () => {
    expect(() => parseLabelSelector('a in (x')).toThrowError();
    try {
      parseLabelSelector('===');
    } catch (e: any) {
      expect(e.code).toBe(400);
    }
  });
});

describe('field selectors', () => {
  it('matches nested fields and escapes', () => {
    const obj = { metadata: { name: 'a,b' }, spec: { nodeName: 'n1' } };
    expect(matchFields(parseFieldSelector('metadata.name=a\\,b'), obj)).toBe(true);
    expect(matchFields(parseFieldSelector('spec.nodeName!=n1'), obj)).toBe(false);
    expect(matchFields(parseFieldSelector('spec.nodeName==n1,metadata.name!=x'), obj)).toBe(true);
  });
  it('rejects a term without an operator', () => {
    expect(() => parseFieldSelector('metadata.name')).toThrowError(/invalid selector/);
  });
});
