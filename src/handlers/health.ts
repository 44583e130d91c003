// /healthz, /livez, /readyz: kube-apiserver's named checks, in its text format.
//
// Each endpoint runs its checks in order. All passing: "ok" (200), or with ?verbose one
// "[+]name ok" line each and "<endpoint> check passed". Any failing: 500 with every line,
// the failing ones as "[-]name failed: reason withheld" (the endpoints are public: the
// reason goes to the log only), and "<endpoint> check failed". ?exclude=name skips a check
// ("[+]name excluded: ok"). /<endpoint>/<name> runs one check: "ok", or 500 "internal server
// error: <reason>" (kube shows the reason there).
//
// The storage check has kube's names, so that probes and dashboards written for
// kube-apiserver read it unchanged: `etcd` (livez, readyz, healthz) and `etcd-readiness`
// (readyz). Here they are one condition, Storage.storageProblem: on LMDB every shard worker
// running and no shard's storage alarm raised (no space below the reserve, no B-tree
// failing); on etcd, its last health probe answered (kube's "error getting data from etcd:
// ..." otherwise) and its watch running.
// Unlike kube's etcd check, which only pings etcd and so passes under etcd's NOSPACE alarm,
// ours fails while writes would fail (issue 17, item 4), on livez too: a server that
// cannot write is not working, though reads are still served.
//
// The other checks, named and ordered as kube-apiserver's: ping and log; informer-sync
// (readyz: the caches loaded, on the main thread those of every front thread: each thread
// has caches of its own, as kube's informers); poststarthook/<step> for each start-up step this server has
// that matches one of kube's post-start hooks (StartupSteps, marked done by server.ts as each
// finishes), failing "not finished" until then, and on livez passing anyway for
// --livez-grace-period after start (kube's delayedHealthCheck on its boot-sequence checks);
// shutdown (readyz: fails from SIGTERM on, src/http/lifecycle.ts). An unknown check's own
// path is not found (404), as kube's mux has no handler for it.
//
// Thread ownership: each front thread has its own HealthState and StartupSteps (server.ts).
import type { ApiRequest, ResponseSink } from '../http/types.js';
import { sendText } from '../http/respond.js';

/**
 * The start-up steps reported as kube's post-start hooks, in kube's order (which is the
 * order /readyz?verbose lists them in), each not finished until server.ts says so.
 *
 * Thread ownership: each front thread has its own (the steps only the main thread runs are
 * finished on the others before they start).
 */
export class StartupSteps {
  private readonly steps = new Map<string, boolean>();

  constructor(names: string[]) {
    for (const n of names) this.steps.set(n, false);
  }

  finish(name: string): void {
    if (!this.steps.has(name)) throw new Error(`no start-up step ${name}`);
    this.steps.set(name, true);
  }

  finishAll(): void {
    for (const n of this.steps.keys()) this.steps.set(n, true);
  }

  isDone(name: string): boolean {
    return this.steps.get(name) === true;
  }

  names(): string[] {
    return [...this.steps.keys()];
  }
}

export interface HealthState {
  /** the caches are loaded (informer-sync; poststarthook/generic-apiserver-start-informers without steps) */
  ready: boolean;
  shuttingDown: boolean;
  /** why storage cannot take writes ('' when it can); absent: no storage check */
  storage?: () => string;
  /** more named checks after the storage ones (encryption at rest's kms-providers) */
  more?: Array<[name: string, run: () => string]>;
  /** the start-up steps (poststarthook/*); absent: the one step generic-apiserver-start-informers, which is `ready` */
  steps?: StartupSteps;
  /** performance.now() until which unfinished steps pass on /livez (--livez-grace-period from start) */
  livezGraceUntil?: number;
}

const ENDPOINTS = new Set(['/healthz', '/livez', '/readyz']);

/** A named check: '' when it passes, else why it fails. */
type Check = [name: string, run: () => string];

function checksOf(state: HealthState, endpoint: string): Check[] {
  const storage = (): string => state.storage?.() ?? '';
  const checks: Check[] = [
    ['ping', () => ''],
    ['log', () => ''],
    ['etcd', storage],
  ];
  if (endpoint === 'readyz') checks.push(['etcd-readiness', storage]);
  if (state.more) checks.push(...state.more);
  if (endpoint === 'readyz' && state.steps) checks.push(['informer-sync', () => (state.ready ? '' : 'informers not started yet')]);
  const steps = state.steps;
  const names = steps ? steps.names() : ['generic-apiserver-start-informers'];
  for (const name of names) {
    const done = steps ? () => steps.isDone(name) : () => state.ready;
    // (kube's delayedHealthCheck: livez only, the boot-sequence checks only)
    const graced = endpoint === 'livez' && state.livezGraceUntil !== undefined;
    checks.push([`poststarthook/${name}`, () => (done() || (graced && performance.now() < state.livezGraceUntil!) ? '' : 'not finished')]);
  }
  if (endpoint === 'readyz') checks.push(['shutdown', () => (state.shuttingDown ? 'process is shutting down' : '')]);
  return checks;
}

export function healthHandler(state: HealthState): (req: ApiRequest, res: ResponseSink) => boolean {
  /** the failures last logged: a probe every second logs a change, not every answer */
  let logged = '';
  return (req, res) => {
    // Trailing slashes off by a loop: /\/+$/ is quadratic in a path of many slashes.
    let end = req.path.length;
    while (end > 0 && req.path.charCodeAt(end - 1) === 47) end--;
    const path = req.path.slice(0, end);
    const base = '/' + (path.split('/')[1] ?? '');
    if (!ENDPOINTS.has(base)) return false;
    const endpoint = base.slice(1);
    const checks = checksOf(state, endpoint);
    const one = path.slice(base.length + 1);
    if (one) {
      const check = checks.find(([name]) => name === one);
      // (not found: the router answers 404, as kube's mux for a check it has no handler for)
      if (!check) return false;
      const why = check[1]();
      if (why) sendText(res, 500, `internal server error: ${why}\n`);
      else sendText(res, 200, 'ok');
      return true;
    }
    // (each ?exclude= value names one check, as kube reads them: no splitting at commas)
    const excluded = new Set(req.query.getAll('exclude'));
    let out = '';
    const failed: string[] = [];
    for (const [name, run] of checks) {
      if (excluded.delete(name)) {
        out += `[+]${name} excluded: ok\n`;
        continue;
      }
      const why = run();
      if (why) {
        out += `[-]${name} failed: reason withheld\n`;
        failed.push(`[-]${name} failed: ${why}`);
      } else out += `[+]${name} ok\n`;
    }
    // (kube lists the names that matched nothing sorted, each quoted as Go's %q)
    if (excluded.size > 0) out += `warn: some health checks cannot be excluded: no matches for ${[...excluded].sort().map((e) => JSON.stringify(e)).join(',')}\n`;
    const failures = failed.join('; ');
    if (failures !== logged && failures) console.error(`${endpoint} check failed: ${failures}`);
    logged = failures;
    if (failed.length > 0) {
      sendText(res, 500, `${out}${endpoint} check failed\n`);
    } else if (req.query.has('verbose')) sendText(res, 200, `${out}${endpoint} check passed\n`);
    else sendText(res, 200, 'ok');
    return true;
  };
}
