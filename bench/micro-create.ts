// Microbenchmark of the front thread's pure per-create work (no I/O): decode, validation,
// managed fields and the commit encoding of the bench's ~1 KiB ConfigMap. Deterministic
// enough to compare small changes on a busy machine, where CPU-per-request runs are not.
//
//   npm run build && node dist/bench/micro-create.js [--iterations 20000]
import { decodeObject, parseBody } from '../src/codec/decode.js';
import { validateBody } from '../src/registry/field-validation.js';
import { recordUpdate } from '../src/registry/apply.js';
import { ANY, rootNode } from '../src/registry/schema-walk.js';
import { encodeForCommit } from '../src/codec/json.js';

const args = process.argv.slice(2);
const iterations = Number(args[args.indexOf('--iterations') + 1] || 20000);
const info = { group: '', version: 'v1', kind: 'ConfigMap' };
const body = Buffer.from(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'cm-' }, data: { payload: 'x'.repeat(1000) } }));
const MODE = 'Warn' as const;
const ctx = { root: rootNode('', 'v1', 'ConfigMap') ?? ANY, hasStatus: false };
const id = { manager: 'raw-load', apiVersion: 'v1', subresource: '' };

type Step = [string, (o: any) => any];
const steps: Step[] = [
  ['parse+decode', () => decodeObject(parseBody(body, 'application/json'), 'v1', 'ConfigMap')],
  ['validateBody', (o) => (validateBody(o, info, MODE, body, []), o)],
  ['prepare', (o) => {
    o.metadata.name = 'cm-abcde';
    o.metadata.namespace = 'bench';
    o.metadata.uid = '0b5e6f2e-2a43-4f7e-9a39-6f0d8f4b2d55';
    o.metadata.creationTimestamp = '2026-11-23T01:00:00Z';
    return o;
  }],
  ['recordUpdate', (o) => (recordUpdate(null, o, id, ctx), o)],
  ['encodeForCommit', (o) => encodeForCommit(o)],
];

const totals = new Map<string, number>();
for (let round = 0; round < 3; round++) {
  totals.clear();
  for (let i = 0; i < iterations; i++) {
    let o: any;
    for (const [name, fn] of steps) {
      const t0 = process.hrtime.bigint();
      o = fn(o);
      totals.set(name, (totals.get(name) ?? 0) + Number(process.hrtime.bigint() - t0));
    }
  }
}
let sum = 0;
for (const [name, ns] of totals) {
  sum += ns;
  console.log(`${name.padEnd(16)} ${(ns / iterations / 1000).toFixed(2)} µs`);
}
console.log(`${'total'.padEnd(16)} ${(sum / iterations / 1000).toFixed(2)} µs`);
