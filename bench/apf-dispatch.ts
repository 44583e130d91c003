// Microbenchmark of priority and fairness' per-request path, in process: the filter's
// classification, work estimate, seat take and the release at the response's end, for a
// request of a Limited level that gets its seats at once (global-default, the common case),
// for one that waits in a queue first, and for an exempt one (system:masters). No server,
// no I/O: the filter runs on a store holding kube's bootstrap configuration.
//
//   npm run build && node dist/bench/apf-dispatch.js [--iterations 200000]
import { PriorityAndFairness } from '../src/flowcontrol/apf-filter.js';
import { mandatoryFlowSchemas, mandatoryPriorityLevels, suggestedFlowSchemas, suggestedPriorityLevels } from '../src/flowcontrol/bootstrap-objects.js';

const args = process.argv.slice(2);
const iterations = Number(args[args.indexOf('--iterations') + 1] || 200000);

const fsT = { gr: 'flowschemas.flowcontrol.apiserver.k8s.io' } as any;
const plT = { gr: 'prioritylevelconfigurations.flowcontrol.apiserver.k8s.io' } as any;
const entries = (objs: any[]) => new Map(objs.map((o, i) => [o.metadata.name, { obj: { ...o, metadata: { ...o.metadata, uid: `uid-${i}-${o.metadata.name}` } } }]));
const fsItems = entries([...mandatoryFlowSchemas(), ...suggestedFlowSchemas()]);
const plItems = entries([...mandatoryPriorityLevels(), ...suggestedPriorityLevels()]);
const store = { cacheOf: (t: any) => ({ items: t === fsT ? fsItems : plItems }) } as any;
const cacher = { observe: () => () => {} } as any;

const apf = new PriorityAndFairness(cacher, store, fsT, plT, { serverConcurrencyLimit: 600, requestTimeoutSeconds: 60 });
const run = apf.filter().run;

const info = { verb: 'get', isResourceRequest: true, apiPrefix: 'api', apiGroup: '', apiVersion: 'v1', namespace: 'bench', resource: 'configmaps', subresource: '', name: 'cm', parts: [], path: '/api/v1/namespaces/bench/configmaps/cm' };
const users = {
  workload: { name: 'bench-user', groups: ['system:authenticated'] },
  exempt: { name: 'admin', groups: ['system:masters', 'system:authenticated'] },
};

/** a response whose end the caller triggers */
function sink(): { res: any; end: () => void } {
  const done: Array<() => void> = [];
  return { res: { onDone: (fn: () => void) => done.push(fn) }, end: () => done.forEach((f) => f()) };
}
const request = (user: any) => ({ user, requestInfo: info, rawQuery: '', headers: {}, responseHeaders: undefined }) as any;

/** ns per request: `width` requests take their seats, then all end */
async function measure(name: string, user: any, width: number): Promise<void> {
  const rounds = Math.max(1, Math.floor(iterations / width));
  const once = async () => {
    const ends: Array<() => void> = [];
    let queued = false;
    for (let i = 0; i < width; i++) {
      const { res, end } = sink();
      const r = run(request(user), res);
      if (r instanceof Promise) {
        queued = true;
        void r.then(() => undefined, () => undefined);
      }
      ends.push(end);
    }
    for (const e of ends) e();
    // (queued requests would be granted from the event loop of a release)
    if (queued) await new Promise((r) => setImmediate(r));
  };
  for (let i = 0; i < Math.min(rounds, 2000); i++) await once(); // warm up
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  for (let i = 0; i < rounds; i++) await once();
  const ns = Number(process.hrtime.bigint() - t0) / (rounds * width);
  // CPU time (user + system) as well: on a shared machine, the wall time counts the time preempted
  const c = process.cpuUsage(c0);
  const cpuNs = ((c.user + c.system) * 1000) / (rounds * width);
  console.log(`${name.padEnd(40)} ${ns.toFixed(0).padStart(6)} ns/request (CPU ${cpuNs.toFixed(0)} ns)`);
}

await measure('global-default, seats free (1 at a time)', users.workload, 1);
await measure('global-default, 8 at once (seats free)', users.workload, 8);
await measure('exempt (system:masters)', users.exempt, 1);
for (const f of apf.stats.all.values()) console.log(`  (${f.priorityLevel}/${f.flowSchema}: ${f.dispatched} dispatched)`);
apf.stop();
