// A front thread other than the main one (issue 18): the request pipeline of server.ts on
// this thread's own listener, caches and watchers, with the main thread's shards reached
// over the ports in workerData. See front-threads.ts.
import { parentPort, workerData } from 'node:worker_threads';
import { startServer } from '../server.js';
import type { FromFrontThread, FrontThreadData, ToFrontThread } from './front-threads.js';

const data = workerData as FrontThreadData;
const port = parentPort!;

try {
  const server = await startServer(data.options, { index: data.index, sab: data.sab, ports: data.ports, listenPort: data.listenPort, seats: data.seats });
  port.on('message', (m: ToFrontThread) => {
    if (m.t === 'control') server.control(m.m);
    else if (m.t === 'stop') {
      server.stopListening();
      server.shutdown().finally(() => port.postMessage({ t: 'stopped' } satisfies FromFrontThread));
    }
  });
  port.postMessage({ t: 'ready' } satisfies FromFrontThread);
} catch (err) {
  port.postMessage({ t: 'failed', message: err instanceof Error ? err.stack ?? err.message : String(err) } satisfies FromFrontThread);
}
