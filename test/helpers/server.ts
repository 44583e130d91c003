// Starts the real server (the built dist/src/main.js) as a child process on a free port,
// with its LMDB data in a temp dir, and talks to it over HTTPS with the admin token.
import { fileURLToPath } from 'node:url';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createServer } from 'node:net';
import https from 'node:https';
import { afterAll, beforeAll, inject } from 'vitest';
import { createHash } from 'node:crypto';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const MAIN = join(ROOT, 'dist', 'src', 'main.js');

export interface TestServer {
  port: number;
  url: string;
  dataDir: string;
  kubeconfigPath: string;
  token: string;
  ca: string;
  proc: ChildProcess;
  output: () => string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  kill9(): Promise<void>;
  restart(): Promise<void>;
  cleanup(): void;
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = createServer();
    s.once('error', () => res(false));
    s.listen(port, '127.0.0.1', () => s.close(() => res(true)));
  });
}

export async function freePort(): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const p = 20000 + Math.floor(Math.random() * 12000);
    if (await portFree(p)) return p;
  }
  throw new Error('no free port');
}

/**
 * One server for a whole test file: started before its tests, stopped and its data removed
 * after them. `use` receives it (test files keep it in the module variable their helpers read).
 */
export function useServer(use: (s: TestServer) => void, opts: Parameters<typeof startServer>[0] = {}, timeoutMs?: number): void {
  let s: TestServer | undefined;
  beforeAll(async () => {
    s = await startServer(opts);
    use(s);
  }, timeoutMs);
  afterAll(async () => {
    await s?.stop();
    s?.cleanup();
  });
}

/**
 * KUBESHARD_TEST_FRONT=http2 runs every test server on the node:http2 front end (as
 * --client-ca-file selects it), with a client CA made once: the whole suite can then be
 * run against that transport too.
 */
let testClientCa: string | undefined;
function frontArgs(args: string[]): string[] {
  // KUBESHARD_TEST_FRONT_THREADS=N: every test server with N front threads (issue 18)
  const threads = process.env.KUBESHARD_TEST_FRONT_THREADS;
  if (threads && !args.some((a) => a.startsWith('--front-threads'))) return ['--front-threads', threads, ...httpFrontArgs(args)];
  return httpFrontArgs(args);
}

function httpFrontArgs(args: string[]): string[] {
  if (process.env.KUBESHARD_TEST_FRONT !== 'http2' || args.includes('--client-ca-file')) return [];
  if (!testClientCa) {
    const d = mkdtempSync(join(tmpdir(), 'kubeshard-test-ca-'));
    execFileSync('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ca.key'], { cwd: d, stdio: 'ignore' });
    execFileSync('openssl', ['req', '-x509', '-new', '-key', 'ca.key', '-days', '2', '-subj', '/CN=test-client-ca', '-out', 'ca.crt'], { cwd: d, stdio: 'ignore' });
    testClientCa = join(d, 'ca.crt');
  }
  return ['--client-ca-file', testClientCa];
}

/** KUBESHARD_TEST_STORAGE=etcd3: the test run is on etcd (test/helpers/etcd-global-setup.ts starts it). */
export const onEtcd = process.env.KUBESHARD_TEST_STORAGE === 'etcd3';

/**
 * On an etcd run, a server that names no backend itself goes on the run's etcd under a
 * prefix of its own, so that servers never see each other's objects. The prefix follows the
 * data dir: a server started again on the same data dir finds its objects, as on LMDB.
 */
function storageArgs(args: string[], dataDir: string): string[] {
  if (!onEtcd || args.some((a) => a.startsWith('--storage-backend'))) return [];
  const endpoint = inject('etcdEndpoint');
  if (!endpoint) throw new Error('KUBESHARD_TEST_STORAGE=etcd3 but no etcd was started (test/helpers/etcd-global-setup.ts)');
  const out = ['--storage-backend', 'etcd3', '--etcd-servers', endpoint, '--etcd-prefix', `/registry-${createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 16)}`];
  // A test that shortens LMDB's history retention wants a version compacted away once that
  // long has passed: on etcd that is kube's compactor, whose round compacts to what the round
  // before saw, so an interval of half the retention compacts within the retention.
  const retention = args.find((a) => a.startsWith('--history-retention='));
  if (retention) out.push(`--etcd-compaction-interval=${parseFloat(retention.slice('--history-retention='.length)) / 2}s`);
  return out;
}

export async function startServer(opts: { dataDir?: string; args?: string[]; env?: Record<string, string | undefined> } = {}): Promise<TestServer> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'kubeshard-test-'));
  const port = await freePort();
  const backend = storageArgs(opts.args ?? [], dataDir);
  let out = '';
  const server: Partial<TestServer> & { proc?: ChildProcess } = {};
  const launch = async () => {
    const from = out.length;
    // KUBESHARD_TEST_NODE_ARGS: node's own flags for every test server (e.g. --cpu-prof --cpu-prof-dir=DIR to profile one)
    const nodeArgs = (process.env.KUBESHARD_TEST_NODE_ARGS ?? '').split(' ').filter(Boolean);
    const proc = spawn(process.execPath, [...nodeArgs, MAIN, '--secure-port', String(port), '--bind-address', '127.0.0.1', '--data-dir', dataDir, ...backend, ...frontArgs(opts.args ?? []), ...(opts.args ?? [])], {
      stdio: ['ignore', 'pipe', 'pipe'],
      // read at each launch: a test may change opts.env between a kill and a restart
      env: opts.env ? { ...process.env, ...opts.env } : process.env,
    });
    proc.stdout!.on('data', (d) => (out += d));
    proc.stderr!.on('data', (d) => (out += d));
    server.proc = proc;
    const deadline = Date.now() + 60_000;
    while (!out.slice(from).includes('Serving securely on')) {
      if (proc.exitCode !== null) throw new Error(`server exited ${proc.exitCode}:\n${out}`);
      if (Date.now() > deadline) throw new Error(`server did not start:\n${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  await launch();
  const kubeconfigPath = join(dataDir, 'admin.kubeconfig');
  const token = readFileSync(join(dataDir, 'admin-token.csv'), 'utf8').split(',')[0];
  const ca = readFileSync(join(dataDir, 'certs', 'ca.crt'), 'utf8');
  const waitExit = () =>
    new Promise<number | null>((res) => {
      const p = server.proc!;
      if (p.exitCode !== null || p.signalCode !== null) return res(p.exitCode);
      p.once('exit', (code) => res(code));
    });
  Object.assign(server, {
    port,
    url: `https://127.0.0.1:${port}`,
    dataDir,
    kubeconfigPath,
    token,
    ca,
    output: () => out,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      server.proc!.kill(signal);
      return waitExit();
    },
    async kill9() {
      server.proc!.kill('SIGKILL');
      await waitExit();
    },
    async restart() {
      await launch();
    },
    cleanup() {
      if (server.proc && server.proc.exitCode === null) server.proc.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    },
  });
  return server as TestServer;
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** the body's bytes, for binary representations */
  raw: Buffer;
  json(): any;
}

const agents = new Map<string, https.Agent>();

/**
 * One request with the admin token (headers may replace it). `agent`: the connection(s) to
 * send it on (a keep-alive agent of one socket is one connection, so one front thread);
 * by default a shared pool per server.
 */
export function request(s: TestServer, method: string, path: string, body?: unknown, headers: Record<string, string> = {}, agent?: https.Agent): Promise<Reply> {
  if (!agent) {
    agent = agents.get(s.ca);
    if (!agent) agents.set(s.ca, (agent = new https.Agent({ keepAlive: true, ca: s.ca, maxSockets: 64 })));
  }
  const payload = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  return new Promise((resolveReq, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port: s.port,
        method,
        path,
        agent,
        headers: {
          authorization: `Bearer ${s.token}`,
          ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks);
          const text = raw.toString('utf8');
          resolveReq({ status: res.statusCode!, headers: res.headers, body: text, raw, json: () => JSON.parse(text) });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (payload) req.write(payload);
    req.end();
  });
}

/** Opens a watch and collects its events until closed. */
export function openWatch(s: TestServer, path: string): { events: any[]; raw: () => string; close: () => void; status: Promise<number>; ended: () => boolean } {
  const events: any[] = [];
  let buf = '';
  let raw = '';
  let ended = false;
  let req: ReturnType<typeof https.request>;
  const status = new Promise<number>((res, rej) => {
    req = https.request({ host: '127.0.0.1', port: s.port, method: 'GET', path, ca: s.ca, headers: { authorization: `Bearer ${s.token}` } }, (r) => {
      res(r.statusCode!);
      r.on('data', (c) => {
        raw += c;
        buf += c;
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i).trim();
          buf = buf.slice(i + 1);
          if (line) events.push(JSON.parse(line));
        }
      });
      r.on('end', () => (ended = true));
      r.on('close', () => (ended = true));
      r.on('error', () => {});
    });
    req.on('error', rej);
    req.end();
  });
  return { events, raw: () => raw, close: () => req.destroy(), status, ended: () => ended };
}

/** Polls a check (synchronous or not) until it gives a truthy value. */
export async function until<T>(fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}
