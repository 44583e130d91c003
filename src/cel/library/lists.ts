// kube's lists library (apiserver/pkg/cel/library/lists.go): isSorted, sum, min, max,
// indexOf, lastIndexOf on lists.
import type { Environment } from '@marcbachmann/cel-js';
import { charge, sizeCost } from '../cost.js';
import { def, fail, celEquals, celCompare } from './def.js';

export function registerLists(env: Environment): void {
  def(env, 'list.isSorted(): bool', (l: any[]) => {
    charge(sizeCost(l.length));
    for (let i = 1; i < l.length; i++) if (celCompare(l[i - 1], l[i]) > 0) return false;
    return true;
  });
  def(env, 'list.sum(): dyn', (l: any[]) => {
    charge(sizeCost(l.length));
    if (l.length === 0) return 0n;
    let acc: any = l[0];
    for (let i = 1; i < l.length; i++) acc = add(acc, l[i]);
    return acc;
  });
  def(env, 'list.min(): dyn', (l: any[]) => extreme(l, -1));
  def(env, 'list.max(): dyn', (l: any[]) => extreme(l, 1));
  def(env, 'list.indexOf(dyn): int', (l: any[], x: any) => {
    charge(sizeCost(l.length));
    for (let i = 0; i < l.length; i++) if (celEquals(l[i], x)) return BigInt(i);
    return -1n;
  });
  def(env, 'list.lastIndexOf(dyn): int', (l: any[], x: any) => {
    charge(sizeCost(l.length));
    for (let i = l.length - 1; i >= 0; i--) if (celEquals(l[i], x)) return BigInt(i);
    return -1n;
  });
}

function add(a: any, b: any): any {
  if (typeof a === 'bigint' && typeof b === 'bigint') {
    const s = a + b;
    if (s > 9223372036854775807n || s < -9223372036854775808n) fail('integer overflow');
    return s;
  }
  if (typeof a === 'number' && typeof b === 'number') return a + b;
  if (typeof a?.add === 'function') return a.add(b);
  fail(`no such overload: ${typeof a} + ${typeof b}`);
}

function extreme(l: any[], sign: number): any {
  charge(sizeCost(l.length));
  if (l.length === 0) fail(`${sign < 0 ? 'min' : 'max'}(list) argument must not be empty`);
  let best = l[0];
  for (let i = 1; i < l.length; i++) if (celCompare(l[i], best) * sign > 0) best = l[i];
  return best;
}
