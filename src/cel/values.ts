// Converting between kubeshard's JSON objects and CEL values, as kube's unstructured
// values reach CEL: a whole JSON number is an int (apimachinery decodes integers to int64),
// a fractional one a double; objects are maps, arrays lists. And back, for messages and
// audit annotation values.
import { Optional } from '@marcbachmann/cel-js';

/** A JSON value as CEL sees it (a fresh copy; the input is not changed). */
export function toCel(v: unknown): any {
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : v;
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    const out = new Array(v.length);
    for (let i = 0; i < v.length; i++) out[i] = toCel(v[i]);
    return out;
  }
  if (Object.getPrototypeOf(v) !== Object.prototype && Object.getPrototypeOf(v) !== null) return v;
  const out: Record<string, any> = {};
  for (const k of Object.keys(v)) {
    const x = (v as any)[k];
    if (x !== undefined) out[k] = toCel(x);
  }
  return out;
}

/** A CEL result as JSON (ints to numbers, maps to objects, an optional to its value or null). */
export function fromCel(v: unknown): any {
  if (typeof v === 'bigint') return Number(v);
  if (v === null || typeof v !== 'object') return v;
  if (v instanceof Optional) return v.hasValue() ? fromCel(v.value()) : null;
  if (Array.isArray(v)) return v.map(fromCel);
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [String(k), fromCel(x)]));
  if (typeof (v as any).value === 'bigint') return Number((v as any).value); // uint
  if (Object.getPrototypeOf(v) === Object.prototype) {
    const out: Record<string, any> = {};
    for (const k of Object.keys(v)) out[k] = fromCel((v as any)[k]);
    return out;
  }
  return String(v);
}

/** cel-go's name of a value's type in messages ("string", "int", "map", ...). */
export function celTypeName(v: unknown): string {
  if (v === null || v === undefined) return 'null_type';
  if (typeof v === 'bigint') return 'int';
  if (typeof v === 'number') return 'double';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'bool';
  if (Array.isArray(v)) return 'list';
  if (v instanceof Uint8Array) return 'bytes';
  if (v instanceof Date) return 'google.protobuf.Timestamp';
  if (v instanceof Optional) return 'optional_type';
  if (v instanceof Map || Object.getPrototypeOf(v) === Object.prototype) return 'map';
  return (v as any).constructor?.celTypeName ?? (v as any).constructor?.name ?? 'object';
}

/**
 * A JSON object as CEL sees it, without copying it: a read-only view whose whole numbers read
 * as ints and whose nested objects are views too (made when first read); an array becomes a
 * shallow array of views. Admission evaluates a few fields of a large object, and copying it
 * all (toCel) cost more than the evaluation. Views are kept for one activation only (an
 * object may change between admission steps), and the object must not change while in use.
 */
export function celView(v: unknown): any {
  const cache = new WeakMap<object, any>();
  const handler: ProxyHandler<any> = {
    get(target, key) {
      const x = target[key];
      return typeof key === 'symbol' ? x : view(x);
    },
    // a key whose value is undefined is absent, as JSON would have it
    has: (target, key) => target[key] !== undefined,
    ownKeys: (target) => Reflect.ownKeys(target).filter((k) => target[k] !== undefined),
    getOwnPropertyDescriptor: (target, key) => (target[key] === undefined ? undefined : Reflect.getOwnPropertyDescriptor(target, key)),
    set: () => false,
    deleteProperty: () => false,
  };
  function view(x: unknown): any {
    if (typeof x === 'number') return Number.isInteger(x) ? BigInt(x) : x;
    if (x === null || typeof x !== 'object') return x;
    const proto = Object.getPrototypeOf(x);
    if (!Array.isArray(x) && proto !== Object.prototype && proto !== null) return x;
    let out = cache.get(x);
    if (!out) {
      // the engine reads arrays natively: an array of views
      out = Array.isArray(x) ? x.map((e) => (e === undefined ? null : view(e))) : new Proxy(x, handler);
      cache.set(x, out);
    }
    return out;
  }
  return view(v);
}
