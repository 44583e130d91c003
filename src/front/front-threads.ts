// The other front threads (issue 18), seen from the main thread. Each is a worker that runs
// the same request pipeline as the main thread (server.ts startServer with a
// FrontThreadContext): its own uWS listener on the shared port, its own caches fed by every
// shard's commits, its own watchers. The shard workers, the controllers and the start-up
// writes stay on the main thread; this class starts the threads once the main thread is
// ready, passes them shard restarts and the graceful shutdown's signals (each thread drains
// its own requests, src/http/lifecycle.ts), and stops them before storage closes (a uWS
// listen socket must be closed before its thread ends, or the process aborts).
//
// Thread ownership: a FrontThreads lives on the main thread.
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { ServerOptions } from '../options.js';
import type { Storage } from '../storage/interface.js';
import { ForwardClient } from './forward.js';
import type { SharedSeats } from '../flowcontrol/shared-seats.js';

const ENTRY = fileURLToPath(new URL('./front-thread.js', import.meta.url));
/** How long a scrape waits for a front thread's metrics. */
const SCRAPE_MS = 2000;
/** How long a front thread may take to stop before it is terminated anyway. */
const STOP_MS = 10_000;

/** main -> front thread */
export type ToFrontThread =
  /** news from the main thread's storage for this thread's (Storage.connectFront, control) */
  | { t: 'control'; id: number; m: unknown }
  | { t: 'stop' }
  /** a signal of the graceful shutdown (server.ts LifecycleSignal); answered with lifecycle-done */
  | { t: 'lifecycle'; signal: 'initiated' | 'not-accepting' }
  /** (to the bulk thread) serve the requests forwarded over this port */
  | { t: 'serve'; port: MessagePort }
  /** the answer to bulk-port: a port whose requests the bulk thread serves */
  | { t: 'bulk-port'; port: MessagePort | null }
  /** render the thread's request metrics (a scrape of /metrics) */
  | { t: 'metrics'; id: number };
/** front thread -> main */
export type FromFrontThread =
  | { t: 'ready' }
  | { t: 'stopped' }
  | { t: 'lifecycle-done'; signal: 'initiated' | 'not-accepting' }
  | { t: 'failed'; message: string }
  | { t: 'controlled'; id: number }
  /** the thread has a large write for the bulk thread, and no port to it yet */
  | { t: 'bulk-port' }
  | { t: 'metrics'; id: number; text: string };

/** What a front thread starts with (server.ts FrontThreadContext adds what it builds on its side). */
export interface FrontThreadData {
  options: ServerOptions;
  /** 1..N-1 (0 is the main thread); N is the bulk thread */
  index: number;
  /** what this thread's storage starts from (Storage.connectFront; LMDB: the shared counters and a port per shard) */
  storage: unknown;
  /** the port the main thread listens on; 0: no listener on this thread */
  listenPort: number;
  /** the count of the request bodies in flight, which every front thread charges (BodyBudget) */
  bodyBudget: SharedArrayBuffer;
  /** the port on which the main thread serves this thread's MAIN_THREAD_WRITES (handoff.ts) */
  toMain: MessagePort;
  /** where its audit events go (audit/remote-backend.ts) */
  audit: MessagePort;
  /** this is the bulk thread: no listener, it serves the large writes other threads hand it */
  bulk: boolean;
  /** the flow-control seat table every front thread counts seats in (flowcontrol/shared-seats.ts) */
  seats?: SharedArrayBuffer;
  /** the server's watcher counts, for the work estimator (flowcontrol/watch-counts.ts) */
  watchCounts?: SharedArrayBuffer;
  /** where its requests that must wait are queued: the main thread's queue sets (flowcontrol/remote-queues.ts) */
  queues: MessagePort;
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
    private storage: Storage,
    private bodyBudget: SharedArrayBuffer,
    /** serves, on the main thread, the requests another thread forwards over the port */
    private serve: (port: MessagePort) => void,
    /** the flow-control seats every front thread counts in; a thread that fails leaves them (reclaim) */
    private seats?: SharedSeats,
    /** stores, on the main thread, the audit events another thread sends over the port */
    private serveAudit?: (port: MessagePort) => void,
    /** keeps, in the main thread's queues, the waiting requests another thread sends over the port; closed when it ends */
    private serveQueues?: (port: MessagePort) => { close(): void },
    /** the server's watcher counts, which every front thread keeps */
    private watchCounts?: SharedArrayBuffer,
  ) {}

  /** the bulk thread, once started (handoff.ts) */
  private bulk: Promise<Worker> | null = null;
  private bulkClient: ForwardClient | null = null;

  /** A port to the bulk thread, which is started at the first call (and again if it ended). */
  async bulkPort(): Promise<MessagePort> {
    // (the bulk thread's number is --front-threads: the one after the listening threads', and
    // the same when it is started again, so that its write ids and seat shares stay its own)
    this.bulk ??= this.startOne(this.options.frontThreads, 0, true).catch((err) => {
      this.bulk = null;
      throw err;
    });
    const worker = await this.bulk;
    const { port1, port2 } = new MessageChannel();
    worker.postMessage({ t: 'serve', port: port1 } satisfies ToFrontThread, [port1]);
    return port2;
  }

  /** The main thread's own client of the bulk thread. */
  async toBulk(): Promise<ForwardClient> {
    if (this.bulkClient && !this.bulkClient.isClosed) return this.bulkClient;
    const port = await this.bulkPort();
    if (this.bulkClient && !this.bulkClient.isClosed) {
      port.close();
      return this.bulkClient;
    }
    return (this.bulkClient = new ForwardClient(port));
  }

  private scrapes = new Map<number, (text: string) => void>();
  private nextScrape = 1;

  /** Every other front thread's request metrics (a thread that does not answer in time is left out). */
  renderMetrics(): Promise<string[]> {
    const live = this.workers.filter((w) => this.ready.has(w));
    return Promise.all(
      live.map(
        (w) =>
          new Promise<string>((resolve) => {
            const id = this.nextScrape++;
            const timer = setTimeout(() => {
              this.scrapes.delete(id);
              resolve('');
            }, SCRAPE_MS);
            this.scrapes.set(id, (text) => {
              clearTimeout(timer);
              this.scrapes.delete(id);
              resolve(text);
            });
            w.postMessage({ t: 'metrics', id } satisfies ToFrontThread);
          }),
      ),
    ).then((texts) => texts.filter((t) => t !== ''));
  }

  /** the threads that are running (started and not ended) */
  private ready = new Set<Worker>();

  /** Starts threads 1..count (the main thread is 0); resolves once each listens. */
  async start(count: number, listenPort: number): Promise<void> {
    const started: Promise<Worker>[] = [];
    for (let index = 1; index <= count; index++) started.push(this.startOne(index, listenPort, false));
    await Promise.all(started);
  }

  private startOne(index: number, listenPort: number, bulk: boolean): Promise<Worker> {
    let worker!: Worker;
    /** control messages the thread has not yet said it acted on */
    const controls = new Map<number, () => void>();
    let nextControl = 1;
    const link = this.storage.connectFront?.(
      (m, transfer) =>
        new Promise<void>((done) => {
          const id = nextControl++;
          controls.set(id, done);
          try {
            worker.postMessage({ t: 'control', id, m } satisfies ToFrontThread, transfer);
          } catch {
            // (the thread is gone)
            controls.delete(id);
            done();
          }
        }),
    ) ?? { data: undefined, transfer: [] };
    const toMain = new MessageChannel();
    this.serve(toMain.port1);
    const audit = new MessageChannel();
    this.serveAudit?.(audit.port1);
    const queues = new MessageChannel();
    const queueHost = this.serveQueues?.(queues.port1);
    if (!queueHost) queues.port1.close();
    worker = new Worker(ENTRY, {
      workerData: { options: this.options, index, storage: link.data, listenPort, bodyBudget: this.bodyBudget, toMain: toMain.port2, audit: audit.port2, bulk, seats: this.seats?.sab, watchCounts: this.watchCounts, queues: queues.port2 } satisfies FrontThreadData,
      transferList: [...link.transfer, toMain.port2, audit.port2, queues.port2],
    });
    this.workers.push(worker);
    return new Promise((resolve, reject) => {
      let ready = false;
      worker.on('message', (m: FromFrontThread) => {
        if (m.t === 'ready') {
          ready = true;
          this.ready.add(worker);
          resolve(worker);
        } else if (m.t === 'metrics') {
          this.scrapes.get(m.id)?.(m.text);
        } else if (m.t === 'bulk-port') {
          this.bulkPort().then(
            (port) => worker.postMessage({ t: 'bulk-port', port } satisfies ToFrontThread, [port]),
            (err) => {
              console.error(`the bulk thread could not start: ${err instanceof Error ? err.message : String(err)}`);
              worker.postMessage({ t: 'bulk-port', port: null } satisfies ToFrontThread);
            },
          );
        } else if (m.t === 'controlled') {
          controls.get(m.id)?.();
          controls.delete(m.id);
        } else if (m.t === 'failed') reject(new Error(`front thread ${index}: ${m.message}`));
      });
      worker.on('error', (err) => {
        console.error(`front thread ${index} failed:`, err);
        if (!ready) reject(err);
      });
      worker.on('exit', (code) => {
        this.ready.delete(worker);
        for (const done of controls.values()) done();
        controls.clear();
        toMain.port1.close();
        audit.port1.close();
        // its requests' places in the main thread's queues, and the seats granted to them, go
        queueHost?.close();
        // (the bulk thread: started again at the next large write)
        if (bulk) this.bulk = null;
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

  /**
   * Tells every running thread of a graceful shutdown signal and resolves once each has
   * acted on it (not-accepting: once its requests have drained). A thread that does not
   * answer within `limitMs` is not waited for longer (its requests are bounded by
   * --request-timeout, its watches by their grace period).
   */
  lifecycleSignal(signal: 'initiated' | 'not-accepting', limitMs = 10 * 60_000): Promise<void> {
    const live = this.workers.filter((w) => this.ready.has(w));
    return Promise.all(
      live.map(
        (w) =>
          new Promise<void>((resolve) => {
            const done = () => {
              clearTimeout(timer);
              w.off('message', onMessage);
              w.off('exit', done);
              resolve();
            };
            const onMessage = (m: FromFrontThread) => {
              if (m.t === 'lifecycle-done' && m.signal === signal) done();
            };
            const timer = setTimeout(done, limitMs);
            timer.unref();
            w.on('message', onMessage);
            w.once('exit', done);
            try {
              w.postMessage({ t: 'lifecycle', signal } satisfies ToFrontThread);
            } catch {
              done();
            }
          }),
      ),
    ).then(() => undefined);
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
