// A steady stream of creates at a fixed rate, on a thread of its own. In the watch scenario
// the bench process also holds up to tens of thousands of watch sockets; writing from that
// event loop, the writes were delayed by the fleet's reads and the offered rate fell with
// the load it was meant to create. Here the rate holds whatever the fleet is doing.
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import https from 'node:https';
import { fileURLToPath } from 'node:url';
import { GO_TLS13_CIPHERS } from './lib.js';

export interface RateWriterJob {
  url: string;
  headers: Record<string, string>;
  tls?: { cert?: Buffer; key?: Buffer };
  path: string;
  /** creates per second */
  rate: number;
  seconds: number;
  /** an annotation that carries the send time (ms), for the samplers' latency */
  annotation: string;
}

/** Runs the job on a new thread; resolves with the number of creates sent. */
export function runRateWriter(job: RateWriterJob): Promise<number> {
  return new Promise((resolve, reject) => {
    const w = new Worker(fileURLToPath(import.meta.url), { workerData: job });
    w.once('message', (n: number) => resolve(n));
    w.once('error', reject);
  });
}

async function writerMain(job: RateWriterJob): Promise<void> {
  const agent = new https.Agent({ keepAlive: true, rejectUnauthorized: false, ciphers: GO_TLS13_CIPHERS, maxSockets: 32, ...job.tls });
  const u = new URL(job.url + job.path);
  const post = () =>
    new Promise<void>((res) => {
      const body = Buffer.from(JSON.stringify({ metadata: { generateName: 'w-', annotations: { [job.annotation]: String(Date.now()) } }, data: { v: 'x'.repeat(200) } }));
      const req = https.request(
        { host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent, headers: { ...job.headers, 'content-type': 'application/json', 'content-length': body.length } },
        (r) => {
          r.resume();
          r.on('end', res);
        },
      );
      req.on('error', () => res());
      req.end(body);
    });
  const start = Date.now();
  const dur = job.seconds * 1000;
  let sent = 0;
  const inflight = new Set<Promise<void>>();
  while (Date.now() - start < dur) {
    const due = Math.floor(((Date.now() - start) / 1000) * job.rate);
    for (; sent < due; sent++) {
      const p = post().then(() => void inflight.delete(p));
      inflight.add(p);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  await Promise.all(inflight);
  agent.destroy();
  parentPort!.postMessage(sent);
}

if (!isMainThread && (workerData as RateWriterJob)?.path) void writerMain(workerData as RateWriterJob);
