// A storage backend held in memory: the interface's contract in its plainest form, with no
// attachCaches (so the cache layer takes its state through the generic start-up, load()).
// For tests only: the conformance suite runs on it (memory-storage.test.ts), which keeps
// the suite honest about what it asks of a backend that is not LMDB; --storage-backend does
// not offer it. One revision space for every group-resource, as etcd's.
//
// Thread ownership: the thread that made it; its MemoryData may outlive it (a "restart").
import { encodeForCommit } from '../codec/json.js';
import { CompactedError, WriteRejected, type ChangeSink, type ChangeType, type Committed, type Storage, type StorageWrite, type StoredEvent, type StoredObject } from './interface.js';

interface Revision {
  rv: number;
  type: ChangeType;
  gr: string;
  key: string;
  bytes: Buffer;
  prevRv: number;
}

/** What "disk" holds: survives a MemoryStorage, for the next one over it. */
export interface MemoryData {
  rev: number;
  compacted: number;
  /** every revision, in version order */
  log: Revision[];
  /** group-resource -> key -> its newest revision (live objects only) */
  current: Map<string, Map<string, Revision>>;
}

export function memoryData(): MemoryData {
  return { rev: 0, compacted: 0, log: [], current: new Map() };
}

interface Pending {
  rev: Revision;
  obj: any;
  resolve: (c: Committed) => void;
}

export class MemoryStorage implements Storage {
  readonly name = 'memory';
  private sinks: ChangeSink[] = [];
  /** the last version every subscriber has seen */
  private delivered = 0;
  private pending: Pending[] = [];
  private waiters: Array<() => void> = [];
  private closed = false;

  constructor(readonly data: MemoryData = memoryData()) {}

  subscribe(sink: ChangeSink): void {
    this.sinks.push(sink);
  }

  async start(): Promise<void> {
    const at = this.data.rev;
    for (const [gr, keys] of this.data.current) for (const r of keys.values()) for (const s of this.sinks) s.load(gr, r.key, r.rv, r.bytes, at);
    this.delivered = at;
  }

  async close(): Promise<void> {
    this.flush();
    this.closed = true;
  }

  write(op: StorageWrite, obj?: any): Promise<Committed> {
    if (this.closed) return Promise.reject(new Error('memory storage is closed'));
    const d = this.data;
    const keys = d.current.get(op.gr);
    const cur = keys?.get(op.key);
    if (op.type === 'ADDED' && cur) return Promise.reject(new WriteRejected('exists'));
    if (op.type !== 'ADDED' && !cur) return Promise.reject(new WriteRejected('notfound'));
    if (op.type !== 'ADDED' && op.expect > 0 && cur!.rv !== op.expect) return Promise.reject(new WriteRejected('conflict'));
    const { head, tail } = op.head !== undefined ? { head: op.head, tail: op.tail ?? '' } : encodeForCommit(op.obj!);
    const rv = ++d.rev;
    const rev: Revision = { rv, type: op.type, gr: op.gr, key: op.key, bytes: Buffer.from(head + rv + tail), prevRv: cur?.rv ?? 0 };
    d.log.push(rev);
    if (op.type === 'DELETED') keys!.delete(op.key);
    else {
      if (!keys) d.current.set(op.gr, new Map([[op.key, rev]]));
      else keys.set(op.key, rev);
    }
    if (obj?.metadata) obj.metadata.resourceVersion = String(rv);
    return new Promise((resolve) => {
      // the writes of one turn reach the subscribers as one batch, then are answered
      if (this.pending.push({ rev, obj, resolve }) === 1) setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    for (const p of batch) for (const s of this.sinks) s.change(p.rev.type, p.rev.gr, p.rev.key, p.rev.rv, p.rev.bytes, p.obj);
    for (const s of this.sinks) s.end();
    this.delivered = batch[batch.length - 1].rev.rv;
    for (const p of batch) p.resolve({ rv: p.rev.rv, json: p.rev.bytes });
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  currentRv(): number {
    return this.data.rev;
  }

  committedRv(): number {
    return this.data.rev;
  }

  freshRv(): number {
    return this.delivered;
  }

  async waitFresh(_gr: string, rv: number, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.delivered < rv) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return true;
  }

  compactedRv(): number {
    return this.data.compacted;
  }

  /** Compacts at the newest version (as etcd's Compact at its current revision). */
  compact(): void {
    this.data.compacted = this.data.rev;
  }

  private check(rv: number): void {
    if (rv < this.data.compacted) throw new CompactedError(rv, this.data.compacted);
  }

  /** gr's objects as they were at rv: key -> revision. */
  private stateAt(gr: string, rv: number): Map<string, Revision> {
    const out = new Map<string, Revision>();
    for (const r of this.data.log) {
      if (r.rv > rv) break;
      if (r.gr !== gr) continue;
      if (r.type === 'DELETED') out.delete(r.key);
      else out.set(r.key, r);
    }
    return out;
  }

  getAt(gr: string, key: string, rv: number): StoredObject | undefined {
    this.check(rv);
    const r = this.stateAt(gr, rv).get(key);
    return r && { key, rv: r.rv, json: r.bytes };
  }

  rangeAt(gr: string, rv: number, ns: string, from: string): StoredObject[] {
    this.check(rv);
    const prefix = ns === '' ? '' : ns + '/';
    const out: StoredObject[] = [];
    for (const [key, r] of this.stateAt(gr, rv)) if (key.startsWith(prefix) && key >= from) out.push({ key, rv: r.rv, json: r.bytes });
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  eventsSince(gr: string, afterRv: number, uptoRv: number, withPrev: boolean): StoredEvent[] {
    this.check(afterRv);
    const out: StoredEvent[] = [];
    for (const r of this.data.log) {
      if (r.rv <= afterRv || r.gr !== gr) continue;
      if (r.rv > uptoRv) break;
      const ev: StoredEvent = { key: r.key, rv: r.rv, json: r.bytes, type: r.type, prevRv: r.prevRv };
      if (withPrev && r.prevRv) ev.prevJson = this.data.log.find((p) => p.rv === r.prevRv)?.bytes;
      out.push(ev);
    }
    return out;
  }

  storageProblem(): string {
    return '';
  }
}
