// Shared pieces of the bench suite: target discovery (a kubeconfig, or a kubeshard started
// here), HTTPS load through autocannon, and /proc readings of the server process.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:net';
import autocannon from 'autocannon';
import https from 'node:https';
import tls from 'node:tls';
import { dirname, isAbsolute } from 'node:path';
import { parse as parseYaml } from 'yaml';

/**
 * TLS 1.3 suites in the order Go's crypto/tls offers them on AES hardware (kubectl, client-go):
 * AES-128-GCM first. Node offers AES-256-GCM first, which costs both sides more per byte.
 */
export const GO_TLS13_CIPHERS = ['TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256', ...tls.DEFAULT_CIPHERS.split(':').filter((c) => !c.startsWith('TLS_'))].join(':');

export interface Target {
  url: string;
  /** bearer token, or '' when the kubeconfig authenticates with a client certificate */
  token: string;
  /** client certificate and key (PEM), for every TLS connection the bench opens */
  tls?: { cert?: Buffer; key?: Buffer };
  /**
   * the server's pid, when it runs on this machine and we can read /proc; several (a
   * kube-apiserver and its etcd) are read as one server: their RSS and CPU summed
   */
  pid?: number | number[];
  /** the kubeconfig file, for tools the bench starts against the server (the nodes scenario's fleet) */
  kubeconfig?: string;
  /** what the pids are, when the bench found them itself ("kube-apiserver + etcd") */
  pidNote?: string;
  stop(): Promise<void>;
}

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');

/** A free port on 127.0.0.1, below the ephemeral range. */
export async function freePort(): Promise<number> {
  for (;;) {
    const p = 20000 + Math.floor(Math.random() * 12000);
    const ok = await new Promise<boolean>((res) => {
      const s = createServer();
      s.once('error', () => res(false));
      s.listen(p, '127.0.0.1', () => s.close(() => res(true)));
    });
    if (ok) return p;
  }
}

/** The HTTP header line that authenticates a hand-written request ('' for client certificates). */
export function authLine(t: Target): string {
  return t.token ? `Authorization: Bearer ${t.token}\r\n` : '';
}

/** Headers for node's https / autocannon. */
export function authHeaders(t: Target): Record<string, string> {
  return t.token ? { authorization: `Bearer ${t.token}` } : {};
}

/**
 * The server and credentials of a kubeconfig's current context: a bearer token (token or
 * tokenFile) or a client certificate (client-certificate[-data] and client-key[-data]).
 * The bench does not verify the server's certificate: it measures, it does not trust.
 */
export function fromKubeconfig(path: string, contextName?: string): { url: string; token: string; tls?: { cert?: Buffer; key?: Buffer } } {
  const kc = parseYaml(readFileSync(path, 'utf8')) as any;
  const base = dirname(resolve(path));
  const file = (f: string) => readFileSync(isAbsolute(f) ? f : join(base, f));
  const ctxName = contextName ?? kc['current-context'];
  const ctx = (kc.contexts ?? []).find((c: any) => c.name === ctxName)?.context ?? kc.contexts?.[0]?.context;
  if (!ctx) throw new Error(`${path}: no context ${ctxName ?? ''}`);
  const cluster = (kc.clusters ?? []).find((c: any) => c.name === ctx.cluster)?.cluster;
  const user = (kc.users ?? []).find((u: any) => u.name === ctx.user)?.user ?? {};
  if (!cluster?.server) throw new Error(`${path}: the context's cluster has no server`);
  const token = user.token ?? (user.tokenFile ? file(user.tokenFile).toString('utf8').trim() : '');
  const cert = user['client-certificate-data'] ? Buffer.from(user['client-certificate-data'], 'base64') : user['client-certificate'] ? file(user['client-certificate']) : undefined;
  const key = user['client-key-data'] ? Buffer.from(user['client-key-data'], 'base64') : user['client-key'] ? file(user['client-key']) : undefined;
  if (!token && !(cert && key)) throw new Error(`${path}: the user needs a bearer token or a client certificate and key`);
  return { url: String(cluster.server).replace(/\/+$/, ''), token, tls: cert && key ? { cert, key } : undefined };
}

/**
 * A server named by a kubeconfig. pids: the processes to read from /proc ("123" or
 * "123,456"); when not given and the kubeconfig is the one ../shared/reference/start.sh
 * writes (WORKDIR/kubeconfig beside WORKDIR/run/apiserver.pid and etcd.pid), those two.
 */
export function targetFromKubeconfig(path: string, contextName?: string, pids?: string): Target {
  process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
  const t = fromKubeconfig(path, contextName);
  let pid: number[] | undefined = pids ? pids.split(',').map(Number).filter((n) => n > 0) : undefined;
  let pidNote: string | undefined;
  if (!pid) {
    const run = join(dirname(resolve(path)), 'run');
    const found = ['apiserver.pid', 'etcd.pid'].map((f) => {
      try {
        return Number(readFileSync(join(run, f), 'utf8').trim());
      } catch {
        return 0;
      }
    });
    if (found[0] > 0) {
      pid = found.filter((n) => n > 0);
      pidNote = found[1] > 0 ? 'kube-apiserver + etcd, from run/*.pid beside the kubeconfig' : 'kube-apiserver, from run/apiserver.pid beside the kubeconfig';
    }
  }
  return { ...t, kubeconfig: path, pid: pid && pid.length === 1 ? pid[0] : pid, pidNote, stop: async () => {} };
}

export async function startTarget(args: string[], serverArgs: string[] = []): Promise<Target> {
  process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
  const i = args.indexOf('--kubeconfig');
  if (i >= 0) {
    const c = args.indexOf('--context');
    const pidArg = args.indexOf('--pid');
    return targetFromKubeconfig(args[i + 1], c >= 0 ? args[c + 1] : undefined, pidArg >= 0 ? args[pidArg + 1] : undefined);
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'kubeshard-bench-'));
  const port = await freePort();
  const proc: ChildProcess = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'main.js'), '--secure-port', String(port), '--data-dir', dataDir, ...serverArgs], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  while (!out.includes('Serving securely')) {
    if (proc.exitCode !== null) throw new Error('kubeshard exited: ' + out);
    await new Promise((r) => setTimeout(r, 50));
  }
  const t = fromKubeconfig(join(dataDir, 'admin.kubeconfig'));
  return {
    ...t,
    kubeconfig: join(dataDir, 'admin.kubeconfig'),
    pid: proc.pid,
    stop: async () => {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface ProcSample {
  rssBytes: number;
  cpuSeconds: number;
}

/** RSS and CPU seconds of a local process (and its threads), from /proc; of several, their sums. */
export function sampleProc(pid: number | number[] | undefined): ProcSample | undefined {
  if (Array.isArray(pid)) {
    let rssBytes = 0;
    let cpuSeconds = 0;
    for (const p of pid) {
      const one = sampleProc(p);
      if (!one) return undefined;
      rssBytes += one.rssBytes;
      cpuSeconds += one.cpuSeconds;
    }
    return pid.length ? { rssBytes, cpuSeconds } : undefined;
  }
  if (!pid) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return { rssBytes: rss, cpuSeconds: ticks / 100 };
  } catch {
    return undefined;
  }
}

export interface LoadResult {
  requests: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  /** p99.9 */
  p999: number;
  /** responses completed in each whole second of the run (1 s buckets) */
  perSecond: number[];
  non2xx: number;
  errors: number;
  /** the load client's own CPU µs per request, when it runs in a process of its own (the native client) */
  clientCpuUs?: number;
}

export async function load(t: Target, opts: { path: string; method?: string; body?: string; connections: number; seconds: number }): Promise<LoadResult> {
  return autocannonLoad({
    url: t.url + opts.path,
    method: (opts.method ?? 'GET') as any,
    body: opts.body,
    connections: opts.connections,
    duration: opts.seconds,
    headers: { ...authHeaders(t), 'content-type': 'application/json', accept: 'application/json' },
    tlsOptions: { ciphers: GO_TLS13_CIPHERS, ...t.tls },
  });
}

/** An autocannon run, its responses also counted per second (1 s buckets from its start). */
export async function autocannonLoad(opts: Record<string, unknown>): Promise<LoadResult> {
  const perSecond: number[] = [];
  const start = performance.now();
  const run = autocannon(opts);
  run.on('response', () => {
    const i = Math.floor((performance.now() - start) / 1000);
    perSecond[i] = (perSecond[i] ?? 0) + 1;
  });
  const r = await run;
  const whole = Math.floor(Number(opts.duration));
  return {
    requests: r.requests.total,
    rps: r.requests.average,
    p50: r.latency.p50,
    p90: r.latency.p90,
    p99: r.latency.p99,
    p999: r.latency.p99_9,
    perSecond: Array.from({ length: Math.min(whole, perSecond.length) }, (_, i) => perSecond[i] ?? 0),
    non2xx: r.non2xx,
    errors: r.errors,
  };
}

/** One request with the target's credentials; the body parsed as JSON when it is JSON. */
export function api(t: Target, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const u = new URL(t.url + path);
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((res, rej) => {
    const req = https.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method,
        rejectUnauthorized: false,
        ciphers: GO_TLS13_CIPHERS,
        ...t.tls,
        headers: { ...authHeaders(t), accept: 'application/json', ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}) },
      },
      (r) => {
        const chunks: Buffer[] = [];
        r.on('data', (c) => chunks.push(c));
        r.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          try {
            res({ status: r.statusCode!, body: JSON.parse(text) });
          } catch {
            res({ status: r.statusCode!, body: text });
          }
        });
      },
    );
    req.on('error', rej);
    if (payload) req.write(payload);
    req.end();
  });
}
