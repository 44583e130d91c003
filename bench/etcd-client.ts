// kubeshard's etcd client (src/storage/etcd/client.ts) against other clients, on one local
// etcd started for the run on free ports (issue 19, "the etcd client from npm ... or lighter if
// one measures better"): range gets of one 1 KiB key and create-guarded txn puts of new 1 KiB
// keys, sequential and 50 at a time; throughput and this process's CPU (user + system) per
// call. Three rounds, the clients alternating; the median is printed.
//
//   npm run build && node dist/bench/etcd-client.js [--etcd3 DIR] [--baseline CLIENT_JS]
//
// --etcd3 DIR: the npm package etcd3, installed outside the project
//   (mkdir -p /tmp/etcd3-try && (cd /tmp/etcd3-try && npm init -y && npm i etcd3@1.1.2), then
//   --etcd3 /tmp/etcd3-try/node_modules/etcd3);
// --baseline CLIENT_JS: another build of kubeshard's client.js (e.g. the one over @grpc/grpc-js,
//   dist/src/storage/etcd/client.js of an older checkout, kept inside the project tree so that
//   its imports resolve).
// Neither is the server's (bench/README.md, "etcd client (issue 19)"): both are loaded from the
// given paths at run time.
import { pathToFileURL } from 'node:url';
import { join, resolve } from 'node:path';
import { EtcdClient } from '../src/storage/etcd/client.js';
import { startCluster } from '../src/storage/etcd/test-cluster.js';

if (process.argv.includes('--help')) {
  console.log('usage: node dist/bench/etcd-client.js [--etcd3 DIR-OF-THE-etcd3-PACKAGE] [--baseline PATH-TO-ANOTHER-BUILT-client.js]');
  process.exit(0);
}
const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};

const cluster = await startCluster(1, ['--quota-backend-bytes', '4294967296']);
const url = cluster.endpoints[0];
const value = Buffer.alloc(1024, 'x');

type Impl = { get: () => Promise<unknown>; txnPut: (k: string) => Promise<unknown>; close: () => void };
const ofClient = (c: EtcdClient): Impl => ({
  get: () => c.get('/bench/get'),
  txnPut: (k) => c.txn({ compare: [{ key: k, target: 'createRevision', result: '=', value: 0 }], success: [{ put: { key: k, value } }] }),
  close: () => c.close(),
});
const ours = new EtcdClient({ endpoints: [url] });
await ours.put('/bench/get', value);
const impls: Record<string, Impl> = { kubeshard: ofClient(ours) };
const baseline = arg('baseline');
if (baseline) {
  const { EtcdClient: Other } = await import(pathToFileURL(resolve(baseline)).href);
  impls.baseline = ofClient(new Other({ endpoints: [url] }));
}
const etcd3Dir = arg('etcd3');
if (etcd3Dir) {
  const { Etcd3 } = await import(pathToFileURL(join(etcd3Dir, 'lib', 'index.js')).href);
  const theirs = new Etcd3({ hosts: url });
  impls.etcd3 = {
    get: () => theirs.get('/bench/get').buffer(),
    txnPut: (k) => theirs.if(k, 'Create', '==', 0).then(theirs.put(k).value(value)).commit(),
    close: () => theirs.close(),
  };
}

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
const names = Object.keys(impls);
console.log(`| case | ${names.map((n) => `${n} ops/s`).join(' | ')} | ${names.map((n) => `${n} µs CPU/op`).join(' | ')} |`);
console.log(`|---|${names.map(() => '---|---|').join('')}`);
for (const [label, byImpl] of Object.entries(results)) {
  const ops = names.map((n) => Math.round(med(byImpl[n].map((x) => x[0]))));
  const cpu = names.map((n) => Math.round(med(byImpl[n].map((x) => x[1]))));
  console.log(`| ${label} | ${ops.join(' | ')} | ${cpu.join(' | ')} |`);
}
for (const im of Object.values(impls)) im.close();
await cluster.stop();
