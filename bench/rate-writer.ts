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
  /**
   * Write timing (see WriteClock): each create carries a sequence number (annotation
   * SEQ_ANNOTATION, from clock.base on), and its send and acknowledgement times go into the
   * shared arrays at that index, so a watch reader can measure from either.
   */
  clock?: WriteClock;
}

/** the annotation carrying a create's sequence number (the index into a WriteClock) */
export const SEQ_ANNOTATION = 'bench/seq';

/**
 * Send and acknowledgement times (ms since the epoch, sub-ms: timeOrigin + now) of the
 * creates, by sequence number, shared between the writer's thread and the watch readers.
 * The event latency is measured from the acknowledgement (the create's response
 * reaching its client), not from the send, which includes the write's own queueing.
 */
export interface WriteClock {
  sent: SharedArrayBuffer;
  acked: SharedArrayBuffer;
  /** the first sequence number this run uses */
  base: number;
}

export function newWriteClock(capacity = 1 << 20): WriteClock {
  return { sent: new SharedArrayBuffer(8 * capacity), acked: new SharedArrayBuffer(8 * capacity), base: 0 };
}

/** wall-clock ms with sub-ms resolution, comparable across this process's threads */
export const nowMs = (): number => performance.timeOrigin + performance.now();

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
  const sentAt = job.clock ? new Float64Array(job.clock.sent) : null;
  const ackedAt = job.clock ? new Float64Array(job.clock.acked) : null;
  let seq = job.clock?.base ?? 0;
  const post = () =>
    new Promise<void>((res) => {
      const annotations: Record<string, string> = { [job.annotation]: String(Date.now()) };
      const mine = seq++;
      if (sentAt) annotations[SEQ_ANNOTATION] = String(mine);
      const body = Buffer.from(JSON.stringify({ metadata: { generateName: 'w-', annotations }, data: { v: 'x'.repeat(200) } }));
      if (sentAt && mine < sentAt.length) sentAt[mine] = nowMs();
      const req = https.request(
        { host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent, headers: { ...job.headers, 'content-type': 'application/json', 'content-length': body.length } },
        (r) => {
          // the acknowledgement: the response's head reached the writer
          if (ackedAt && mine < ackedAt.length && r.statusCode === 201) ackedAt[mine] = nowMs();
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
