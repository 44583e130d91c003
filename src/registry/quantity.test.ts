import { describe, expect, it } from 'vitest';
import { canonicalQuantity, compareQuantity, parseQuantity } from './quantity.js';

const canon = (s: string) => canonicalQuantity(parseQuantity(s)!);

describe('quantity', () => {
  it('canonicalizes as kube does', () => {
    expect(canon('1000m')).toBe('1');
    expect(canon('0.5')).toBe('500m');
    expect(canon('1024Mi')).toBe('1Gi');
    expect(canon('1536Mi')).toBe('1536Mi');
    expect(canon('512Ki')).toBe('512Ki');
    expect(canon('0.5Ki')).toBe('512');
    expect(canon('100M')).toBe('100M');
    expect(canon('1500')).toBe('1500');
    expect(canon('2000')).toBe('2k');
    expect(canon('1e3')).toBe('1e3');
    expect(canon('0')).toBe('0');
    expect(canon('250m')).toBe('250m');
    expect(canon('1.5Gi')).toBe('1536Mi');
    expect(canon('-1')).toBe('-1');
  });
  it('rejects what ParseQuantity rejects', () => {
    for (const bad of ['', 'abc', '1x', '1 Gi', '.', '1Gb', '--1']) expect(parseQuantity(bad)).toBeUndefined();
  });
  it('compares across formats', () => {
    expect(compareQuantity(parseQuantity('1')!, parseQuantity('1000m')!)).toBe(0);
    expect(compareQuantity(parseQuantity('2')!, parseQuantity('1500m')!)).toBe(1);
    expect(compareQuantity(parseQuantity('1Gi')!, parseQuantity('1G')!)).toBe(1);
  });
});
