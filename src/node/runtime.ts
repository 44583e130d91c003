// The node agent's container runtime seam (kubelet's CRI, reduced to what this agent needs).
//
// The agent (agent.ts) syncs the pods bound to its node through a ContainerRuntime; its
// HTTPS API's streaming endpoints (/containerLogs, /exec, /attach, /portForward, in
// src/node/streaming/) and the checkpoint endpoint call the same runtime. The default runtime
// (process-runtime.ts) runs each container's command as a local process; another runtime
// (a CRI client, the simulated fleet's phase-only runtime) implements this interface and is
// chosen by the agent's --container-runtime flag.
//
// Errors: a method that cannot find the pod or container throws RuntimeNotFoundError (the
// agent answers 404); any other failure is a plain Error (the agent answers 500).
//
// Thread ownership: one runtime per agent process, used from the agent's main thread.
import type { Duplex, Readable, Writable } from 'node:stream';

/** Which container of which pod. */
export interface ContainerRef {
  namespace: string;
  /** the pod's name */
  pod: string;
  /** the pod's uid ('' when the caller knows only the name: the runtime resolves the running pod) */
  uid: string;
  container: string;
}

export class RuntimeNotFoundError extends Error {}

/** kubelet's /containerLogs query (PodLogOptions as the API server passes them on). */
export interface LogOptions {
  follow?: boolean;
  previous?: boolean;
  tailLines?: number;
  sinceSeconds?: number;
  sinceTime?: Date;
  timestamps?: boolean;
  limitBytes?: number;
}

export interface StreamOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** A running exec or attach: its streams, resizes, and how it ended. */
export interface ExecSession {
  stdin?: Writable;
  stdout?: Readable;
  /** absent with a tty (stderr is merged into stdout, as a terminal does) */
  stderr?: Readable;
  resize(width: number, height: number): void;
  /** resolves when the command ends: its exit code, or why it could not run */
  exit: Promise<{ code: number } | { error: string }>;
  /** ends the session (the client went away) */
  close(): void;
}

/** A container's state as the runtime sees it, for the pod's status. */
export interface ContainerRuntimeStatus {
  name: string;
  state: 'waiting' | 'running' | 'terminated';
  reason?: string;
  exitCode?: number;
  startedAt?: string;
  finishedAt?: string;
  restartCount: number;
  ready: boolean;
  containerID?: string;
  /** why it is waiting or terminated, in words (optional: added for the process runtime) */
  message?: string;
  /** the previous instance's end, once restarted (kubelet's lastState.terminated; optional) */
  lastTerminated?: { exitCode: number; reason?: string; startedAt?: string; finishedAt?: string; containerID?: string };
}

export interface ContainerRuntime {
  /** for nodeInfo.containerRuntimeVersion, e.g. "process://0.1.0" */
  readonly version: string;
  /** starts what the pod needs and is not running (the kubelet's SyncPod); idempotent */
  syncPod(pod: any): Promise<void>;
  /** stops and forgets every container of the pod */
  killPod(uid: string, gracePeriodSeconds?: number): Promise<void>;
  /** the pod's containers as they are now (undefined: the runtime has no such pod) */
  podStatus(uid: string): ContainerRuntimeStatus[] | undefined;
  /** the container's log (a finite stream, or an endless one with follow until the signal aborts) */
  logs(ref: ContainerRef, opts: LogOptions, signal: AbortSignal): Promise<Readable>;
  exec(ref: ContainerRef, command: string[], opts: StreamOptions): Promise<ExecSession>;
  attach(ref: ContainerRef, opts: StreamOptions): Promise<ExecSession>;
  /** a connection to the port in the pod's network (here: the local host's port) */
  portForward(ref: Omit<ContainerRef, 'container'>, port: number): Promise<Duplex>;
  /** writes a checkpoint archive of the container to the path given (kubelet's CheckpointContainer) */
  checkpoint(ref: ContainerRef, archivePath: string, timeoutSeconds?: number): Promise<void>;
  /** stops everything (the agent's shutdown) */
  close(): Promise<void>;
  /**
   * optional (added with the process runtime): removes what an earlier run of the agent
   * left running, before the first syncPod; the number of processes it stopped
   */
  cleanupOrphans?(): number;
}
