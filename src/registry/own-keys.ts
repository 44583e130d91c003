// Reading and writing user-named keys of plain objects as Go reads and writes map keys.
// Objects decoded from a request are ordinary JavaScript objects: a key a client chose may
// be `__proto__`, `constructor` or `toString`. Read as `o[k]`, those find Object.prototype's
// members (a function, the prototype itself) where the client's object has nothing; written
// as `o[k] = v`, `__proto__` replaces the object's prototype, and a write through the
// prototype (`o.__proto__.x = v`) changes every object of the process. These helpers read
// own properties only and write `__proto__` as a plain data property, so every key is just
// a field name.

/** o's own value at k, or undefined (never an inherited member such as toString). */
export function ownValue(o: object, k: string): any {
  return Object.hasOwn(o, k) ? (o as any)[k] : undefined;
}

/** Sets o's own property k to v; `__proto__` becomes an ordinary field, not the prototype. */
export function setOwn(o: object, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
  else (o as any)[k] = v;
}
