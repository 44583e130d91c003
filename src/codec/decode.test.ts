import { describe, expect, it } from 'vitest';
import { MAX_YAML_DEPTH, parseYaml11, yamlNestsDeeperThan } from './decode.js';

const flow = (d: number) => '{"a":'.repeat(d) + '1' + '}'.repeat(d);

describe('YAML nesting limit', () => {
  it('refuses flow and block documents nested past the limit before parsing them', () => {
    expect(yamlNestsDeeperThan(flow(MAX_YAML_DEPTH - 1), MAX_YAML_DEPTH)).toBe(false);
    expect(yamlNestsDeeperThan(flow(MAX_YAML_DEPTH + 1), MAX_YAML_DEPTH)).toBe(true);
    expect(yamlNestsDeeperThan('['.repeat(5000) + ']'.repeat(5000), MAX_YAML_DEPTH)).toBe(true);
    let block = '';
    for (let i = 0; i <= MAX_YAML_DEPTH; i++) block += ' '.repeat(i) + 'a:\n';
    expect(yamlNestsDeeperThan(block + ' '.repeat(MAX_YAML_DEPTH + 1) + 'b: 1\n', MAX_YAML_DEPTH)).toBe(true);
    expect(yamlNestsDeeperThan('- '.repeat(MAX_YAML_DEPTH + 1) + 'x\n', MAX_YAML_DEPTH)).toBe(true);
    for (const d of [2000, 5000, 9000]) expect(() => parseYaml11(flow(d))).toThrow(`yaml: exceeded max depth of ${MAX_YAML_DEPTH}`);
  });

  it('does not count brackets in quoted or plain scalars, or comments', () => {
    const brackets = '{'.repeat(3000);
    const text = `a: "${brackets}"\nb: '${'['.repeat(3000)}''x'\nc: x${brackets}\n# ${brackets}\nd: ${flow(10)}\n`;
    expect(yamlNestsDeeperThan(text, MAX_YAML_DEPTH)).toBe(false);
    expect((parseYaml11(text) as any).c).toBe('x' + brackets);
  });
});
