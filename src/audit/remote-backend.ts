// Audit events of the front threads other than the main one (issue 18). One process writes
// one audit log (and sends one webhook stream): two threads appending and rotating the same
// file would interleave batches and race on rotation. So another front thread's backend
// hands its events to the main thread's over a port, and in the blocking modes waits for
// its answer, as it would wait for a write of its own.
//
// Thread ownership: RemoteBackend on a front thread; serveAudit on the main thread.
import type { MessagePort } from 'node:worker_threads';
import type { Backend } from './backend.js';
import type { AuditEvent } from './event.js';

type ToMain = { id: number; events: AuditEvent[] } | { id: number; shutdown: true };
type FromMain = { id: number; ok: boolean };

export class RemoteBackend implements Backend {
  private nextId = 1;
  private waiting = new Map<number, (ok: boolean) => void>();

  constructor(private port: MessagePort) {
    port.on('message', (m: FromMain) => {
      this.waiting.get(m.id)?.(m.ok);
      this.waiting.delete(m.id);
    });
    // the main thread is gone: nothing will be stored
    port.on('close', () => {
      for (const done of this.waiting.values()) done(false);
      this.waiting.clear();
    });
    port.unref();
  }

  process(events: AuditEvent[]): Promise<boolean> {
    return new Promise((resolve) => {
      const id = this.nextId++;
      this.waiting.set(id, resolve);
      this.port.postMessage({ id, events } satisfies ToMain);
    });
  }

  /** The main thread's backend writes out what it buffered at its own shutdown. */
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** (main thread) Stores the events another front thread sends, in the main thread's backend. */
export function serveAudit(port: MessagePort, backend: Backend): void {
  port.on('message', (m: ToMain) => {
    if (!('events' in m)) return;
    Promise.resolve()
      .then(() => backend.process(m.events))
      .then(
        (ok) => port.postMessage({ id: m.id, ok } satisfies FromMain),
        () => port.postMessage({ id: m.id, ok: false } satisfies FromMain),
      );
  });
  port.unref();
}
