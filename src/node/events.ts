// The agent's Events (core/v1, source component "kubelet", as kubelet's event recorder):
// a pod's Pulled, Created, Started, Killing, BackOff, Unhealthy; the node's Starting and
// NodeReady. A repeat of the same event (same object, reason and message) raises the
// existing Event's count and lastTimestamp instead of making a new one (the recorder's
// aggregation, reduced). Writes are best-effort: a failure is logged, never retried.
//
// Thread ownership: the agent's main thread.
import { randomBytes } from 'node:crypto';
import type { ApiClient } from './api-client.js';

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
    void this.write(obj, type, reason, message).catch((e) => this.log(`event ${reason} on ${obj.kind} ${obj.name}: ${(e as Error).message}`));
  }

  private async write(obj: EventObject, type: string, reason: string, message: string): Promise<void> {
    const namespace = obj.namespace ?? 'default';
    const key = JSON.stringify([obj.kind, namespace, obj.name, obj.uid, obj.fieldPath, reason, message]);
    const now = rfc3339();
    const prev = this.seen.get(key);
    if (prev) {
      prev.count++;
      await this.api.patch(`/api/v1/namespaces/${encodeURIComponent(prev.namespace)}/events/${encodeURIComponent(prev.name)}`, { count: prev.count, lastTimestamp: now }, 'strategic');
      return;
    }
    // kubelet's name: the object's name and a unique hex suffix
    const name = `${obj.name}.${randomBytes(8).toString('hex')}`;
    const entry = { name, namespace, count: 1 };
    this.seen.set(key, entry);
    if (this.seen.size > 4096) this.seen.delete(this.seen.keys().next().value!);
    await this.api.post(`/api/v1/namespaces/${encodeURIComponent(namespace)}/events`, {
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
    });
  }
}
