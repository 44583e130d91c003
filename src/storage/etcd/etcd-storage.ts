// The etcd3 storage backend (--storage-backend=etcd3): the storage interface
// (src/storage/interface.ts) over an etcd cluster, in kube's key layout and value format
// (keys.ts, codec.ts), so that kube-apiserver and kubeshard replicas share one etcd.
// kube's apiserver/pkg/storage/etcd3/store.go is the model:
// - a resource version is the etcd revision (one revision space for every group-resource);
// - a create is a txn guarded on create_revision == 0; an update or delete on mod_revision
//   == the expected version (GuaranteedUpdate's final put), or on the key existing
//   (create_revision > 0) when any version will do; a refused guard reads the key in the
//   same txn to tell "not found" from "conflict";
// - the committed-change feed comes from one etcd watch over the whole prefix, with prev_kv
//   and progress notifications; every response is one batch (change()... then end());
//   a write resolves once its change has come back on that feed, so the caches above hold
//   it before the client has its answer; waitFresh asks etcd for a progress notification
//   when nothing else moves the feed (kube's ConsistentListFromCache);
// - compaction as kube's compactor (storage/etcd3/compact.go): every interval, one replica
//   wins a txn on the `compact_rev_key` key's version and compacts to the revision the
//   previous round saw, so one interval of history stays; reads below the compacted
//   revision are refused with CompactedError;
// - history (eventsSince) is a watch of the whole key space from the asked revision,
//   ended at the event of the last revision asked for (every revision is one write);
// - start() lists the current state at one revision into the subscribers' load(), then
//   the feed follows from the next revision;
// - latestRv() asks etcd for its current revision (a consistent read across replicas waits
//   for the feed to reach it), count() counts a resource, a background probe reads etcd
//   every second for the health checks (kube's etcd check, storageProblem()).
// - encryption at rest (useEncryption): every value of a configured resource goes through
//   its transformer after encoding and before decoding, with the etcd key as kube passes it
//   (etcd3 store's authenticatedDataString), so kube-apiserver and kubeshard read each
//   other's encrypted values. A decryption that waits for a KMS v2 plugin (a data key this
//   instance has not seen) holds the feed back, in order, until it is done.
//
// Thread ownership: one instance per thread that creates it (the main thread, or a front
// thread with its own client); its state (versions, waiters, the pending writes) is that
// thread's, and the EtcdClient's callbacks run on it.
import { EtcdMasterLeases } from './master-leases.js';
import { allOrdered } from './progress-support.js';
import { LeaseManager } from './lease-manager.js';
import { EtcdNodePortClaims, type NodePortClaims } from './range-allocation.js';
import type { MasterLeases } from '../../controllers/endpoint-reconciler.js';
import { posix } from 'node:path';
import { EtcdClient, EtcdCompactedError, EtcdError, prefixEnd, type EtcdClientOptions, type KeyValue, type WatchEvent, type Watcher } from './client.js';
import { StorageDecodeError, decodeFromStorage, encodeForStorage, type GroupResource, type StorageMediaType } from './codec.js';
import type { EncryptionTransformers } from '../encryption/index.js';
import { rangePrefix, resourcePrefix } from './keys.js';
import { catalogData } from '../../api/catalog-data.js';
import { encodeForCommit } from '../../codec/json.js';
import {
  CompactedError,
  WriteRejected,
  storageFailure,
  type ChangeSink,
  type ChangeType,
  type Committed,
  type MaybePromise,
  type Storage,
  type StorageWrite,
  type StoredEvent,
  type StoredObject,
} from '../interface.js';

export interface EtcdStorageOptions extends EtcdClientOptions {
  /** --etcd-prefix (default /registry) */
  prefix?: string;
  /** --storage-media-type for built-in kinds (default protobuf) */
  mediaType?: StorageMediaType;
  /** --etcd-compaction-interval in ms (default 5 minutes; 0: this replica never compacts) */
  compactionIntervalMs?: number;
  /** a client to use instead of one made from the options (tests) */
  client?: EtcdClient;
  /**
   * --max-object-size-bytes: the largest object's JSON a create or update may store, weighed
   * as the LMDB backend weighs it (default 1.5 MiB, etcd's own --max-request-bytes), so the
   * flag means the same on either backend; etcd's own limit refuses beyond it as well.
   */
  maxObjectBytes?: number;
  /**
   * The group-resources this instance serves, when several share the work
   * (--etcd-servers-overrides, etcd-overrides.ts): objects of others found in its etcd
   * are left out of its feed. Default: every group-resource.
   */
  owns?: (gr: string) => boolean;
  /**
   * (--event-ttl) group-resource -> seconds: every create or update of such an object is
   * attached to a lease that runs out that long after (lease-manager.ts), as kube's Event
   * registry asks of its etcd3 store; etcd then deletes the key itself.
   */
  ttlSeconds?: Record<string, number>;
}

/**
 * Fault injection for the history checker (test/fault/history.test.ts): each successful
 * write txn kills the whole process (SIGKILL) with this probability, before the write is
 * answered. Environment only (as the LMDB shard worker's, which reads the same variable).
 */
const KILL_AFTER_COMMIT = Number(process.env.KUBESHARD_FAULT_KILL_AFTER_COMMIT ?? 0);

/** kube's compactor coordination key (storage/etcd3/compact.go compactRevKey), outside any prefix. */
const COMPACT_REV_KEY = 'compact_rev_key';
const PAGE = 1000;
/** how often the health probe reads etcd, and how long it waits (kube's DefaultHealthcheckTimeout, 2s) */
const PROBE_INTERVAL_MS = 1000;
const PROBE_TIMEOUT_MS = 2000;

/** "deployments.apps" -> apps/deployments; "pods" -> core pods. */
function splitGr(gr: string): GroupResource {
  const dot = gr.indexOf('.');
  return dot < 0 ? { group: '', resource: gr } : { group: gr.slice(dot + 1), resource: gr.slice(0, dot) };
}

interface PendingWrite {
  type: ChangeType;
  gr: string;
  key: string;
  value?: Buffer;
  obj: any;
  /** for a delete at a version: the version the deleted key must have held */
  expect: number;
  /** the object's JSON around its version (encodeForCommit): the feed's bytes without another stringify */
  head: string;
  tail: string;
}

interface Waiter {
  rv: number;
  resolve: (ok: boolean) => void;
  timer?: NodeJS.Timeout;
}

export class EtcdStorage implements Storage {
  readonly name = 'etcd3';
  private readonly client: EtcdClient;
  private readonly ownsClient: boolean;
  private readonly prefix: string;
  private readonly mediaType: StorageMediaType | undefined;
  private readonly compactionIntervalMs: number;
  private readonly maxObjectBytes: number;
  private readonly owns: ((gr: string) => boolean) | undefined;
  private readonly sinks: ChangeSink[] = [];
  /** the etcd key prefix of everything kubeshard stores (prefix + "/") */
  private readonly root: string;
  /** resource prefix ("services/specs", "configmaps") -> gr, for the feed's keys */
  private readonly grByPrefix = new Map<string, string>();
  private readonly rangeOfGr = new Map<string, string>();

  private fresh = 0;
  private known = 0;
  /**
   * Whether every etcd endpoint answers progress requests after the events before them
   * (progress-support.ts). Without that the feed watches the whole key space, so that each
   * revision comes as an event, and freshness moves only with events and etcd's periodic
   * per-watcher notifications.
   */
  private progressTrusted = false;
  private compacted = 0;
  private problem = '';
  private feed: Watcher | undefined;
  private closed = false;
  private waiters: Waiter[] = [];
  /** writes sent and not yet seen on the feed, by etcd key: the feed hands the writer's object on */
  private readonly pending = new Map<string, PendingWrite[]>();
  private compactTimer: NodeJS.Timeout | undefined;
  private probeTimer: NodeJS.Timeout | undefined;
  private probing = false;
  /** why the last health probe failed ('' when it passed): kube's etcd check message */
  private probeProblem = '';
  private compactTime = 0;
  private compactRev = 0;
  private readonly ttlSeconds: Record<string, number> | undefined;
  /** the leases expiring objects are written with (--event-ttl) */
  private readonly leases: LeaseManager;

  constructor(opts: EtcdStorageOptions) {
    this.client = opts.client ?? new EtcdClient(opts);
    this.ownsClient = !opts.client;
    this.prefix = opts.prefix ?? '/registry';
    this.mediaType = opts.mediaType;
    this.compactionIntervalMs = opts.compactionIntervalMs ?? 5 * 60_000;
    this.maxObjectBytes = opts.maxObjectBytes ?? 1_572_864;
    this.owns = opts.owns;
    this.ttlSeconds = opts.ttlSeconds;
    this.leases = new LeaseManager(this.client);
    const joined = posix.join(this.prefix || '/', '/');
    this.root = joined.endsWith('/') ? joined : `${joined}/`;
    for (const gv of catalogData) {
      for (const r of gv.resources) {
        if (!r.storageVersionHash) continue;
        const sr = r.storageResource ?? (gv.group ? `${r.resource}.${gv.group}` : r.resource);
        const { group, resource } = splitGr(sr);
        this.grByPrefix.set(resourcePrefix(group, resource), sr);
      }
    }
  }

  /** The NodePort allocations every replica claims before it stores a Service (range-allocation.ts). */
  nodePortClaims(min: number, max: number): NodePortClaims {
    return new EtcdNodePortClaims(this.client, this.prefix, min, max);
  }

  /** The endpoint reconciler's master leases, beside kube-apiserver's (master-leases.ts). */
  masterLeases(): MasterLeases {
    return new EtcdMasterLeases(this.client, this.prefix, this.mediaType);
  }

  // ---- keys --------------------------------------------------------------------------

  /** The etcd key prefix of gr's objects (ends with "/"). */
  private rangeOf(gr: string): string {
    let r = this.rangeOfGr.get(gr);
    if (!r) {
      const { group, resource } = splitGr(gr);
      r = rangePrefix(this.prefix, group, resource);
      this.rangeOfGr.set(gr, r);
    }
    return r;
  }

  /** "ns/name" or "/name" -> the etcd key. */
  private etcdKey(gr: string, key: string): string {
    return this.rangeOf(gr) + (key.startsWith('/') ? key.slice(1) : key);
  }

  /** An etcd key from the feed -> its gr and interface key; undefined for keys that are not kubeshard objects. */
  private parseKey(k: string): { gr: string; key: string } | undefined {
    if (!k.startsWith(this.root)) return undefined;
    const p = this.parseOwnKey(k);
    return p && this.owns && !this.owns(p.gr) ? undefined : p;
  }

  private parseOwnKey(k: string): { gr: string; key: string } | undefined {
    const parts = k.slice(this.root.length).split('/');
    let gr: string | undefined;
    let rest: string[];
    if (parts.length >= 3 && this.grByPrefix.has(`${parts[0]}/${parts[1]}`)) {
      gr = this.grByPrefix.get(`${parts[0]}/${parts[1]}`);
      rest = parts.slice(2);
    } else if (this.grByPrefix.has(parts[0])) {
      gr = this.grByPrefix.get(parts[0]);
      rest = parts.slice(1);
    } else if (parts[0].includes('.') && parts.length >= 3) {
      // a custom resource: <group>/<resource>/...
      gr = `${parts[1]}.${parts[0]}`;
      rest = parts.slice(2);
    } else return undefined;
    if (rest.length === 1 && rest[0]) return { gr: gr!, key: `/${rest[0]}` };
    if (rest.length === 2 && rest[0] && rest[1]) return { gr: gr!, key: `${rest[0]}/${rest[1]}` };
    return undefined;
  }

  /**
   * An object's JSON from its stored kv: decrypted first when the encryption configuration
   * covers gr (a promise only while a KMS v2 plugin is asked for a data key). Throws (or
   * rejects) StorageDecodeError when it cannot be read.
   */
  private decode(gr: string, kv: KeyValue, rv = kv.modRevision): Buffer | Promise<Buffer> {
    const t = this.enc?.transformerFor(gr);
    if (!t || t.identity) return decodeFromStorage(splitGr(gr), kv.value, rv).json;
    const key = kv.key.toString();
    const fail = (e: unknown) => new StorageDecodeError(`unable to transform key "${key}": ${e instanceof Error ? e.message : String(e)}`);
    let r;
    try {
      r = t.fromStorage(kv.value, key);
    } catch (e) {
      throw fail(e);
    }
    if (r instanceof Promise) return r.then((x) => decodeFromStorage(splitGr(gr), x.data, rv).json, (e) => Promise.reject(fail(e)));
    return decodeFromStorage(splitGr(gr), r.data, rv).json;
  }

  /** the encryption transformers (useEncryption); null: values are stored as encoded */
  private enc: EncryptionTransformers | null = null;

  useEncryption(enc: EncryptionTransformers): void {
    if (enc.configured) this.enc = enc;
  }

  /**
   * Whether gr's object at key is stored, at version rv, by another provider or key than the
   * configuration's first (kube's stale: GuaranteedUpdate then writes an unchanged object).
   */
  async storedStale(gr: string, key: string, rv: number): Promise<boolean> {
    const t = this.enc?.transformerFor(gr);
    if (!t || t.identity) return false;
    const ek = this.etcdKey(gr, key);
    const r = await this.client.get(ek);
    if (!r.kv || r.kv.modRevision !== rv) return false;
    try {
      return (await t.fromStorage(r.kv.value, ek)).stale;
    } catch {
      return true;
    }
  }

  /** The feed's batches still waiting for a decryption, in order (null: none). */
  private feedQueue: Promise<void> | null = null;

  /** Runs step after the feed's waiting batches, or now when none waits. */
  private inFeedOrder(step: () => void | Promise<void>): void {
    if (this.feedQueue) {
      this.trackFeed(this.feedQueue.then(step));
      return;
    }
    const r = step();
    if (r) this.trackFeed(r);
  }

  private trackFeed(p: Promise<void>): void {
    const q: Promise<void> = p
      .catch(() => {})
      .then(() => {
        if (this.feedQueue === q) this.feedQueue = null;
      });
    this.feedQueue = q;
  }

  // ---- life cycle ---------------------------------------------------------------------

  subscribe(sink: ChangeSink): void {
    this.sinks.push(sink);
  }

  async start(): Promise<void> {
    this.progressTrusted = await this.checkProgressSupport();
    // the current state at one revision, page by page, given to the subscribers' load() (the
    // interface's generic start: the state is not a series of changes, and a watch from
    // before `at` reads its events from etcd, not from the caches' rings)
    const at = await this.listAll((gr, key, rv, json, at) => {
      for (const s of this.sinks) s.load(gr, key, rv, json, at);
    });
    this.fresh = this.known = at;
    this.startFeed(at + 1);
    await this.feed!.created;
    if (this.compactionIntervalMs > 0) this.compactTimer = setInterval(() => void this.compactRound(), this.compactionIntervalMs);
    // the etcd health check (kube's, run per probe there) runs here in the background, so
    // that /livez and /readyz answer from its last result without waiting on etcd
    this.probeTimer = setInterval(() => void this.probe(), PROBE_INTERVAL_MS);
    this.probeTimer.unref();
  }

  /** Asks each endpoint its version (kube's feature support checker for RequestWatchProgress). */
  private async checkProgressSupport(): Promise<boolean> {
    const urls = this.client.endpointUrls();
    const versions = await Promise.all(urls.map((u) => this.client.status(u).then((r) => r.version, () => undefined)));
    const ordered = allOrdered(versions);
    if (!ordered && !EtcdStorage.toldProgress) {
      EtcdStorage.toldProgress = true;
      console.warn(
        `I etcd ${versions.map((v) => v ?? 'unreachable').join(', ')}: progress requests may overtake events before 3.4.31 and 3.5.13, so consistent reads wait for the watch's own events (the feed watches every key)`,
      );
    }
    return ordered;
  }

  /** the line above once per process, not once per thread's instance */
  private static toldProgress = false;

  /**
   * Every object under the prefix at one revision (the current one), page by page, in key
   * order; an object kubeshard cannot decode is handed on as its stored bytes (the cache
   * keeps it aside as corrupt, as kube 1.33 lists it for an unsafe delete). The revision.
   */
  private async listAll(each: (gr: string, key: string, rv: number, json: Buffer, at: number) => void): Promise<number> {
    const end = prefixEnd(this.root);
    let from: Buffer = Buffer.from(this.root);
    let at = 0;
    for (;;) {
      const r = await this.client.range(from, { rangeEnd: end, limit: PAGE, revision: at });
      if (!at) at = r.revision;
      for (const kv of r.kvs) {
        const p = this.parseKey(kv.key.toString());
        if (!p) continue;
        let json: Buffer;
        try {
          const j = this.decode(p.gr, kv);
          json = j instanceof Promise ? await j : j;
        } catch {
          json = kv.value;
        }
        each(p.gr, p.key, kv.modRevision, json, at);
      }
      if (!r.more || !r.kvs.length) break;
      from = Buffer.concat([r.kvs[r.kvs.length - 1].key, Buffer.from([0])]);
    }
    return at;
  }

  /**
   * The feed fell below the compaction: the events in between are gone, so the state is
   * listed again and the subscribers replace theirs (kube's reflector relists; its cacher
   * ends its watchers), then the feed follows from there. Retried until etcd answers.
   */
  private relist(): Promise<void> {
    return (async () => {
      for (let attempt = 0; !this.closed; attempt++) {
        try {
          const state = new Map<string, Map<string, { rv: number; bytes: Buffer }>>();
          const at = await this.listAll((gr, key, rv, bytes) => {
            let m = state.get(gr);
            if (!m) state.set(gr, (m = new Map()));
            m.set(key, { rv, bytes });
          });
          if (this.closed) return;
          const owns = (gr: string) => !this.owns || this.owns(gr);
          for (const s of this.sinks) s.relist?.(at, state, owns);
          this.advance(at);
          this.problem = '';
          this.startFeed(at + 1);
          return;
        } catch {
          await new Promise((r) => setTimeout(r, Math.min(5000, 200 * 2 ** attempt)));
        }
      }
    })();
  }

  /** One health probe, bounded by kube's default health check timeout. */
  private async probe(): Promise<void> {
    if (this.probing || this.closed) return;
    this.probing = true;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.healthCheck(),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('context deadline exceeded')), PROBE_TIMEOUT_MS))),
      ]);
      this.probeProblem = '';
    } catch (e) {
      // kube's etcd check words its failure so (storagebackend/factory/etcd3.go)
      this.probeProblem = `error getting data from etcd: ${(e as Error).message}`;
    } finally {
      if (timer) clearTimeout(timer);
      this.probing = false;
    }
  }

  private startFeed(fromRev: number): void {
    // the whole key space where progress answers cannot be trusted: every revision (another
    // prefix's write, kube's compact_rev_key) is then an event, the last of them the feed's
    // position; other keys' events are skipped by parseKey
    const all = Buffer.from([0]);
    const range = this.progressTrusted ? { key: this.root, rangeEnd: prefixEnd(this.root) } : { key: all, rangeEnd: all };
    this.feed = this.client.watch(
      { ...range, startRevision: fromRev, prevKv: true, progressNotify: true },
      {
        onEvents: (evs) => this.inFeedOrder(() => this.onFeed(evs)),
        onProgress: (rev, broadcast) => {
          if (broadcast && !this.progressTrusted) return;
          this.inFeedOrder(() => this.advance(rev));
        },
        onError: (err) => {
          if (this.closed) return;
          if (err instanceof EtcdCompactedError) {
            // the feed fell below the compaction: the caches must be rebuilt (a relist), as kube's reflector does
            this.problem = `etcd watch fell behind the compaction (compacted at ${err.compactRevision})`;
            this.compacted = Math.max(this.compacted, err.compactRevision);
          } else this.problem = `etcd is unreachable (${err.message})`;
          if (err instanceof EtcdCompactedError) {
            this.inFeedOrder(() => this.relist());
            return;
          }
          // resume from where the feed stopped once etcd is back
          setTimeout(() => {
            if (!this.closed) this.startFeed(this.fresh + 1);
          }, 1000);
        },
      },
    );
    this.feed.created.then(() => {
      if (this.problem.startsWith('etcd is unreachable')) this.problem = '';
    }, () => {});
  }

  private onFeed(evs: WatchEvent[]): void | Promise<void> {
    // how far the feed has come: its last event's revision (the header's may be past it while
    // etcd catches a watcher up, 1,000 revisions at a time)
    const rev = evs[evs.length - 1].kv.modRevision;
    /** the batch's changes; a json still a promise (a KMS v2 decryption) holds the batch until it is done */
    const changes: Array<{ type: ChangeType; gr: string; key: string; rv: number; json: Buffer | Promise<Buffer> | null; obj: any; raw: Buffer }> = [];
    let waits = false;
    for (const e of evs) {
      const p = this.parseKey(e.kv.key.toString());
      if (!p) continue;
      const type: ChangeType = e.type === 'DELETE' ? 'DELETED' : e.kv.version === 1 ? 'ADDED' : 'MODIFIED';
      const rv = e.kv.modRevision;
      const mine = this.takePending(e, type);
      let json: Buffer | Promise<Buffer>;
      let obj: any;
      try {
        if (mine) {
          obj = mine.obj;
          if (obj?.metadata) obj.metadata.resourceVersion = String(rv);
          json = obj ? Buffer.from(mine.head + rv + mine.tail) : this.decode(p.gr, type === 'DELETED' ? e.prevKv! : e.kv, rv);
        } else if (type === 'DELETED') {
          if (!e.prevKv) continue;
          json = this.decode(p.gr, e.prevKv, rv);
        } else json = this.decode(p.gr, e.kv);
      } catch {
        // not readable by kubeshard (a key it cannot decrypt, a format it does not know):
        // its stored bytes, which the cache keeps aside as corrupt (kube 1.33 lists such an
        // object as an error, and lets it be deleted unsafely)
        json = type === 'DELETED' ? (e.prevKv?.value ?? Buffer.alloc(0)) : e.kv.value;
      }
      if (json instanceof Promise) waits = true;
      changes.push({ type, gr: p.gr, key: p.key, rv, json, obj, raw: type === 'DELETED' ? (e.prevKv?.value ?? Buffer.alloc(0)) : e.kv.value });
    }
    const deliver = () => {
      for (const c of changes) {
        if (c.json === null) continue;
        for (const s of this.sinks) s.change(c.type, c.gr, c.key, c.rv, c.json as Buffer, c.obj);
      }
      for (const s of this.sinks) s.end();
      this.advance(rev);
    };
    if (!waits) return deliver();
    return Promise.all(
      changes.map((c) =>
        c.json instanceof Promise
          ? c.json.then(
              (j) => void (c.json = j),
              () => void (c.json = c.raw), // not readable by kubeshard: its stored bytes, as above
            )
          : undefined,
      ),
    ).then(deliver);
  }

  /** The write of this instance that an event is, if any (matched by the stored bytes). */
  private takePending(e: WatchEvent, type: ChangeType): PendingWrite | undefined {
    const k = e.kv.key.toString();
    const list = this.pending.get(k);
    if (!list) return undefined;
    const i = list.findIndex((w) =>
      type === 'DELETED' ? w.type === 'DELETED' && (w.expect <= 0 || e.prevKv?.modRevision === w.expect) : w.type !== 'DELETED' && !!w.value && w.value.equals(e.kv.value),
    );
    if (i < 0) return undefined;
    const [w] = list.splice(i, 1);
    if (!list.length) this.pending.delete(k);
    return w;
  }

  private advance(rev: number): void {
    if (rev > this.known) this.known = rev;
    if (rev <= this.fresh) return;
    this.fresh = rev;
    if (!this.waiters.length) return;
    const still: Waiter[] = [];
    for (const w of this.waiters) {
      if (w.rv <= rev) {
        if (w.timer) clearTimeout(w.timer);
        w.resolve(true);
      } else still.push(w);
    }
    this.waiters = still;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.compactTimer) clearInterval(this.compactTimer);
    if (this.probeTimer) clearInterval(this.probeTimer);
    this.feed?.cancel();
    for (const w of this.waiters.splice(0)) {
      if (w.timer) clearTimeout(w.timer);
      w.resolve(false);
    }
    if (this.ownsClient) this.client.close();
  }

  // ---- writes -------------------------------------------------------------------------

  async write(op: StorageWrite, obj?: any): Promise<Committed> {
    const gr = op.gr;
    const ek = this.etcdKey(gr, op.key);
    const target = obj ?? op.obj ?? (op.head !== undefined ? JSON.parse(op.head + (op.tail ?? '')) : undefined);
    // the answer's bytes, and the size the limit weighs (a delete is never refused for size)
    const { head, tail } = encodeForCommit(target);
    if (op.type !== 'DELETED') {
      const size = Buffer.byteLength(head) + Buffer.byteLength(tail) + String(this.known + 1).length;
      if (size > this.maxObjectBytes) throw storageFailure('toolarge', 'etcd', String(size));
    }
    let value = op.type === 'DELETED' ? undefined : encodeForStorage(splitGr(gr), target, this.mediaType);
    // encrypted after encoding, bound to the key (kube's etcd3 store: transformer.TransformToStorage)
    const t = value && this.enc?.transformerFor(gr);
    if (t && !t.identity) {
      try {
        value = t.toStorage(value!, ek);
      } catch (e) {
        throw storageFailure('storage', 'etcd', `unable to transform key "${ek}": ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    const guard =
      op.type === 'ADDED'
        ? { key: ek, target: 'createRevision' as const, result: '=' as const, value: 0 }
        : op.expect > 0
          ? { key: ek, target: 'modRevision' as const, result: '=' as const, value: op.expect }
          : { key: ek, target: 'createRevision' as const, result: '>' as const, value: 0 };
    // kube's etcd3 store: a TTL from the registry means a lease for this very write
    const ttl = op.type === 'DELETED' ? undefined : this.ttlSeconds?.[gr];
    let lease: string | undefined;
    if (ttl) {
      try {
        lease = await this.leases.leaseFor(ttl);
      } catch (e) {
        throw this.failure(e, 0);
      }
    }
    const pending: PendingWrite = { type: op.type, gr, key: op.key, value, obj: target, expect: op.expect, head, tail };
    const list = this.pending.get(ek) ?? [];
    list.push(pending);
    this.pending.set(ek, list);
    let res;
    try {
      res = await this.client.txn({
        compare: [guard],
        success: [op.type === 'DELETED' ? { deleteRange: { key: ek } } : { put: lease ? { key: ek, value: value!, lease } : { key: ek, value: value! } }],
        failure: [{ range: { key: ek, keysOnly: true } }],
      });
    } catch (e) {
      this.dropPending(ek, pending);
      throw this.failure(e, value?.length ?? 0);
    }
    if (res.revision > this.known) this.known = res.revision;
    if (!res.succeeded) {
      this.dropPending(ek, pending);
      // the write that beat this one may be another replica's, not fed here yet: the caller
      // retries from its cache (GuaranteedUpdate's retry), so the feed is let reach the
      // revision the refusal was decided at first (a timeout only costs another retry)
      if (this.fresh < res.revision) await this.waitUntil(res.revision, 5_000, true);
      if (op.type === 'ADDED') throw new WriteRejected('exists');
      const cur = 'range' in res.responses[0] ? res.responses[0].range.kvs[0] : undefined;
      throw new WriteRejected(cur ? 'conflict' : 'notfound');
    }
    const rv = res.revision;
    // (the history checker, test/fault/: the process dies with the write committed in etcd and unanswered)
    if (KILL_AFTER_COMMIT > 0 && Math.random() < KILL_AFTER_COMMIT) process.kill(process.pid, 'SIGKILL');
    if (target?.metadata) target.metadata.resourceVersion = String(rv);
    // the write is answered once its change has come back on the feed (the caches hold it)
    // (its own change moves the feed: no progress request needed)
    if (this.fresh < rv && !(await this.waitUntil(rv, 30_000, false))) {
      throw storageFailure('unknown', 'etcd', `the change at revision ${rv} did not come back on the watch`);
    }
    this.dropPending(ek, pending);
    return { rv, json: Buffer.from(head + rv + tail) };
  }

  private dropPending(ek: string, w: PendingWrite): void {
    const list = this.pending.get(ek);
    if (!list) return;
    const i = list.indexOf(w);
    if (i >= 0) list.splice(i, 1);
    if (!list.length) this.pending.delete(ek);
  }

  /** An etcd failure as the interface's kinds (kube's etcd error mapping, storage/errors.go and etcd3/errors.go). */
  private failure(e: unknown, size: number): Error {
    if (!(e instanceof EtcdError)) return e as Error;
    const msg = e.message;
    // etcd's --max-request-bytes ("request is too large"), or past its gRPC receive limit
    if (/request is too large|larger than max/.test(msg)) return storageFailure('toolarge', 'etcd', String(size));
    if (/database space exceeded|NOSPACE/i.test(msg)) return storageFailure('nospace', 'etcd', 'etcdserver: mvcc: database space exceeded');
    // 14 UNAVAILABLE before anything was sent: nothing was written
    if (e.code === 14 && /No connection established|ECONNREFUSED|connect/i.test(msg)) {
      this.problem = `etcd is unreachable (${msg})`;
      return storageFailure('unavailable', 'etcd', `is unreachable (${msg})`);
    }
    if (e.code === 4 || e.code === 14) return storageFailure('unknown', 'etcd', msg);
    return storageFailure('storage', 'etcd', msg);
  }

  // ---- versions -----------------------------------------------------------------------

  currentRv(_gr: string): number {
    return Math.max(this.known, this.fresh);
  }

  committedRv(_gr: string): number {
    return Math.max(this.known, this.fresh);
  }

  freshRv(_gr: string): number {
    return this.fresh;
  }

  /**
   * etcd's current revision, read from etcd (kube's getCurrentResourceVersionFromStorage): a
   * consistent read across replicas waits until the feed reaches it (waitFresh).
   */
  latestRv(_gr?: string): Promise<number> {
    // The callers of one turn of the event loop share a read (kube 1.33 coalesces its
    // progress requests the same way), sent once the turn's requests have all asked: a read
    // already in flight cannot serve a newcomer (etcd may have answered it before the
    // newcomer's request began), and waiting for it to return before sending the next one
    // cost each consistent GET one and a half round trips instead of one (14,400 against
    // 16,700-19,400 GETs/s on a local etcd, bench/README "etcd"). A burst of consistent GETs
    // costs etcd one read per turn instead of one each.
    if (this.rvNext) return this.rvNext.promise;
    let resolve!: (rv: number) => void, reject!: (e: unknown) => void;
    const promise = new Promise<number>((res, rej) => ((resolve = res), (reject = rej)));
    this.rvNext = { promise, resolve, reject };
    setImmediate(() => {
      const next = this.rvNext!;
      this.rvNext = null;
      this.askRevision().then(next.resolve, next.reject);
    });
    return promise;
  }

  private rvNext: { promise: Promise<number>; resolve: (rv: number) => void; reject: (e: unknown) => void } | null = null;

  /** One linearizable read whose header carries etcd's current revision. */
  private askRevision(): Promise<number> {
    return this.client.range(this.root, { keysOnly: true, limit: 1 }).then((r) => {
      if (r.revision > this.known) this.known = r.revision;
      return r.revision;
    });
  }

  waitFresh(_gr: string, rv: number, timeoutMs: number): Promise<boolean> {
    return this.waitUntil(rv, timeoutMs, true);
  }

  private waitUntil(rv: number, timeoutMs: number, askProgress: boolean): Promise<boolean> {
    if (this.fresh >= rv) return Promise.resolve(true);
    if (this.closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const w: Waiter = { rv, resolve };
      w.timer = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        resolve(false);
      }, timeoutMs);
      this.waiters.push(w);
      // nothing may move the feed (no writes to watch): ask etcd where the feed stands
      // (only an etcd that orders the answer after its events; elsewhere the events come by themselves)
      if (askProgress && this.feed && this.progressTrusted) this.client.requestProgress().then((rev) => this.inFeedOrder(() => this.advance(rev)), () => {});
    });
  }

  compactedRv(_gr: string): number {
    return this.compacted;
  }

  // ---- reads --------------------------------------------------------------------------

  private readError(e: unknown, rv: number): Error {
    if (e instanceof EtcdError && /compacted/.test(e.message)) {
      this.compacted = Math.max(this.compacted, rv + 1);
      return new CompactedError(rv, this.compacted);
    }
    return e as Error;
  }

  private checkCompacted(rv: number): void {
    if (rv < this.compacted) throw new CompactedError(rv, this.compacted);
  }

  async getAt(gr: string, key: string, rv: number): Promise<StoredObject | undefined> {
    this.checkCompacted(rv);
    let r;
    try {
      r = await this.client.get(this.etcdKey(gr, key), rv);
    } catch (e) {
      throw this.readError(e, rv);
    }
    if (!r.kv) return undefined;
    return { key, rv: r.kv.modRevision, json: await this.decode(gr, r.kv) };
  }

  async rangeAt(gr: string, rv: number, ns: string, from: string): Promise<Iterable<StoredObject>> {
    this.checkCompacted(rv);
    const all = this.rangeOf(gr);
    const scope = ns ? `${all}${ns}/` : all;
    const end = prefixEnd(scope);
    let start = from ? this.etcdKey(gr, from) : scope;
    if (start < scope) start = scope;
    const out: StoredObject[] = [];
    let cursor: Buffer = Buffer.from(start);
    for (;;) {
      let r;
      try {
        r = await this.client.range(cursor, { rangeEnd: end, limit: PAGE, revision: rv });
      } catch (e) {
        throw this.readError(e, rv);
      }
      for (const kv of r.kvs) {
        const p = this.parseKey(kv.key.toString());
        if (!p || p.gr !== gr) continue;
        const json = this.decode(gr, kv);
        out.push({ key: p.key, rv: kv.modRevision, json: json instanceof Promise ? await json : json });
      }
      if (!r.more || !r.kvs.length) break;
      cursor = Buffer.concat([r.kvs[r.kvs.length - 1].key, Buffer.from([0])]);
    }
    return out;
  }

  /**
   * gr's changes in (afterRv, uptoRv], read with a watch from afterRv + 1 over the whole key
   * space: every etcd revision after the first is one write txn, and so at least one event,
   * so the event at uptoRv (whatever key it changed: another resource, another prefix) marks
   * the end exactly. A watch of gr's prefix alone could only end on a progress answer, which
   * etcd 3.4 gives at once, before a watch from the past has caught up. Only when uptoRv has
   * no event to see (revision 1, an empty store) does a progress answer past it, with no
   * event for a moment after, end the read.
   */
  eventsSince(gr: string, afterRv: number, uptoRv: number, withPrev: boolean): MaybePromise<StoredEvent[]> {
    if (afterRv < this.compacted) throw new CompactedError(afterRv, this.compacted);
    if (uptoRv <= afterRv) return [];
    return new Promise((resolve, reject) => {
      const out: StoredEvent[] = [];
      /** decryptions that wait for a KMS v2 plugin: the answer waits for them */
      const waits: Promise<unknown>[] = [];
      /** events whose value could not be read after all (a failed decryption): left out, as the feed leaves them */
      const unreadable = new Set<StoredEvent>();
      let done = false;
      let settle: NodeJS.Timeout | undefined;
      const finish = (err?: Error) => {
        if (done) return;
        done = true;
        if (settle) clearTimeout(settle);
        clearTimeout(overall);
        w.cancel();
        if (err) reject(err);
        else if (waits.length) Promise.all(waits).then(() => resolve(out.filter((e) => !unreadable.has(e))), reject);
        else resolve(out);
      };
      const overall = setTimeout(() => finish(new EtcdError(`etcd: the history of ${gr} up to ${uptoRv} was not read within 30s`, 4, this.client.currentEndpoint)), 30_000);
      const all = Buffer.from([0]);
      const w = this.client.watch(
        { key: all, rangeEnd: all, startRevision: afterRv + 1, prevKv: true },
        {
          onEvents: (evs) => {
            if (settle) clearTimeout(settle);
            settle = undefined;
            for (const e of evs) {
              const rv = e.kv.modRevision;
              if (rv > uptoRv) return finish();
              const p = this.parseKey(e.kv.key.toString());
              if (p && p.gr === gr) {
                const type: ChangeType = e.type === 'DELETE' ? 'DELETED' : e.kv.version === 1 ? 'ADDED' : 'MODIFIED';
                try {
                  const json = type === 'DELETED' ? (e.prevKv ? this.decode(gr, e.prevKv, rv) : undefined) : this.decode(gr, e.kv);
                  if (json) {
                    const ev: StoredEvent = { type, key: p.key, rv, json: json as Buffer, prevRv: type === 'ADDED' ? 0 : (e.prevKv?.modRevision ?? 0) };
                    if (json instanceof Promise) waits.push(json.then((j) => (ev.json = j), () => unreadable.add(ev)));
                    if (withPrev && type !== 'ADDED' && e.prevKv) {
                      const prev = this.decode(gr, e.prevKv);
                      if (prev instanceof Promise) waits.push(prev.then((j) => (ev.prevJson = j), () => undefined));
                      else ev.prevJson = prev;
                    }
                    out.push(ev);
                  }
                } catch {
                  // not readable by kubeshard: skipped as the feed skips it
                }
              }
              // (the events of one revision come in one response: the last of uptoRv's ends it)
              if (rv === uptoRv && e === evs[evs.length - 1]) return finish();
            }
          },
          onProgress: (rev) => {
            if (rev < uptoRv || done) return;
            if (settle) clearTimeout(settle);
            // (a fallback: another watch's progress request answers this one too, in etcd 3.4)
            settle = setTimeout(() => finish(), 2000);
          },
          onError: (err) => finish(err instanceof EtcdCompactedError ? new CompactedError(afterRv, (this.compacted = Math.max(this.compacted, err.compactRevision))) : err),
        },
      );
      // (only needed when uptoRv has no event: see above)
      w.created.then(() => (uptoRv <= 1 ? this.client.requestProgress() : undefined), () => undefined).catch(() => {});
    });
  }

  // ---- compaction ---------------------------------------------------------------------

  /**
   * One round of kube's compactor (compact.go compact()): whoever moves compact_rev_key's
   * version on from the one it last saw writes there the revision it saw the round before and
   * compacts to it (so one interval of history is always kept); the others learn the new
   * version. Every replica remembers the revision of its round for the next one.
   */
  async compactRound(): Promise<void> {
    const rev = this.compactRev;
    try {
      const res = await this.client.txn({
        compare: [{ key: COMPACT_REV_KEY, target: 'version', result: '=', value: this.compactTime }],
        success: [{ put: { key: COMPACT_REV_KEY, value: String(rev) } }],
        failure: [{ range: { key: COMPACT_REV_KEY } }],
      });
      // the revision now: what the next round compacts to, one interval later
      this.compactRev = res.revision;
      if (!res.succeeded) {
        const kv = 'range' in res.responses[0] ? res.responses[0].range.kvs[0] : undefined;
        this.compactTime = kv?.version ?? 0;
        return;
      }
      this.compactTime++;
      // nothing to compact on the first round
      if (rev > 0) await this.compactTo(rev);
    } catch {
      // etcd unreachable or the revision already compacted: the next round tries again
    }
  }

  /** Compacts etcd to rev (kube's Compact) and refuses reads below it from now on. */
  async compactTo(rev: number): Promise<void> {
    try {
      await this.client.compact(rev);
    } catch (e) {
      if (!(e instanceof EtcdError && /compacted/.test(e.message))) throw e;
    }
    this.compacted = Math.max(this.compacted, rev);
  }

  storageProblem(): string {
    return this.probeProblem || this.problem;
  }

  /** The number of gr's objects in etcd (kube's storage count, polled every --etcd-count-metric-poll-period). */
  async count(gr: string): Promise<number> {
    const range = this.rangeOf(gr);
    return (await this.client.range(range, { rangeEnd: prefixEnd(range), countOnly: true })).count;
  }

  /**
   * The etcd health check (kube's etcd healthz check: a read of <prefix>/health through the
   * client, bounded by the call timeout): resolves when etcd answered, rejects with why not.
   */
  async healthCheck(): Promise<void> {
    try {
      await this.client.get(posix.join(this.prefix || '/', 'health'));
      if (this.problem.startsWith('etcd is unreachable')) this.problem = '';
    } catch (e) {
      this.problem = `etcd is unreachable (${(e as Error).message})`;
      throw e;
    }
  }
}
