// One virtual node of the simulated fleet (`kubeshard node --simulate N`), in the way kwok
// fakes a kubelet: everything a kubelet says to the API server, nothing it does on the
// machine. It registers its Node (addresses, capacity, nodeInfo and the five conditions a
// kubelet posts), renews its Lease in kube-node-lease every heartbeat interval (retrying
// with kubelet's backoff, 200 ms doubling to 7 s), reports its status at the report
// frequency, and opens the watches a kubelet opens: its pods (spec.nodeName), its own Node,
// and each Secret and ConfigMap its pods use. Its pods go from Pending to Running and Ready
// with a pod IP as soon as they are seen (no processes), and a graceful deletion is confirmed
// at once (the delete with grace 0 a kubelet sends once its containers are stopped).
//
// Thread ownership: the fleet's main thread; each SimNode's state is its own.
import type { H2Pool, WatchHandle } from './h2-pool.js';

export interface SimNodeOptions {
  heartbeatMs: number;
  statusReportMs: number;
  /** the delay between seeing a pod and reporting it Running */
  podStartMs: number;
  leaseDurationSeconds: number;
  kubeletVersion: string;
}

const LEASE_BACKOFF_START_MS = 200;
const LEASE_BACKOFF_MAX_MS = 7000;
const WATCH_RETRY_MS = 1000;
/** kubelet's status manager's sync period (syncPeriod in pkg/kubelet/status/status_manager.go) */
const STATUS_RESYNC_MS = 10_000;

/** kube's MicroTime form (RFC 3339 with microseconds) */
export function microTime(ms = Date.now()): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

function rfc3339(ms = Date.now()): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The Secrets and ConfigMaps a pod uses (volumes, projected sources, env and envFrom), as kubelet's managers track them. */
export function podReferences(pod: any): string[] {
  const ns = pod?.metadata?.namespace ?? '';
  const out = new Set<string>();
  const add = (kind: string, name: unknown) => {
    if (typeof name === 'string' && name) out.add(`${kind}/${ns}/${name}`);
  };
  for (const v of pod?.spec?.volumes ?? []) {
    add('secrets', v?.secret?.secretName);
    add('configmaps', v?.configMap?.name);
    for (const s of v?.projected?.sources ?? []) {
      add('secrets', s?.secret?.name);
      add('configmaps', s?.configMap?.name);
    }
  }
  for (const c of [...(pod?.spec?.initContainers ?? []), ...(pod?.spec?.containers ?? [])]) {
    for (const f of c?.envFrom ?? []) {
      add('secrets', f?.secretRef?.name);
      add('configmaps', f?.configMapRef?.name);
    }
    for (const e of c?.env ?? []) {
      add('secrets', e?.valueFrom?.secretKeyRef?.name);
      add('configmaps', e?.valueFrom?.configMapKeyRef?.name);
    }
  }
  for (const s of pod?.spec?.imagePullSecrets ?? []) add('secrets', s?.name);
  return [...out];
}

interface PodState {
  ns: string;
  name: string;
  refs: string[];
  reported: boolean;
  deleting: boolean;
}

export class SimNode {
  private uid = '';
  private lease: any;
  private pods = new Map<string, PodState>();
  private refWatches = new Map<string, { count: number; handle?: WatchHandle; stopped: boolean }>();
  private timers = new Set<NodeJS.Timeout>();
  private watches = new Set<WatchHandle>();
  private stopped = false;
  private podSeq = 0;
  readonly stats = { leaseRenewals: 0, leaseFailures: 0, statusReports: 0, podsStarted: 0, podStartRetries: 0, podsDeleted: 0 };

  constructor(
    readonly name: string,
    private readonly index: number,
    private readonly client: H2Pool,
    private readonly o: SimNodeOptions,
  ) {}

  get internalIP(): string {
    return `10.${200 + ((this.index >> 16) & 31)}.${(this.index >> 8) & 255}.${this.index & 255}`;
  }

  /** the pod CIDR: 10.64.0.0/10 cut in /24s, one per node */
  private podIP(): string {
    const n = this.index;
    const host = (this.podSeq++ % 253) + 2;
    return `10.${64 + ((n >> 8) & 63)}.${n & 255}.${host}`;
  }

  private nodeConditions(now: string): any[] {
    const c = (type: string, status: string, reason: string, message: string) => ({ type, status, lastHeartbeatTime: now, lastTransitionTime: this.transition ?? now, reason, message });
    return [
      c('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
      c('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
      c('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
      c('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'),
      // a kubelet leaves this one to the network plugin or route controller; kwok's nodes carry it, and spec 2.10 lists five
      c('NetworkUnavailable', 'False', 'RouteCreated', 'RouteController created a route'),
    ];
  }
  private transition: string | undefined;

  private nodeObject(): any {
    const now = rfc3339();
    this.transition = now;
    const capacity = { cpu: '32', memory: '131072Mi', pods: '110', 'ephemeral-storage': '1Ti', 'hugepages-2Mi': '0' };
    return {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: this.name,
        labels: {
          'kubernetes.io/hostname': this.name,
          'kubernetes.io/os': 'linux',
          'kubernetes.io/arch': 'amd64',
          'beta.kubernetes.io/os': 'linux',
          'beta.kubernetes.io/arch': 'amd64',
          type: 'kubeshard-simulated',
        },
        annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'kubeshard.io/simulated': 'true' },
      },
      spec: {},
      status: {
        capacity,
        allocatable: { ...capacity, memory: '130048Mi' },
        conditions: this.nodeConditions(now),
        addresses: [
          { type: 'InternalIP', address: this.internalIP },
          { type: 'Hostname', address: this.name },
        ],
        daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
        nodeInfo: {
          machineID: '',
          systemUUID: '',
          bootID: '',
          kernelVersion: '6.1.0-simulated',
          osImage: 'kubeshard simulated node',
          containerRuntimeVersion: 'simulated://1.0.0',
          kubeletVersion: this.o.kubeletVersion,
          kubeProxyVersion: this.o.kubeletVersion,
          operatingSystem: 'linux',
          architecture: 'amd64',
        },
      },
    };
  }

  /** Registers the Node (kubelet's registerWithAPIServer: create, or take the existing one). */
  async register(): Promise<void> {
    const obj = this.nodeObject();
    for (let attempt = 0; ; attempt++) {
      if (this.stopped) return;
      try {
        const r = await this.client.request('POST', '/api/v1/nodes', obj);
        if (r.status === 201) {
          this.uid = r.json().metadata.uid;
          return;
        }
        if (r.status === 409) {
          const g = await this.client.request('GET', `/api/v1/nodes/${this.name}`);
          if (g.status === 200) {
            this.uid = g.json().metadata.uid;
            await this.reportStatus();
            return;
          }
        } else if (r.status < 500 && r.status !== 429) throw new Error(`register ${this.name}: ${r.status} ${r.body.slice(0, 300)}`);
      } catch (err) {
        if (attempt >= 8) throw err;
      }
      await this.sleep(Math.min(LEASE_BACKOFF_MAX_MS, LEASE_BACKOFF_START_MS * 2 ** attempt));
    }
  }

  /** Starts the heartbeats and watches; the first renewal falls at a random point of the first interval (nodes do not beat in step). */
  start(): void {
    this.watchPods('');
    this.watchOwnNode('');
    this.later(() => this.renewLease(0), Math.random() * this.o.heartbeatMs);
    this.later(() => this.statusLoop(), Math.random() * this.o.statusReportMs);
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const w of this.watches) w.close();
    this.watches.clear();
    for (const r of this.refWatches.values()) {
      r.stopped = true;
      r.handle?.close();
    }
    this.refWatches.clear();
  }

  private later(fn: () => void, ms: number): void {
    if (this.stopped) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.stopped) fn();
    }, ms);
    this.timers.add(t);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((r) => this.later(r, ms));
  }

  // ------------------------------------------------------------------ heartbeats

  /** kubelet's nodelease controller: renew (create when missing), then again after the interval; failures retried with backoff. */
  private async renewLease(failures: number): Promise<void> {
    const path = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${this.name}`;
    try {
      let r;
      if (!this.lease) {
        const g = await this.client.request('GET', path);
        if (g.status === 200) this.lease = g.json();
        else if (g.status !== 404) throw new Error(`lease get ${g.status}`);
      }
      if (!this.lease) {
        const lease = {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.name, namespace: 'kube-node-lease', ownerReferences: this.uid ? [{ apiVersion: 'v1', kind: 'Node', name: this.name, uid: this.uid }] : undefined },
          spec: { holderIdentity: this.name, leaseDurationSeconds: this.o.leaseDurationSeconds, renewTime: microTime() },
        };
        r = await this.client.request('POST', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', lease);
        if (r.status !== 201) throw new Error(`lease create ${r.status} ${r.body.slice(0, 200)}`);
      } else {
        const lease = { ...this.lease, spec: { ...this.lease.spec, holderIdentity: this.name, leaseDurationSeconds: this.o.leaseDurationSeconds, renewTime: microTime() } };
        r = await this.client.request('PUT', path, lease);
        if (r.status === 409 || r.status === 404) this.lease = undefined; // read afresh next try
        if (r.status !== 200) throw new Error(`lease update ${r.status}`);
      }
      this.lease = r.json();
      this.stats.leaseRenewals++;
      this.later(() => this.renewLease(0), this.o.heartbeatMs);
    } catch {
      this.stats.leaseFailures++;
      this.later(() => this.renewLease(failures + 1), Math.min(LEASE_BACKOFF_MAX_MS, LEASE_BACKOFF_START_MS * 2 ** failures));
    }
  }

  private async statusLoop(): Promise<void> {
    await this.reportStatus().catch(() => undefined);
    this.later(() => this.statusLoop(), this.o.statusReportMs);
  }

  /** kubelet's node status report: the conditions with a fresh lastHeartbeatTime (a strategic merge patch of status). */
  private async reportStatus(): Promise<void> {
    const patch = { status: { conditions: this.nodeConditions(rfc3339()) } };
    const r = await this.client.request('PATCH', `/api/v1/nodes/${this.name}/status`, patch, 'application/strategic-merge-patch+json');
    if (r.status === 200) this.stats.statusReports++;
  }

  // ------------------------------------------------------------------ watches

  /** kubelet's pod source: list then watch its pods by spec.nodeName, again from a fresh list when the watch ends. */
  private async watchPods(rv: string): Promise<void> {
    if (this.stopped) return;
    const sel = `fieldSelector=${encodeURIComponent(`spec.nodeName=${this.name}`)}`;
    try {
      if (!rv) {
        const r = await this.client.request('GET', `/api/v1/pods?${sel}&resourceVersion=0`);
        if (r.status !== 200) throw new Error(`pods list ${r.status}`);
        const list = r.json();
        const seen = new Set<string>();
        for (const p of list.items ?? []) {
          seen.add(p.metadata.uid);
          this.onPod('ADDED', p);
        }
        for (const uid of [...this.pods.keys()]) if (!seen.has(uid)) this.forget(uid);
        rv = list.metadata.resourceVersion;
      }
      let last = rv;
      const h = this.client.watch(
        `/api/v1/pods?${sel}&watch=true&allowWatchBookmarks=true&resourceVersion=${last}&timeoutSeconds=${300 + Math.floor(Math.random() * 300)}`,
        (ev) => {
          if (ev.type === 'ERROR') {
            last = '';
            return;
          }
          if (ev.object?.metadata?.resourceVersion) last = ev.object.metadata.resourceVersion;
          if (ev.type !== 'BOOKMARK') this.onPod(ev.type, ev.object);
        },
        (status) => {
          this.watches.delete(h);
          if (status !== 200) last = '';
          this.later(() => void this.watchPods(last), last ? 0 : WATCH_RETRY_MS);
        },
      );
      this.watches.add(h);
    } catch {
      this.later(() => void this.watchPods(''), WATCH_RETRY_MS);
    }
  }

  /** kubelet's informer on its own Node (what it reads its spec and labels from). */
  private watchOwnNode(rv: string): void {
    if (this.stopped) return;
    const sel = `fieldSelector=${encodeURIComponent(`metadata.name=${this.name}`)}`;
    let last = rv;
    const h = this.client.watch(
      `/api/v1/nodes?${sel}&watch=true&allowWatchBookmarks=true${last ? `&resourceVersion=${last}` : ''}&timeoutSeconds=${300 + Math.floor(Math.random() * 300)}`,
      (ev) => {
        if (ev.type === 'ERROR') last = '';
        else if (ev.object?.metadata?.resourceVersion) last = ev.object.metadata.resourceVersion;
      },
      (status) => {
        this.watches.delete(h);
        this.later(() => this.watchOwnNode(status === 200 ? last : ''), status === 200 ? 0 : WATCH_RETRY_MS);
      },
    );
    this.watches.add(h);
  }

  /** A watch of one Secret or ConfigMap (kubelet's watch-based manager), while some pod uses it. */
  private refWatch(ref: string, rv: string): void {
    const w = this.refWatches.get(ref);
    if (!w || w.stopped || this.stopped) return;
    const [kind, ns, name] = ref.split('/');
    const sel = `fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`;
    let last = rv;
    w.handle = this.client.watch(
      `/api/v1/namespaces/${ns}/${kind}?${sel}&watch=true&allowWatchBookmarks=true${last ? `&resourceVersion=${last}` : ''}&timeoutSeconds=${300 + Math.floor(Math.random() * 300)}`,
      (ev) => {
        if (ev.type === 'ERROR') last = '';
        else if (ev.object?.metadata?.resourceVersion) last = ev.object.metadata.resourceVersion;
      },
      (status) => {
        if (w.stopped) return;
        this.later(() => this.refWatch(ref, status === 200 ? last : ''), status === 200 ? 0 : WATCH_RETRY_MS);
      },
    );
  }

  private hold(refs: string[]): void {
    for (const ref of refs) {
      const w = this.refWatches.get(ref);
      if (w) w.count++;
      else {
        this.refWatches.set(ref, { count: 1, stopped: false });
        this.refWatch(ref, '');
      }
    }
  }

  private release(refs: string[]): void {
    for (const ref of refs) {
      const w = this.refWatches.get(ref);
      if (!w || --w.count > 0) continue;
      w.stopped = true;
      w.handle?.close();
      this.refWatches.delete(ref);
    }
  }

  // ------------------------------------------------------------------ pods

  private forget(uid: string): void {
    const st = this.pods.get(uid);
    if (!st) return;
    this.pods.delete(uid);
    this.release(st.refs);
  }

  private onPod(type: string, pod: any): void {
    const uid: string | undefined = pod?.metadata?.uid;
    if (!uid) return;
    if (type === 'DELETED') {
      this.forget(uid);
      return;
    }
    let st = this.pods.get(uid);
    if (!st) {
      st = { ns: pod.metadata.namespace, name: pod.metadata.name, refs: podReferences(pod), reported: false, deleting: false };
      this.pods.set(uid, st);
      this.hold(st.refs);
    }
    if (pod.metadata.deletionTimestamp) {
      if (!st.deleting) {
        st.deleting = true;
        void this.confirmDeletion(pod, st);
      }
      return;
    }
    const phase = pod.status?.phase;
    if (st.reported || phase === 'Running' || phase === 'Succeeded' || phase === 'Failed') {
      st.reported = true;
      return;
    }
    st.reported = true;
    if (this.o.podStartMs > 0) this.later(() => void this.startPod(pod, st!), this.o.podStartMs);
    else void this.startPod(pod, st);
  }

  /** The status a kubelet reports once the pod's containers run and pass readiness. */
  private async startPod(pod: any, st: PodState): Promise<void> {
    const now = rfc3339();
    const ip = this.podIP();
    const cond = (type: string) => ({ type, status: 'True', lastProbeTime: null, lastTransitionTime: now });
    const running = (c: any, i: number, ready: boolean) => ({
      name: c.name,
      image: c.image,
      imageID: `${c.image}@sha256:${'0'.repeat(64)}`,
      containerID: `simulated://${pod.metadata.uid.replace(/-/g, '').slice(0, 24)}${String(i).padStart(8, '0')}`,
      ready,
      started: true,
      restartCount: 0,
      state: { running: { startedAt: now } },
    });
    const status = {
      phase: 'Running',
      conditions: [cond('PodReadyToStartContainers'), cond('Initialized'), cond('Ready'), cond('ContainersReady'), cond('PodScheduled')],
      hostIP: this.internalIP,
      hostIPs: [{ ip: this.internalIP }],
      podIP: ip,
      podIPs: [{ ip }],
      startTime: now,
      qosClass: pod.status?.qosClass ?? 'BestEffort',
      ...(pod.spec?.initContainers?.length
        ? { initContainerStatuses: pod.spec.initContainers.map((c: any, i: number) => ({ ...running(c, i, true), started: false, ready: true, state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: now, finishedAt: now } } })) }
        : {}),
      containerStatuses: (pod.spec?.containers ?? []).map((c: any, i: number) => running(c, i, true)),
    };
    let cause = '';
    for (let attempt = 0; attempt < 5 && !this.stopped; attempt++) {
      try {
        const r = await this.client.request('PATCH', `/api/v1/namespaces/${st.ns}/pods/${st.name}/status`, { status }, 'application/merge-patch+json');
        if (r.status === 200) {
          this.stats.podsStarted++;
          return;
        }
        if (r.status === 404) return;
        cause = `${r.status} ${r.body.slice(0, 200)}`;
      } catch (err) {
        cause = err instanceof Error ? err.message : String(err);
      }
      await this.sleep(LEASE_BACKOFF_START_MS * 2 ** attempt);
    }
    if (this.stopped) return;
    // kubelet's status manager syncs every pod's status again every 10 s until it lands: so
    // does this node, while the pod is still its own (and said so once, for the bench's log)
    this.stats.podStartRetries++;
    if (this.stats.podStartRetries === 1) console.log(`fleet: ${this.name} could not report ${st.ns}/${st.name} Running in 5 attempts (${cause}); trying again every ${STATUS_RESYNC_MS / 1000} s`);
    const uid = pod.metadata.uid;
    this.later(() => {
      if (this.pods.get(uid) === st && !st.deleting) void this.startPod(pod, st);
    }, STATUS_RESYNC_MS);
  }

  /** kubelet's confirmation of a graceful deletion: delete with grace 0, on the pod's uid. */
  private async confirmDeletion(pod: any, st: PodState): Promise<void> {
    for (let attempt = 0; attempt < 5 && !this.stopped; attempt++) {
      try {
        const r = await this.client.request('DELETE', `/api/v1/namespaces/${st.ns}/pods/${st.name}`, {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          gracePeriodSeconds: 0,
          preconditions: { uid: pod.metadata.uid },
        });
        if (r.status === 200 || r.status === 202 || r.status === 404) {
          this.stats.podsDeleted++;
          return;
        }
        // 409: a write raced the delete (on etcd, a guarded delete meets a newer revision);
        // tried again, as the kubelet's next sync would (a pod of another uid answers 409
        // every time: the attempts run out and the pod is left to the next event)
      } catch {
        // retried below
      }
      await this.sleep(LEASE_BACKOFF_START_MS * 2 ** attempt);
    }
    st.deleting = false;
  }
}
