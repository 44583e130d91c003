// The node's registration and its two heartbeats (spec 2.10): kubelet's
// registerWithAPIServer, updateNodeStatus and the node lease controller.
//   - Registration: create the Node; when it exists, take it over (labels ours are set
//     again, as kubelet's reconcile does) and carry on. Retried until it succeeds.
//   - Status: computed every --node-status-update-frequency (10 s); written when it
//     changed, or when --node-status-report-frequency (5 min) has passed since the last write.
//   - Lease: kube-node-lease/<node>, holder the node, duration nodeLeaseDurationSeconds
//     (40 s), renewed every quarter of it (10 s); a failed renewal is retried after 200 ms,
//     doubling up to 7 s (kubelet's lease controller backoff).
//
// Thread ownership: the agent's main thread.
import type { ApiClient } from './api-client.js';
import { ApiError } from './api-client.js';
import { initialNode, measurePressure, nodeStatus, sameNodeStatus, type NodeSettings } from './node-status.js';

const microTime = (d = new Date()) => d.toISOString().replace(/(\.\d{3})Z$/, '$1000Z');
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((res) => {
    if (signal.aborted) return res();
    const onAbort = () => (clearTimeout(t), res());
    const t = setTimeout(() => (signal.removeEventListener('abort', onAbort), res()), ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });

export interface HeartbeatOptions {
  statusUpdateMs: number;
  statusReportMs: number;
  leaseDurationSeconds: number;
  log: (m: string) => void;
  /**
   * A condition whose status the agent just wrote differs from the one the server had (a
   * Ready=Unknown of the node lifecycle controller turned back to True): kubelet's
   * condition setters record NodeReady, NodeHasSufficientMemory, ... then.
   */
  onTransition?: (type: string, status: string) => void;
}

export class NodeHeartbeat {
  node: any;
  private lease: any;
  private lastWriteAt = 0;
  private readonly ac = new AbortController();
  /** whether the last status and lease writes went through (the watchdog's health) */
  healthy = false;
  leaseRenewals = 0;

  constructor(
    private readonly api: ApiClient,
    private readonly settings: NodeSettings,
    private readonly opts: HeartbeatOptions,
  ) {}

  private get path(): string {
    return `/api/v1/nodes/${encodeURIComponent(this.settings.nodeName)}`;
  }

  /** Registers the node, retrying with backoff until it is registered or stopped. */
  async register(): Promise<void> {
    let delay = 200;
    for (;;) {
      try {
        try {
          this.node = await this.api.post('/api/v1/nodes', initialNode(this.settings));
          this.opts.log(`Successfully registered node ${this.settings.nodeName}`);
        } catch (e) {
          if (!(e instanceof ApiError && e.code === 409)) throw e;
          // already there: take it over, keeping its other labels
          const want = initialNode(this.settings);
          this.node = await this.api.patch(this.path, { metadata: { labels: want.metadata.labels } });
          this.opts.log(`Node ${this.settings.nodeName} was previously registered`);
        }
        await this.writeStatus(true);
        return;
      } catch (e) {
        if (this.ac.signal.aborted) throw new Error('stopped');
        this.opts.log(`Unable to register node with API server: ${(e as Error).message}`);
        await sleep(delay, this.ac.signal);
        delay = Math.min(delay * 2, 7000);
      }
    }
  }

  /** Computes the status and writes it when it changed or the report period has passed. */
  async writeStatus(force = false): Promise<void> {
    // compared with the Node as the server has it now (kubelet's tryUpdateNodeStatus reads
    // it each time): a change made by someone else (the node lifecycle controller's
    // Ready=Unknown) is a change to write back at once
    if (!force) {
      try {
        this.node = await this.api.get(`${this.path}?resourceVersion=0`);
      } catch (e) {
        if (e instanceof ApiError && e.code === 404) {
          // deleted under us: register again (kubelet re-registers a node that disappears)
          await this.register();
          return;
        }
        throw e;
      }
    }
    const status = nodeStatus(this.settings, measurePressure(this.settings), this.node?.status?.conditions, new Date().toISOString().replace(/\.\d+Z$/, 'Z'));
    if (!force && sameNodeStatus(status, this.node?.status) && Date.now() - this.lastWriteAt < this.opts.statusReportMs) return;
    const before: any[] = Array.isArray(this.node?.status?.conditions) ? this.node.status.conditions : [];
    this.node = await this.api.patch(`${this.path}/status`, { status });
    this.lastWriteAt = Date.now();
    // (at registration the agent records its starting events itself)
    if (!force)
      for (const c of status.conditions) {
        const old = before.find((o) => o?.type === c.type);
        if (old && old.status !== c.status) this.opts.onTransition?.(c.type, c.status);
      }
  }

  private leaseBody(): any {
    const nodeRef = this.node?.metadata?.uid ? [{ apiVersion: 'v1', kind: 'Node', name: this.settings.nodeName, uid: this.node.metadata.uid }] : undefined;
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: this.settings.nodeName, namespace: 'kube-node-lease', ...(this.lease?.metadata ?? {}), ...(nodeRef ? { ownerReferences: nodeRef } : {}) },
      spec: { ...(this.lease?.spec ?? {}), holderIdentity: this.settings.nodeName, leaseDurationSeconds: this.opts.leaseDurationSeconds, renewTime: microTime() },
    };
  }

  /** One renewal: update the lease we hold, creating it when absent (kubelet's ensureLease + renew). */
  async renewLease(): Promise<void> {
    const path = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${encodeURIComponent(this.settings.nodeName)}`;
    if (!this.lease) {
      try {
        this.lease = await this.api.get(path);
      } catch (e) {
        if (!(e instanceof ApiError && e.code === 404)) throw e;
        this.lease = await this.api.post('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', this.leaseBody());
        this.leaseRenewals++;
        return;
      }
    }
    try {
      this.lease = await this.api.put(path, this.leaseBody());
      this.leaseRenewals++;
    } catch (e) {
      this.lease = undefined; // a conflict or a deletion: read it again next time
      throw e;
    }
  }

  /** The two loops, until stop(). */
  start(): void {
    const signal = this.ac.signal;
    const renewMs = (this.opts.leaseDurationSeconds * 1000) / 4;
    void (async () => {
      let backoff = 200;
      while (!signal.aborted) {
        try {
          await this.renewLease();
          backoff = 200;
          this.healthy = true;
          await sleep(renewMs, signal);
        } catch (e) {
          this.opts.log(`failed to update lease: ${(e as Error).message}; retrying in ${backoff}ms`);
          this.healthy = false;
          await sleep(backoff, signal);
          backoff = Math.min(backoff * 2, 7000);
        }
      }
    })();
    void (async () => {
      while (!signal.aborted) {
        await sleep(this.opts.statusUpdateMs, signal);
        if (signal.aborted) break;
        try {
          await this.writeStatus();
        } catch (e) {
          this.opts.log(`Error updating node status, will retry: ${(e as Error).message}`);
        }
      }
    })();
  }

  stop(): void {
    this.ac.abort();
  }
}
