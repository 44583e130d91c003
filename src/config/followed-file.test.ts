import { describe, it, expect } from 'vitest';
import { Worker } from 'node:worker_threads';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { followFile } from './followed-file.js';

/** This module, transpiled for a worker thread (it imports only node: modules). */
function moduleUrl(): string {
  const src = readFileSync(fileURLToPath(new URL('./followed-file.ts', import.meta.url)), 'utf8');
  const js = ts.transpileModule(src, { compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 } }).outputText;
  return `data:text/javascript;base64,${Buffer.from(js).toString('base64')}`;
}

const until = async (ok: () => boolean) => {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 25));
};

describe('a followed file', () => {
  it("every thread gets each content the main thread read, in order, even one it would not have polled in time", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'kubeshard-follow-')), 'config.yaml');
    writeFileSync(file, 'v1');
    // (the follower does not keep a thread alive: a front thread's listener does; here an interval)
    const code = `import('${moduleUrl()}').then(({ followFile }) => { const { parentPort, workerData } = require('node:worker_threads'); followFile(workerData, 60000, (t) => parentPort.postMessage(t), () => {}); parentPort.postMessage('ready'); setInterval(() => {}, 1000); })`;
    const worker = new Worker(code, { eval: true, workerData: file });
    const seenThere: string[] = [];
    await new Promise<void>((resolve) => worker.on('message', (m: string) => (m === 'ready' ? resolve() : seenThere.push(m))));
    const seenHere: string[] = [];
    const followed = followFile(file, 20, (t) => seenHere.push(t), () => {});
    await new Promise((r) => setTimeout(r, 100));
    writeFileSync(file, 'v2 valid');
    await until(() => seenHere.length >= 1);
    writeFileSync(file, 'v3 broken');
    await until(() => seenThere.length >= 2);
    followed.stop();
    await worker.terminate();
    // (the worker's own interval, a minute, would have seen neither)
    expect(seenHere).toEqual(['v2 valid', 'v3 broken']);
    expect(seenThere).toEqual(['v2 valid', 'v3 broken']);
  });
});
