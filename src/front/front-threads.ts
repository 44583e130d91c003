// The other front threads (issue 18), seen from the main thread. Each is a worker that runs
// the same request pipeline as the main thread (server.ts startServer with a
// FrontThreadContext): its own uWS listener on the shared port, its own caches fed by every
// shard's commits, its own watchers. The shard workers, the controllers and the start-up
// writes stay on the main thread; this class starts the threads once the main thread is
// ready, passes them shard restarts, and stops them first at shutdown (a uWS listen socket
// must be closed before its thread ends, or the process aborts).
//
// Thread ownership: a FrontThreads lives on the main thread.
import { Worker, type MessagePort } from 'node:worker_threads';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { ServerOptions } from '../options.js';
import type { Coordinator, FrontControl } from '../coordinator/coordinator.js';
import type { SharedSeats } from '../flowcontrol/shared-seats.js';

const ENTRY = fileURLToPath(new URL('./front-thread.js', import.meta.url));
/** How long a front thread may take to stop before it is terminated anyway. */
const STOP_MS = 10_000;

/** main -> front thread */
export type ToFrontThread = { t: 'control'; m: FrontControl } | { t: 'stop' };
/** front thread -> main */
export type FromFrontThread = { t: 'ready' } | { t: 'stopped' } | { t: 'failed'; message: string };

export interface FrontThreadData {
  options: ServerOptions;
  index: number;
  sab: SharedArrayBuffer;
  ports: MessagePort[];
  listenPort: number;
  /** the flow-control seat table every front thread counts seats in (flowcontrol/shared-seats.ts) */
  seats?: SharedArrayBuffer;
}

/**
 * Fails when another socket holds the port. The front threads listen with SO_REUSEPORT,
 * which would let them join a listener of another program that set it too (of the same
 * user); a plain listen first, closed at once, refuses a port that anything holds, as
 * kube-apiserver's listen does.
 */
export function claimPort(host: string, port: number): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => reject(new Error(`failed to listen on ${host}:${port} (${err.code === 'EADDRINUSE' ? 'address already in use' : err.message})`)));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

export class FrontThreads {
  private workers: Worker[] = [];
  private stopping = false;

  constructor(
    private options: ServerOptions,
    private coord: Coordinator,
    /** the flow-control seats every front thread counts in; a thread that fails leaves them (reclaim) */
    private seats?: SharedSeats,
  ) {}

  /** Starts threads 1..count (the main thread is 0); resolves once each listens. */
  async start(count: number, listenPort: number): Promise<void> {
    const started: Promise<void>[] = [];
    for (let index = 1; index <= count; index++) started.push(this.startOne(index, listenPort));
    await Promise.all(started);
  }

  private startOne(index: number, listenPort: number): Promise<void> {
    let worker!: Worker;
    const ports = this.coord.connectFront((m, transfer) => worker.postMessage({ t: 'control', m } satisfies ToFrontThread, transfer));
    worker = new Worker(ENTRY, {
      workerData: { options: this.options, index, sab: this.coord.shared.sab, ports, listenPort, seats: this.seats?.sab } satisfies FrontThreadData,
      transferList: ports,
    });
    this.workers.push(worker);
    return new Promise((resolve, reject) => {
      let ready = false;
      worker.on('message', (m: FromFrontThread) => {
        if (m.t === 'ready') {
          ready = true;
          resolve();
        } else if (m.t === 'failed') reject(new Error(`front thread ${index}: ${m.message}`));
      });
      worker.on('error', (err) => {
        console.error(`front thread ${index} failed:`, err);
        if (!ready) reject(err);
      });
      worker.on('exit', (code) => {
        if (!ready) reject(new Error(`front thread ${index} exited with code ${code} before it was ready`));
        // its listener went with it: the kernel sends new connections to the other threads
        else if (!this.stopping) {
          console.error(`front thread ${index} stopped (exit code ${code}); the other front threads serve the port`);
          // its requests went with it: the seats they held and their places in the queues are free
          this.seats?.reclaim(index);
        }
      });
    });
  }

  get count(): number {
    return this.workers.length;
  }

  /** Stops every front thread: listeners first, then their watchers and caches, then the thread. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      this.workers.map(
        (w) =>
          new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, STOP_MS);
            timer.unref();
            w.on('message', (m: FromFrontThread) => {
              if (m.t === 'stopped') {
                clearTimeout(timer);
                resolve();
              }
            });
            w.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            try {
              w.postMessage({ t: 'stop' } satisfies ToFrontThread);
            } catch {
              resolve();
            }
          }),
      ),
    );
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}
