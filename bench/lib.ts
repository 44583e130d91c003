// Shared pieces of the bench suite: target discovery (a kubeconfig, or a kubeshard started
// here), HTTPS load through autocannon, and /proc readings of the server process.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:net';
import autocannon from 'autocannon';

export interface Target {
  url: string;
  token: string;
  /** the server's pid, when it runs on this machine and we can read /proc */
  pid?: number;
  stop(): Promise<void>;
}

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');

async function freePort(): Promise<number> {
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

function fromKubeconfig(path: string): { url: string; token: string } {
  const text = readFileSync(path, 'utf8');
  const server = /server:\s*(\S+)/.exec(text)?.[1];
  const token = /token:\s*(\S+)/.exec(text)?.[1];
  if (!server || !token) throw new Error(`${path}: need a server and a bearer token (client certificates: use a token for now)`);
  return { url: server, token };
}

export async function startTarget(args: string[]): Promise<Target> {
  process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
  const i = args.indexOf('--kubeconfig');
  if (i >= 0) {
    const t = fromKubeconfig(args[i + 1]);
    const pidArg = args.indexOf('--pid');
    return { ...t, pid: pidArg >= 0 ? Number(args[pidArg + 1]) : undefined, stop: async () => {} };
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'kubeshard-bench-'));
  const port = await freePort();
  const proc: ChildProcess = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'main.js'), '--secure-port', String(port), '--data-dir', dataDir], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  while (!out.includes('Serving securely')) {
    if (proc.exitCode !== null) throw new Error('kubeshard exited: ' + out);
    await new Promise((r) => setTimeout(r, 50));
  }
  const t = fromKubeconfig(join(dataDir, 'admin.kubeconfig'));
  return {
    ...t,
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

/** RSS and CPU seconds of a local process (and its threads), from /proc. */
export function sampleProc(pid: number | undefined): ProcSample | undefined {
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
  p99: number;
  non2xx: number;
  errors: number;
}

export async function load(t: Target, opts: { path: string; method?: string; body?: string; connections: number; seconds: number }): Promise<LoadResult> {
  const r = await autocannon({
    url: t.url + opts.path,
    method: (opts.method ?? 'GET') as any,
    body: opts.body,
    connections: opts.connections,
    duration: opts.seconds,
    headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json', accept: 'application/json' },
  });
  return {
    requests: r.requests.total,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors,
  };
}

export async function api(t: Target, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(t.url + path, {
    method,
    headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}
