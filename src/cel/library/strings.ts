// cel-go's strings extension at version 2, as kube 1.33 enables it (ext.Strings(StringsVersion(2))):
// charAt, indexOf, lastIndexOf, lowerAscii, upperAscii, replace, split, substring, trim, join,
// format and strings.quote. The engine has several built in; these fill the rest.
import type { Environment } from '@marcbachmann/cel-js';
import { charge, sizeCost } from '../cost.js';
import { def, fail, namespace } from './def.js';
import { fromCel } from '../values.js';

export function registerStrings(env: Environment): void {
  def(env, 'string.charAt(int): string', (s: string, i: bigint) => {
    const cps = [...s];
    if (i < 0n || i > BigInt(cps.length)) fail(`index out of range: ${i}`);
    return cps[Number(i)] ?? '';
  });
  def(env, 'string.replace(string, string): string', (s: string, a: string, b: string) => {
    charge(sizeCost(s.length));
    return s.split(a).join(b);
  });
  def(env, 'string.replace(string, string, int): string', (s: string, a: string, b: string, n: bigint) => {
    charge(sizeCost(s.length));
    if (n < 0n) return s.split(a).join(b);
    let out = '';
    let rest = s;
    for (let k = 0n; k < n; k++) {
      const at = rest.indexOf(a);
      if (at < 0) break;
      out += rest.slice(0, at) + b;
      rest = rest.slice(at + a.length);
      if (a === '') {
        out += rest.charAt(0);
        rest = rest.slice(1);
      }
    }
    return out + rest;
  });
  def(env, 'string.format(list): string', (s: string, args: any[]) => {
    charge(sizeCost(s.length));
    return formatString(s, args);
  });
  namespace(env, 'strings', 'StringsNamespace');
  def(env, 'StringsNamespace.quote(string): string', (_ns: unknown, s: string) => JSON.stringify(s));
}

/** cel-go's string.format: %s %d %f %e %x %X %o %b and %%, with precision for floats. */
function formatString(fmt: string, args: any[]): string {
  let i = 0;
  return fmt.replace(/%(\.\d+)?([sdfeExXob%])/g, (_m, prec: string | undefined, verb: string) => {
    if (verb === '%') return '%';
    if (i >= args.length) fail(`index ${i} out of range`);
    const v = args[i++];
    const p = prec ? Number(prec.slice(1)) : undefined;
    switch (verb) {
      case 's':
        return typeof v === 'string' ? v : JSON.stringify(fromCel(v)) ?? 'null';
      case 'd':
        if (typeof v !== 'bigint' && typeof v?.value !== 'bigint') fail('error during formatting: decimal clause can only be used on integers');
        return String(v?.value ?? v);
      case 'f':
        return Number(v).toFixed(p ?? 6);
      case 'e':
        return Number(v).toExponential(p ?? 6).replace(/e([+-])(\d)$/, 'e$10$2');
      case 'x':
      case 'X': {
        const h = typeof v === 'string' ? Buffer.from(v).toString('hex') : (v?.value ?? v).toString(16);
        return verb === 'X' ? h.toUpperCase() : h;
      }
      case 'o':
        return (v?.value ?? v).toString(8);
      case 'b':
        return typeof v === 'boolean' ? String(v) : (v?.value ?? v).toString(2);
    }
    return '';
  });
}
