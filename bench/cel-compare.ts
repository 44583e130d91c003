// Compares the two CEL candidates for issue 20 (@bufbuild/cel and @marcbachmann/cel-js) on
// what kube's expressions need: conformance of a list of expressions, custom functions,
// type checking, and the time to compile and evaluate typical kube expressions.
// Run: npm run build && node dist/bench/cel-compare.js   (short: about ten seconds of CPU)
import { Environment, Optional } from '@marcbachmann/cel-js';

// @bufbuild/cel was measured and not chosen: it is loaded only when still installed (the
// module names are variables so that the build does not need it).
const BUF = '@bufbuild/cel';
const BUF_EXT = '@bufbuild/cel/ext';
const buf: any = await import(BUF).catch(() => null);
const bufStrings: any = buf ? (await import(BUF_EXT)).strings : null;
if (!buf) console.log('@bufbuild/cel is not installed: its columns are skipped');

const obj = {
  spec: { replicas: 3n, items: Array.from({ length: 100 }, (_, i) => ({ name: `a${i}`, n: BigInt(i) })) },
  metadata: { name: 'x', labels: { app: 'web' } },
};
const params = { maxReplicas: 5n };
const ctx = { object: obj, params, self: obj.spec.items };

// [expression, expected]
const cases: [string, unknown][] = [
  ['has(object.spec.replicas)', true],
  ['object.spec.items.all(x, x.name.startsWith("a"))', true],
  ['object.spec.items.exists(x, x.n == 5)', true],
  ['object.spec.items.exists_one(x, x.n == 5)', true],
  ['object.spec.items.map(x, x.n).size() == 100', true],
  ['object.spec.items.filter(x, x.n < 10).size() == 10', true],
  ['object.spec.items.map(x, x.n < 3, x.name) == ["a0","a1","a2"]', true],
  ['object.metadata.?labels.app.orValue("") == "web"', true],
  ['object.metadata.?annotations.x.orValue("none") == "none"', true],
  ['optional.of(1).hasValue()', true],
  ['optional.none().orValue(2) == 2', true],
  ['"a,b".split(",") == ["a","b"]', true],
  ['"  x ".trim() == "x"', true],
  ['"abc".upperAscii() == "ABC"', true],
  ['"abc".replace("b","x") == "axc"', true],
  ['"abc".indexOf("c") == 2', true],
  ['["a","b"].join("-") == "a-b"', true],
  ['"abc".charAt(1) == "b"', true],
  ['timestamp("2024-01-01T00:00:00Z") + duration("1h") == timestamp("2024-01-01T01:00:00Z")', true],
  ['duration("1h30m").getMinutes() == 90', true],
  ['timestamp("2024-01-01T00:00:00Z").getFullYear() == 2024', true],
  ['1u + 2u == 3u', true],
  ['uint(3) == 3u', true],
  ['1 == 1.0', true],
  ['1 == 1u', true],
  ['dyn(1) == dyn(1.0)', true],
  ['{1: "a"}[1] == "a"', true],
  ['{true: 1}[true] == 1', true],
  ['{"a": 1}["a"] == 1', true],
  ['[1, 2.0] == [1, 2.0]', true],
  ['"abc".matches("^a.c$")', true],
  ['size("héllo") == 5', true],
  ['type(1) == int', true],
  ['int("42") + 1 == 43', true],
  ['string(1.5) == "1.5"', true],
  ['object.spec.replicas <= params.maxReplicas', true],
  ['[1,2,3].exists(x, x > 2) ? "y" : "n"', 'y'],
  ['"x" in object.metadata.labels || "app" in object.metadata.labels', true],
  ['9223372036854775807 + 1 > 0', 'error'],
];

function bufEval(env: any, e: string, c: any): unknown {
  if (!buf) return 'absent';
  try {
    const r = buf.plan(env, buf.parse(e))(c);
    return buf.isCelError(r) ? 'error' : r;
  } catch {
    return 'throw';
  }
}
function toBuf(v: any): any {
  if (Array.isArray(v)) return v.map(toBuf);
  if (v && typeof v === 'object') return new Map(Object.entries(v).map(([k, x]) => [k, toBuf(x)]));
  return v;
}

const bufEnv = buf ? buf.celEnv({ funcs: bufStrings }) : null;
const marc = new Environment({ unlistedVariablesAreDyn: true, enableOptionalTypes: true, homogeneousAggregateLiterals: false });
function marcEval(e: string, c: any): unknown {
  try {
    const r = marc.evaluate(e, c);
    return r instanceof Optional ? r : r;
  } catch (err) {
    return 'error';
  }
}

let okB = 0, okM = 0;
const failB: string[] = [], failM: string[] = [];
const bctx = { object: toBuf(obj), params: toBuf(params), self: toBuf(obj.spec.items) };
for (const [e, want] of cases) {
  const b = bufEval(bufEnv, e, bctx);
  const m = marcEval(e, ctx);
  const eq = (x: unknown) => (want === 'error' ? x === 'error' || x === 'throw' : x === want);
  if (eq(b)) okB++; else failB.push(`${e} → ${String(b)}`);
  if (eq(m)) okM++; else failM.push(`${e} → ${String(m)}`);
}
console.log(`conformance: bufbuild ${okB}/${cases.length}, marcbachmann ${okM}/${cases.length}`);
console.log('bufbuild fails:\n  ' + failB.join('\n  '));
console.log('marcbachmann fails:\n  ' + failM.join('\n  '));

// type checking against declared variable types
const typed = new Environment({ enableOptionalTypes: true }).registerVariable('x', 'int').registerVariable('s', 'string');
console.log('marc check x + s:', typed.check('x + s').error?.message?.split('\n')[0]);
console.log('marc check x + 1 > 2:', typed.check('x + 1 > 2').type);
// @bufbuild/cel 0.6.1 exports no type checker (check.js is internal; plan() checks nothing against declared types).
console.log('buf check: no public checker in 0.6.1');

// timing
function time(label: string, n: number, f: () => void) {
  f();
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) f();
  const us = Number(process.hrtime.bigint() - t) / 1e3 / n;
  console.log(`${label}: ${us.toFixed(2)} µs`);
}
const exprs = [
  'object.spec.replicas <= params.maxReplicas',
  'self.all(x, x.name.startsWith("a"))',
  'object.spec.items.filter(x, x.n % 2 == 0).map(x, x.name).size() == 50',
];
for (const e of exprs) {
  if (buf) time(`bufbuild parse+plan  ${e}`, 2000, () => buf.plan(bufEnv, buf.parse(e)));
  time(`marc     parse+check ${e}`, 2000, () => { const p = marc.parse(e); p.check(); });
  const pb = buf ? buf.plan(bufEnv, buf.parse(e)) : null;
  const pm = marc.parse(e);
  if (pb) time(`bufbuild eval        ${e}`, 2000, () => pb(bctx));
  time(`marc     eval        ${e}`, 2000, () => pm(ctx));
}

// kubeshard's environment on the chosen engine: kube's libraries, the compile cache and cost metering.
const { compile } = await import('../src/cel/environment.js');
const { toCel } = await import('../src/cel/values.js');
const kctx = { object: toCel({ spec: { replicas: 3, items: obj.spec.items.map((x) => ({ name: x.name, n: Number(x.n) })) } }), params: toCel({ maxReplicas: 5 }), self: null as any };
kctx.self = (kctx.object as any).spec.items;
const kvars = { object: 'dyn', params: 'dyn', self: 'dyn' };
let salt = 0;
for (const e of exprs) {
  time(`kubeshard compile (uncached) ${e}`, 500, () => compile(`${e} && ${salt++} >= 0`, kvars, ['bool']));
  const p = compile(e, kvars, ['bool']).program!;
  time(`kubeshard eval (metered)     ${e}`, 2000, () => p.eval(kctx));
  console.log(`  cost ${p.eval(kctx).cost}`);
}
