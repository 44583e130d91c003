// Bugs the fuzz suite found in code other branches owned, kept as the record of what it
// found: each predicate once picked the inputs of one bug, which the properties left out
// (counted as "known") until the fix was merged. All the engine bugs are fixed now
// (src/registry/own-keys.ts, patch-limits.ts, the JSON patch op checks, quantity.ts), so
// the predicates match nothing and those properties run every input; the transport limit
// at the end is the one still in force.
import { hasToStringKey, mentionsProto } from './harness.js';

const none = (_: unknown) => false;

/** fixed: a move or copy without a string `from`: [{"op":"move","path":"/"}] was a TypeError (500). */
export const fromMissing = none;
/** Object.prototype's and Array.prototype's own names: a `from` through one reads as missing. */
export const INHERITED = new Set(Object.getOwnPropertyNames(Object.prototype).concat(Object.getOwnPropertyNames(Array.prototype)));
/** fixed: a move or copy `from` an inherited property ([{"op":"copy","from":"/toString","path":"/x"}]) was a DOMException (500). */
export const fromInherited = none;
/** fixed: an op that is an object with a toString key ([{"op":{"toString":1},"path":"/x"}]) was a TypeError (500). */
export const opToString = none;
/** fixed: a strategic merge directive holding an object with a toString key ({"spec":{"$patch":{"toString":1}}}) was a TypeError (500). */
export const directiveToString = none;
/**
 * fixed, and a security bug: JSON patch and strategic merge patch wrote through `__proto__`
 * ({"__proto__":{"polluted":"yes"}}, [{"op":"add","path":"/__proto__/polluted","value":"yes"}]),
 * polluting Object.prototype for the whole server process.
 */
export const proto = none;
/** fixed: patches nested a few thousand levels deep overflowed the recursive engines' stacks (500). */
export const DEEP = Number.POSITIVE_INFINITY;
/** fixed: an apply configuration whose metadata.name is an object with a toString key was a TypeError (500). */
export const applyNameToString = none;
/** fixed: the JSON patch form of the __proto__ bug (a path or from through `__proto__`). */
export const pointerProto = none;

/**
 * still in force (transport): the uWS build drops a request whose header block (request line
 * included) passes 4 KiB across reads, or about 64 KiB in all, instead of answering (kube
 * answers 400 here, and 431 only past its 1 MB of headers); `--front-end=http2` takes kube's
 * limits. Server-level inputs with longer request lines are not sent.
 */
export const MAX_SENT_URL = 8192;

// (kept for the record of what the predicates looked at)
void hasToStringKey;
void mentionsProto;
