// Large YAML request bodies are parsed on a worker thread. The yaml library parses about
// 1 MB/s, so a body near the 3 MiB limit would hold the front thread (and every other
// request, /healthz included) for seconds; kube-apiserver parses each body on its own
// goroutine. The router awaits offloadYaml before it calls the handler, and the handler's
// parseYaml11 then finds the value here instead of parsing again.
//
// Thread ownership: front thread (the worker, the pending requests and the results).
import { Worker } from 'node:worker_threads';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Bodies at least this large are parsed on the worker (smaller ones take under ~30 ms). */
export const YAML_OFFLOAD_BYTES = 32 * 1024;

const YAML_TYPES = new Set(['application/yaml', 'application/x-yaml', 'text/yaml', 'application/apply-patch+yaml']);
const WORKER = join(dirname(fileURLToPath(import.meta.url)), '../../workers/yaml/yaml-worker.js');

export type Offloaded = { value: unknown; dups: string[] } | { error: string };

let worker: Worker | undefined;
let nextId = 0;
const pending = new Map<number, (r: Offloaded) => void>();
/** Results not yet taken by a handler, by body text; a handler that fails first leaves one behind, so only a few are kept. */
const results = new Map<string, Offloaded>();
const MAX_RESULTS = 8;

function start(): Worker {
  const w = new Worker(WORKER);
  w.unref();
  w.on('message', (m: { id: number } & Offloaded) => {
    const done = pending.get(m.id);
    pending.delete(m.id);
    done?.('error' in m ? { error: m.error } : { value: m.value, dups: m.dups });
  });
  const fail = (why: string) => {
    if (worker === w) worker = undefined;
    for (const done of pending.values()) done({ error: why });
    pending.clear();
  };
  w.on('error', (e) => fail(`yaml: ${e.message}`));
  w.on('exit', () => fail('yaml: the decoding worker stopped'));
  return w;
}

/**
 * When the request carries a large YAML body, parses it on the worker and keeps the result
 * for parseYaml11; returns undefined (nothing to wait for) otherwise.
 */
export function offloadYaml(body: Buffer | null, contentType: string | undefined, text: () => string): Promise<void> | undefined {
  if (!body || body.length < YAML_OFFLOAD_BYTES || !contentType) return undefined;
  const mt = contentType.split(/[;,]/)[0].trim().toLowerCase();
  if (!YAML_TYPES.has(mt)) return undefined;
  const t = text();
  worker ??= start();
  const id = nextId++;
  worker.postMessage({ id, text: t });
  return new Promise((resolve) => {
    pending.set(id, (r) => {
      results.set(t, r);
      while (results.size > MAX_RESULTS) results.delete(results.keys().next().value!);
      resolve();
    });
  });
}

/** The worker's result for this text, once (undefined when it was not offloaded). */
export function takeOffloaded(text: string): Offloaded | undefined {
  if (results.size === 0) return undefined;
  const r = results.get(text);
  if (r) results.delete(text);
  return r;
}
