// Real kubectl 1.33 on the read path with a few hundred objects: `get cm --chunk-size=7`
// pages through the list (limit and continue, one collection version), and
// `get pods -A -w` lists every namespace, then prints the changes as they happen.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { request, startServer, until, type TestServer } from './helpers/server.js';
import { kubectl, kubectlPath, kubectlStream } from './helpers/kubectl.js';

let s: TestServer;
const CMS = 300;
const PODS_PER_NS = 100;
const POD_NS = ['kr-a', 'kr-b', 'kr-c'];

const pod = (name: string) => ({ metadata: { name, labels: { app: 'kr' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } });

/** Runs the given requests 16 at a time; each must succeed. */
async function all(reqs: Array<() => Promise<{ status: number; body: string }>>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = next++; i < reqs.length; i = next++) {
        const r = await reqs[i]();
        if (r.status >= 300) throw new Error(`${r.status} ${r.body}`);
      }
    }),
  );
}

beforeAll(async () => {
  kubectlPath();
  s = await startServer({ args: ['--controllers=*,-root-ca-certificate-publisher-controller'] }); // only the fixtures' config maps
  for (const ns of ['kr-cm', ...POD_NS]) expect((await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: ns } })).status).toBe(201);
  await all([
    ...Array.from({ length: CMS }, (_, i) => () => request(s, 'POST', '/api/v1/namespaces/kr-cm/configmaps', { metadata: { name: `cm-${String(i).padStart(3, '0')}` }, data: { i: String(i) } })),
    ...POD_NS.flatMap((ns) => Array.from({ length: PODS_PER_NS }, (_, i) => () => request(s, 'POST', `/api/v1/namespaces/${ns}/pods`, pod(`p-${i}`)))),
  ]);
});
afterAll(async () => {
  await s?.stop();
  s?.cleanup();
});

describe('kubectl with a few hundred objects', () => {
  // (kubectl's client-side rate limit, 5 requests a second after a burst of 10, sets this test's pace)
  it('get cm --chunk-size=7 pages through all of them', async () => {
    const r = await kubectl(s, ['get', 'cm', '-n', 'kr-cm', '--chunk-size=7', '-v=6']);
    expect(r.code, r.stderr).toBe(0);
    const rows = r.stdout.trimEnd().split('\n');
    expect(rows[0].trim().split(/\s{2,}/)).toEqual(['NAME', 'DATA', 'AGE']);
    expect(rows.slice(1).map((l) => l.split(/\s+/)[0])).toEqual(Array.from({ length: CMS }, (_, i) => `cm-${String(i).padStart(3, '0')}`));
    // one request per chunk of 7, each after the first carrying the previous one's token
    const gets = r.stderr.split('\n').filter((l) => /verb="GET" url="https:\S+\/configmaps\?\S*limit=7/.test(l));
    expect(gets.length).toBe(Math.ceil(CMS / 7));
    expect(gets.slice(1).every((l) => /[?&]continue=/.test(l))).toBe(true);
    expect(gets.every((l) => /status="200 OK"/.test(l))).toBe(true);
  });

  it('get pods -A -w lists every namespace, then prints changes', async () => {
    const w = kubectlStream(s, ['get', 'pods', '-A', '-w']);
    try {
      const rowsOf = () => w.output().split('\n').filter((l) => /^kr-[abc]\s/.test(l));
      await until(() => rowsOf().length >= POD_NS.length * PODS_PER_NS, 30_000);
      const first = w.output().split('\n')[0].trim().split(/\s{2,}/);
      expect(first).toEqual(['NAMESPACE', 'NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE']);
      const listed = new Set(rowsOf().map((l) => l.split(/\s+/).slice(0, 2).join('/')));
      expect(listed.size).toBe(POD_NS.length * PODS_PER_NS);
      // changes in two namespaces: new pods, and a label change on an existing one
      expect((await request(s, 'POST', '/api/v1/namespaces/kr-a/pods', pod('late-a'))).status).toBe(201);
      expect((await request(s, 'POST', '/api/v1/namespaces/kr-c/pods', pod('late-c'))).status).toBe(201);
      const patched = await request(s, 'PATCH', '/api/v1/namespaces/kr-b/pods/p-7', { metadata: { labels: { touched: 'yes' } } }, { 'content-type': 'application/merge-patch+json' });
      expect(patched.status).toBe(200);
      await until(() => /^kr-a\s+late-a\s+0\/1\s+Pending/m.test(w.output()) && /^kr-c\s+late-c\s+0\/1\s+Pending/m.test(w.output()), 20_000);
      await until(() => rowsOf().filter((l) => /^kr-b\s+p-7\s/.test(l)).length >= 2, 20_000);
      // one header only: the watch's rows share the list's columns
      expect(w.output().split('\n').filter((l) => l.startsWith('NAMESPACE')).length).toBe(1);
    } finally {
      w.stop();
    }
  });
});
