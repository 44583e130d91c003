// Leader election over a coordination.k8s.io Lease, as client-go's leaderelection package
// does it for kube-controller-manager (LeaseLock, tryAcquireOrRenew): with several API
// server replicas on one etcd, the built-in controllers (garbage collector, namespace
// deletion, quota, service accounts, ...) run on one replica at a time.
//
// The rules, as client-go's:
// - a candidate takes the Lease when nobody holds it, or when the holder's record has not
//   changed for leaseDurationSeconds *as observed by this candidate's own clock* (the
//   holder's renewTime is never compared with the local clock, so clock skew between
//   replicas cannot hand the lease to two of them);
// - the leader renews every retryPeriod; if no renewal succeeds for renewDeadline, it stops
//   leading (its controllers stop) before another candidate can take over, since
//   renewDeadline < leaseDuration;
// - every write is conditional on the Lease's resourceVersion: two candidates racing for
//   an expired lease cannot both win;
// - on a clean stop the leader releases the Lease (empty holder, duration 1 s), so the
//   next replica takes over at once instead of after the lease duration.
//
// Thread ownership: the main thread (the only one that runs controllers). The lease
// client is the generic store, so the Lease is an ordinary object every client can read
// (`kubectl get lease -n kube-system kube-controller-manager`).

/** The Lease as the elector sees it: the stored object, with its resourceVersion. */
export interface LeaseObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace: string; resourceVersion?: string; [k: string]: unknown };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
    [k: string]: unknown;
  };
}

/** What the elector needs of the API: a read and two conditional writes, each throwing on conflict. */
export interface LeaseClient {
  get(namespace: string, name: string): Promise<LeaseObject | undefined>;
  create(lease: LeaseObject): Promise<LeaseObject>;
  /** an update conditional on lease.metadata.resourceVersion (a conflict throws) */
  update(lease: LeaseObject): Promise<LeaseObject>;
}

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  /** who this candidate is: kube-controller-manager uses `<hostname>_<uuid>` */
  identity: string;
  /** client-go's defaults for kube-controller-manager: 15 s, 10 s, 2 s */
  leaseDurationSeconds?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  onStartedLeading: () => void | Promise<void>;
  onStoppedLeading: () => void;
  /** the local clock (tests) */
  now?: () => number;
  /** a note for the log: a failed try, or a change of leader */
  log?: (msg: string) => void;
  /**
   * No other candidate can exist (the embedded LMDB: one process owns the data dir), so a
   * Lease held by someone else is what an earlier run of this server left when it was
   * killed: taken over at once rather than after its duration.
   */
  soleCandidate?: boolean;
}

/** A metav1.MicroTime: RFC 3339 with microseconds, as the Lease's times are written. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export class LeaderElector {
  private leading = false;
  private stopped = true;
  private timer: NodeJS.Timeout | undefined;
  /** the last record read, as text, and when this candidate first saw it (client-go's observedRecord/observedTime) */
  private observedRaw = '';
  private observedAt = 0;
  private lastRenew = 0;
  private readonly now: () => number;
  private readonly durationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryMs: number;
  private inFlight: Promise<void> | undefined;

  constructor(
    private readonly client: LeaseClient,
    private readonly o: LeaderElectionOptions,
  ) {
    this.now = o.now ?? Date.now;
    this.durationMs = (o.leaseDurationSeconds ?? 15) * 1000;
    this.renewDeadlineMs = o.renewDeadlineMs ?? 10_000;
    this.retryMs = o.retryPeriodMs ?? 2000;
    if (this.renewDeadlineMs >= this.durationMs) throw new Error('leaderElection: renewDeadline must be shorter than leaseDuration');
  }

  isLeader(): boolean {
    return this.leading;
  }

  /**
   * Starts campaigning. The first try runs at once; the promise resolves after it (and,
   * when it won, after onStartedLeading has run), so that a server whose Lease is free
   * starts its controllers before it reports ready, as it did without election.
   */
  async start(): Promise<void> {
    if (!this.stopped) return;
    this.stopped = false;
    this.inFlight = this.tick(true).finally(() => (this.inFlight = undefined));
    await this.inFlight;
  }

  /** Stops trying; a leader stops leading and (release) gives the Lease up for the next candidate. */
  async stop(release = true): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.inFlight;
    if (!this.leading) return;
    this.setLeading(false);
    if (release) await this.release().catch(() => undefined);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.inFlight = this.tick().finally(() => (this.inFlight = undefined));
    }, ms);
    this.timer.unref?.();
  }

  private async tick(first = false): Promise<void> {
    let ok = false;
    try {
      ok = await this.tryAcquireOrRenew();
    } catch (err) {
      this.o.log?.(`leader election ${this.o.namespace}/${this.o.name}: ${(err as Error).message}`);
    }
    if (this.stopped) return;
    const t = this.now();
    if (ok) {
      this.lastRenew = t;
      if (!this.leading) {
        const started = this.setLeading(true);
        if (first) await started;
      }
    } else if (this.leading && t - this.lastRenew >= this.renewDeadlineMs) {
      // client-go: "failed to renew lease ... timed out waiting for the condition"
      this.o.log?.(`leader election ${this.o.namespace}/${this.o.name}: failed to renew the lease within ${this.renewDeadlineMs / 1000}s; stopping the controllers`);
      this.setLeading(false);
    }
    this.schedule(this.retryMs);
  }

  private setLeading(v: boolean): Promise<void> | undefined {
    if (this.leading === v) return;
    this.leading = v;
    if (v) {
      this.o.log?.(`successfully acquired lease ${this.o.namespace}/${this.o.name} as ${this.o.identity}`);
      return Promise.resolve()
        .then(() => this.o.onStartedLeading())
        .catch((err) => this.o.log?.(`onStartedLeading: ${(err as Error).message}`));
    }
    this.o.onStoppedLeading();
    return undefined;
  }

  /** client-go's tryAcquireOrRenew: true when this candidate holds the Lease afterwards. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const t = this.now();
    const seconds = this.durationMs / 1000;
    const cur = await this.client.get(this.o.namespace, this.o.name);
    if (!cur) {
      await this.client.create({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: this.o.name, namespace: this.o.namespace },
        spec: { holderIdentity: this.o.identity, leaseDurationSeconds: seconds, acquireTime: microTime(t), renewTime: microTime(t), leaseTransitions: 0 },
      });
      this.observe(undefined, t);
      return true;
    }
    const spec = cur.spec ?? {};
    const raw = JSON.stringify(spec);
    if (raw !== this.observedRaw) this.observe(raw, t);
    const holder = spec.holderIdentity ?? '';
    const heldByMe = holder === this.o.identity;
    const observedDurationMs = (spec.leaseDurationSeconds ?? seconds) * 1000;
    if (holder !== '' && !heldByMe && !this.o.soleCandidate && this.observedAt + observedDurationMs > t) return false;
    const next: LeaseObject = {
      ...cur,
      spec: {
        ...spec,
        holderIdentity: this.o.identity,
        leaseDurationSeconds: seconds,
        renewTime: microTime(t),
        acquireTime: heldByMe && spec.acquireTime ? spec.acquireTime : microTime(t),
        leaseTransitions: heldByMe ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
      },
    };
    const updated = await this.client.update(next);
    this.observe(JSON.stringify(updated.spec ?? {}), t);
    return true;
  }

  private observe(raw: string | undefined, t: number): void {
    this.observedRaw = raw ?? '';
    this.observedAt = t;
  }

  /** client-go's release: an empty holder and a one-second duration, so that the next candidate need not wait. */
  private async release(): Promise<void> {
    const cur = await this.client.get(this.o.namespace, this.o.name);
    if (!cur || cur.spec?.holderIdentity !== this.o.identity) return;
    const t = microTime(this.now());
    await this.client.update({ ...cur, spec: { ...cur.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: t, acquireTime: t } });
  }
}
