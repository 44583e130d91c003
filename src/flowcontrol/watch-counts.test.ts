import { describe, it, expect } from 'vitest';
import { Worker } from 'node:worker_threads';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { SharedWatchCounts } from './watch-counts.js';

describe("the server's watcher counts", () => {
  it('a write reaches the all-namespaces watchers and its namespace\'s; a cluster-scoped one every watcher of the type', () => {
    const c = new SharedWatchCounts();
    expect(c.interested('configmaps', 'a')).toBe(0);
    c.note('configmaps', '', 1);
    c.note('configmaps', 'a', 1);
    c.note('configmaps', 'a', 1);
    c.note('configmaps', 'b', 1);
    c.note('configmaps', '\0', 1); // an indexed watcher (by name): in the total only
    c.note('secrets', 'a', 1);
    expect(c.interested('configmaps', 'a')).toBe(3);
    expect(c.interested('configmaps', 'b')).toBe(2);
    expect(c.interested('configmaps', 'c')).toBe(1);
    expect(c.interested('configmaps', '')).toBe(5);
    c.note('configmaps', 'a', -1);
    expect(c.interested('configmaps', 'a')).toBe(2);
  });

  it("a table full around a key's place answers undefined for it (its thread's own count then serves), at a bounded cost", () => {
    const c = new SharedWatchCounts();
    // claim slots with made-up namespaces until one key no longer finds room
    let i = 0;
    while (c.interested('configmaps', `ns-${i}`) !== undefined && i < 200_000) c.note('configmaps', `ns-${i++}`, 1);
    expect(i).toBeLessThan(200_000);
    expect(c.interested('configmaps', `ns-${i}`)).toBeUndefined();
    // the keys counted before keep their counts
    expect(c.interested('configmaps', 'ns-0')).toBe(1);
  });

  it('another thread mapping the buffer counts into the same figures', async () => {
    const c = new SharedWatchCounts();
    c.note('pods', 'x', 1);
    // (this file's module, transpiled for the worker: it imports nothing)
    const src = readFileSync(fileURLToPath(new URL('./watch-counts.ts', import.meta.url)), 'utf8');
    const js = ts.transpileModule(src, { compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 } }).outputText;
    const url = `data:text/javascript;base64,${Buffer.from(js).toString('base64')}`;
    const code = `import('${url}').then(({ SharedWatchCounts }) => { const o = new SharedWatchCounts(require('node:worker_threads').workerData); for (let i = 0; i < 1000; i++) o.note('pods', 'x', 1); o.note('pods', '', 1); require('node:worker_threads').parentPort.postMessage(o.interested('pods', 'x')); })`;
    const w = new Worker(code, { eval: true, workerData: c.sab });
    const seen = await new Promise((r) => w.once('message', r));
    await w.terminate();
    expect(seen).toBe(1002);
    expect(c.interested('pods', 'x')).toBe(1002);
    expect(c.interested('pods', '')).toBe(1002);
  });
});
