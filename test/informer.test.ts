// An informer from @kubernetes/client-node (list, then watch; relist on 410) over 20,000
// objects under churn ends with exactly the server's state: no event missed, none
// duplicated, across a forced disconnect (a server restart, resumed from the last version)
// and a forced 410 (history compacted while the informer was away).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { CoreV1Api, KubeConfig, ListWatch, Watch, type V1ConfigMap } from '@kubernetes/client-node';
import { openWatch, request, startServer, until, type TestServer } from './helpers/server.js';

const N = 20_000;
const NS = 'inf';
const PATH = `/api/v1/namespaces/${NS}/configmaps`;
const RETENTION_S = 4;

let s: TestServer;

beforeAll(async () => {
  s = await startServer({ args: [`--history-retention=${RETENTION_S}s`, '--controllers=*,-root-ca-certificate-publisher-controller'] });
  expect((await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: NS } })).status).toBe(201);
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      for (let i = next++; i < N; i = next++) {
        const r = await request(s, 'POST', PATH, { metadata: { name: `o${i}` }, data: { v: '0' } });
        if (r.status !== 201) throw new Error(`create o${i}: ${r.status} ${r.body}`);
      }
    }),
  );
}, 120_000);
afterAll(async () => {
  await s?.stop();
  s?.cleanup();
});

interface Seen {
  epoch: number;
  type: string;
  name: string;
  rv: number;
}

/**
 * A successful delete. Its response (a Status, as kube answers for ConfigMaps) carries no
 * version, so it is bracketed: it deleted the object at version `after` (its precondition)
 * and committed before `before`, the version of the same loop's next write.
 */
interface Deleted {
  name: string;
  after: number;
  before: number;
}

/** Writes creates, updates and deletes at random names until stopped; records the versions it made. */
function churn(written: Set<number>, deleted: Deleted[]) {
  let running = true;
  const loops = Array.from({ length: 6 }, async () => {
    let open: Deleted | null = null;
    const wrote = (rv: number) => {
      written.add(rv);
      if (open) open.before = rv;
      open = null;
    };
    while (running) {
      const name = `o${Math.floor(Math.random() * (N + 2000))}`;
      const op = Math.random();
      try {
        let r;
        if (op < 0.5) r = await request(s, 'PATCH', `${PATH}/${name}`, { data: { v: String(Math.random()) } }, { 'content-type': 'application/merge-patch+json' });
        else if (op < 0.75) {
          const cur = await request(s, 'GET', `${PATH}/${name}`);
          if (cur.status !== 200) continue;
          const after = Number(cur.json().metadata.resourceVersion);
          r = await request(s, 'DELETE', `${PATH}/${name}`, { preconditions: { resourceVersion: String(after) } });
          if (r.status === 200) {
            open = { name, after, before: Infinity };
            deleted.push(open);
          }
        } else r = await request(s, 'POST', PATH, { metadata: { name }, data: { v: 'new' } });
        if (r.status < 300 && op < 0.5) wrote(Number(r.json().metadata.resourceVersion));
        if (r.status === 201) wrote(Number(r.json().metadata.resourceVersion));
      } catch {
        await new Promise((res) => setTimeout(res, 100)); // the server is restarting
      }
    }
  });
  return async () => {
    running = false;
    await Promise.all(loops);
  };
}

describe('client-node informer', () => {
  it('list then watch over 20,000 objects under churn, across a restart and a 410, ends with the server state', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(s.kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);
    const seen: Seen[] = [];
    const listRvs: number[] = [];
    let epoch = 0;
    let errors410 = 0;
    let lastRv = 0;
    const listFn = async () => {
      const l = await core.listNamespacedConfigMap({ namespace: NS });
      epoch++;
      listRvs.push(Number(l.metadata!.resourceVersion));
      return l;
    };
    class RecordingWatch extends Watch {
      override watch(path: string, q: any, cb: (type: string, obj: any, raw: any) => void, done: (err: any) => void) {
        return super.watch(path, q, (type, obj, raw) => {
          if (type === 'ERROR' && obj?.code === 410) errors410++;
          else if (type !== 'BOOKMARK') lastRv = Number(obj.metadata.resourceVersion);
          if (type !== 'ERROR' && type !== 'BOOKMARK') seen.push({ epoch, type, name: obj.metadata.name, rv: Number(obj.metadata.resourceVersion) });
          cb(type, obj, raw);
        }, done);
      }
    }
    const lw = new ListWatch<V1ConfigMap>(PATH, new RecordingWatch(kc), listFn, false);
    let away = false;
    // client-node leaves restarting after a broken connection to its user (as an app would)
    lw.on('error', () => setTimeout(() => !away && lw.start().catch(() => undefined), 300));
    await lw.start();
    expect(lw.list(NS).length).toBe(N);

    const written = new Set<number>();
    const deleted: Deleted[] = [];
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const serverRv = async () => Number((await request(s, 'GET', `${PATH}?limit=1`)).json().metadata.resourceVersion);
    /** Waits until the informer has had an event newer than every write made so far. */
    const caughtUp = async () => {
      const rv = await serverRv();
      await until(() => lastRv > rv, 30_000);
    };
    // 1. churn with the informer connected
    let stop = churn(written, deleted);
    await sleep(2000);
    await caughtUp();
    // 2. forced disconnect: the server goes away (with writes in flight) and comes back;
    // the informer resumes from its last version
    await s.stop();
    await s.restart();
    await caughtUp();
    await stop();
    const beforeGone = Number(lw.latestResourceVersion());
    expect(epoch).toBe(1); // resumed from its version, no relist
    // 3. forced 410: while the informer is away, churn goes on until the server has
    // compacted its version away (a watch from it is answered with an ERROR 410)
    away = true;
    await lw.stop();
    const awayFrom = Number(lw.latestResourceVersion());
    stop = churn(written, deleted);
    await eventually(async () => {
      const w = openWatch(s, `${PATH}?watch=1&resourceVersion=${awayFrom}`);
      try {
        await w.status;
        await until(() => w.events.length > 0 || w.ended(), 10_000);
        return w.events[0]?.type === 'ERROR' && w.events[0].object.code === 410;
      } finally {
        w.close();
      }
    }, (RETENTION_S + 20) * 1000);
    // the informer comes back: its watch from awayFrom is refused with 410, so it relists
    away = false;
    await lw.start();
    await until(() => epoch >= 2, 30_000);
    expect(errors410).toBeGreaterThanOrEqual(1);
    // 4. churn goes on with the relisted informer, then stops
    await sleep(1500);
    await caughtUp();
    await stop();
    const final = (await request(s, 'GET', PATH)).json();
    await eventually(() => Number(lw.latestResourceVersion()) >= Number(final.metadata.resourceVersion) || sameState(lw, final), 30_000);
    away = true;
    await lw.stop();

    // the informer's state is exactly the server's
    const server = new Map<string, string>(final.items.map((i: any) => [i.metadata.name, i.metadata.resourceVersion]));
    const mine = new Map(lw.list(NS).map((o) => [o.metadata!.name!, o.metadata!.resourceVersion!]));
    expect(mine.size).toBe(server.size);
    for (const [k, v] of server) expect(mine.get(k), k).toBe(v);

    // no duplicates: within one list epoch, event versions only grow (across reconnects too)
    for (let e = 1; e <= epoch; e++) {
      const rvs = seen.filter((x) => x.epoch === e).map((x) => x.rv);
      for (let i = 1; i < rvs.length; i++) expect(rvs[i], `epoch ${e} event ${i}`).toBeGreaterThan(rvs[i - 1]);
      if (rvs.length) expect(rvs[0]).toBeGreaterThan(listRvs[e - 1]);
    }
    // no misses: every create and update after the first list and up to the time the
    // informer was taken away, and every one after the relist, came as an event
    const got = new Set(seen.map((x) => x.rv));
    const relistAt = listRvs[listRvs.length - 1];
    const missed = [...written].filter((rv) => ((rv > listRvs[0] && rv <= awayFrom) || rv > relistAt) && !got.has(rv));
    expect(missed).toEqual([]);
    // ... and so did every delete in those spans: the next event of its name after the
    // version it deleted is that DELETED, committed before the loop's next write
    const byName = new Map<string, Seen[]>();
    for (const x of [...seen].sort((a, b) => a.rv - b.rv)) byName.set(x.name, [...(byName.get(x.name) ?? []), x]);
    const checked = deleted.filter((d) => (d.after >= listRvs[0] && d.before <= awayFrom) || d.after >= relistAt);
    expect(checked.length).toBeGreaterThan(0);
    const missedDeletes = checked.filter((d) => {
      const next = byName.get(d.name)?.find((x) => x.rv > d.after);
      return !next || next.type !== 'DELETED' || next.rv >= d.before;
    });
    expect(missedDeletes).toEqual([]);
    expect(awayFrom).toBeGreaterThanOrEqual(beforeGone);
  }, 150_000);
});

function sameState(lw: ListWatch<V1ConfigMap>, final: any): boolean {
  const mine = lw.list(NS);
  if (mine.length !== final.items.length) return false;
  const m = new Map(mine.map((o) => [o.metadata!.name!, o.metadata!.resourceVersion!]));
  return final.items.every((i: any) => m.get(i.metadata.name) === i.metadata.resourceVersion);
}

/** Polls a (possibly async) condition every 200 ms until it holds; fails after timeoutMs. */
async function eventually(fn: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 200));
  }
}
