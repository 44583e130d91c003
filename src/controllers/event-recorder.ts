// Events written by the in-process controllers and the scheduler, as client-go's
// recorders write them: the core/v1 recorder (source.component, first/last timestamps,
// count) of kube-controller-manager's controllers, or the events.k8s.io recorder of
// kube-scheduler (eventTime, reportingController/Instance, action), both stored as
// core/v1 Events. Writes leave one at a time from a queue of at most 1000 pending; more
// are dropped, as client-go's broadcaster drops what its full queue cannot take.
//
// Thread ownership: the main thread (leader controllers).
import type { ResourceTarget, Store } from '../registry/store.js';

export interface ObjectRef {
  kind: string;
  apiVersion?: string;
  namespace?: string;
  name: string;
  uid?: string;
  resourceVersion?: string;
}

export type EventSource = { component: string; host?: string } | { reportingController: string; reportingInstance: string };

const MAX_QUEUED = 1000;
const MAX_MESSAGE = 1024;

let seq = 0n;

export class EventRecorder {
  private queue: any[] = [];
  private writing = false;
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly events: ResourceTarget,
    private readonly source: EventSource,
  ) {}

  stop(): void {
    this.stopped = true;
    this.queue = [];
  }

  /** Records an event about ref; `action` is the new-style recorder's (kube-scheduler's "Scheduling", "Binding"). */
  event(ref: ObjectRef, type: 'Normal' | 'Warning', reason: string, message: string, action?: string): void {
    if (this.stopped || this.queue.length >= MAX_QUEUED) return;
    const now = new Date();
    // kube names an event <object>.<UnixNano in hex>; a counter keeps two in one ms apart
    const nanos = BigInt(now.getTime()) * 1_000_000n + (seq++ % 1_000_000n);
    // events about cluster-scoped objects go to "default", as client-go's recorder puts them
    const namespace = ref.namespace || 'default';
    const note = message.length > MAX_MESSAGE ? message.slice(0, MAX_MESSAGE - 3) + '...' : message;
    const involvedObject = { kind: ref.kind, namespace: ref.namespace || undefined, name: ref.name, uid: ref.uid || undefined, apiVersion: ref.apiVersion ?? 'v1', resourceVersion: ref.resourceVersion || undefined };
    const base = { apiVersion: 'v1', kind: 'Event', metadata: { name: `${ref.name}.${nanos.toString(16)}`, namespace }, involvedObject, reason, message: note, type };
    let ev: any;
    if ('component' in this.source) {
      const ts = now.toISOString().replace(/\.\d+Z$/, 'Z');
      ev = { ...base, source: { component: this.source.component, host: this.source.host }, firstTimestamp: ts, lastTimestamp: ts, count: 1, reportingComponent: this.source.component, reportingInstance: this.source.host ?? '' };
    } else {
      ev = { ...base, source: {}, eventTime: now.toISOString().replace(/Z$/, '000Z'), action, reportingComponent: this.source.reportingController, reportingInstance: this.source.reportingInstance };
    }
    this.queue.push(JSON.parse(JSON.stringify(ev)));
    if (!this.writing) void this.drain();
  }

  private async drain(): Promise<void> {
    this.writing = true;
    try {
      while (this.queue.length && !this.stopped) {
        const ev = this.queue.shift();
        try {
          await this.store.create(this.events, ev.metadata.namespace, ev, { dryRun: false });
        } catch {
          // (a namespace being deleted, a full queue upstream: events are best effort, as in kube)
        }
      }
    } finally {
      this.writing = false;
    }
  }
}
