// Issue 22, must show: a rolling restart of one server behind its clients. Writers create
// ConfigMaps without pause while the server gets SIGTERM with --shutdown-delay-duration and
// --shutdown-send-retry-after; once it has exited, a second server starts on the same data
// dir and port. Shown: no connection refused (and no failed request) during the shutdown
// delay, while /readyz already fails; 429 with Retry-After during the drain; every write
// that was acknowledged is there afterwards.
import { describe, it, expect, afterAll } from 'vitest';
import https from 'node:https';
import { request, startServer, type Reply, type TestServer } from './helpers/server.js';
import { expectAllStored } from './helpers/acknowledged.js';

let s: TestServer | undefined;
afterAll(() => s?.cleanup());

/** A GET the server holds for a few seconds: in flight when the drain begins, it keeps the listener open a while. */
const SLOW_LIST = '/api/v1/namespaces?resourceVersion=999999999&resourceVersionMatch=NotOlderThan';

interface Outcome {
  /** ms since the SIGTERM (negative before it) when the request was sent */
  at: number;
  status?: number;
  retryAfter?: string;
  code?: string;
}

const FRONTS: Array<[string, string[]]> = [
  ['uWS', ['--front-end=uws', '--front-threads=1']],
  ['uWS with two front threads', ['--front-end=uws', '--front-threads=2']],
  ['node:http2', ['--front-end=http2']],
];

describe.each(FRONTS)('rolling restart of one server behind its clients (%s)', (_name, frontArgs) => {
  it('refuses no connection during the delay, 429s during the drain, and loses no acknowledged write', async () => {
    s?.cleanup();
    s = await startServer({ args: [...frontArgs, '--shutdown-delay-duration=3s', '--shutdown-send-retry-after'] });
    const srv = s;
    let sigtermAt = Infinity;
    const since = () => Date.now() - sigtermAt;
    const outcomes: Outcome[] = [];
    const readyz: Outcome[] = [];
    const acked = new Map<string, string>();
    let stop = false;
    let restarted = false;
    let afterRestart = 0;

    const send = async (path: string, body: unknown, agent: https.Agent, into: Outcome[]): Promise<Reply | null> => {
      const o: Outcome = { at: since() };
      into.push(o);
      try {
        const r = await request(srv, body === undefined ? 'GET' : 'POST', path, body, {}, agent);
        o.status = r.status;
        o.retryAfter = r.headers['retry-after'] as string | undefined;
        return r;
      } catch (e) {
        o.code = (e as NodeJS.ErrnoException).code ?? 'error';
        return null;
      }
    };

    // writers: keep-alive connections, as client-go's; a 429 closes the connection, the next request opens a new one
    const writer = async (w: number) => {
      const agent = new https.Agent({ keepAlive: true, ca: srv.ca, maxSockets: 1 });
      for (let n = 0; !stop; n++) {
        const name = `w${w}-${n}`;
        for (;;) {
          if (stop) return;
          const r = await send('/api/v1/namespaces/default/configmaps', { metadata: { name }, data: { v: name } }, agent, outcomes);
          if (r?.status === 201) {
            acked.set(name, name);
            if (restarted) afterRestart++;
            break;
          }
          // (an earlier try whose answer was lost may have been stored: the name is taken)
          if (r?.status === 409) break;
          await new Promise((res) => setTimeout(res, r?.status === 429 ? 100 : 50));
        }
      }
    };
    // a prober: a new connection each time (a refused connection shows as such), and /readyz
    const prober = async () => {
      while (!stop) {
        await send('/api/v1/namespaces/default', undefined, new https.Agent({ keepAlive: false, ca: srv.ca }), outcomes);
        await send('/readyz', undefined, new https.Agent({ keepAlive: false, ca: srv.ca }), readyz);
        await new Promise((res) => setTimeout(res, 25));
      }
    };
    const running = [writer(0), writer(1), writer(2), writer(3), prober()];
    while (acked.size < 40) await new Promise((res) => setTimeout(res, 20));

    const exit = new Promise<number | null>((res) => srv.proc.once('exit', (code) => res(code)));
    sigtermAt = Date.now();
    srv.proc.kill('SIGTERM');
    // a slow request during the delay: the drain waits for it
    await new Promise((res) => setTimeout(res, 1000));
    const slow = request(srv, 'GET', SLOW_LIST, undefined, {}, new https.Agent({ keepAlive: false, ca: srv.ca }));
    expect(await exit).toBe(0);
    expect((await slow).status).toBe(504);
    const exitedAt = since();
    await srv.restart();
    restarted = true;
    while (afterRestart < 20) await new Promise((res) => setTimeout(res, 20));
    stop = true;
    await Promise.all(running);

    // the drain began with the first 429; before it, the delay: everything served
    const first429 = Math.min(...outcomes.filter((o) => o.status === 429).map((o) => o.at));
    expect(first429).toBeLessThan(exitedAt);
    const inDelay = outcomes.filter((o) => o.at >= 0 && o.at < first429);
    expect(inDelay.length).toBeGreaterThan(20);
    expect(inDelay.filter((o) => o.code !== undefined)).toEqual([]);
    expect(inDelay.every((o) => o.status === 200 || o.status === 201)).toBe(true);
    // /readyz failed during the delay (its shutdown check)
    expect(readyz.some((o) => o.at >= 0 && o.at < first429 && o.status === 500)).toBe(true);
    // every 429 said when to come back
    const refusals = outcomes.filter((o) => o.status === 429);
    expect(refusals.every((o) => o.retryAfter === '5')).toBe(true);
    // connections were refused only once the first server had stopped listening, after the drain
    const refused = outcomes.filter((o) => o.code === 'ECONNREFUSED');
    expect(refused.every((o) => o.at > first429)).toBe(true);

    // every acknowledged write is in the second server
    await expectAllStored(srv, acked);
    console.log(
      `rolling restart (${_name}): ${acked.size} writes acknowledged, ${inDelay.length} requests in the delay all served, ` +
        `${refusals.length} answered 429 in the drain, ${refused.length} connections refused between the first server's exit and the second's start ` +
        `(drain began ${first429} ms after SIGTERM, exit at ${exitedAt} ms)`,
    );
  }, 120_000);
});
