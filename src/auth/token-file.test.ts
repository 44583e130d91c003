import { describe, it, expect } from 'vitest';
import { parseTokenFile } from './token-file.js';

describe('parseTokenFile', () => {
  it('reads tokens with quoted groups', () => {
    const m = parseTokenFile('# comment\nabc,admin,uid1,"system:masters,dev"\ndef,bob,uid2\n');
    expect(m.get('abc')).toEqual({ name: 'admin', uid: 'uid1', groups: ['system:masters', 'dev'] });
    expect(m.get('def')).toEqual({ name: 'bob', uid: 'uid2', groups: [] });
  });
  it('rejects short lines', () => {
    expect(() => parseTokenFile('abc,admin')).toThrowError(/3 columns/);
  });
});
