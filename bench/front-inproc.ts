// The front thread's CPU per request without TLS and HTTP: the server runs in this process
// and requests enter its filter chain directly (the entry the uWS front end calls), with a
// fixed number in flight. What it measures is everything of ours between the transport and
// the shard worker and back: filters, decoding, validation, managed fields, encoding,
// admission, the coordinator's messages and the response's encoding (the transport's own
// work, TLS and syscalls, is cpu-cost's). Less sensitive to a busy machine than cpu-cost:
// no load generator shares the cores, and the load does not depend on a client's speed.
//
//   npm run build && node dist/bench/front-inproc.js [--scenario create|get] [--seconds 5] [--rounds 1] [--inflight 50]
//     [--server OTHER/dist/src/server.js]   (another build, for an A/B comparison)
//
// The front thread's CPU is read from /proc (this process's main thread), apart from the
// shard and other threads.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ApiRequest, HeaderList, ResponseSink } from '../src/http/types.js';
import { RequestBase } from '../src/http/transport-base.js';

const args = process.argv.slice(2);
const opt = (name: string, dflt: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const scenario = opt('scenario', 'create');
const seconds = Number(opt('seconds', '5'));
const inflight = Number(opt('inflight', '50'));
const rounds = Number(opt('rounds', '1'));
const serverModule = opt('server', '');

/** CPU ticks (1/100 s) of each thread of this process: the main thread is the one whose tid is the pid. */
function ticks(): { main: number; other: number } {
  let main = 0;
  let other = 0;
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const t = Number(f[11]) + Number(f[12]);
      if (Number(tid) === process.pid) main += t;
      else other += t;
    } catch {
      /* thread ended */
    }
  }
  return { main, other };
}

/** A request as a transport makes it (the same base class, so the same shape and lazy query), with no socket. */
class FakeRequest extends RequestBase implements ApiRequest {
  remoteAddress = '127.0.0.1';
  constructor(method: string, path: string, rawQuery: string, headers: Record<string, string>, body: Buffer | null) {
    super(method, path, rawQuery, headers);
    this.body = body;
  }
}

class FakeSink implements ResponseSink {
  aborted = false;
  private doneFns: Array<() => void> | null = null;
  constructor(private done: (status: number) => void) {}
  send(status: number, _h: HeaderList, _body: string | Uint8Array): void {
    this.ended();
    this.done(status);
  }
  sendParts(status: number, _h: HeaderList, _parts: Uint8Array[]): void {
    this.ended();
    this.done(status);
  }
  /** the response is over: what waits for it (the request timeout's timer, the graceful shutdown's count) is told */
  private ended(): void {
    const fns = this.doneFns;
    this.doneFns = null;
    if (fns) for (const f of fns) f();
  }
  startStream(): void {}
  write(): boolean {
    return true;
  }
  end(): void {}
  cork(fn: () => void): void {
    fn();
  }
  onAborted(): void {}
  onDone(fn: () => void): void {
    (this.doneFns ??= []).push(fn);
  }
  onDrain(): void {}
  bufferedBytes(): number {
    return 0;
  }
  close(): void {}
}

async function main() {
  const root = resolve(new URL('.', import.meta.url).pathname, '..');
  const mod = await import(serverModule ? pathToFileURL(resolve(serverModule)).href : pathToFileURL(join(root, 'src', 'server.js')).href);
  const opts = await import(serverModule ? pathToFileURL(resolve(serverModule, '..', 'options.js')).href : pathToFileURL(join(root, 'src', 'options.js')).href);
  const dataDir = mkdtempSync(join(tmpdir(), 'kubeshard-inproc-'));
  // a listening port is required (it is never used): a random free one
  let server;
  for (let tries = 0; ; tries++) {
    const port = 20000 + Math.floor(Math.random() * 10000);
    try {
      server = await mod.startServer(opts.parseArgs(['--secure-port', String(port), '--bind-address', '127.0.0.1', '--data-dir', dataDir]));
      break;
    } catch (e) {
      if (tries >= 20) throw e;
    }
  }
  if (typeof server.handle !== 'function') throw new Error('this build has no in-process entry (StartedServer.handle)');
  const token = /token:\s*(\S+)/.exec(readFileSync(server.kubeconfigPath, 'utf8'))![1];
  const call = (method: string, path: string, body: string | null): Promise<number> =>
    new Promise((res) => {
      const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json', 'user-agent': 'front-inproc/v0.0.0 (linux/amd64)' };
      const b = body === null ? null : Buffer.from(body);
      if (b) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = String(b.length);
      }
      const q = path.indexOf('?');
      const req = new FakeRequest(method, q < 0 ? path : path.slice(0, q), q < 0 ? '' : path.slice(q + 1), headers, b);
      server.handle(req, new FakeSink(res));
    });
  try {
    await call('POST', '/api/v1/namespaces', JSON.stringify({ metadata: { name: 'cpu' } }));
    let method = 'POST';
    let path = '/api/v1/namespaces/cpu/configmaps';
    let body: string | null = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'cm-' }, data: { payload: 'x'.repeat(1000) } });
    if (scenario === 'get') {
      await call('POST', path, JSON.stringify({ metadata: { name: 'one' }, data: { payload: 'x'.repeat(1000) } }));
      method = 'GET';
      path += '/one';
      body = null;
    }
    const run = async (ms: number): Promise<{ n: number; bad: number }> => {
      const end = Date.now() + ms;
      let n = 0;
      let bad = 0;
      await Promise.all(
        Array.from({ length: inflight }, async () => {
          while (Date.now() < end) {
            const s = await call(method, path, body);
            if (s >= 300) bad++;
            n++;
            // a new request arrives from the event loop (as from the socket), not inside the last one's answer
            await new Promise((r) => setImmediate(r));
          }
        }),
      );
      return { n, bad };
    };
    await run(1000); // warm-up: JIT, caches
    // Several windows: on a machine shared with other loads the least disturbed one (the
    // minimum) is the steadiest figure; the median is printed too.
    const fronts: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const t0 = ticks();
      const c0 = performance.now();
      const { n, bad } = await run(seconds * 1000);
      const wall = (performance.now() - c0) / 1000;
      const t1 = ticks();
      const per = (d: number) => (d * 1e4) / Math.max(1, n);
      fronts.push(per(t1.main - t0.main));
      console.log(`${scenario}: ${n} in ${wall.toFixed(1)} s (${(n / wall).toFixed(0)}/s, non2xx=${bad}); front thread ${per(t1.main - t0.main).toFixed(1)} µs per request, other threads ${per(t1.other - t0.other).toFixed(1)} µs`);
    }
    const sorted = [...fronts].sort((a, b) => a - b);
    console.log(`${scenario}: front thread µs per request over ${rounds} windows: min ${sorted[0].toFixed(1)} median ${sorted[Math.floor(sorted.length / 2)].toFixed(1)}`);
  } finally {
    await server.shutdown();
    rmSync(dataDir, { recursive: true, force: true });
  }
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
