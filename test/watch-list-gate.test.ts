// The WatchList feature gate on (beta, off by default in 1.33): kube's SetListOptionsDefaults
// turns a watch from "" or "0" that names neither sendInitialEvents nor resourceVersionMatch
// into sendInitialEvents=true with NotOlderThan, so a client asking for bookmarks is told
// where the initial events end. (With the gate off the same watch has no such bookmark.)
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { openWatch, request, startServer, until, type TestServer } from './helpers/server.js';

let s: TestServer;
const CM = '/api/v1/namespaces/wl/configmaps';

beforeAll(async () => {
  s = await startServer({ args: ['--feature-gates=WatchList=true'] });
  expect((await request(s, 'POST', '/api/v1/namespaces', { metadata: { name: 'wl' } })).status).toBe(201);
  for (const n of ['a', 'b']) expect((await request(s, 'POST', CM, { metadata: { name: n } })).status).toBe(201);
});
afterAll(async () => {
  await s?.stop();
  s?.cleanup();
});

describe('WatchList gate on', () => {
  it('a watch from "" or "0" defaults to sendInitialEvents: ADDED events, then the initial-events-end bookmark', async () => {
    for (const rv of ['', '&resourceVersion=0']) {
      const w = openWatch(s, `${CM}?watch=1&allowWatchBookmarks=true${rv}`);
      const bm = await until(() => w.events.find((e) => e.type === 'BOOKMARK'));
      expect(bm.object.metadata.annotations).toEqual({ 'k8s.io/initial-events-end': 'true' });
      expect(w.events.slice(0, 2).map((e) => [e.type, e.object.metadata.name])).toEqual([
        ['ADDED', 'a'],
        ['ADDED', 'b'],
      ]);
      w.close();
    }
  });
  it('no default when the client chose: sendInitialEvents=false, or a version to start from', async () => {
    const at = (await request(s, 'GET', CM)).json().metadata.resourceVersion;
    for (const q of ['sendInitialEvents=false&resourceVersionMatch=NotOlderThan', `resourceVersion=${at}`]) {
      const w = openWatch(s, `${CM}?watch=1&${q}`);
      expect(await w.status).toBe(200);
      await request(s, 'PATCH', `${CM}/a`, { data: { q } }, { 'content-type': 'application/merge-patch+json' });
      await until(() => w.events.length >= 1);
      expect(w.events[0]).toMatchObject({ type: 'MODIFIED', object: { metadata: { name: 'a' } } });
      w.close();
    }
  });
});
