// What one patch may cost (issue 17, item 2). A patch runs on the front thread, which
// every other request shares, so each engine is bounded three ways:
//   - operations: a JSON patch carries at most 10,000 (kube's maxJSONPatchOperations);
//   - growth: `copy` duplicates a value already in the document, so a few dozen copies of
//     an array into itself double it past any memory (the patch body stays a few KB). kube
//     caps the bytes copies may add (JSONPatchMaxCopyBytes, 3 MiB); every other engine
//     grows the object by at most its own body, which the request limit bounds;
//   - time: a clock the engines tick per operation or list item, for the work that stays
//     super-linear in the worst case (an array splice per operation on a huge array).
// And the object a patch produces is weighed before it goes further: past the storage
// limit (--max-object-size-bytes) it is refused with storage's own answer, unbuilt by the
// rest of the write path.
import { errors } from '../errors.js';

/** kube's patch handler: maximum number of operations a single JSON patch may contain. */
export const MAX_JSON_PATCH_OPERATIONS = 10_000;

/**
 * kube-apiserver's default JSONPatchMaxCopyBytes: twice etcd's 1.5 MiB request limit (a
 * JSON body shrinks when stored as protobuf), the most `copy` operations may add.
 */
export const JSON_PATCH_MAX_COPY_BYTES = 3 * 1024 * 1024;

/**
 * Nesting deeper than this is refused before any engine recurses into it. JavaScript's own
 * recursive JSON.stringify and structuredClone give out below 2,000 levels of objects, so
 * kube's 10,000 (Go's JSON decoder limit) cannot be served; no Kubernetes object nests a
 * tenth as deep.
 */
export const MAX_PATCH_DEPTH = 1000;

/**
 * How long one patch may keep the front thread (ms) before it is abandoned: far above what
 * the largest object's patches take (a 20,000-item list merge of a 1.5 MiB object, ~0.2 s on
 * a busy machine), far below kube's 60 s request timeout, which a thread shared by every
 * request cannot afford.
 */
export const PATCH_TIME_BUDGET_MS = 1000;

let timeBudgetMs = PATCH_TIME_BUDGET_MS;

/** For tests: the budget of the clocks made from now on. */
export function setPatchTimeBudget(ms: number): void {
  timeBudgetMs = ms;
}

/** etcd's default --max-request-bytes, the largest object storage takes. */
export const DEFAULT_MAX_OBJECT_BYTES = 1_572_864;

let maxObjectBytes = DEFAULT_MAX_OBJECT_BYTES;

/** Set once at start-up from --max-object-size-bytes. */
export function setMaxObjectBytes(n: number): void {
  maxObjectBytes = n;
}

export function getMaxObjectBytes(): number {
  return maxObjectBytes;
}

/**
 * A deadline the engines tick as they work; reading the clock costs ~30 ns, so it is read
 * every 64th tick only.
 */
export class PatchClock {
  private ticks = 0;
  private readonly deadline: number;
  constructor(budgetMs = timeBudgetMs) {
    this.deadline = performance.now() + budgetMs;
  }

  tick(): void {
    if ((++this.ticks & 63) === 0 && performance.now() > this.deadline) throw errors.patchTimeout();
  }
}

/**
 * The length of v's compact JSON, counted without building it, or a number above cap as
 * soon as it passes cap (so weighing a huge value costs no more than cap's worth of it).
 * Strings count their UTF-16 length plus quotes: an estimate, not Go's byte count. With
 * skipManagedFields, an object's metadata.managedFields is left out (kube drops them and
 * retries when only they make an object too large).
 */
export function jsonSizeUpTo(v: unknown, cap: number, skipManagedFields = false): number {
  let size = 0;
  const stack: unknown[] = [v];
  const top = v;
  while (stack.length > 0) {
    const x = stack.pop();
    if (x === null || x === undefined) size += 4;
    else if (typeof x === 'string') size += x.length + 2;
    else if (typeof x === 'number') size += Number.isFinite(x) ? String(x).length : 4;
    else if (typeof x === 'boolean') size += x ? 4 : 5;
    else if (Array.isArray(x)) {
      // brackets and commas first: an array too long to fit is known before its items are pushed
      size += 2 + Math.max(0, x.length - 1);
      if (size > cap) return size;
      for (let i = 0; i < x.length; i++) stack.push(x[i]);
    } else if (typeof x === 'object') {
      size += 1;
      let n = 0;
      const skipMf = skipManagedFields && top !== null && typeof top === 'object' && x === (top as any).metadata;
      for (const k in x) {
        const val = (x as any)[k];
        if (val === undefined || (skipMf && k === 'managedFields')) continue;
        // a key, its quotes and colon, and the comma or closing brace after its value
        size += k.length + 4;
        n++;
        if (size > cap) return size;
        stack.push(val);
      }
      if (n === 0) size += 1; // (an empty object's closing brace)
    }
    if (size > cap) return size;
  }
  return size;
}

/** Whether v nests deeper than max (arrays and objects alike), found without recursion. */
/**
 * The engines recurse per level of their patch: each refuses a patch nested past
 * MAX_PATCH_DEPTH on entry (400, as the patch handler words it), so no caller, the handler
 * or a controller, can overflow their stacks.
 */
export function refuseDeepPatch(patch: unknown): void {
  if (nestsDeeperThan(patch, MAX_PATCH_DEPTH)) throw errors.badRequest(`error decoding patch: the patch nests deeper than ${MAX_PATCH_DEPTH} levels`);
}

export function nestsDeeperThan(v: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[v, 0]];
  while (stack.length > 0) {
    const [x, d] = stack.pop()!;
    if (x === null || typeof x !== 'object') continue;
    if (d + 1 > max) return true;
    if (Array.isArray(x)) {
      for (const c of x) if (c !== null && typeof c === 'object') stack.push([c, d + 1]);
    } else {
      for (const k in x) {
        const c = (x as any)[k];
        if (c !== null && typeof c === 'object') stack.push([c, d + 1]);
      }
    }
  }
  return false;
}

/**
 * Refuses an object whose content (managedFields aside) is larger than storage takes,
 * with storage's own answer; `hint` is a cheap upper bound of its size (current bytes plus
 * what the patch can add), below which nothing is weighed.
 */
export function refuseOversized(obj: unknown, hint: number): void {
  if (hint <= maxObjectBytes) return;
  const cap = Math.max(maxObjectBytes, GRPC_NAMED_ABOVE);
  const size = jsonSizeUpTo(obj, cap, true);
  // (weighed on to 2 MiB, where storage's answer names the size, and no further)
  if (size > maxObjectBytes) throw errors.storageRequestTooLarge(size > cap ? jsonSizeUpTo(obj, Infinity, true) : size);
}

/** Past this, storage's refusal names the object's size (errors.storageRequestTooLarge). */
const GRPC_NAMED_ABOVE = 2 * 1024 * 1024;
