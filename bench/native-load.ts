// The native load client (native/loadgen/loadgen.c): the lean client's load (N keep-alive
// TLS connections, one request in flight on each, the same request bytes) from a C program
// with epoll and OpenSSL. The load generator shares the 2 cores with the server, and the JS
// client's own CPU per request caps what it can show; the C one costs less. It is optional:
// built with cc on first use, and where cc or OpenSSL's headers are missing nativeLoad says
// so once and returns null (the JS lean client is the fallback). The native watch fleet
// (native/loadgen/watchfleet.c, bench/native-watch.ts) is built here the same way.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildRequest, type RawLoadOptions } from './raw-load.js';
import type { LoadResult, Target } from './lib.js';

/**
 * The native bench tools: each one C file of native/loadgen/, built into native/build/. The
 * headers beside them (tls-socket.h, http-framing.h: what the tools share) are included from there.
 */
export type NativeTool = 'loadgen' | 'watchfleet';
const source = (tool: NativeTool) => join('native', 'loadgen', `${tool}.c`);
const binary = (tool: NativeTool) => join('native', 'build', tool);

/**
 * The repository root: the nearest directory above this module that holds the C sources.
 * This module runs from bench/ (vitest) and from dist/bench/ (built), so no fixed depth fits.
 */
function findRoot(tool: NativeTool): string | undefined {
  for (let d = dirname(fileURLToPath(import.meta.url)); ; d = dirname(d)) {
    if (existsSync(join(d, source(tool)))) return d;
    if (dirname(d) === d) return undefined;
  }
}

function unavailable(tool: NativeTool, why: string): null {
  console.log(tool === 'loadgen' ? `native load client unavailable (${why}); the JS lean client still runs` : `native ${tool} unavailable (${why}); the JS one still runs`);
  return null;
}

const built = new Map<NativeTool, Promise<string | null>>();

/** The newest mtime of a tool's inputs: its C file and every header beside it (a change to
 * a shared header must rebuild both tools). */
function newestInput(src: string): number {
  const dir = dirname(src);
  let newest = statSync(src).mtimeMs;
  for (const f of readdirSync(dir)) if (f.endsWith('.h')) newest = Math.max(newest, statSync(join(dir, f)).mtimeMs);
  return newest;
}

/** The path of the native client, compiled when its source is newer than the binary; null when it cannot be built. */
export function nativeLoadgen(): Promise<string | null> {
  return nativeTool('loadgen');
}

/** The path of a native bench tool, compiled when its source (or a header beside it) is newer than the binary; null when it cannot be built. */
export function nativeTool(tool: NativeTool): Promise<string | null> {
  let b = built.get(tool);
  if (!b) built.set(tool, (b = build(tool)));
  return b;
}

async function build(tool: NativeTool): Promise<string | null> {
  const root = findRoot(tool);
  if (!root) return unavailable(tool, `${source(tool)} not found`);
  const src = join(root, source(tool));
  const bin = join(root, binary(tool));
  try {
    if (statSync(bin).mtimeMs >= newestInput(src)) return bin;
  } catch {
    /* not built yet */
  }
  mkdirSync(dirname(bin), { recursive: true });
  // compiled under a name of its own, then renamed: two bench processes (or a test) that
  // build at once never run a half-written binary
  const tmp = `${bin}.${process.pid}.tmp`;
  try {
    await new Promise<void>((res, rej) =>
      execFile('cc', ['-O2', '-o', tmp, src, '-lssl', '-lcrypto'], (err, _out, stderr) => (err ? rej(Object.assign(err, { stderr })) : res())),
    );
    renameSync(tmp, bin);
    return bin;
  } catch (e) {
    rmSync(tmp, { force: true });
    const err = e as NodeJS.ErrnoException & { stderr?: string };
    const stderr = String(err.stderr ?? '');
    if (err.code === 'ENOENT') return unavailable(tool, 'no C compiler: cc not found');
    if (/openssl\/\S+: No such file/.test(stderr)) return unavailable(tool, 'no OpenSSL headers: install libssl-dev');
    if (/cannot find -l(ssl|crypto)/.test(stderr)) return unavailable(tool, 'no OpenSSL library: install libssl-dev');
    return unavailable(tool, `cc failed: ${stderr.split('\n').find((l) => /error/.test(l)) ?? err.message}`);
  }
}

/** Runs the client and returns its stdout; its stderr (diagnostics) goes to ours. */
function run(bin: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((res, rej) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      rej(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) res(out);
      else rej(new Error(`native load client failed (${signal ?? `exit ${code}`})`));
    });
  });
}

/**
 * The lean client's load (same options, same request bytes) from the native client, or null
 * when it cannot be built here. clientCpuUs is the client's own CPU per request over the
 * timed window (its handshakes excluded).
 */
export async function nativeLoad(t: Target, opts: RawLoadOptions): Promise<LoadResult | null> {
  const bin = await nativeLoadgen();
  if (!bin) return null;
  const u = new URL(t.url);
  const dir = mkdtempSync(join(tmpdir(), 'kubeshard-loadgen-'));
  try {
    const requestFile = join(dir, 'request');
    writeFileSync(requestFile, buildRequest(t, opts));
    const args = ['--host', u.hostname.replace(/^\[(.*)\]$/, '$1'), '--port', u.port || '443', '--connections', String(opts.connections), '--seconds', String(opts.seconds), '--request', requestFile];
    if (t.tls?.cert && t.tls.key) {
      writeFileSync(join(dir, 'client.crt'), t.tls.cert);
      writeFileSync(join(dir, 'client.key'), t.tls.key, { mode: 0o600 });
      args.push('--cert', join(dir, 'client.crt'), '--key', join(dir, 'client.key'));
    }
    // the run, plus handshakes (at most 10 s) and the drain of late responses (at most 5 s)
    const out = await run(bin, args, (opts.seconds + 30) * 1000);
    const r = JSON.parse(out.trim().split('\n').pop() ?? '') as { requests: number; rps: number; p50: number | null; p90?: number | null; p99: number | null; p999?: number | null; perSecond?: number[]; non2xx: number; errors: number; cpuUser: number; cpuSys: number };
    return {
      requests: r.requests,
      rps: r.rps,
      p50: r.p50 ?? NaN,
      p90: r.p90 ?? NaN,
      p99: r.p99 ?? NaN,
      p999: r.p999 ?? NaN,
      perSecond: r.perSecond ?? [],
      non2xx: r.non2xx,
      errors: r.errors,
      clientCpuUs: ((r.cpuUser + r.cpuSys) * 1e6) / Math.max(1, r.requests),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
