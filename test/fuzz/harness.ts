// The fuzz harness: runs one fast-check property per target for a time budget, checks each
// input's outcome (a value, or a StatusError with a 4xx code: never another exception type,
// never a 5xx that kube-apiserver would not give) and its time, and reports per target how
// many inputs it ran.
//
// Budgets: FUZZ_SECONDS (per in-process target, 2 s by default: the bounded run in
// `npm test`), FUZZ_SERVER_SECONDS (the whole server-level sweep, 24 s by default);
// scripts/fuzz.sh raises both for the long run. FUZZ_SEED replays one run.
// FUZZ_INPUT_MS is the time one input may take (250 ms by default): generous beside the
// few milliseconds a well-behaved input takes even on a loaded machine, and far below the
// seconds a super-linear blow-up takes at the sizes the generators reach.
import { appendFileSync } from 'node:fs';
import fc from 'fast-check';
import { StatusError } from '../../src/errors.js';

export const FUZZ_SECONDS = Number(process.env.FUZZ_SECONDS ?? 2);
export const FUZZ_SERVER_SECONDS = Number(process.env.FUZZ_SERVER_SECONDS ?? 24);
export const FUZZ_INPUT_MS = Number(process.env.FUZZ_INPUT_MS ?? 250);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);

/**
 * The 500s kube-apiserver itself answers bad input with (errors that are not Status errors
 * in kube either), matched on the message: storage's resourceVersion parse, the DELETE body
 * decoder, strategic merge's ErrNoMergeKey, etcd3's create with a resourceVersion.
 */
export const KUBE_500 = [
  /^resourceVersion: Invalid value: /,
  /^json: cannot unmarshal [a-z]+ into Go struct field (DeleteOptions|Preconditions)\./,
  /^decoded object cannot be converted to DeleteOptions$/,
  /^map: .* does not contain declared merge key: /s,
  /^resourceVersion should not be set on objects to be created$/,
];

export function isKube500(message: string): boolean {
  return KUBE_500.some((re) => re.test(message));
}

const PROTOTYPES: Array<[string, object]> = [
  ['Object.prototype', Object.prototype],
  ['Array.prototype', Array.prototype],
  ['String.prototype', String.prototype],
  ['Function.prototype', Function.prototype],
];

/**
 * Throws when an input wrote to a built-in prototype (a patch setting `__proto__`, which
 * would reach every object of the process), after removing what it wrote.
 */
export function checkPrototypes(): void {
  for (const [name, proto] of PROTOTYPES) {
    const added = Object.keys(proto);
    if (added.length === 0) continue;
    for (const k of added) delete (proto as any)[k];
    throw new Error(`prototype pollution: ${name} gained ${added.map((k) => JSON.stringify(k)).join(', ')}`);
  }
}

/** What one input did: 'ok' (a value), or the StatusError's code. Anything else throws, as does a polluted prototype. */
export function outcome(fn: () => unknown): 'ok' | number {
  try {
    fn();
    checkPrototypes();
    return 'ok';
  } catch (e) {
    checkPrototypes();
    if (!(e instanceof StatusError)) {
      throw new Error(`not a StatusError: ${e instanceof Error ? `${e.constructor.name}: ${e.message}` : String(e)}`.slice(0, 500));
    }
    if (e.code >= 400 && e.code < 500) return e.code;
    if (e.code === 500 && isKube500(e.message)) return e.code;
    throw new Error(`a ${e.code} StatusError: ${e.message}`.slice(0, 500));
  }
}

/** Per-target counters, printed as one line each (and appended to FUZZ_REPORT when set). */
export function report(target: string, inputs: number, ms: number, outcomes: Map<string, number>): void {
  const by = [...outcomes].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k}:${n}`).join(' ');
  const line = `fuzz ${target}: ${inputs} inputs in ${(ms / 1000).toFixed(1)} s (${by})`;
  console.log(line);
  if (process.env.FUZZ_REPORT) appendFileSync(process.env.FUZZ_REPORT, line + '\n');
}

/** An input as the failure report prints it: JSON (not fast-check's recursive printer, which deep inputs overflow), cut short. */
function describeInput(x: unknown): string {
  let s: string;
  if (Buffer.isBuffer(x)) s = `<${x.length} bytes> ${x.subarray(0, 300).toString('hex')}`;
  else {
    try {
      s = JSON.stringify(x, (_, v) => (Buffer.isBuffer(v) || (v && v.type === 'Buffer' && Array.isArray(v.data)) ? `<hex ${Buffer.from(v.data ?? v).subarray(0, 300).toString('hex')}>` : v)) ?? String(x);
    } catch (e) {
      s = `<unprintable: ${(e as Error).message}>`;
    }
  }
  return s.length > 1500 ? `${s.slice(0, 1500)}... (${s.length} chars)` : s;
}

/** A generated input that fast-check prints with describeInput. */
interface Boxed<T> {
  value: T;
  [fc.toStringMethod](): string;
}

function box<T>(value: T): Boxed<T> {
  return { value, [fc.toStringMethod]: () => describeInput(value) };
}

/**
 * Runs `run` on inputs of `arb` for `seconds`: each must give a
 * value or a 4xx StatusError (see outcome) within FUZZ_INPUT_MS. A slow input is timed
 * again before it counts as a failure, so one GC pause or a neighbour's burst does not
 * fail the run. Inputs `known` matches (a bug being fixed elsewhere, with its own skipped
 * property) are counted, not run. Returns the number of inputs run.
 */
export function fuzz<T>(target: string, arb: fc.Arbitrary<T>, run: (x: T) => unknown, opts: { seconds?: number; inputMs?: number; known?: (x: T) => boolean } = {}): number {
  const seconds = opts.seconds ?? FUZZ_SECONDS;
  const inputMs = opts.inputMs ?? FUZZ_INPUT_MS;
  const outcomes = new Map<string, number>();
  let inputs = 0;
  const t0 = performance.now();
  const timed = (x: T): [string, number] => {
    const s = performance.now();
    const o = outcome(() => run(x));
    return [String(o), performance.now() - s];
  };
  fc.assert(
    fc.property(arb.map(box), ({ value: x }) => {
      inputs++;
      // inputs of a known bug another branch fixes: left to that bug's skipped property
      if (opts.known?.(x)) {
        outcomes.set('known', (outcomes.get('known') ?? 0) + 1);
        return;
      }
      let [o, ms] = timed(x);
      if (ms > inputMs) [o, ms] = timed(x);
      if (ms > inputMs) throw new Error(`took ${ms.toFixed(0)} ms (bound ${inputMs} ms) on ${describeInput(x)}`);
      outcomes.set(o, (outcomes.get(o) ?? 0) + 1);
    }),
    {
      // as many inputs as the time allows
      numRuns: 1_000_000_000,
      interruptAfterTimeLimit: Math.max(0.1, seconds) * 1000,
      seed: SEED,
      // a shrunk counterexample is what the report needs; shrinking is bounded by the same clock
      endOnFailure: false,
    },
  );
  report(target, inputs, performance.now() - t0, outcomes);
  return inputs;
}

/** The nesting depth of a JSON value, without recursion. */
export function depthOf(v: unknown): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[v, 1]];
  while (stack.length) {
    const [x, d] = stack.pop()!;
    if (x === null || typeof x !== 'object') continue;
    if (d > max) max = d;
    for (const y of Object.values(x as object)) stack.push([y, d + 1]);
  }
  return max;
}

/** Whether a JSON value holds an object with a "toString" key (String() of it throws a TypeError). */
export function hasToStringKey(v: unknown): boolean {
  return v !== null && typeof v === 'object' && (JSON.stringify(v) ?? '').includes('"toString":');
}

/** Whether a JSON value holds "__proto__" anywhere (a key, a string, a JSON pointer token). */
export function mentionsProto(v: unknown): boolean {
  return (JSON.stringify(v) ?? '').includes('__proto__');
}
