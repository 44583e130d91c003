// The startup scenario: N ConfigMaps written straight into a fresh data dir in the shard
// layout (as if a server had stored them), then the time from process start to /readyz 200
// and the server's RSS then: first from the store alone (no cache index: a first start, or
// one after a crash), then again after a clean shutdown, which wrote the cache index
// (workers/shard/cache-index.ts) the restart loads from. After each, the RSS once the
// server has settled (the garbage collector's start-up look at every object done).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import https from 'node:https';
import { randomUUID } from 'node:crypto';
import { encodeRev, FLAG_LIVE, openShardEnv } from '../workers/shard/layout.js';
import { encodePayload } from '../workers/shard/record.js';
import { shardOf } from '../src/storage/lmdb/lmdb-storage.js';
import { sampleProc } from './lib.js';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');

export interface StartupResult {
  /** the first start, from the store */
  seconds: number;
  seedSeconds: number;
  rssBytes: number;
  /** RSS SETTLE_MS after /readyz */
  settledRssBytes: number;
  /** the start after a clean shutdown, from the cache index */
  restartSeconds: number;
  restartRssBytes: number;
  restartSettledRssBytes: number;
}

const SETTLE_MS = 15_000;

export async function seedAndTimeStartup(n: number, shards = 2): Promise<StartupResult> {
  const dataDir = mkdtempSync(join(tmpdir(), 'kubeshard-startup-'));
  try {
    const seedStart = Date.now();
    writeFileSync(join(dataDir, 'shards.json'), JSON.stringify({ shardCount: shards, shardMap: {} }) + '\n');
    const shard = shardOf('configmaps', shards, {});
    const path = join(dataDir, `shard-${shard}`);
    mkdirSync(path, { recursive: true });
    const env = openShardEnv(path);
    const ts = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const BATCH = 10000;
    for (let i = 0; i < n; i += BATCH) {
      env.root.transactionSync(() => {
        for (let j = i; j < Math.min(n, i + BATCH); j++) {
          const rv = j + 1;
          const name = `cm-${j}`;
          const json = `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"${name}","namespace":"default","uid":"${randomUUID()}","resourceVersion":"${rv}","creationTimestamp":"${ts}"},"data":{"v":"${'x'.repeat(200)}"}}`;
          const value = encodeRev(FLAG_LIVE, Buffer.from(json));
          env.hist.putSync(rv, encodePayload({ rv, prev: 0, ts: Date.now(), type: 'ADDED', gr: 'configmaps', key: `default/${name}`, value }));
        }
        env.meta.putSync('maxRv', Math.min(n, i + BATCH));
      });
    }
    await env.root.close();
    const seedSeconds = (Date.now() - seedStart) / 1000;
    const first = await timeOneStart(dataDir, shards);
    const again = await timeOneStart(dataDir, shards);
    return {
      seconds: first.seconds,
      seedSeconds,
      rssBytes: first.rssBytes,
      settledRssBytes: first.settledRssBytes,
      restartSeconds: again.seconds,
      restartRssBytes: again.rssBytes,
      restartSettledRssBytes: again.settledRssBytes,
    };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Starts the server on dataDir, times it to /readyz 200, samples its RSS then and once settled, stops it cleanly. */
async function timeOneStart(dataDir: string, shards: number): Promise<{ seconds: number; rssBytes: number; settledRssBytes: number }> {
  const port = 20000 + Math.floor(Math.random() * 12000);
  const start = Date.now();
  const proc = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'main.js'), '--secure-port', String(port), '--data-dir', dataDir, '--shards', String(shards)], { stdio: 'ignore' });
  for (;;) {
    // anonymous is off by default (AlwaysAllow): ask with the admin token once the server wrote it
    const tokenFile = join(dataDir, 'admin-token.csv');
    const headers: Record<string, string> = existsSync(tokenFile) ? { authorization: `Bearer ${readFileSync(tokenFile, 'utf8').split(',')[0]}` } : {};
    const ok = await new Promise<boolean>((res) => {
      const req = https.get(`https://127.0.0.1:${port}/readyz`, { rejectUnauthorized: false, headers }, (r) => {
        r.resume();
        res(r.statusCode === 200);
      });
      req.on('error', () => res(false));
      req.setTimeout(1000, () => req.destroy());
    });
    if (ok) break;
    if (proc.exitCode !== null) throw new Error('server exited during startup');
    await new Promise((r) => setTimeout(r, 20));
  }
  const seconds = (Date.now() - start) / 1000;
  const rssBytes = sampleProc(proc.pid)?.rssBytes ?? NaN;
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const settledRssBytes = sampleProc(proc.pid)?.rssBytes ?? NaN;
  proc.kill('SIGTERM');
  await new Promise((r) => proc.once('exit', r));
  return { seconds, rssBytes, settledRssBytes };
}
