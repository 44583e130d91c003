// wrk (https://github.com/wg/wrk, Debian's package) as an independent C load client: the
// issue's "measured by wrk". One wrk thread (-t1) by default, so the load takes one of the two
// shared cores as the native client does; bench/wrk/load.lua makes the request and prints
// the summary this module reads. Optional: where wrk is not installed, or the target wants
// a client certificate (wrk sends none), wrkLoad says so once and returns null.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RawLoadOptions } from './raw-load.js';
import type { LoadResult, Target } from './lib.js';

/** bench/wrk/load.lua: beside this module in bench/, or two levels up from dist/bench/. */
function script(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  return here.endsWith(join('dist', 'bench')) ? join(here, '..', '..', 'bench', 'wrk', 'load.lua') : join(here, 'wrk', 'load.lua');
}

let available: Promise<boolean> | undefined;
export function wrkAvailable(): Promise<boolean> {
  available ??= new Promise((resolve) =>
    execFile('wrk', ['--version'], (err, stdout, stderr) => {
      const ok = /^wrk \S+ \[/.test(stdout + stderr);
      if (!ok) console.log(`wrk unavailable (${err ? err.message.split('\n')[0] : 'no version printed'}; apt-get install wrk); the other clients still run`);
      resolve(ok);
    }),
  );
  return available;
}

export async function wrkLoad(t: Target, opts: RawLoadOptions & { threads?: number }): Promise<LoadResult | null> {
  if (!(await wrkAvailable())) return null;
  if (!t.token) {
    console.log('wrk: the target wants a client certificate, which wrk cannot send; skipped');
    return null;
  }
  const dir = mkdtempSync(join(tmpdir(), 'kubeshard-wrk-'));
  try {
    const env: NodeJS.ProcessEnv = { ...process.env, KUBESHARD_TOKEN: t.token, WRK_METHOD: opts.method ?? 'GET', WRK_PATH: opts.path };
    if (opts.body !== undefined) {
      env.WRK_BODY_FILE = join(dir, 'body');
      writeFileSync(env.WRK_BODY_FILE, opts.body);
    }
    const args = ['-t', String(opts.threads ?? 1), '-c', String(opts.connections), '-d', `${opts.seconds}s`, '--timeout', '10s', '-s', script(), t.url];
    const out = await new Promise<string>((resolve, reject) =>
      execFile('wrk', args, { env, timeout: (opts.seconds + 30) * 1000, maxBuffer: 1 << 20 }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
    );
    const line = out.split('\n').find((l) => l.startsWith('WRK-JSON '));
    if (!line) throw new Error(`wrk printed no summary:\n${out}`);
    const r = JSON.parse(line.slice('WRK-JSON '.length)) as { requests: number; seconds: number; p50: number; p90: number; p99: number; p999: number; non2xx: number; errors: number };
    return { requests: r.requests, rps: r.requests / r.seconds, p50: r.p50, p90: r.p90, p99: r.p99, p999: r.p999, perSecond: [], non2xx: r.non2xx, errors: r.errors };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
