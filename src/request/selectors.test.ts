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

describe('label selectors: labels.Parse grammar and messages', () => {
  const err = (s: string) => {
    try {
      parseLabelSelector(s);
    } catch (e: any) {
      return [e.code, e.message];
    }
    return null;
  };
  const VALUE_MSG =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
  it('"in ()" is the empty value, "key=" too', () => {
    expect(parseLabelSelector('idx in ()')).toEqual([{ key: 'idx', op: 'in', values: [''] }]);
    expect(matchLabels(parseLabelSelector('idx in ()'), { idx: '' })).toBe(true);
    expect(matchLabels(parseLabelSelector('idx in ()'), { idx: 'a' })).toBe(false);
    expect(matchLabels(parseLabelSelector('idx notin ()'), { idx: 'a' })).toBe(true);
    expect(parseLabelSelector('x in (foo,,baz)')![0].values).toEqual(['', 'baz', 'foo']);
    expect(parseLabelSelector('a=')![0].values).toEqual(['']);
    expect(parseLabelSelector('in in (in)')).toEqual([{ key: 'in', op: 'in', values: ['in'] }]);
  });
  it('invalid values and keys: 400 with the field error, values in sorted order', () => {
    expect(err('idx=-bad-')).toEqual([400, `unable to parse requirement: values[0][idx]: Invalid value: "-bad-": ${VALUE_MSG}`]);
    expect(err('idx in (ok,-bad-)')).toEqual([400, `unable to parse requirement: values[0][idx]: Invalid value: "-bad-": ${VALUE_MSG}`]);
    expect(err('-bad=x')![1]).toBe(
      "unable to parse requirement: <nil>: Invalid value: \"-bad\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    );
    expect(err('n>abc')![1]).toBe(`unable to parse requirement: values[0]: Invalid value: "abc": for 'Gt', 'Lt' operators, the value must be an integer`);
  });
  it('syntax errors with the parser\'s wording', () => {
    expect(err('a b')![1]).toBe('unable to parse requirement: found \'b\', expected: in, notin, =, ==, !=, gt, lt');
    expect(err('a in b')![1]).toBe("unable to parse requirement: found 'b' expected: '('");
    expect(err('a in (b')![1]).toBe("unable to parse requirement: found '', expected: ',' or ')'");
    expect(err('a,')![1]).toBe("found '', expected: identifier after ','");
    expect(err(',a')![1]).toBe("found ',', expected: !, identifier, or 'end of string'");
    expect(err('a=b=c')![1]).toBe("found '=', expected: ',' or 'end of string'");
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

describe('field selectors as fields.ParseSelector', () => {
  const msg = (s: string) => {
    try {
      parseFieldSelector(s);
    } catch (e: any) {
      expect(e.code).toBe(400);
      return e.message as string;
    }
    return 'parsed';
  };
  it('=, == and != with escaped values; empty is everything', () => {
    expect(parseFieldSelector('metadata.name==a\\,b\\=c\\\\d')).toEqual([{ field: 'metadata.name', op: '=', value: 'a,b=c\\d' }]);
    expect(parseFieldSelector('b!=x,a=y')).toEqual([
      { field: 'a', op: '=', value: 'y' },
      { field: 'b', op: '!=', value: 'x' },
    ]);
    expect(parseFieldSelector('')).toBeNull();
    expect(parseFieldSelector(',')).toBeNull();
    expect(parseFieldSelector('=')).toBeNull();
    expect(parseFieldSelector('metadata.name=')).toEqual([{ field: 'metadata.name', op: '=', value: '' }]);
  });
  it('nothing is trimmed: spaces stay in the label and value', () => {
    expect(parseFieldSelector('metadata.name = x')).toEqual([{ field: 'metadata.name ', op: '=', value: ' x' }]);
    expect(msg(' ')).toBe("invalid selector: ' '; can't understand ' '");
  });
  it("kube's errors: the first bad term in sorted order, escapes, bare = in a value", () => {
    expect(msg('b,a')).toBe("invalid selector: 'b,a'; can't understand 'a'");
    expect(msg('metadata.name=a\\x')).toBe('invalid field selector: invalid escape sequence: \\x');
    expect(msg('metadata.name=a\\')).toBe('invalid field selector: invalid escape sequence: \\');
    expect(msg('metadata.name=a=b')).toBe('invalid field selector: unescaped character in value: 61');
    expect(msg('metadata.name!==b')).toBe('invalid field selector: unescaped character in value: 61');
    expect(msg('metadata.name===b')).toBe('invalid field selector: unescaped character in value: 61');
  });
  it('matches', () => {
    expect(matchFields(parseFieldSelector('metadata.name!=a'), { metadata: { name: 'b' } })).toBe(true);
  });
});

describe('field paths into decoded objects (found by the fuzz suite, test/fuzz)', () => {
  it('a map or list at the path is the empty value, whatever keys it has', () => {
    expect(matchFields(parseFieldSelector('spec.a='), { spec: { a: { toString: null } } })).toBe(true);
    expect(matchFields(parseFieldSelector('spec.a=x'), { spec: { a: ['x'] } })).toBe(false);
  });
});
