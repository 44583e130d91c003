// A front thread other than the main one (issue 18): the request pipeline of server.ts on
// this thread's own listener, caches and watchers, with the main thread's shards reached
// over the ports in workerData; or the bulk thread, without a listener, which serves the
// large writes other threads hand it (handoff.ts). See front-threads.ts.
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { startServer } from '../server.js';
import type { FromFrontThread, FrontThreadData, ToFrontThread } from './front-threads.js';

const data = workerData as FrontThreadData;
const port = parentPort!;

/** requests for a port to the bulk thread, answered in order by the main thread */
const bulkWaiters: Array<{ resolve: (p: MessagePort) => void; reject: (e: Error) => void }> = [];

function requestBulkPort(): Promise<MessagePort> {
  return new Promise((resolve, reject) => {
    bulkWaiters.push({ resolve, reject });
    port.postMessage({ t: 'bulk-port' } satisfies FromFrontThread);
  });
}

try {
  const server = await startServer(data.options, {
    index: data.index,
    storage: data.storage,
    listenPort: data.listenPort,
    bodyBudget: data.bodyBudget,
    toMain: data.toMain,
    audit: data.audit,
    queues: data.queues,
    watchCounts: data.watchCounts,
    bulk: data.bulk,
    requestBulkPort,
    seats: data.seats,
  });
  port.on('message', (m: ToFrontThread) => {
    if (m.t === 'control') server.control(m.m).finally(() => port.postMessage({ t: 'controlled', id: m.id } satisfies FromFrontThread));
    else if (m.t === 'serve') server.serve(m.port);
    else if (m.t === 'metrics') void server.renderMetrics().then((text) => port.postMessage({ t: 'metrics', id: m.id, text } satisfies FromFrontThread));
    else if (m.t === 'bulk-port') {
      const w = bulkWaiters.shift();
      if (m.port) w?.resolve(m.port);
      else w?.reject(new Error('the bulk thread could not start'));
    } else if (m.t === 'lifecycle') {
      void server.lifecycleSignal(m.signal).finally(() => port.postMessage({ t: 'lifecycle-done', signal: m.signal } satisfies FromFrontThread));
    } else if (m.t === 'stop') {
      server.stopListening();
      server.shutdown().finally(() => port.postMessage({ t: 'stopped' } satisfies FromFrontThread));
    }
  });
  port.postMessage({ t: 'ready' } satisfies FromFrontThread);
} catch (err) {
  port.postMessage({ t: 'failed', message: err instanceof Error ? err.stack ?? err.message : String(err) } satisfies FromFrontThread);
}
