// The node agent: one process that registers its Node, keeps its heartbeats, runs the
// pods bound to it through the runtime, and serves its HTTPS API (kubelet's Kubelet.Run,
// reduced). Start order: the HTTPS server (so the registered endpoint answers), the node's
// registration, READY=1 to systemd, then the heartbeats, the pods' watch and the watchdog.
// Stop: the loops end, the server closes, the runtime stops the containers (the process
// runtime cannot adopt its processes again after a restart, so it does not leave them).
//
// Thread ownership: the agent's main thread owns all of it.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ApiClient } from './api-client.js';
import { AgentAuth } from './agent-auth.js';
import type { EventRecorder } from './events.js';
import { startAgentServer, type AgentServer, type TlsMaterial } from './agent-server.js';
import { NodeHeartbeat } from './heartbeat.js';
import { parseQuantity, resources, type NodeSettings } from './node-status.js';
import { PodSync } from './pod-sync.js';
import type { ContainerRuntime } from './runtime.js';
import { SystemdNotifier } from './systemd-notify.js';

export interface AgentConfig {
  settings: NodeSettings;
  address: string;
  healthzAddress: string;
  healthzPort: number;
  tls: TlsMaterial;
  auth: ConstructorParameters<typeof AgentAuth>[1];
  checkpointEnabled: boolean;
  statusUpdateMs: number;
  statusReportMs: number;
  leaseDurationSeconds: number;
  registerNode: boolean;
  /** the KubeletConfiguration in effect, for /configz */
  effective?: unknown;
}

export class NodeAgent {
  readonly heartbeat: NodeHeartbeat;
  readonly pods: PodSync;
  readonly notifier: SystemdNotifier;
  private server: AgentServer | undefined;

  constructor(
    private readonly api: ApiClient,
    readonly runtime: ContainerRuntime,
    private readonly cfg: AgentConfig,
    private readonly log: (m: string) => void,
    private readonly events?: EventRecorder,
  ) {
    this.heartbeat = new NodeHeartbeat(api, cfg.settings, {
      statusUpdateMs: cfg.statusUpdateMs,
      statusReportMs: cfg.statusReportMs,
      leaseDurationSeconds: cfg.leaseDurationSeconds,
      log,
      onTransition: (type, status) => this.conditionEvent(type, status),
    });
    this.pods = new PodSync(api, runtime, {
      nodeName: cfg.settings.nodeName,
      nodeIP: cfg.settings.nodeIP,
      log,
      allocatable: () => {
        const a = resources(cfg.settings).allocatable;
        return { cpu: parseQuantity(a.cpu) ?? 0, memory: parseQuantity(a.memory) ?? 0, pods: Number(a.pods) };
      },
      onReject: (pod, reason, message) => events?.record({ kind: 'Pod', namespace: pod.metadata.namespace, name: pod.metadata.name, uid: pod.metadata.uid }, 'Warning', reason, message),
    });
    this.notifier = new SystemdNotifier({ log });
  }

  async start(): Promise<void> {
    const { settings } = this.cfg;
    mkdirSync(settings.rootDir, { recursive: true, mode: 0o700 });
    mkdirSync(join(settings.rootDir, 'checkpoints'), { recursive: true, mode: 0o700 });
    mkdirSync(join(settings.rootDir, 'pods'), { recursive: true, mode: 0o700 });
    const auth = new AgentAuth(this.api, this.cfg.auth);
    this.server = await startAgentServer(
      {
        auth,
        runtime: this.runtime,
        rootDir: settings.rootDir,
        checkpointEnabled: this.cfg.checkpointEnabled,
        pods: () => this.pods.podList(),
        podByName: (ns, name) => this.pods.byName(ns, name),
        syncLoopHealthy: () => true,
        configz: () => this.cfg.effective ?? {},
      },
      this.cfg.tls,
      this.cfg.address,
      settings.port,
      this.cfg.healthzAddress,
      this.cfg.healthzPort,
    );
    this.log(`Starting to listen on ${this.cfg.address}:${settings.port}`);
    // kubelet's node Events: the reference's uid is the node's name
    const nodeRef = { kind: 'Node' as const, name: settings.nodeName, uid: settings.nodeName };
    this.events?.record(nodeRef, 'Normal', 'Starting', 'Starting kubelet.');
    if (this.cfg.registerNode) await this.heartbeat.register();
    for (const c of this.heartbeat.node?.status?.conditions ?? []) this.conditionEvent(c.type, c.status);
    this.notifier.ready();
    this.heartbeat.start();
    this.runtime.cleanupOrphans?.();
    this.pods.start();
    this.notifier.startWatchdog(() => this.heartbeat.healthy);
    this.log(`Node ${settings.nodeName} is running`);
  }

  /** kubelet's node condition events ("Node n1 status is now: NodeReady"). */
  private conditionEvent(type: string, status: string): void {
    const on = status === 'True';
    const why: Record<string, string> = {
      MemoryPressure: on ? 'NodeHasInsufficientMemory' : 'NodeHasSufficientMemory',
      DiskPressure: on ? 'NodeHasDiskPressure' : 'NodeHasNoDiskPressure',
      PIDPressure: on ? 'NodeHasInsufficientPID' : 'NodeHasSufficientPID',
      Ready: on ? 'NodeReady' : 'NodeNotReady',
    };
    const name = this.cfg.settings.nodeName;
    if (why[type]) this.events?.record({ kind: 'Node', name, uid: name }, 'Normal', why[type], `Node ${name} status is now: ${why[type]}`);
  }

  async stop(): Promise<void> {
    this.notifier.stop();
    this.heartbeat.stop();
    this.pods.stop();
    await this.server?.close();
    await this.runtime.close();
    this.api.close();
  }
}
