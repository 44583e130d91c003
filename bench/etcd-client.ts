// kubeshard's etcd client (src/storage/etcd/client.ts) against the npm package etcd3, on one
// local etcd started for the run (issue 19, "the etcd client from npm ... or lighter if one
// measures better"): range gets of one 1 KiB key and create-guarded txn puts of new 1 KiB
// keys, sequential and 50 at a time; throughput and this process's CPU per call. Three rounds,
// the clients alternating; the median is printed.
//
//   mkdir -p /tmp/etcd3-try && (cd /tmp/etcd3-try && npm init -y && npm i etcd3@1.1.2)
//   npm run build && node dist/bench/etcd-client.js --etcd3 /tmp/etcd3-try/node_modules/etcd3
//
// etcd3 is not the server's (measured, not used: bench/README.md, "etcd client (issue 19)"):
// it is loaded from the given path at run time.
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { EtcdClient } from '../src/storage/etcd/client.js';
import { startCluster } from '../src/storage/etcd/test-cluster.js';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
};
const etcd3Dir = arg('etcd3', '/tmp/etcd3-try/node_modules/etcd3');
const { Etcd3 } = await import(pathToFileURL(join(etcd3Dir, 'lib', 'index.js')).href);

const cluster = await startCluster(1, ['--quota-backend-bytes', '4294967296']);
const url = cluster.endpoints[0];
const ours = new EtcdClient({ endpoints: [url] });
const theirs = new Etcd3({ hosts: url });
const value = Buffer.alloc(1024, 'x');
await ours.put('/bench/get', value);

type Impl = { get: () => Promise<unknown>; txnPut: (k: string) => Promise<unknown> };
const impls: Record<string, Impl> = {
  kubeshard: {
    get: () => ours.get('/bench/get'),
    txnPut: (k) => ours.txn({ compare: [{ key: k, target: 'createRevision', result: '=', value: 0 }], success: [{ put: { key: k, value } }] }),
  },
  etcd3: {
    get: () => theirs.get('/bench/get').buffer(),
    txnPut: (k) => theirs.if(k, 'Create', '==', 0).then(theirs.put(k).value(value)).commit(),
  },
};

async function run(n: number, conc: number, op: (i: number) => Promise<unknown>): Promise<[number, number]> {
  let i = 0;
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  await Promise.all(Array.from({ length: conc }, async () => {
    while (i < n) await op(i++);
  }));
  const c = process.cpuUsage(c0);
  return [n / (Number(process.hrtime.bigint() - t0) / 1e9), (c.user + c.system) / n];
}

const cases: Array<[string, number, number, (im: Impl, name: string) => (i: number) => Promise<unknown>]> = [
  ['range get, sequential', 2000, 1, (im) => () => im.get()],
  ['range get, 50 concurrent', 10000, 50, (im) => () => im.get()],
  ['txn put, sequential', 500, 1, (im, name) => (i) => im.txnPut(`/bench/${name}/s${Date.now()}-${i}`)],
  ['txn put, 50 concurrent', 3000, 50, (im, name) => (i) => im.txnPut(`/bench/${name}/c${Date.now()}-${i}`)],
];
const results: Record<string, Record<string, Array<[number, number]>>> = {};
for (let round = 0; round < 3; round++) {
  for (const [name, im] of Object.entries(impls)) {
    for (const [label, n, conc, mk] of cases) ((results[label] ??= {})[name] ??= []).push(await run(n, conc, mk(im, name)));
  }
}
const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
console.log('| case | kubeshard ops/s | etcd3 ops/s | kubeshard µs CPU/op | etcd3 µs CPU/op |');
console.log('|---|---|---|---|---|');
for (const [label, byImpl] of Object.entries(results)) {
  const k = byImpl.kubeshard;
  const e = byImpl.etcd3;
  console.log(`| ${label} | ${Math.round(med(k.map((x) => x[0])))} | ${Math.round(med(e.map((x) => x[0])))} | ${Math.round(med(k.map((x) => x[1])))} | ${Math.round(med(e.map((x) => x[1])))} |`);
}
ours.close();
theirs.close();
await cluster.stop();
