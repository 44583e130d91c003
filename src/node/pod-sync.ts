// The pods bound to this node: watched by spec.nodeName, run and stopped through the
// runtime, their status written to pods/status (kubelet's config source, pod workers and
// status manager, reduced to one loop).
//   - A pod seen (listed or watched) and not terminal is synced: the runtime starts what is
//     missing. A terminal pod (Succeeded, Failed) is left as it is.
//   - A pod with a deletionTimestamp is stopped with its deletionGracePeriodSeconds, then
//     deleted with grace period 0 and its uid as precondition, as kubelet does once its
//     containers are gone. A pod removed from the API is stopped at once.
//   - A pod past its spec.activeDeadlineSeconds is stopped and fails with DeadlineExceeded.
//   - Every status tick (and after each sync), a pod's status is computed from the runtime
//     and written when it differs from the last one written.
// The watch is resumed from the last resourceVersion; a 410 Gone lists again.
//
// Thread ownership: the agent's main thread.
import type { ApiClient, WatchEvent } from './api-client.js';
import { ApiError } from './api-client.js';
import type { ContainerRuntime } from './runtime.js';
import { isTerminal, podStatus, podStatusFingerprint } from './pod-status.js';

export interface PodSyncOptions {
  nodeName: string;
  nodeIP: string;
  log: (m: string) => void;
  /** what pods may use on this node (allocatable cpu in cores, memory in bytes, pod count) */
  allocatable?: () => { cpu: number; memory: number; pods: number };
  /** a Warning Event on a pod (the admission rejections) */
  onReject?: (pod: any, reason: string, message: string) => void;
  statusTickMs?: number;
}

export class PodSync {
  /** the pods bound to this node, by uid, as last seen from the API (status as last written) */
  readonly pods = new Map<string, any>();
  private readonly written = new Map<string, string>();
  private readonly stopping = new Set<string>();
  /** pods stopped for their activeDeadlineSeconds (not to be started again) */
  private readonly expiring = new Set<string>();
  /** the pods admitted to run here (kubelet's admitted pods) */
  private readonly admitted = new Set<string>();
  private readonly startTimes = new Map<string, string>();
  private readonly ac = new AbortController();
  private rv = '';
  private tick: NodeJS.Timeout | undefined;
  /** pod status writes so far (for tests and debugging) */
  statusWrites = 0;
  /** set once the first list has been read */
  synced = false;

  constructor(
    private readonly api: ApiClient,
    private readonly runtime: ContainerRuntime,
    private readonly opts: PodSyncOptions,
  ) {}

  private get selector(): string {
    return `fieldSelector=${encodeURIComponent(`spec.nodeName=${this.opts.nodeName}`)}`;
  }

  /** The pod of this node by namespace and name (the HTTPS API's lookups). */
  byName(namespace: string, name: string): any | undefined {
    for (const p of this.pods.values()) if (p.metadata.namespace === namespace && p.metadata.name === name) return p;
    return undefined;
  }

  start(): void {
    void this.loop();
    const every = this.opts.statusTickMs ?? 1000;
    const t = () => {
      void this.writeStatuses().finally(() => {
        if (!this.ac.signal.aborted) this.tick = setTimeout(t, every);
      });
    };
    this.tick = setTimeout(t, every);
  }

  private async list(): Promise<void> {
    const list = await this.api.get(`/api/v1/pods?${this.selector}`);
    this.rv = list.metadata?.resourceVersion ?? '';
    const seen = new Set<string>();
    // admitted oldest first, as kubelet sorts its initial pods
    const items = [...(list.items ?? [])].sort((a: any, b: any) => String(a.metadata.creationTimestamp ?? '').localeCompare(String(b.metadata.creationTimestamp ?? '')));
    for (const p of items) {
      seen.add(p.metadata.uid);
      this.observe(p);
    }
    for (const uid of [...this.pods.keys()]) if (!seen.has(uid)) this.gone(uid);
    this.synced = true;
  }

  private async loop(): Promise<void> {
    let backoff = 200;
    let needList = true;
    while (!this.ac.signal.aborted) {
      try {
        if (needList) {
          await this.list();
          needList = false;
        }
        await this.api.watch(`/api/v1/pods?${this.selector}&resourceVersion=${encodeURIComponent(this.rv)}&allowWatchBookmarks=true&timeoutSeconds=${300 + Math.floor(Math.random() * 300)}`, (e) => this.event(e), this.ac.signal);
        backoff = 200;
      } catch (e) {
        if (this.ac.signal.aborted) return;
        if (e instanceof ApiError && e.code === 410) needList = true;
        else {
          this.opts.log(`pods watch: ${(e as Error).message}; retrying in ${backoff}ms`);
          await new Promise((r) => setTimeout(r, backoff));
          backoff = Math.min(backoff * 2, 7000);
        }
      }
    }
  }

  private event(e: WatchEvent): void {
    if (e.type === 'ERROR') {
      const err = new ApiError(e.object?.code ?? 500, e.object);
      throw err;
    }
    if (e.object?.metadata?.resourceVersion) this.rv = e.object.metadata.resourceVersion;
    if (e.type === 'BOOKMARK') return;
    if (e.type === 'DELETED') this.gone(e.object.metadata.uid);
    else this.observe(e.object);
  }

  private observe(pod: any): void {
    const uid = pod.metadata.uid;
    this.pods.set(uid, pod);
    // someone else changed the status we wrote: compute and write it again (kubelet's
    // status manager compares with the API's pod, not with its own last write)
    const mine = this.written.get(uid);
    if (mine !== undefined && mine !== podStatusFingerprint(pod.status)) {
      if (process.env.KUBESHARD_NODE_DEBUG) this.opts.log(`pod ${pod.metadata.name}: status differs from ours:\n${podStatusFingerprint(pod.status)}\n${mine}`);
      this.written.delete(uid);
    }
    if (!this.startTimes.has(uid)) this.startTimes.set(uid, new Date().toISOString().replace(/\.\d+Z$/, 'Z'));
    void this.sync(pod);
  }

  private gone(uid: string): void {
    this.pods.delete(uid);
    this.admitted.delete(uid);
    this.expiring.delete(uid);
    this.written.delete(uid);
    this.startTimes.delete(uid);
    void this.runtime.killPod(uid, 0).catch((e) => this.opts.log(`kill pod ${uid}: ${(e as Error).message}`));
  }

  private async sync(pod: any): Promise<void> {
    const uid = pod.metadata.uid;
    try {
      if (pod.metadata.deletionTimestamp) {
        if (this.stopping.has(uid)) return;
        this.stopping.add(uid);
        try {
          await this.runtime.killPod(uid, pod.metadata.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30);
          await this.api.delete(`/api/v1/namespaces/${encodeURIComponent(pod.metadata.namespace)}/pods/${encodeURIComponent(pod.metadata.name)}`, {
            apiVersion: 'v1',
            kind: 'DeleteOptions',
            gracePeriodSeconds: 0,
            preconditions: { uid },
          });
        } catch (e) {
          if (!(e instanceof ApiError && (e.code === 404 || e.code === 409))) this.opts.log(`delete pod ${pod.metadata.namespace}/${pod.metadata.name}: ${(e as Error).message}`);
        } finally {
          this.stopping.delete(uid);
        }
        return;
      }
      if (isTerminal(pod) || this.expiring.has(uid)) return;
      if (!this.admitted.has(uid)) {
        const refused = this.admit(pod);
        if (refused) return await this.reject(pod, refused.reason, refused.message);
        this.admitted.add(uid);
      }
      await this.runtime.syncPod(pod);
      await this.writeStatus(uid);
    } catch (e) {
      this.opts.log(`sync pod ${pod.metadata.namespace}/${pod.metadata.name}: ${(e as Error).message}`);
    }
  }

  /**
   * kubelet's admission of a new pod (canAdmitPod with the resource fit predicate, reduced):
   * the pods already admitted and not finished, plus this one, must fit the node's pod count
   * and allocatable cpu and memory (by requests).
   */
  private admit(pod: any): { reason: string; message: string } | undefined {
    const alloc = this.opts.allocatable?.();
    if (!alloc) return undefined;
    const active = [...this.admitted].map((u) => this.pods.get(u)).filter((p) => p && !isTerminal(p) && !p.metadata.deletionTimestamp);
    const tooMuch = (name: string, requested: number, used: number, capacity: number) => ({
      reason: `OutOf${name}`,
      message: `Node didn't have enough resource: ${name}, requested: ${requested}, used: ${used}, capacity: ${capacity}`,
    });
    if (active.length + 1 > alloc.pods) return tooMuch('pods', 1, active.length, alloc.pods);
    const req = (p: any) => podRequests(p);
    const used = active.reduce((a, p) => ({ cpu: a.cpu + req(p).cpu, memory: a.memory + req(p).memory }), { cpu: 0, memory: 0 });
    const want = req(pod);
    // kube prints cpu in millicores and memory in bytes
    if (want.cpu > 0 && used.cpu + want.cpu > alloc.cpu) return tooMuch('cpu', Math.round(want.cpu * 1000), Math.round(used.cpu * 1000), Math.round(alloc.cpu * 1000));
    if (want.memory > 0 && used.memory + want.memory > alloc.memory) return tooMuch('memory', want.memory, used.memory, alloc.memory);
    return undefined;
  }

  /** kubelet's rejectPod: the pod fails with the reason, "Pod was rejected: <message>". */
  private async reject(pod: any, reason: string, message: string): Promise<void> {
    this.opts.log(`pod ${pod.metadata.namespace}/${pod.metadata.name} rejected: ${reason}: ${message}`);
    this.opts.onReject?.(pod, reason, `Pod was rejected: ${message}`);
    try {
      await this.api.patch(`/api/v1/namespaces/${encodeURIComponent(pod.metadata.namespace)}/pods/${encodeURIComponent(pod.metadata.name)}/status`, {
        metadata: { uid: pod.metadata.uid },
        status: { phase: 'Failed', reason, message: `Pod was rejected: ${message}` },
      });
    } catch (e) {
      this.opts.log(`reject pod ${pod.metadata.namespace}/${pod.metadata.name}: ${(e as Error).message}`);
    }
  }

  private async writeStatus(uid: string): Promise<void> {
    const pod = this.pods.get(uid);
    if (!pod || pod.metadata.deletionTimestamp || isTerminal(pod) || this.stopping.has(uid) || this.expiring.has(uid)) return;
    const status = podStatus(pod, this.runtime.podStatus(uid), this.opts.nodeIP, this.startTimes.get(uid));
    const fp = podStatusFingerprint(status);
    if (this.written.get(uid) === fp) return;
    try {
      const updated = await this.api.patch(`/api/v1/namespaces/${encodeURIComponent(pod.metadata.namespace)}/pods/${encodeURIComponent(pod.metadata.name)}/status`, {
        metadata: { uid },
        status,
      });
      this.written.set(uid, fp);
      this.statusWrites++;
      // keep the newer of what the watch brought and what we wrote
      const cur = this.pods.get(uid);
      if (cur && Number(updated.metadata.resourceVersion) >= Number(cur.metadata.resourceVersion)) this.pods.set(uid, updated);
    } catch (e) {
      if (e instanceof ApiError && e.code === 404) return;
      this.opts.log(`update status of pod ${pod.metadata.namespace}/${pod.metadata.name}: ${(e as Error).message}`);
    }
  }

  private async writeStatuses(): Promise<void> {
    for (const uid of [...this.pods.keys()]) {
      if (this.pastDeadline(uid)) await this.deadlineExceeded(uid);
      else await this.writeStatus(uid);
    }
  }

  /** kubelet's activeDeadlineHandler: running longer than spec.activeDeadlineSeconds since startTime. */
  private pastDeadline(uid: string): boolean {
    const pod = this.pods.get(uid);
    const deadline = pod?.spec?.activeDeadlineSeconds;
    if (!pod || deadline === undefined || isTerminal(pod) || pod.metadata.deletionTimestamp || this.stopping.has(uid) || this.expiring.has(uid)) return false;
    const start = Date.parse(pod.status?.startTime ?? this.startTimes.get(uid) ?? '');
    return Number.isFinite(start) && Date.now() - start >= deadline * 1000;
  }

  /** The pod is stopped and fails with DeadlineExceeded (its running containers end as killed). */
  private async deadlineExceeded(uid: string): Promise<void> {
    const pod = this.pods.get(uid)!;
    this.expiring.add(uid);
    try {
      const before = this.runtime.podStatus(uid);
      await this.runtime.killPod(uid, pod.spec?.terminationGracePeriodSeconds ?? 30);
      const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      const ended = before?.map((c) => (c.state === 'terminated' ? c : { ...c, state: 'terminated' as const, exitCode: 137, reason: 'Error', finishedAt: now, ready: false }));
      const status = podStatus(pod, ended, this.opts.nodeIP, this.startTimes.get(uid));
      status.phase = 'Failed';
      status.reason = 'DeadlineExceeded';
      status.message = 'Pod was active on the node longer than the specified deadline';
      this.opts.onReject?.(pod, 'DeadlineExceeded', status.message);
      await this.api.patch(`/api/v1/namespaces/${encodeURIComponent(pod.metadata.namespace)}/pods/${encodeURIComponent(pod.metadata.name)}/status`, { metadata: { uid }, status });
    } catch (e) {
      this.opts.log(`deadline of pod ${pod.metadata.namespace}/${pod.metadata.name}: ${(e as Error).message}`);
      this.expiring.delete(uid); // tried again at the next tick
    }
  }

  /** The pods with the status this agent computes (the /pods endpoint). */
  podList(): any[] {
    return [...this.pods.values()].map((p) => (isTerminal(p) || p.metadata.deletionTimestamp ? p : { ...p, status: podStatus(p, this.runtime.podStatus(p.metadata.uid), this.opts.nodeIP, this.startTimes.get(p.metadata.uid)) }));
  }

  stop(): void {
    this.ac.abort();
    clearTimeout(this.tick);
  }
}

/** A resource quantity in base units (cores, bytes); 0 when absent or unreadable. */
function quantity(q: unknown): number {
  if (typeof q === 'number') return q;
  const m = /^([+-]?\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$/.exec(String(q ?? '').trim());
  if (!m) return 0;
  const mult: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60, n: 1e-9, u: 1e-6, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };
  return parseFloat(m[1]) * (m[2] ? mult[m[2]] : 1);
}

/** A pod's requests (kube's PodRequests: the containers' sum, or the largest init container's if more, plus overhead). */
export function podRequests(pod: any): { cpu: number; memory: number } {
  const sum = { cpu: 0, memory: 0 };
  for (const c of pod.spec?.containers ?? []) {
    sum.cpu += quantity(c.resources?.requests?.cpu);
    sum.memory += quantity(c.resources?.requests?.memory);
  }
  for (const c of pod.spec?.initContainers ?? []) {
    sum.cpu = Math.max(sum.cpu, quantity(c.resources?.requests?.cpu));
    sum.memory = Math.max(sum.memory, quantity(c.resources?.requests?.memory));
  }
  sum.cpu += quantity(pod.spec?.overhead?.cpu);
  sum.memory += quantity(pod.spec?.overhead?.memory);
  return sum;
}
