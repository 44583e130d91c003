// Creates/s and gets/s with 50 concurrent clients (issue #2's figures).
//   node dist/bench/create-get.js [--kubeconfig PATH] [--seconds N]
import { api, load, startTarget } from './lib.js';

const args = process.argv.slice(2);
const seconds = Number(args[args.indexOf('--seconds') + 1]) || 10;
const t = await startTarget(args);
try {
  const ns = 'bench-cg';
  await api(t, 'POST', '/api/v1/namespaces', { metadata: { name: ns } });
  const data = { payload: 'x'.repeat(1000) };
  const body = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'cm-' }, data });
  const create = await load(t, { path: `/api/v1/namespaces/${ns}/configmaps`, method: 'POST', body, connections: 50, seconds });
  await api(t, 'POST', `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'one' }, data });
  const get = await load(t, { path: `/api/v1/namespaces/${ns}/configmaps/one`, connections: 50, seconds });
  const row = (n: string, r: typeof create) => `${n.padEnd(8)} ${r.rps.toFixed(0).padStart(8)} req/s   p50 ${String(r.p50).padStart(4)} ms   p99 ${String(r.p99).padStart(4)} ms   non-2xx ${r.non2xx}   errors ${r.errors}`;
  console.log(row('create', create));
  console.log(row('get', get));
} finally {
  await t.stop();
}
