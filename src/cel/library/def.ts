// Registering library functions on the engine, and the small helpers they share.
import type { Environment } from '@marcbachmann/cel-js';
import { CelEvalError } from '../environment.js';

/**
 * Registers an overload. The engine has some of cel-go's extension functions built in
 * (indexOf, split, join, ...): an overload it already has is kept, not replaced.
 */
export function def(env: Environment, signature: string, fn: (...args: any[]) => any): void {
  try {
    env.registerFunction(signature, fn);
  } catch (e: any) {
    if (!/overlaps with existing overload/.test(String(e?.message))) throw e;
  }
}

/** An evaluation error with cel-go's message. */
export function fail(msg: string): never {
  throw new CelEvalError(msg);
}

/** A namespace object for calls written `name.fn(...)` (strings.quote, sets.contains, format.named). */
export function namespace(env: Environment, constant: string, typeName: string): void {
  const Ns = { [typeName]: class {} }[typeName];
  env.registerType(typeName, Ns as any);
  env.registerConstant(constant, typeName, new Ns());
}

/** CEL's equality between two values (heterogeneous numbers equal by value). */
export function celEquals(a: any, b: any): boolean {
  if (a === b) return true;
  if ((typeof a === 'bigint' || typeof a === 'number') && (typeof b === 'bigint' || typeof b === 'number')) return Number(a) === Number(b);
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => celEquals(x, b[i]));
  if (typeof a.equals === 'function') return a.equals(b);
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  const ka = a instanceof Map ? [...a.keys()] : Object.keys(a);
  const kb = b instanceof Map ? [...b.keys()] : Object.keys(b);
  if (ka.length !== kb.length) return false;
  const get = (m: any, k: any) => (m instanceof Map ? m.get(k) : m[k]);
  return ka.every((k) => celEquals(get(a, k), get(b, k)));
}

/** CEL ordering of two comparable values (numbers, strings, bools, durations, timestamps). */
export function celCompare(a: any, b: any): number {
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'boolean') return Number(a) - Number(b);
  if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a?.compareTo === 'function') return Number(a.compareTo(b));
  const x = Number(a?.value ?? a);
  const y = Number(b?.value ?? b);
  return x < y ? -1 : x > y ? 1 : 0;
}
