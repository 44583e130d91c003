// --etcd-servers-overrides: some group-resources stored on etcd clusters of their own (kube
// keeps e.g. events apart: `/events#http://127.0.0.1:4002`). As kube-apiserver gives each
// overridden resource a storage on its servers, this backend holds one EtcdStorage per
// distinct server list and routes every call by group-resource: each instance has its own
// client, watch and revision space (the interface allows several: versions then grow
// within a group-resource, as they do per LMDB shard). The subscribers get each instance's
// changes in its own version order; an instance leaves the other instances' group-resources
// out of its feed, should its etcd hold any.
//
// Thread ownership: as EtcdStorage, one instance per thread that creates it; the instances
// it holds are that thread's.
import {
  type ChangeSink,
  type Committed,
  type MaybePromise,
  type Storage,
  type StorageWrite,
  type StoredEvent,
  type StoredObject,
} from '../interface.js';
import type { EtcdStorage } from './etcd-storage.js';

export class EtcdOverrideStorage implements Storage {
  readonly name = 'etcd3';
  private readonly all: EtcdStorage[];

  /**
   * main: the instance on --etcd-servers, for every group-resource not overridden (it must
   * have been made with owns excluding those); byGr: the overridden group-resources' instances.
   */
  constructor(
    private readonly main: EtcdStorage,
    private readonly byGr: Map<string, EtcdStorage>,
  ) {
    this.all = [main, ...new Set(byGr.values())];
  }

  private of(gr: string): EtcdStorage {
    return this.byGr.get(gr) ?? this.main;
  }

  subscribe(sink: ChangeSink): void {
    for (const s of this.all) s.subscribe(sink);
  }

  async start(): Promise<void> {
    // one after the other: each start delivers its current state as whole batches
    for (const s of this.all) await s.start();
  }

  async close(): Promise<void> {
    await Promise.all(this.all.map((s) => s.close()));
  }

  write(op: StorageWrite, obj?: any): Promise<Committed> {
    return this.of(op.gr).write(op, obj);
  }

  currentRv(gr: string): number {
    return this.of(gr).currentRv(gr);
  }

  committedRv(gr: string): number {
    return this.of(gr).committedRv(gr);
  }

  latestRv(gr: string): Promise<number> {
    return this.of(gr).latestRv(gr);
  }

  freshRv(gr: string): number {
    return this.of(gr).freshRv(gr);
  }

  waitFresh(gr: string, rv: number, timeoutMs: number): Promise<boolean> {
    return this.of(gr).waitFresh(gr, rv, timeoutMs);
  }

  compactedRv(gr: string): number {
    return this.of(gr).compactedRv(gr);
  }

  getAt(gr: string, key: string, rv: number): MaybePromise<StoredObject | undefined> {
    return this.of(gr).getAt(gr, key, rv);
  }

  rangeAt(gr: string, rv: number, ns: string, from: string): MaybePromise<Iterable<StoredObject>> {
    return this.of(gr).rangeAt(gr, rv, ns, from);
  }

  eventsSince(gr: string, afterRv: number, uptoRv: number, withPrev: boolean): MaybePromise<StoredEvent[]> {
    return this.of(gr).eventsSince(gr, afterRv, uptoRv, withPrev);
  }

  count(gr: string): Promise<number> {
    return this.of(gr).count(gr);
  }

  /** The first problem of any cluster: writes to it fail, so the storage checks do. */
  storageProblem(): string {
    for (const s of this.all) {
      const p = s.storageProblem();
      if (p) return p;
    }
    return '';
  }
}
