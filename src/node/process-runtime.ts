// The default container runtime of the node agent: each container is a local process.
//
// What a container is here:
//   - its process runs `command` + `args` (kube's rule without an image: command replaces
//     the entrypoint, args the image's cmd; with neither, the runtime runs `sleep infinity`,
//     so that a pod of any image "runs"). The image is a name only: it is reported back in
//     the status and otherwise ignored; nothing is pulled.
//   - its own directory, <root-dir>/pods/<uid>/containers/<name>/, is its working directory
//     unless spec.workingDir names one (a path of the host: there is no image filesystem;
//     made when missing, as runc makes the cwd; a relative one fails the container with
//     CreateContainerError, as the OCI runtime refuses it), and is what a checkpoint
//     archives; exec and exec probes run in the same working directory; its environment is the container's env ($(VAR) references expanded; value,
//     fieldRef, secretKeyRef and configMapKeyRef through the agent's lookups; envFrom), PATH
//     and HOME from the agent, HOSTNAME the pod's name, and KUBESHARD_CONTAINER_DIR (the
//     container's directory: how cleanupOrphans knows its processes wherever they run).
//   - its stdout and stderr go to a log file per instance in the CRI log format
//     (<root-dir>/pods/<uid>/logs/<name>/<restartCount>.log, "time stream F|P text" lines),
//     which /containerLogs reads, previous=true reading the instance before; rotated at
//     containerLogMaxSize keeping containerLogMaxFiles files (cri-log.ts), and only the
//     current and the previous instance's logs are kept (kubelet's container GC).
//   - stopping: the preStop hook (exec, httpGet, sleep), SIGTERM to the process group, SIGKILL
//     when the grace period is over.
//   - restarts follow restartPolicy (Always; OnFailure on a non-zero exit; Never) with
//     kubelet's CrashLoopBackOff: 10 s doubling to 5 min, reset after 10 min of running.
//   - readiness and liveness probes (exec, httpGet, tcpSocket) against 127.0.0.1; no readiness
//     probe: ready once running; a failed liveness probe kills the container (then restartPolicy).
//     Startup probes are not run.
//   - exec runs a command beside the main process (same directory and environment); with a
//     tty it runs under util-linux `script` (a pseudo-terminal, resized from the resize
//     channel by a TIOCSWINSZ on its slave end: pty-resize.ts); without `script`, a tty
//     request runs without one.
//   - attach joins the main process's stdin (when the container has stdin: true) and output.
//   - portForward connects to 127.0.0.1:port (the pod's network is the host's).
//   - checkpoint stops the process group (SIGSTOP), archives the container's directory, its
//     log and a state file (checkpoint.json) into a tar written 0600, and resumes it.
// Init containers run one at a time before the others (a restartable one, a sidecar, only
// has to be running); ephemeral containers are not run.
// Beside it: cri-log.ts (the log files), probes.ts (probes and hooks), checkpoint-archive.ts.
//
// Thread ownership: the agent's main thread; child processes are ours alone.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { isAbsolute, join } from 'node:path';
import { PassThrough, type Duplex, type Readable } from 'node:stream';
import { writeCheckpointArchive } from './checkpoint-archive.js';
import { CriLogWriter, DEFAULT_LOG_ROTATION, readContainerLog, removeLogFiles, type LogRotation } from './cri-log.js';
import { runProbe } from './probes.js';
import { scriptResizer } from './pty-resize.js';
import { RuntimeNotFoundError, type ContainerRef, type ContainerRuntime, type ContainerRuntimeStatus, type ExecSession, type LogOptions, type StreamOptions } from './runtime.js';

export const PROCESS_RUNTIME_VERSION = 'process://0.1.0';
const BACKOFF_INITIAL_MS = 10_000;
const BACKOFF_MAX_MS = 300_000;
/** the environment variable naming a container's directory in its processes (cleanupOrphans) */
export const ORPHAN_MARKER = 'KUBESHARD_CONTAINER_DIR';

/** How the runtime reads the objects an env var names (the agent answers from the API server). */
export interface EnvLookups {
  secret(namespace: string, name: string): Promise<Record<string, string> | undefined>;
  configMap(namespace: string, name: string): Promise<Record<string, string> | undefined>;
}

export interface ProcessRuntimeOptions {
  rootDir: string;
  nodeName: string;
  nodeIP: string;
  lookups?: EnvLookups;
  log?: (m: string) => void;
  /** first restart delay, for tests (kubelet's 10 s by default) */
  backoffInitialMs?: number;
  /** KubeletConfiguration's containerLogMaxSize and containerLogMaxFiles (kubelet's 10Mi and 5 by default) */
  logRotation?: LogRotation;
  /** what kubelet records as a pod's Events (Pulled, Created, Started, Killing, BackOff, Unhealthy, Failed) */
  onEvent?: (pod: any, fieldPath: string, type: 'Normal' | 'Warning', reason: string, message: string) => void;
}

interface Instance {
  name: string;
  spec: any;
  id: string;
  restartCount: number;
  state: 'waiting' | 'running' | 'terminated';
  reason?: string;
  message?: string;
  exitCode?: number;
  startedAt?: string;
  finishedAt?: string;
  proc?: ChildProcess;
  exited?: Promise<void>;
  logPath: string;
  /** output listeners (attach sessions): stream -> chunk */
  listeners: Set<(stream: 'stdout' | 'stderr', chunk: Buffer) => void>;
  ready: boolean;
  /** the readiness and liveness probes' next runs */
  probeTimers: Array<NodeJS.Timeout | undefined>;
  restartTimer?: NodeJS.Timeout;
  backoffMs: number;
  lastTerminated?: ContainerRuntimeStatus['lastTerminated'];
  env: Record<string, string>;
  command: string[];
  /** the container's own directory (what a checkpoint archives) */
  dir: string;
  /** where its processes run: spec.workingDir, or its own directory */
  cwd: string;
  /** the main process runs under `script` (a pseudo-terminal) */
  tty: boolean;
  /** an init container (run in order before the others; see advance) */
  init: boolean;
}

interface PodRecord {
  uid: string;
  pod: any;
  dir: string;
  containers: Map<string, Instance>;
  stopping: boolean;
}

const haveScript = (() => {
  let v: boolean | undefined;
  return () => (v ??= spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0);
})();

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** kubelet's $(VAR) expansion: a defined name is replaced, $$ escapes, anything else stays. */
export function expandVars(s: string, env: Record<string, string>): string {
  return s.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name) => (m === '$$' ? '$' : name in env ? env[name] : m));
}

/** The process to run for a container (see the header). */
export function containerCommand(c: any, env: Record<string, string>): string[] {
  const cmd: string[] = (c.command ?? []).map((s: string) => expandVars(s, env));
  const args: string[] = (c.args ?? []).map((s: string) => expandVars(s, env));
  if (cmd.length) return [...cmd, ...args];
  if (args.length) return args;
  return ['sleep', 'infinity'];
}

/**
 * Whether a process is a container's or an exec's under podsDir: its working directory is
 * there, or (a container with a workingDir elsewhere) its environment names a directory there.
 */
function ownedBy(pid: string, podsDir: string): boolean {
  try {
    if ((readlinkSync(`/proc/${pid}/cwd`) + '/').startsWith(podsDir)) return true;
  } catch {
    return false; // gone, or not ours to read
  }
  try {
    const marker = `${ORPHAN_MARKER}=`;
    for (const kv of readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0')) if (kv.startsWith(marker) && (kv.slice(marker.length) + '/').startsWith(podsDir)) return true;
  } catch {
    /* not ours to read */
  }
  return false;
}

export class ProcessRuntime implements ContainerRuntime {
  readonly version = PROCESS_RUNTIME_VERSION;
  private readonly pods = new Map<string, PodRecord>();
  private readonly log: (m: string) => void;
  private closed = false;

  constructor(private readonly opts: ProcessRuntimeOptions) {
    this.log = opts.log ?? ((m) => console.error(m));
  }

  private event(rec: PodRecord, inst: Instance, type: 'Normal' | 'Warning', reason: string, message: string): void {
    try {
      this.opts.onEvent?.(rec.pod, `spec.${inst.init ? 'initContainers' : 'containers'}{${inst.name}}`, type, reason, message);
    } catch {
      /* an observer's failure is not the container's */
    }
  }

  private podDir(uid: string): string {
    return join(this.opts.rootDir, 'pods', uid);
  }

  /**
   * What an agent that died without stopping its containers left behind: every process
   * whose working directory is under <root-dir>/pods (a container's, or an exec's beside
   * it) is killed, and the old pods' directories removed, so that the pods start afresh and
   * never twice. The working directory, not a recorded PID, says whose a process is: a PID
   * may have been reused since. Call before the first syncPod.
   */
  cleanupOrphans(): number {
    const podsDir = join(this.opts.rootDir, 'pods') + '/';
    let killed = 0;
    let pids: string[] = [];
    try {
      pids = readdirSync('/proc').filter((n) => /^\d+$/.test(n) && Number(n) !== process.pid);
    } catch {
      return 0; // no /proc: nothing to find
    }
    for (const pid of pids) {
      if (!ownedBy(pid, podsDir)) continue;
      try {
        process.kill(Number(pid), 'SIGKILL');
        killed++;
      } catch {
        /* gone */
      }
    }
    for (const uid of existsSync(podsDir) ? readdirSync(podsDir) : []) if (!this.pods.has(uid)) rmSync(join(podsDir, uid), { recursive: true, force: true });
    if (killed) this.log(`killed ${killed} processes left by an earlier run of the agent`);
    return killed;
  }

  async syncPod(pod: any): Promise<void> {
    if (this.closed) return;
    const uid = pod.metadata.uid;
    let rec = this.pods.get(uid);
    if (!rec) {
      rec = { uid, pod, dir: this.podDir(uid), containers: new Map(), stopping: false };
      this.pods.set(uid, rec);
      mkdirSync(join(rec.dir, 'containers'), { recursive: true, mode: 0o700 });
      mkdirSync(join(rec.dir, 'logs'), { recursive: true, mode: 0o700 });
    }
    rec.pod = pod;
    await this.advance(rec);
  }

  /**
   * Starts what is due (kubelet's computePodActions, reduced): the init containers one at a
   * time in order, each to a successful exit (a restartable one, restartPolicy Always, a
   * sidecar: until it runs), then all the containers.
   */
  private async advance(rec: PodRecord): Promise<void> {
    if (rec.stopping || this.closed) return;
    for (const c of rec.pod.spec?.initContainers ?? []) {
      const inst = rec.containers.get(c.name);
      if (!inst) return this.start(rec, c, 0, undefined, true);
      if (c.restartPolicy === 'Always' ? inst.startedAt !== undefined : inst.state === 'terminated' && inst.exitCode === 0) continue;
      return; // running, waiting to restart, or failed for good
    }
    for (const c of rec.pod.spec?.containers ?? []) {
      if (!rec.containers.has(c.name)) await this.start(rec, c, 0);
    }
  }

  private async buildEnv(pod: any, c: any): Promise<Record<string, string>> {
    const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', HOME: process.env.HOME ?? '/', HOSTNAME: pod.metadata.name };
    const ns = pod.metadata.namespace;
    const lookups = this.opts.lookups;
    for (const from of c.envFrom ?? []) {
      const ref = from.secretRef ?? from.configMapRef;
      if (!ref || !lookups) continue;
      const data = from.secretRef ? await lookups.secret(ns, ref.name) : await lookups.configMap(ns, ref.name);
      if (!data) {
        if (ref.optional) continue;
        throw new Error(`${from.secretRef ? 'secret' : 'configmap'} "${ref.name}" not found`);
      }
      for (const [k, v] of Object.entries(data)) env[(from.prefix ?? '') + k] = v;
    }
    for (const e of c.env ?? []) {
      if (e.value !== undefined) env[e.name] = expandVars(String(e.value), env);
      else if (e.valueFrom?.fieldRef) env[e.name] = this.fieldValue(pod, e.valueFrom.fieldRef.fieldPath);
      else if (e.valueFrom?.secretKeyRef || e.valueFrom?.configMapKeyRef) {
        const ref = e.valueFrom.secretKeyRef ?? e.valueFrom.configMapKeyRef;
        const data = lookups ? (e.valueFrom.secretKeyRef ? await lookups.secret(ns, ref.name) : await lookups.configMap(ns, ref.name)) : undefined;
        const v = data?.[ref.key];
        if (v === undefined) {
          if (ref.optional) continue;
          throw new Error(data ? `couldn't find key ${ref.key} in ${e.valueFrom.secretKeyRef ? 'Secret' : 'ConfigMap'} ${ns}/${ref.name}` : `${e.valueFrom.secretKeyRef ? 'secret' : 'configmap'} "${ref.name}" not found`);
        }
        env[e.name] = v;
      } else env[e.name] = ''; // resourceFieldRef and the like: not supported, empty
    }
    return env;
  }

  private fieldValue(pod: any, path: string): string {
    const m = /^metadata\.(labels|annotations)\['(.*)'\]$/.exec(path);
    if (m) return pod.metadata?.[m[1]]?.[m[2]] ?? '';
    switch (path) {
      case 'metadata.name':
        return pod.metadata.name;
      case 'metadata.namespace':
        return pod.metadata.namespace;
      case 'metadata.uid':
        return pod.metadata.uid;
      case 'spec.nodeName':
        return this.opts.nodeName;
      case 'spec.serviceAccountName':
        return pod.spec?.serviceAccountName ?? '';
      case 'status.hostIP':
      case 'status.podIP':
      case 'status.hostIPs':
      case 'status.podIPs':
        return this.opts.nodeIP;
      default:
        return '';
    }
  }

  private async start(rec: PodRecord, c: any, restartCount: number, prev?: Instance, init = prev?.init ?? false): Promise<void> {
    const dir = join(rec.dir, 'containers', c.name);
    const logDir = join(rec.dir, 'logs', c.name);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    mkdirSync(logDir, { recursive: true, mode: 0o700 });
    const inst: Instance = {
      name: c.name,
      spec: c,
      id: randomBytes(32).toString('hex'),
      restartCount,
      state: 'waiting',
      reason: 'ContainerCreating',
      logPath: join(logDir, `${restartCount}.log`),
      listeners: new Set(),
      ready: false,
      probeTimers: [],
      backoffMs: prev?.backoffMs ?? 0,
      lastTerminated: prev?.lastTerminated,
      env: {},
      command: [],
      dir,
      cwd: dir,
      tty: false,
      init,
    };
    rec.containers.set(c.name, inst);
    try {
      inst.env = await this.buildEnv(rec.pod, c);
    } catch (e) {
      inst.reason = 'CreateContainerConfigError';
      inst.message = (e as Error).message;
      this.event(rec, inst, 'Warning', 'Failed', `Error: ${inst.message}`);
      // kubelet retries a config error on its next sync: so do we, after the backoff
      this.scheduleRestart(rec, inst, true);
      return;
    }
    if (rec.stopping || this.closed) return;
    // spec.workingDir (see the header): absolute, made when missing (as runc makes the cwd)
    if (c.workingDir) {
      let problem: string | undefined;
      if (!isAbsolute(c.workingDir)) problem = `failed to create container: working directory "${c.workingDir}" is not an absolute path`;
      else {
        try {
          mkdirSync(c.workingDir, { recursive: true, mode: 0o700 });
          if (!statSync(c.workingDir).isDirectory()) problem = `failed to create container: working directory "${c.workingDir}" is not a directory`;
        } catch (e) {
          problem = `failed to create container: working directory "${c.workingDir}": ${(e as Error).message}`;
        }
      }
      if (problem) {
        inst.reason = 'CreateContainerError';
        inst.message = problem;
        this.event(rec, inst, 'Warning', 'Failed', `Error: ${problem}`);
        this.scheduleRestart(rec, inst, true);
        return;
      }
      inst.cwd = c.workingDir;
    }
    // what says, after a crash of the agent, whose a process is (cleanupOrphans), wherever it runs
    inst.env[ORPHAN_MARKER] = dir;
    inst.command = containerCommand(c, inst.env);
    // images are names only: "present" by definition
    if (c.image) this.event(rec, inst, 'Normal', 'Pulled', `Container image "${c.image}" already present on machine`);
    this.event(rec, inst, 'Normal', 'Created', `Created container: ${c.name}`);
    const tty = !!c.tty && haveScript();
    inst.tty = tty;
    const [file, args] = tty ? ['script', ['-qfec', inst.command.map(quote).join(' '), '/dev/null']] : [inst.command[0], inst.command.slice(1)];
    const writer = new CriLogWriter(inst.logPath, this.opts.logRotation ?? DEFAULT_LOG_ROTATION);
    // kubelet's container GC keeps one dead instance per container (MaxPerPodContainer 1):
    // the one before this, for previous=true; older instances' logs go with their rotations
    for (let k = restartCount - 2; k >= 0 && existsSync(join(logDir, `${k}.log`)); k--) removeLogFiles(join(logDir, `${k}.log`));
    const startedAt = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    let proc: ChildProcess;
    try {
      proc = spawn(file, args, { cwd: inst.cwd, env: inst.env, detached: true, stdio: [c.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    } catch (e) {
      writer.close();
      this.terminated(rec, inst, 128, 'StartError', (e as Error).message, startedAt);
      return;
    }
    inst.proc = proc;
    proc.stdin?.on('error', () => {});
    const out = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
      writer.write(stream, chunk);
      for (const l of inst.listeners) l(stream, chunk);
    };
    proc.stdout!.on('data', out('stdout'));
    proc.stderr!.on('data', out('stderr'));
    inst.exited = new Promise<void>((res) => {
      let spawnError: Error | undefined;
      proc.on('error', (e) => (spawnError = e));
      proc.on('close', (code, signal) => {
        writer.close();
        if (spawnError && proc.pid === undefined) {
          this.event(rec, inst, 'Warning', 'Failed', `Error: failed to start "${inst.command[0]}": ${spawnError.message}`);
          this.terminated(rec, inst, 128, 'StartError', `failed to start "${inst.command[0]}": ${spawnError.message}`, startedAt);
        }
        else {
          const exit = code ?? 128 + (signal ? (osSignals[signal] ?? 9) : 9);
          this.terminated(rec, inst, exit, exit === 0 ? 'Completed' : 'Error', undefined, startedAt);
        }
        res();
      });
    });
    proc.on('spawn', () => {
      if (inst.state !== 'waiting') return;
      inst.state = 'running';
      inst.reason = undefined;
      inst.message = undefined;
      inst.startedAt = startedAt;
      this.event(rec, inst, 'Normal', 'Started', `Started container ${inst.name}`);
      this.startProbes(rec, inst);
      if (inst.init) void this.advance(rec).catch((e) => this.log(`start after ${inst.name}: ${(e as Error).message}`));
    });
  }

  private terminated(rec: PodRecord, inst: Instance, exitCode: number, reason: string, message: string | undefined, startedAt: string): void {
    for (const t of inst.probeTimers) clearTimeout(t);
    inst.state = 'terminated';
    inst.exitCode = exitCode;
    inst.reason = reason;
    inst.message = message;
    inst.ready = false;
    inst.startedAt ??= startedAt;
    inst.finishedAt = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    inst.proc = undefined;
    // an init container restarts on failure unless the pod never restarts; a sidecar always
    const podPolicy = rec.pod.spec?.restartPolicy ?? 'Always';
    const policy = inst.init ? (inst.spec.restartPolicy === 'Always' ? 'Always' : podPolicy === 'Never' ? 'Never' : 'OnFailure') : podPolicy;
    if (!rec.stopping && !this.closed && (policy === 'Always' || (policy === 'OnFailure' && exitCode !== 0))) this.scheduleRestart(rec, inst, false);
    else if (inst.init && exitCode === 0) void this.advance(rec).catch((e) => this.log(`start after ${inst.name}: ${(e as Error).message}`));
  }

  /** kubelet's CrashLoopBackOff: the next start after a doubling delay, reset after a long run. */
  private scheduleRestart(rec: PodRecord, inst: Instance, configError: boolean): void {
    const ranMs = inst.startedAt && inst.finishedAt ? Date.parse(inst.finishedAt) - Date.parse(inst.startedAt) : 0;
    const initial = this.opts.backoffInitialMs ?? BACKOFF_INITIAL_MS;
    inst.backoffMs = ranMs > 2 * BACKOFF_MAX_MS || inst.backoffMs === 0 ? initial : Math.min(inst.backoffMs * 2, BACKOFF_MAX_MS);
    const delay = inst.backoffMs;
    if (!configError) {
      const last = { exitCode: inst.exitCode ?? 0, reason: inst.reason, startedAt: inst.startedAt, finishedAt: inst.finishedAt, containerID: `process://${inst.id}` };
      // while it waits, the status says CrashLoopBackOff with the last run as lastState
      inst.lastTerminated = last;
      inst.state = 'waiting';
      inst.reason = 'CrashLoopBackOff';
      inst.message = `back-off ${Math.round(delay / 1000)}s restarting failed container=${inst.name} pod=${rec.pod.metadata.name}_${rec.pod.metadata.namespace}(${rec.uid})`;
      this.event(rec, inst, 'Warning', 'BackOff', `Back-off restarting failed container ${inst.name} in pod ${rec.pod.metadata.name}_${rec.pod.metadata.namespace}(${rec.uid})`);
    }
    inst.restartTimer = setTimeout(() => {
      if (rec.stopping || this.closed || rec.containers.get(inst.name) !== inst) return;
      void this.start(rec, inst.spec, configError ? inst.restartCount : inst.restartCount + 1, inst).catch((e) => this.log(`start ${inst.name}: ${(e as Error).message}`));
    }, delay);
    inst.restartTimer.unref();
  }

  /** Starts the container's probes: readiness (no probe: ready once running) and liveness. */
  private startProbes(rec: PodRecord, inst: Instance): void {
    const readiness = inst.spec.readinessProbe;
    if (!readiness) inst.ready = true;
    else
      this.probeLoop(rec, inst, readiness, 0, (ok) => {
        if (!ok) this.event(rec, inst, 'Warning', 'Unhealthy', 'Readiness probe failed');
        inst.ready = ok;
      });
    const liveness = inst.spec.livenessProbe;
    // a failed liveness probe kills the container (kubelet's "failed liveness probe, will be
    // restarted"); the pod's restart policy then decides what follows
    if (liveness)
      this.probeLoop(rec, inst, liveness, 1, (ok) => {
        if (ok || !inst.proc) return;
        this.event(rec, inst, 'Warning', 'Unhealthy', 'Liveness probe failed');
        this.event(rec, inst, 'Normal', 'Killing', `Container ${inst.name} failed liveness probe, will be restarted`);
        inst.message = `Container ${inst.name} failed liveness probe, will be restarted`;
        void this.stopInstance(inst, liveness.terminationGracePeriodSeconds ?? rec.pod.spec?.terminationGracePeriodSeconds ?? 30, false);
      });
  }

  /**
   * One probe's loop (kubelet's prober worker): after initialDelaySeconds, every
   * periodSeconds; the result flips after successThreshold successes or failureThreshold
   * failures in a row.
   */
  private probeLoop(rec: PodRecord, inst: Instance, p: any, slot: 0 | 1, onResult: (ok: boolean) => void): void {
    const period = (p.periodSeconds ?? 10) * 1000;
    const success = p.successThreshold ?? 1;
    const failure = p.failureThreshold ?? 3;
    let ok = 0;
    let bad = 0;
    const run = async () => {
      if (inst.state !== 'running' || rec.stopping) return;
      const passed = await this.probe(inst, p).catch(() => false);
      if (inst.state !== 'running' || rec.stopping) return;
      if (passed) {
        bad = 0;
        if (++ok >= success) onResult(true);
      } else {
        ok = 0;
        if (++bad >= failure) {
          bad = 0;
          onResult(false);
        }
      }
      if (inst.state === 'running' && !rec.stopping) inst.probeTimers[slot] = setTimeout(run, period).unref();
    };
    inst.probeTimers[slot] = setTimeout(run, (p.initialDelaySeconds ?? 0) * 1000).unref();
  }

  /** A lifecycle hook (exec, httpGet, sleep), as a probe runs, bounded by timeoutSeconds. */
  private async runHook(inst: Instance, hook: any, timeoutSeconds: number): Promise<void> {
    if (hook.sleep) {
      await new Promise((r) => setTimeout(r, Math.min(hook.sleep.seconds ?? 0, timeoutSeconds) * 1000));
      return;
    }
    await this.probe(inst, { ...hook, timeoutSeconds });
  }

  private probe(inst: Instance, p: any): Promise<boolean> {
    return runProbe(p, { dir: inst.cwd, env: inst.env, ports: inst.spec.ports ?? [] });
  }

  async killPod(uid: string, gracePeriodSeconds = 30): Promise<void> {
    const rec = this.pods.get(uid);
    if (!rec) return;
    rec.stopping = true;
    for (const i of rec.containers.values()) if (i.proc) this.event(rec, i, 'Normal', 'Killing', `Stopping container ${i.name}`);
    await Promise.all([...rec.containers.values()].map((i) => this.stopInstance(i, gracePeriodSeconds)));
    this.pods.delete(uid);
    rmSync(rec.dir, { recursive: true, force: true });
  }

  /** SIGTERM to the container's process group, SIGKILL once the grace period is over. */
  private async stopInstance(inst: Instance, graceSeconds: number, forGood = true): Promise<void> {
    if (forGood && inst.restartTimer) clearTimeout(inst.restartTimer);
    for (const t of inst.probeTimers) clearTimeout(t);
    const proc = inst.proc;
    if (!proc?.pid || !inst.exited) return;
    const signal = (s: NodeJS.Signals) => {
      try {
        process.kill(-proc.pid!, s);
      } catch {
        /* already gone */
      }
    };
    const deadline = Date.now() + Math.max(0, graceSeconds) * 1000;
    // kubelet's killContainer: the preStop hook first, within the grace period, then SIGTERM
    // with what is left of it, then SIGKILL
    const preStop = inst.spec.lifecycle?.preStop;
    if (preStop && graceSeconds > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.runHook(inst, preStop, graceSeconds).catch(() => {}), inst.exited, new Promise<void>((r) => (timer = setTimeout(r, Math.max(0, deadline - Date.now()))))]);
      clearTimeout(timer);
    }
    signal('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([inst.exited, new Promise<void>((r) => (timer = setTimeout(r, Math.max(0, deadline - Date.now()))))]);
    clearTimeout(timer);
    if (inst.proc) {
      signal('SIGKILL');
      await inst.exited;
    }
  }

  podStatus(uid: string): ContainerRuntimeStatus[] | undefined {
    const rec = this.pods.get(uid);
    if (!rec) return undefined;
    return [...rec.containers.values()].map((i) => ({
      name: i.name,
      state: i.state,
      reason: i.reason,
      message: i.message,
      exitCode: i.exitCode,
      startedAt: i.startedAt,
      finishedAt: i.finishedAt,
      restartCount: i.restartCount,
      ready: i.state === 'running' && i.ready,
      containerID: i.state === 'waiting' ? undefined : `process://${i.id}`,
      lastTerminated: i.lastTerminated,
    }));
  }

  /** The pod record of a ref (by uid, or by namespace and name when the uid is ''). */
  private find(ref: Omit<ContainerRef, 'container'>): PodRecord {
    if (ref.uid) {
      const r = this.pods.get(ref.uid);
      if (r && r.pod.metadata.name === ref.pod && r.pod.metadata.namespace === ref.namespace) return r;
    } else {
      for (const r of this.pods.values()) if (r.pod.metadata.name === ref.pod && r.pod.metadata.namespace === ref.namespace && !r.stopping) return r;
    }
    throw new RuntimeNotFoundError(`pod ${ref.namespace}/${ref.pod} not found`);
  }

  private instance(ref: ContainerRef): { rec: PodRecord; inst: Instance } {
    const rec = this.find(ref);
    const inst = rec.containers.get(ref.container);
    if (!inst) throw new RuntimeNotFoundError(`container ${ref.container} not found in pod ${ref.namespace}/${ref.pod}`);
    return { rec, inst };
  }

  async logs(ref: ContainerRef, opts: LogOptions, signal: AbortSignal): Promise<Readable> {
    const { rec, inst } = this.instance(ref);
    // kubelet's validateContainerLogStatus: "previous" is the run before the current one; a
    // container waiting to restart (CrashLoopBackOff) shows its last run as both
    let path = inst.logPath;
    let live = inst.finishedAt === undefined;
    if (opts.previous) {
      if (inst.reason !== 'CrashLoopBackOff') {
        if (inst.restartCount === 0) throw new RuntimeNotFoundError(`previous terminated container "${inst.name}" in pod "${rec.pod.metadata.name}" not found`);
        path = join(rec.dir, 'logs', inst.name, `${inst.restartCount - 1}.log`);
      }
      live = false;
    }
    return readContainerLog(path, opts, signal, live, () => inst.finishedAt !== undefined || rec.containers.get(inst.name) !== inst);
  }

  private runningInstance(ref: ContainerRef): { rec: PodRecord; inst: Instance } {
    const found = this.instance(ref);
    if (found.inst.state !== 'running') throw new Error(`container ${ref.container} is not running`);
    return found;
  }

  async exec(ref: ContainerRef, command: string[], opts: StreamOptions): Promise<ExecSession> {
    const { rec, inst } = this.runningInstance(ref);
    if (!command.length) throw new Error('no command given');
    const tty = opts.tty && haveScript();
    const [file, args] = tty ? ['script', ['-qfec', command.map(quote).join(' '), '/dev/null']] : [command[0], command.slice(1)];
    const child = spawn(file, args, { cwd: inst.cwd, env: inst.env, stdio: [opts.stdin ? 'pipe' : 'ignore', opts.stdout || tty ? 'pipe' : 'ignore', opts.stderr && !tty ? 'pipe' : 'ignore'] });
    child.stdin?.on('error', () => {});
    const exit = new Promise<{ code: number } | { error: string }>((res) => {
      let err: Error | undefined;
      child.on('error', (e) => (err = e));
      child.on('close', (code, sig) => {
        if (err && child.pid === undefined) res({ error: `failed to exec "${command[0]}": ${err.message}` });
        else res({ code: code ?? 128 + (sig ? (osSignals[sig] ?? 9) : 9) });
      });
    });
    return {
      stdin: child.stdin ?? undefined,
      stdout: child.stdout ?? undefined,
      stderr: tty ? undefined : (child.stderr ?? undefined),
      resize: tty ? scriptResizer(() => (child.exitCode === null && child.signalCode === null ? child.pid : undefined)) : () => {},
      exit,
      close: () => {
        try {
          child.kill('SIGKILL');
        } catch {
          /* gone */
        }
      },
    };
  }

  async attach(ref: ContainerRef, opts: StreamOptions): Promise<ExecSession> {
    const { inst } = this.runningInstance(ref);
    const tty = !!inst.spec.tty;
    const stdout = opts.stdout ? new PassThrough() : undefined;
    const stderr = opts.stderr && !tty ? new PassThrough() : undefined;
    const listener = (stream: 'stdout' | 'stderr', chunk: Buffer) => {
      if (stream === 'stdout' || tty) stdout?.write(chunk);
      else stderr?.write(chunk);
    };
    inst.listeners.add(listener);
    let stdin: PassThrough | undefined;
    const procStdin = inst.proc?.stdin;
    if (opts.stdin && procStdin) {
      stdin = new PassThrough();
      stdin.on('data', (d) => procStdin.write(d));
      // stdinOnce: the container's stdin closes when the first attached client's does
      stdin.on('end', () => {
        if (inst.spec.stdinOnce) procStdin.end();
      });
    }
    const done = () => {
      inst.listeners.delete(listener);
      stdout?.end();
      stderr?.end();
    };
    const exit = (inst.exited ?? Promise.resolve()).then(() => {
      done();
      return { code: inst.exitCode ?? 0 };
    });
    // the terminal is the container's own: a resize from an attached client sets its size
    const resize = inst.tty ? scriptResizer(() => inst.proc?.pid) : () => {};
    return { stdin, stdout, stderr, resize, exit, close: done };
  }

  async portForward(ref: Omit<ContainerRef, 'container'>, port: number): Promise<Duplex> {
    this.find(ref);
    return new Promise<Socket>((res, rej) => {
      const s = connect({ host: '127.0.0.1', port });
      s.once('connect', () => res(s));
      s.once('error', (e) => rej(new Error(`failed to connect to localhost:${port} inside namespace "${ref.pod}": ${e.message}`)));
    });
  }

  async checkpoint(ref: ContainerRef, archivePath: string, timeoutSeconds?: number): Promise<void> {
    const { rec, inst } = this.instance(ref);
    const proc = inst.proc;
    if (inst.state !== 'running' || !proc?.pid) throw new Error(`container ${ref.container} is not running`);
    const signal = (sig: NodeJS.Signals) => {
      try {
        process.kill(-proc.pid!, sig);
      } catch {
        /* gone */
      }
    };
    const state = {
      version: 1,
      runtime: PROCESS_RUNTIME_VERSION,
      pod: { namespace: rec.pod.metadata.namespace, name: rec.pod.metadata.name, uid: rec.uid },
      container: { name: inst.name, id: `process://${inst.id}`, image: inst.spec.image, command: inst.command, env: inst.env, pid: proc.pid, startedAt: inst.startedAt, restartCount: inst.restartCount },
      checkpointedAt: new Date().toISOString(),
    };
    // the process group holds still while its files are read (as CRIU stops the task)
    await writeCheckpointArchive(archivePath, { state, logPath: inst.logPath, dir: join(rec.dir, 'containers', inst.name) }, timeoutSeconds, () => signal('SIGSTOP'), () => signal('SIGCONT'));
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.pods.keys()].map((uid) => this.killPod(uid, 2)));
  }
}

/** signal numbers of Linux, for a killed process's exit code (128 + n) */
const osSignals: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGABRT: 6, SIGKILL: 9, SIGSEGV: 11, SIGPIPE: 13, SIGALRM: 14, SIGTERM: 15, SIGUSR1: 10, SIGUSR2: 12 };
