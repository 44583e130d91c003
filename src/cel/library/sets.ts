// cel-go's sets extension (ext.Sets, in kube since 1.29): sets.contains, sets.equivalent, sets.intersects.
import type { Environment } from '@marcbachmann/cel-js';
import { charge } from '../cost.js';
import { def, namespace, celEquals } from './def.js';

const has = (l: any[], x: any) => l.some((y) => celEquals(x, y));

export function registerSets(env: Environment): void {
  namespace(env, 'sets', 'SetsNamespace');
  def(env, 'SetsNamespace.contains(list, list): bool', (_n: unknown, a: any[], b: any[]) => {
    charge(1 + a.length * b.length);
    return b.every((x) => has(a, x));
  });
  def(env, 'SetsNamespace.equivalent(list, list): bool', (_n: unknown, a: any[], b: any[]) => {
    charge(1 + a.length * b.length);
    return b.every((x) => has(a, x)) && a.every((x) => has(b, x));
  });
  def(env, 'SetsNamespace.intersects(list, list): bool', (_n: unknown, a: any[], b: any[]) => {
    charge(1 + a.length * b.length);
    return b.some((x) => has(a, x));
  });
}
