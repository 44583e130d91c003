// The window size of a pseudo-terminal made by util-linux `script` (the process runtime's
// tty: a container or exec with tty: true), set from the resize channel of exec and attach
// (channel 4 of the v4/v5 WebSocket protocols, the resize stream of SPDY).
//
// Node cannot ioctl, and `script` takes no size (it copies its own stdin's, a pipe here),
// so the size is set from the terminal's other side: `script` runs the command as its child
// with the pty's slave end as fd 0; a TIOCSWINSZ there is the one kubelet's runtime makes on
// the master, and the kernel sends SIGWINCH to the terminal's foreground process group just
// the same. The ioctl is made by python3 when there is one (rows and columns in one call);
// otherwise by `stty -F /dev/pts/N cols W rows H`, which sets them one after the other (two
// SIGWINCH, the first with the new width and the old height). A resize that arrives before `script`
// has started its child is retried a few times; only the latest size is applied.
//
// Thread ownership: the agent's main thread (one resizer per tty session).
import { execFile } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

const RETRIES = 20;
const RETRY_MS = 50;
/** TIOCSWINSZ on the terminal named by argv[1], rows argv[2], columns argv[3] */
const PY_RESIZE = "import fcntl,os,struct,sys,termios\nfd=os.open(sys.argv[1],os.O_RDWR|os.O_NOCTTY)\nfcntl.ioctl(fd,termios.TIOCSWINSZ,struct.pack('HHHH',int(sys.argv[2]),int(sys.argv[3]),0,0))";
/** whether python3 can be run (unknown until the first resize) */
let havePython: boolean | undefined;

/** Sets the window size of a terminal device; calls done when it is set (or could not be). */
function setSize(tty: string, width: number, height: number, done: () => void): void {
  const stty = () => execFile('stty', ['-F', tty, 'cols', String(width), 'rows', String(height)], () => done());
  if (havePython === false) {
    stty();
    return;
  }
  execFile('python3', ['-c', PY_RESIZE, tty, String(height), String(width)], (err) => {
    if (!err) {
      havePython = true;
      return done();
    }
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') havePython = false;
    stty();
  });
}

/** The pids whose parent is pid (/proc/<pid>/task/<pid>/children, or a scan of /proc). */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    /* no CONFIG_PROC_CHILDREN: scan */
  }
  const out: number[] = [];
  for (const n of readdirSync('/proc')) {
    if (!/^\d+$/.test(n)) continue;
    try {
      const stat = readFileSync(`/proc/${n}/stat`, 'utf8');
      // the ppid is the second field after the command's closing parenthesis
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(n));
    } catch {
      /* gone */
    }
  }
  return out;
}

/** The pty slave that `script` (pid) gave its child, or undefined while there is none yet. */
export function scriptTerminal(scriptPid: number): string | undefined {
  for (const child of childrenOf(scriptPid)) {
    try {
      const tty = readlinkSync(`/proc/${child}/fd/0`);
      if (/^\/dev\/pts\/\d+$/.test(tty)) return tty;
    } catch {
      /* gone, or not ours */
    }
  }
  return undefined;
}

/** A resize function for the terminal of a `script` process (a no-op once it is gone). */
export function scriptResizer(scriptPid: () => number | undefined): (width: number, height: number) => void {
  let wanted: { width: number; height: number } | undefined;
  let busy = false;
  const apply = (tries: number) => {
    const pid = scriptPid();
    const size = wanted;
    if (!pid || !size) {
      busy = false;
      return;
    }
    const tty = scriptTerminal(pid);
    if (!tty) {
      if (tries <= 0) busy = false;
      else setTimeout(() => apply(tries - 1), RETRY_MS).unref();
      return;
    }
    setSize(tty, size.width, size.height, () => {
      // a newer size came while this one was set: set it too
      if (wanted !== size) apply(RETRIES);
      else busy = false;
    });
  };
  return (width, height) => {
    if (!Number.isInteger(width) || !Number.isInteger(height) || width < 0 || height < 0 || width > 0xffff || height > 0xffff) return;
    wanted = { width, height };
    if (busy) return;
    busy = true;
    apply(RETRIES);
  };
}
