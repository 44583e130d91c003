// An etcd v3 client: the KV calls (Range, Put, DeleteRange, Txn, Compact), one multiplexed
// Watch stream with progress requests, leases, and Maintenance Status. What kube-apiserver gets
// from etcd's clientv3, in the part kubeshard needs. It speaks gRPC through its own transport on
// node:http2 (grpc-transport.ts), not @grpc/grpc-js, which cost a third of the server's CPU on
// etcd (bench/README.md, "etcd client (issue 19)").
//
// Endpoints: `--etcd-servers` is a list; calls go to one endpoint at a time (the current one).
// When it fails (connection refused or lost, or a read that times out) the call moves on to the
// next one and that one becomes current; the failed endpoint's channel keeps reconnecting in the
// background (with backoff) so it is usable again when the others fail in their turn. A
// mutating call is retried on another endpoint only when it cannot have reached the server (no
// connection was established, or the server refused the stream unprocessed), as clientv3's
// retry interceptor does for non-repeatable calls: a guarded create retried after it was
// applied would report a conflict that did not happen.
//
// Every unary call has a deadline (callTimeoutMs per endpoint attempt), so a dead or
// unreachable etcd is an error, never a hang. The watch stream is kept alive with HTTP/2 pings
// (a silent peer fails the stream) and re-established on the next endpoint with every watcher
// resumed from the revision after the last one it saw; if no endpoint takes it back within
// callTimeoutMs, the watchers are ended with an error (the caller resumes them).
//
// Thread ownership: one instance per thread that creates it (normally the main thread); its
// endpoint list, watch stream and watcher table are that thread's.
import { readFileSync } from 'node:fs';
import type protobuf from 'protobufjs';
import { encodeFrame, GrpcChannel, GrpcError, GrpcStatus, Method, type BidiStream } from './grpc-transport.js';
import { etcdpb, METHODS } from './proto.js';

export { GrpcStatus } from './grpc-transport.js';

export interface EtcdClientOptions {
  /** client URLs: http://host:port or https://host:port */
  endpoints: string[];
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  /** per attempt on one endpoint, for every unary call (default 10s) */
  callTimeoutMs?: number;
  /** HTTP/2 keepalive ping interval on active streams (default 10s; etcd refuses pings more often than 5s) */
  keepaliveMs?: number;
}

export interface KeyValue {
  key: Buffer;
  value: Buffer;
  createRevision: number;
  modRevision: number;
  version: number;
  /** the lease ID, in decimal (a 64-bit ID does not fit a JS number); "0" when none */
  lease: string;
}

export interface RangeOptions {
  /** exclusive end; prefixEnd(key) for a prefix, Buffer.from([0]) for "everything from key" */
  rangeEnd?: Buffer | string;
  limit?: number;
  /** read at this revision (0: latest) */
  revision?: number;
  keysOnly?: boolean;
  countOnly?: boolean;
  serializable?: boolean;
}

export interface RangeResult {
  /** the store's revision when the read was served */
  revision: number;
  kvs: KeyValue[];
  more: boolean;
  count: number;
}

export type CompareTarget = 'version' | 'createRevision' | 'modRevision' | 'value' | 'lease';
export type CompareResult = '=' | '>' | '<' | '!=';
export interface Compare {
  key: Buffer | string;
  target: CompareTarget;
  result: CompareResult;
  /** a revision or version (number), a value (Buffer), or a lease ID (decimal string) */
  value: number | string | Buffer;
}

export type TxnOp =
  | { put: { key: Buffer | string; value: Buffer | string; lease?: string; prevKv?: boolean } }
  | { range: { key: Buffer | string } & RangeOptions }
  | { deleteRange: { key: Buffer | string; rangeEnd?: Buffer | string; prevKv?: boolean } };

export type TxnOpResult =
  | { put: { revision: number; prevKv?: KeyValue } }
  | { range: RangeResult }
  | { deleteRange: { revision: number; deleted: number; prevKvs: KeyValue[] } };

export interface TxnResult {
  succeeded: boolean;
  revision: number;
  responses: TxnOpResult[];
}

export interface WatchEvent {
  type: 'PUT' | 'DELETE';
  kv: KeyValue;
  prevKv?: KeyValue;
}

export interface WatchOptions {
  key: Buffer | string;
  rangeEnd?: Buffer | string;
  /** first revision to deliver (0: from now) */
  startRevision?: number;
  prevKv?: boolean;
  progressNotify?: boolean;
}

export interface WatchHandlers {
  /**
   * the events of one response; revision is the header's (the store's) revision, which for
   * a watcher still catching up may be past the last event (etcd's sync batches stop after
   * 1,000 revisions): only the events' own revisions say how far the watch has come
   */
  onEvents(events: WatchEvent[], revision: number): void;
  /**
   * no events up to this revision: etcd's periodic notification for this watcher
   * (broadcast false), or the answer to a progress request (broadcast true), which etcd
   * before 3.4.31 / 3.5.13 may send before events of lower revisions (see progressTrusted)
   */
  onProgress?(revision: number, broadcast: boolean): void;
  /** the watch ended: compacted (EtcdCompactedError), canceled by the server, or no endpoint took it back */
  onError(err: Error): void;
}

export interface Watcher {
  /** resolves once the server has created the watch (the revision it starts after) */
  readonly created: Promise<number>;
  cancel(): void;
}

export interface StatusResult {
  endpoint: string;
  version: string;
  dbSize: number;
  leader: string;
  memberId: string;
  revision: number;
  raftIndex: number;
  raftTerm: number;
  errors: string[];
}

/** A failed etcd call: the gRPC status code and the endpoint that answered (or did not). */
export class EtcdError extends Error {
  constructor(
    message: string,
    /** a gRPC status (GrpcStatus) */
    readonly code: number,
    readonly endpoint: string,
  ) {
    super(message);
    this.name = 'EtcdError';
  }
}

/** A watch asked for revisions the store has compacted away (kube answers 410 Gone). */
export class EtcdCompactedError extends Error {
  constructor(readonly compactRevision: number) {
    super(`mvcc: required revision has been compacted (compact revision ${compactRevision})`);
    this.name = 'EtcdCompactedError';
  }
}

// ---- small helpers ----------------------------------------------------------------------

const bytes = (v: Buffer | string | undefined): Buffer | undefined => (v === undefined ? undefined : typeof v === 'string' ? Buffer.from(v) : v);

/** int64 fields decode as Long (the long package is installed) or number. */
function num(v: any): number {
  if (v === undefined || v === null) return 0;
  if (typeof v === 'number') return v;
  return typeof v.toNumber === 'function' ? v.toNumber() : Number(v);
}

/** A signed int64 in decimal, without losing precision (lease IDs). */
function s64(v: any): string {
  if (v === undefined || v === null) return '0';
  return typeof v === 'object' && typeof v.toString === 'function' ? v.toString() : String(v);
}

function str64(v: any): string {
  if (v === undefined || v === null) return '0';
  return typeof v === 'object' && typeof v.toUnsigned === 'function' ? v.toUnsigned().toString() : String(v);
}

const EMPTY = Buffer.alloc(0);
/** bytes fields: a Buffer view on the response (no copy), or empty (an absent field's default is a plain []) */
function buf(v: any): Buffer {
  if (Buffer.isBuffer(v)) return v;
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  return v && v.length ? Buffer.from(v) : EMPTY;
}
function kvOf(m: any): KeyValue {
  return {
    key: buf(m.key),
    value: buf(m.value),
    createRevision: num(m.createRevision),
    modRevision: num(m.modRevision),
    version: num(m.version),
    lease: s64(m.lease),
  };
}

/** The end of the range of every key starting with prefix (etcd's GetPrefixRangeEnd). */
export function prefixEnd(prefix: Buffer | string): Buffer {
  const b = Buffer.from(bytes(prefix)!);
  for (let i = b.length - 1; i >= 0; i--) {
    if (b[i] < 0xff) {
      b[i]++;
      return b.subarray(0, i + 1);
    }
  }
  // every byte 0xff: the range runs to the end of the key space
  return Buffer.from([0]);
}

const T = {
  RangeRequest: etcdpb('RangeRequest'),
  RangeResponse: etcdpb('RangeResponse'),
  PutRequest: etcdpb('PutRequest'),
  PutResponse: etcdpb('PutResponse'),
  DeleteRangeRequest: etcdpb('DeleteRangeRequest'),
  DeleteRangeResponse: etcdpb('DeleteRangeResponse'),
  TxnRequest: etcdpb('TxnRequest'),
  TxnResponse: etcdpb('TxnResponse'),
  CompactionRequest: etcdpb('CompactionRequest'),
  CompactionResponse: etcdpb('CompactionResponse'),
  WatchRequest: etcdpb('WatchRequest'),
  WatchResponse: etcdpb('WatchResponse'),
  LeaseGrantRequest: etcdpb('LeaseGrantRequest'),
  LeaseGrantResponse: etcdpb('LeaseGrantResponse'),
  LeaseRevokeRequest: etcdpb('LeaseRevokeRequest'),
  LeaseRevokeResponse: etcdpb('LeaseRevokeResponse'),
  LeaseKeepAliveRequest: etcdpb('LeaseKeepAliveRequest'),
  LeaseKeepAliveResponse: etcdpb('LeaseKeepAliveResponse'),
  StatusRequest: etcdpb('StatusRequest'),
  StatusResponse: etcdpb('StatusResponse'),
};

/** each method's path and prebuilt request headers */
const M = {
  range: new Method(METHODS.range),
  put: new Method(METHODS.put),
  deleteRange: new Method(METHODS.deleteRange),
  txn: new Method(METHODS.txn),
  compact: new Method(METHODS.compact),
  watch: new Method(METHODS.watch),
  leaseGrant: new Method(METHODS.leaseGrant),
  leaseRevoke: new Method(METHODS.leaseRevoke),
  leaseKeepAlive: new Method(METHODS.leaseKeepAlive),
  status: new Method(METHODS.status),
};

function rangeRequest(key: Buffer | string, o: RangeOptions = {}): any {
  return {
    key: bytes(key),
    rangeEnd: bytes(o.rangeEnd),
    limit: o.limit ?? 0,
    revision: o.revision ?? 0,
    keysOnly: !!o.keysOnly,
    countOnly: !!o.countOnly,
    serializable: !!o.serializable,
  };
}

function rangeResult(r: any): RangeResult {
  return { revision: num(r.header?.revision), kvs: (r.kvs ?? []).map(kvOf), more: !!r.more, count: num(r.count) };
}

const CMP_RESULT: Record<CompareResult, number> = { '=': 0, '>': 1, '<': 2, '!=': 3 };
const CMP_TARGET: Record<CompareTarget, number> = { version: 0, createRevision: 1, modRevision: 2, value: 3, lease: 4 };

function opRequest(op: TxnOp): any {
  if ('put' in op) return { requestPut: { key: bytes(op.put.key), value: bytes(op.put.value), lease: op.put.lease ?? 0, prevKv: !!op.put.prevKv } };
  if ('range' in op) return { requestRange: rangeRequest(op.range.key, op.range) };
  return { requestDeleteRange: { key: bytes(op.deleteRange.key), rangeEnd: bytes(op.deleteRange.rangeEnd), prevKv: !!op.deleteRange.prevKv } };
}

function opResult(r: any): TxnOpResult {
  if (r.responsePut) return { put: { revision: num(r.responsePut.header?.revision), prevKv: r.responsePut.prevKv ? kvOf(r.responsePut.prevKv) : undefined } };
  if (r.responseRange) return { range: rangeResult(r.responseRange) };
  const d = r.responseDeleteRange ?? {};
  return { deleteRange: { revision: num(d.header?.revision), deleted: num(d.deleted), prevKvs: (d.prevKvs ?? []).map(kvOf) } };
}

interface Endpoint {
  url: string;
  channel: GrpcChannel;
}

/** The call never reached the server (no connection, or refused unprocessed): safe to send a mutating call elsewhere. */
function neverSent(err: GrpcError): boolean {
  return err.code === GrpcStatus.UNAVAILABLE && err.neverSent;
}

/** Anything a call can throw, as a GrpcError (a response that does not decode is INTERNAL). */
function asGrpc(e: unknown): GrpcError {
  return e instanceof GrpcError ? e : new GrpcError(GrpcStatus.INTERNAL, `etcd response: ${(e as Error)?.message ?? e}`);
}

interface WatcherState {
  id: number;
  opts: WatchOptions;
  handlers: WatchHandlers;
  /** the next revision to ask for when the watch is re-created (0: not known yet) */
  next: number;
  created: boolean;
  resolveCreated: (rev: number) => void;
  rejectCreated: (err: Error) => void;
  /** events of a fragmented response, gathered until its last fragment */
  fragments: any[];
  done: boolean;
}

export class EtcdClient {
  private readonly endpoints: Endpoint[];
  private current = 0;
  private readonly callTimeoutMs: number;
  private closed = false;

  // the one watch stream and what runs on it
  private stream: BidiStream | undefined;
  private streamEndpoint = -1;
  private reconnecting: Promise<void> | undefined;
  private readonly watchers = new Map<number, WatcherState>();
  private nextWatchId = 1;
  private progressWaiters: Array<{ resolve: (rev: number) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }> = [];

  constructor(opts: EtcdClientOptions) {
    if (!opts.endpoints.length) throw new Error('etcd: no endpoints');
    this.callTimeoutMs = opts.callTimeoutMs ?? 10_000;
    // pings only while calls are open (etcd's keepalive policy refuses them on an idle connection)
    const keepaliveMs = opts.keepaliveMs ?? 10_000;
    const ca = opts.caFile ? readFileSync(opts.caFile) : undefined;
    const cert = opts.certFile ? readFileSync(opts.certFile) : undefined;
    const key = opts.keyFile ? readFileSync(opts.keyFile) : undefined;
    this.endpoints = opts.endpoints.map((raw) => {
      const url = new URL(raw.includes('://') ? raw : `http://${raw}`);
      const tls = url.protocol === 'https:';
      const port = url.port || (tls ? '443' : '2379');
      const host = url.hostname.includes(':') && !url.hostname.startsWith('[') ? `[${url.hostname}]` : url.hostname;
      const channel = new GrpcChannel(`${tls ? 'https' : 'http'}://${host}:${port}`, { ca, cert, key, keepaliveMs, connectTimeoutMs: Math.max(this.callTimeoutMs, 1000) });
      return { url: url.toString().replace(/\/$/, ''), channel };
    });
  }

  /** The endpoint calls go to now. */
  get currentEndpoint(): string {
    return this.endpoints[this.current].url;
  }

  // ---- unary calls ----------------------------------------------------------------------

  /** One call, moved along the endpoints while they fail in a way that allows a retry. */
  private async call(method: Method, reqT: protobuf.Type, resT: protobuf.Type, req: any, mutating: boolean): Promise<any> {
    if (this.closed) throw new EtcdError('etcd client closed', GrpcStatus.CANCELLED, '');
    const frame = encodeFrame(reqT, req);
    let last: GrpcError | undefined;
    for (let i = 0; i < this.endpoints.length; i++) {
      const idx = (this.current + i) % this.endpoints.length;
      const ep = this.endpoints[idx];
      try {
        const res = resT.decode(await ep.channel.unary(method, frame, this.callTimeoutMs));
        this.current = idx;
        return res;
      } catch (e) {
        const err = asGrpc(e);
        last = err;
        const retry = mutating ? neverSent(err) : err.code === GrpcStatus.UNAVAILABLE || err.code === GrpcStatus.DEADLINE_EXCEEDED;
        if (!retry) throw this.wrap(err, ep);
        // this endpoint failed: the next one becomes current
        this.current = (idx + 1) % this.endpoints.length;
      }
    }
    throw this.wrap(last!, this.endpoints[this.current]);
  }

  private wrap(err: GrpcError, ep: Endpoint): EtcdError {
    const what = err.code === GrpcStatus.DEADLINE_EXCEEDED ? `timed out after ${this.callTimeoutMs}ms` : err.details || err.message;
    return new EtcdError(`etcd ${ep.url}: ${what}`, err.code, ep.url);
  }

  async range(key: Buffer | string, opts: RangeOptions = {}): Promise<RangeResult> {
    return rangeResult(await this.call(M.range, T.RangeRequest, T.RangeResponse, rangeRequest(key, opts), false));
  }

  /** One key, or undefined. */
  async get(key: Buffer | string, revision = 0): Promise<{ kv: KeyValue | undefined; revision: number }> {
    const r = await this.range(key, { revision });
    return { kv: r.kvs[0], revision: r.revision };
  }

  async put(key: Buffer | string, value: Buffer | string, opts: { lease?: string; prevKv?: boolean } = {}): Promise<{ revision: number; prevKv?: KeyValue }> {
    const r = await this.call(M.put, T.PutRequest, T.PutResponse, { key: bytes(key), value: bytes(value), lease: opts.lease ?? 0, prevKv: !!opts.prevKv }, true);
    return { revision: num(r.header?.revision), prevKv: r.prevKv ? kvOf(r.prevKv) : undefined };
  }

  async deleteRange(key: Buffer | string, opts: { rangeEnd?: Buffer | string; prevKv?: boolean } = {}): Promise<{ revision: number; deleted: number; prevKvs: KeyValue[] }> {
    const r = await this.call(M.deleteRange, T.DeleteRangeRequest, T.DeleteRangeResponse, { key: bytes(key), rangeEnd: bytes(opts.rangeEnd), prevKv: !!opts.prevKv }, true);
    return { revision: num(r.header?.revision), deleted: num(r.deleted), prevKvs: (r.prevKvs ?? []).map(kvOf) };
  }

  /** If every compare holds, the success ops, else the failure ops; atomically, at one revision. */
  async txn(t: { compare?: Compare[]; success?: TxnOp[]; failure?: TxnOp[] }): Promise<TxnResult> {
    const compare = (t.compare ?? []).map((c) => ({
      key: bytes(c.key),
      result: CMP_RESULT[c.result],
      target: CMP_TARGET[c.target],
      [c.target]: c.target === 'value' ? bytes(c.value as Buffer) : c.value,
    }));
    const mutating = [...(t.success ?? []), ...(t.failure ?? [])].some((op) => !('range' in op));
    const r = await this.call(
      M.txn,
      T.TxnRequest,
      T.TxnResponse,
      { compare, success: (t.success ?? []).map(opRequest), failure: (t.failure ?? []).map(opRequest) },
      mutating,
    );
    return { succeeded: !!r.succeeded, revision: num(r.header?.revision), responses: (r.responses ?? []).map(opResult) };
  }

  /** Drops the history before revision (physical: answer once the backend has dropped it). */
  async compact(revision: number, physical = false): Promise<{ revision: number }> {
    const r = await this.call(M.compact, T.CompactionRequest, T.CompactionResponse, { revision, physical }, true);
    return { revision: num(r.header?.revision) };
  }

  /** A lease; its ID is a decimal string (64 bits). */
  async leaseGrant(ttlSeconds: number): Promise<{ id: string; ttl: number }> {
    const r = await this.call(M.leaseGrant, T.LeaseGrantRequest, T.LeaseGrantResponse, { TTL: ttlSeconds, ID: 0 }, true);
    if (r.error) throw new EtcdError(`etcd lease grant: ${r.error}`, GrpcStatus.UNKNOWN, this.currentEndpoint);
    return { id: s64(r.ID), ttl: num(r.TTL) };
  }

  async leaseRevoke(id: string): Promise<void> {
    await this.call(M.leaseRevoke, T.LeaseRevokeRequest, T.LeaseRevokeResponse, { ID: id }, true);
  }

  /** One keep-alive of a lease: its remaining TTL (0 or less: the lease has expired). */
  async leaseKeepAliveOnce(id: string): Promise<number> {
    const ep = this.endpoints[this.current];
    return new Promise((resolve, reject) => {
      let done = false;
      const call = ep.channel.stream(
        M.leaseKeepAlive,
        {
          message: (b) => {
            if (done) return;
            done = true;
            call.cancel();
            try {
              resolve(num(T.LeaseKeepAliveResponse.decode(b).TTL));
            } catch (e) {
              reject(this.wrap(asGrpc(e), ep));
            }
          },
          end: (err) => {
            if (done) return;
            done = true;
            const e = err ?? new GrpcError(GrpcStatus.UNAVAILABLE, 'the keep-alive stream ended without an answer');
            if (e.code === GrpcStatus.UNAVAILABLE) this.current = (this.current + 1) % this.endpoints.length;
            reject(this.wrap(e, ep));
          },
        },
        this.callTimeoutMs,
      );
      call.write(encodeFrame(T.LeaseKeepAliveRequest, { ID: id }));
    });
  }

  /** The status of one endpoint (the current one by default), for health checks. */
  async status(endpoint?: string): Promise<StatusResult> {
    const ep = endpoint ? this.endpoints.find((e) => e.url === endpoint) : this.endpoints[this.current];
    if (!ep) throw new Error(`etcd: unknown endpoint ${endpoint}`);
    let r: any;
    try {
      r = T.StatusResponse.decode(await ep.channel.unary(M.status, encodeFrame(T.StatusRequest, {}), this.callTimeoutMs));
    } catch (e) {
      throw this.wrap(asGrpc(e), ep);
    }
    return {
      endpoint: ep.url,
      version: r.version ?? '',
      dbSize: num(r.dbSize),
      leader: str64(r.leader),
      memberId: str64(r.header?.memberId),
      revision: num(r.header?.revision),
      raftIndex: num(r.raftIndex),
      raftTerm: num(r.raftTerm),
      errors: r.errors ?? [],
    };
  }

  /** Every endpoint's URL, for per-endpoint health reports. */
  endpointUrls(): string[] {
    return this.endpoints.map((e) => e.url);
  }

  // ---- watch ----------------------------------------------------------------------------

  /**
   * A watch on one key or range. Events arrive in revision order, once each, across
   * reconnections; a compacted start ends it with EtcdCompactedError.
   */
  watch(opts: WatchOptions, handlers: WatchHandlers): Watcher {
    if (this.closed) throw new EtcdError('etcd client closed', GrpcStatus.CANCELLED, '');
    let resolveCreated!: (rev: number) => void;
    let rejectCreated!: (err: Error) => void;
    const created = new Promise<number>((res, rej) => {
      resolveCreated = res;
      rejectCreated = rej;
    });
    created.catch(() => {});
    const w: WatcherState = {
      id: this.nextWatchId++,
      opts,
      handlers,
      next: opts.startRevision ?? 0,
      created: false,
      resolveCreated,
      rejectCreated,
      fragments: [],
      done: false,
    };
    this.watchers.set(w.id, w);
    if (this.stream) this.sendCreate(w);
    else this.ensureStream().catch(() => {});
    return {
      created,
      cancel: () => this.cancelWatch(w),
    };
  }

  /**
   * Asks the server for a progress notification on the watch stream: resolves with a revision
   * every watcher on the stream has caught up with (kube's RequestWatchProgress, used for
   * consistent reads from a watch cache). Needs at least one watcher.
   */
  requestProgress(): Promise<number> {
    return new Promise((resolve, reject) => {
      if (!this.watchers.size) return reject(new Error('etcd: a progress request needs a watch'));
      const timer = setTimeout(() => {
        const i = this.progressWaiters.findIndex((p) => p.timer === timer);
        if (i >= 0) this.progressWaiters.splice(i, 1);
        reject(new EtcdError(`etcd progress request timed out after ${this.callTimeoutMs}ms`, GrpcStatus.DEADLINE_EXCEEDED, this.currentEndpoint));
      }, this.callTimeoutMs);
      this.progressWaiters.push({ resolve, reject, timer });
      const send = () => this.send({ progressRequest: {} });
      if (this.stream && !this.reconnecting) send();
      else void this.ensureStream().then(send, () => {});
    });
  }

  private cancelWatch(w: WatcherState): void {
    if (w.done) return;
    w.done = true;
    this.watchers.delete(w.id);
    if (this.stream && w.created) this.send({ cancelRequest: { watchId: w.id } });
    if (!this.watchers.size) this.closeStream();
  }

  /** One WatchRequest on the watch stream. */
  private send(req: any): void {
    this.stream?.write(encodeFrame(T.WatchRequest, req));
  }

  private sendCreate(w: WatcherState): void {
    w.created = false;
    this.send({
      createRequest: {
        key: bytes(w.opts.key),
        rangeEnd: bytes(w.opts.rangeEnd),
        startRevision: w.next,
        progressNotify: !!w.opts.progressNotify,
        prevKv: !!w.opts.prevKv,
        watchId: w.id,
        fragment: true,
      },
    });
  }

  private closeStream(): void {
    const s = this.stream;
    this.stream = undefined;
    this.streamEndpoint = -1;
    // its end (CANCELLED) is not this client's concern any more: the stream is no longer this.stream
    s?.cancel();
  }

  /** Opens the watch stream on the first endpoint that is ready, within callTimeoutMs; else ends every watcher. */
  private ensureStream(): Promise<void> {
    if (this.stream && !this.reconnecting) return Promise.resolve();
    if (this.reconnecting) return this.reconnecting;
    this.reconnecting = (async () => {
      const deadline = Date.now() + this.callTimeoutMs;
      let lastErr: Error | undefined;
      let attempt = 0;
      while (!this.closed && this.watchers.size && Date.now() < deadline) {
        const idx = (this.current + attempt) % this.endpoints.length;
        const ep = this.endpoints[idx];
        attempt++;
        const perTry = Math.min(deadline, Date.now() + Math.max(200, this.callTimeoutMs / this.endpoints.length));
        try {
          await ep.channel.waitForReady(Math.max(1, perTry - Date.now()));
        } catch (e) {
          lastErr = e as Error;
          if (attempt % this.endpoints.length === 0) await new Promise((r) => setTimeout(r, 100));
          continue;
        }
        this.current = idx;
        this.openStream(idx);
        return;
      }
      if (this.closed || !this.watchers.size) return;
      const err = new EtcdError(`etcd watch: no endpoint reachable within ${this.callTimeoutMs}ms${lastErr ? `: ${lastErr.message}` : ''}`, GrpcStatus.UNAVAILABLE, this.currentEndpoint);
      this.failWatchers(err);
      throw err;
    })().finally(() => {
      this.reconnecting = undefined;
    });
    return this.reconnecting;
  }

  private openStream(idx: number): void {
    const ep = this.endpoints[idx];
    const lost = (err: GrpcError | null) => {
      if (this.stream !== s) return;
      this.stream = undefined;
      this.streamEndpoint = -1;
      if (this.closed || !this.watchers.size) return;
      // this endpoint failed the stream: resume every watcher on the next one
      if (!err || err.code === GrpcStatus.UNAVAILABLE || err.code === GrpcStatus.INTERNAL || err.code === GrpcStatus.UNKNOWN) this.current = (idx + 1) % this.endpoints.length;
      void this.ensureStream().catch(() => {});
    };
    const s: BidiStream = ep.channel.stream(M.watch, {
      message: (b) => {
        if (this.stream !== s) return;
        let r: any;
        try {
          r = T.WatchResponse.decode(b);
        } catch (e) {
          // a response that does not decode: this stream is unusable, resume elsewhere
          lost(asGrpc(e));
          s.cancel();
          return;
        }
        this.onWatchResponse(r);
      },
      end: lost,
    });
    this.stream = s;
    this.streamEndpoint = idx;
    for (const w of this.watchers.values()) this.sendCreate(w);
    // progress requests sent while there was no stream
    if (this.progressWaiters.length) this.send({ progressRequest: {} });
  }

  private failWatchers(err: Error, tell = true): void {
    for (const w of [...this.watchers.values()]) this.endWatcher(w, err, tell);
    for (const p of this.progressWaiters.splice(0)) {
      clearTimeout(p.timer);
      p.reject(err);
    }
  }

  private endWatcher(w: WatcherState, err: Error, tell = true): void {
    if (w.done) return;
    w.done = true;
    this.watchers.delete(w.id);
    w.rejectCreated(err);
    if (tell) w.handlers.onError(err);
    if (!this.watchers.size) this.closeStream();
  }

  private onWatchResponse(r: any): void {
    const id = num(r.watchId);
    const revision = num(r.header?.revision);
    if (id === -1) {
      // the answer to a progress request, for every watcher on the stream. etcd before
      // 3.4.31 / 3.5.13 sends it on a control channel that can overtake events still queued
      // (etcd issue 15220), so it never moves a watcher's resume point here; each handler
      // decides whether it may trust it (EtcdStorage does only on a fixed etcd)
      for (const w of this.watchers.values()) {
        if (w.created && !w.fragments.length) w.handlers.onProgress?.(revision, true);
      }
      const p = this.progressWaiters.shift();
      if (p) {
        clearTimeout(p.timer);
        p.resolve(revision);
      }
      return;
    }
    const w = this.watchers.get(id);
    if (!w) return;
    if (r.created) {
      w.created = true;
      if (!w.next) w.next = revision + 1;
      w.resolveCreated(revision);
    }
    if (r.canceled) {
      const compact = num(r.compactRevision);
      this.endWatcher(w, compact > 0 ? new EtcdCompactedError(compact) : new EtcdError(`etcd watch canceled: ${r.cancelReason || 'by the server'}`, GrpcStatus.CANCELLED, this.currentEndpoint));
      return;
    }
    const compact = num(r.compactRevision);
    if (compact > 0) {
      this.endWatcher(w, new EtcdCompactedError(compact));
      return;
    }
    const events: any[] = r.events ?? [];
    if (r.fragment) {
      w.fragments.push(...events);
      return;
    }
    const all = w.fragments.length ? [...w.fragments.splice(0), ...events] : events;
    if (all.length) {
      const out: WatchEvent[] = all.map((e: any) => ({ type: e.type === 1 ? 'DELETE' : 'PUT', kv: kvOf(e.kv ?? {}), prevKv: e.prevKv ? kvOf(e.prevKv) : undefined }));
      w.next = out[out.length - 1].kv.modRevision + 1;
      w.handlers.onEvents(out, revision);
    } else if (!r.created) {
      // a progress notification for this watcher (etcd's periodic one): it comes on the
      // watcher's own channel, after every event up to revision
      if (revision + 1 > w.next) w.next = revision + 1;
      w.handlers.onProgress?.(revision, false);
    }
  }

  /** Ends every watch and closes the channels. */
  close(): void {
    if (this.closed) return;
    // the owner closes: its watchers end without an error callback
    this.failWatchers(new EtcdError('etcd client closed', GrpcStatus.CANCELLED, ''), false);
    this.closed = true;
    this.closeStream();
    for (const ep of this.endpoints) ep.channel.close();
  }
}
