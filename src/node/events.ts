// The agent's Events (core/v1, source component "kubelet", as kubelet's event recorder):
// a pod's Pulled, Created, Started, Killing, BackOff, Unhealthy; the node's Starting and
// NodeReady. A repeat of the same event (same object, reason and message) raises the
// existing Event's count and lastTimestamp instead of making a new one (the recorder's
// aggregation, reduced). Writes are best-effort, as the recorder's: one that fails for the
// server's load or the network (a 429, a 5xx, no answer) is tried again a few times with a
// growing pause (kubelet's tries up to 12 times, 10 s apart), any other failure is logged.
//
// Thread ownership: the agent's main thread.
import { randomBytes } from 'node:crypto';
import { ApiError, type ApiClient } from './api-client.js';

/** tries of one event's write, and the pause before the second (doubled each time after) */
const TRIES = 5;
const FIRST_PAUSE_MS = 500;

export interface EventObject {
  kind: 'Pod' | 'Node';
  namespace?: string;
  name: string;
  uid?: string;
  apiVersion?: string;
  fieldPath?: string;
}

const rfc3339 = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

export class EventRecorder {
  private readonly seen = new Map<string, { name: string; namespace: string; count: number }>();

  constructor(
    private readonly api: ApiClient,
    private readonly host: string,
    private readonly log: (m: string) => void,
  ) {}

  record(obj: EventObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    void this.tryWrite(this.prepare(obj, type, reason, message), 1).catch((e) => this.log(`event ${reason} on ${obj.kind} ${obj.name}: ${(e as Error).message}`));
  }

  private async tryWrite(write: () => Promise<void>, attempt: number): Promise<void> {
    try {
      await write();
    } catch (e) {
      const retryable = !(e instanceof ApiError) || e.code === 429 || e.code >= 500;
      if (!retryable || attempt >= TRIES) throw e;
      await new Promise((r) => setTimeout(r, FIRST_PAUSE_MS * 2 ** (attempt - 1)).unref());
      return this.tryWrite(write, attempt + 1);
    }
  }

  /** The event's write, decided now (a new Event or a count raised), made by each try. */
  private prepare(obj: EventObject, type: string, reason: string, message: string): () => Promise<void> {
    const namespace = obj.namespace ?? 'default';
    const key = JSON.stringify([obj.kind, namespace, obj.name, obj.uid, obj.fieldPath, reason, message]);
    const now = rfc3339();
    const prev = this.seen.get(key);
    if (prev) {
      const count = ++prev.count;
      return () => this.api.patch(`/api/v1/namespaces/${encodeURIComponent(prev.namespace)}/events/${encodeURIComponent(prev.name)}`, { count, lastTimestamp: now }, 'strategic').then(() => {});
    }
    // kubelet's name: the object's name and a unique hex suffix
    const name = `${obj.name}.${randomBytes(8).toString('hex')}`;
    const entry = { name, namespace, count: 1 };
    this.seen.set(key, entry);
    if (this.seen.size > 4096) this.seen.delete(this.seen.keys().next().value!);
    const body = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace },
      involvedObject: { kind: obj.kind, ...(obj.namespace ? { namespace: obj.namespace } : {}), name: obj.name, ...(obj.uid ? { uid: obj.uid } : {}), apiVersion: obj.apiVersion ?? 'v1', ...(obj.fieldPath ? { fieldPath: obj.fieldPath } : {}) },
      reason,
      message,
      source: { component: 'kubelet', host: this.host },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      type,
      eventTime: null,
      reportingComponent: 'kubelet',
      reportingInstance: this.host,
    };
    // (a try whose answer was lost may have created it: AlreadyExists is the write done)
    return () =>
      this.api.post(`/api/v1/namespaces/${encodeURIComponent(namespace)}/events`, body).then(
        () => {},
        (e) => {
          if (!(e instanceof ApiError && e.code === 409)) throw e;
        },
      );
  }
}
