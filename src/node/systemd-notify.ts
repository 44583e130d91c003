// systemd's notify protocol without a systemd dependency: READY=1 once the node is
// registered, WATCHDOG=1 every WATCHDOG_USEC/2 while the agent is healthy (kubelet's
// systemd watchdog, pkg/kubelet/watchdog), STOPPING=1 on shutdown, all as datagrams to
// NOTIFY_SOCKET (a path, or an abstract name written "@name").
//
// Node cannot send a unix datagram (node:dgram is UDP only, node:net unix sockets are
// streams), so the datagrams are sent by a small child process: python3 when present (one
// long-lived child that sends each line of its stdin as one datagram), else the
// `systemd-notify` command, one run per message. Either way the sender's PID is not the
// agent's, so the unit needs NotifyAccess=all (deploy/kubeshard-node.service). Without
// either helper the agent says so once and carries on (the unit then must not use
// Type=notify).
//
// Thread ownership: the agent's main thread.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';

const PY_SENDER = `
import os, socket, sys
addr = os.environ["NOTIFY_SOCKET"]
if addr.startswith("@"):
    addr = "\\0" + addr[1:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
for line in sys.stdin:
    msg = line.rstrip("\\n").replace("\\\\n", "\\n")
    try:
        s.sendto(msg.encode(), addr)
    except OSError as e:
        sys.stderr.write("notify: %s\\n" % e)
        sys.stderr.flush()
`;

function have(cmd: string, args: string[]): boolean {
  try {
    return spawnSync(cmd, args, { stdio: 'ignore', timeout: 5000 }).status === 0;
  } catch {
    return false;
  }
}

export interface NotifierOptions {
  env?: NodeJS.ProcessEnv;
  log?: (m: string) => void;
  /** the helper to use ('python3', 'systemd-notify'); found on PATH when unset */
  helper?: 'python3' | 'systemd-notify';
}

export class SystemdNotifier {
  private socket: string | undefined;
  private readonly env: NodeJS.ProcessEnv;
  private readonly log: (m: string) => void;
  private helper: 'python3' | 'systemd-notify' | 'none' | undefined;
  private child: ChildProcess | undefined;
  private watchdog: NodeJS.Timeout | undefined;

  constructor(opts: NotifierOptions = {}) {
    this.env = opts.env ?? process.env;
    this.socket = this.env.NOTIFY_SOCKET || undefined;
    this.log = opts.log ?? ((m) => console.error(m));
    this.helper = opts.helper;
  }

  /** Whether a notify socket was given (run by systemd with Type=notify). */
  get enabled(): boolean {
    return this.socket !== undefined;
  }

  /**
   * The watchdog interval in ms (WATCHDOG_USEC), or undefined when systemd asked for none
   * or asked another process (WATCHDOG_PID names a PID not ours), as sd_watchdog_enabled.
   */
  watchdogIntervalMs(): number | undefined {
    const usec = Number(this.env.WATCHDOG_USEC);
    if (!this.env.WATCHDOG_USEC || !Number.isFinite(usec) || usec <= 0) return undefined;
    const pid = this.env.WATCHDOG_PID;
    if (pid && Number(pid) !== process.pid) return undefined;
    return usec / 1000;
  }

  /** Sends one message ("READY=1", "WATCHDOG=1", ...); a no-op without NOTIFY_SOCKET. */
  notify(message: string): void {
    if (!this.socket) return;
    if (this.helper === undefined) this.helper = have('python3', ['-c', '']) ? 'python3' : have('systemd-notify', ['--help']) ? 'systemd-notify' : 'none';
    if (this.helper === 'none') {
      this.log('systemd notify: NOTIFY_SOCKET is set but neither python3 nor systemd-notify is there to send datagrams; not notifying');
      this.socket = undefined; // said once
      return;
    }
    if (this.helper === 'python3') {
      if (!this.child || this.child.exitCode !== null) {
        this.child = spawn('python3', ['-c', PY_SENDER], { stdio: ['pipe', 'ignore', 'pipe'], env: { ...process.env, NOTIFY_SOCKET: this.socket } });
        this.child.stderr!.on('data', (d) => this.log(String(d).trim()));
        this.child.on('error', (e) => this.log(`systemd notify: ${e.message}`));
        this.child.stdin!.on('error', () => {});
        this.child.unref();
        (this.child.stdin as any)?.unref?.();
      }
      this.child.stdin!.write(message.replace(/\n/g, '\\n') + '\n');
      return;
    }
    const p = spawn('systemd-notify', message.split('\n'), { stdio: 'ignore', env: { ...process.env, NOTIFY_SOCKET: this.socket } });
    p.on('error', (e) => this.log(`systemd notify: ${e.message}`));
  }

  ready(): void {
    this.notify('READY=1');
  }

  /** Pings the watchdog every half interval while healthy() holds (kubelet skips a ping when unhealthy). */
  startWatchdog(healthy: () => boolean = () => true): void {
    const interval = this.watchdogIntervalMs();
    if (!this.socket || interval === undefined || this.watchdog) return;
    this.watchdog = setInterval(() => {
      if (healthy()) this.notify('WATCHDOG=1');
    }, Math.max(1, Math.floor(interval / 2)));
    this.watchdog.unref();
  }

  stop(): void {
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = undefined;
    this.notify('STOPPING=1');
    const c = this.child;
    this.child = undefined;
    if (c) c.stdin!.end();
  }
}
