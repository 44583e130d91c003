import { describe, it, expect } from 'vitest';
import { formatLabelSelector, formatLabels, selectorString, since, containerCells, joinHostPort } from './format.js';

describe('cell formatting', () => {
  it('formats label maps sorted by key', () => {
    expect(formatLabels({ tier: 'web', app: 'nginx' })).toBe('app=nginx,tier=web');
    expect(formatLabels({})).toBe('<none>');
    expect(formatLabels(undefined)).toBe('<none>');
  });

  it('formats label selectors as labels.Selector prints them', () => {
    const sel = {
      matchLabels: { app: 'web' },
      matchExpressions: [
        { key: 'tier', operator: 'In', values: ['front', 'back'] },
        { key: 'env', operator: 'NotIn', values: ['prod'] },
        { key: 'canary', operator: 'DoesNotExist' },
        { key: 'beta', operator: 'Exists' },
      ],
    };
    expect(selectorString(sel)).toBe('app=web,beta,!canary,env notin (prod),tier in (back,front)');
    expect(formatLabelSelector(undefined)).toBe('<none>');
    expect(formatLabelSelector({})).toBe('<none>');
    expect(formatLabelSelector({ matchExpressions: [{ key: 'a', operator: 'Near' }] })).toBe('<error>');
  });

  it('prints ages, containers and host:port', () => {
    const now = Date.parse('2025-01-01T00:10:00Z');
    expect(since('2025-01-01T00:00:00Z', now)).toBe('10m');
    expect(since(undefined, now)).toBe('<unknown>');
    expect(containerCells([{ name: 'a', image: 'nginx:1' }, { name: 'b', image: 'busybox' }])).toEqual(['a,b', 'nginx:1,busybox']);
    expect(joinHostPort('10.0.0.1', 80)).toBe('10.0.0.1:80');
    expect(joinHostPort('fd00::1', 80)).toBe('[fd00::1]:80');
  });
});
