// Container logs in the CRI log format (kubelet's and containerd's): one record per line,
// "<RFC 3339 nano time> <stdout|stderr> <F|P> <text>", P marking a part of a longer line.
//
// The writer appends a process's output and rotates the file as kubelet's container log
// manager does (pkg/kubelet/logs/container_log_manager.go): once the file would pass
// containerLogMaxSize, it is renamed to "<file>.<YYYYMMDD-HHMMSS>" (UTC) and a new file is
// started, and the oldest rotated files are removed so that at most containerLogMaxFiles
// files (the live one included) remain. Differences from kubelet, on purpose: the check is
// made on every record rather than every 10 s (a fast writer cannot run past the bound
// between two checks), so a file never passes the size unless one record alone does;
// rotated files are not gzip-compressed; two rotations within one second get "-1", "-2"...
// after the time instead of overwriting each other. Every file is 0600.
//
// The reader serves kubelet's /containerLogs options over the live file only, as
// kubelet's ReadLogs (pkg/kubelet/kuberuntime/logs): rotated files are not read, and
// previous=true reads the previous instance's live file. It streams: the file is read in
// chunks when the consumer asks for more (a Readable's _read), so at most about one chunk
// plus the stream's high-water mark is held, whatever the file's size. tailLines finds
// its start by reading backwards from the end in blocks, counting newlines (kubelet's
// tail.FindTailLineStartIndex: a line is a record, a P record counts as one); since
// (sinceSeconds, sinceTime, the later of the two) filters after the tail; limitBytes cuts
// after timestamps are prepended. follow waits on the directory's changes (inotify through
// fs.watch) with a periodic check as a fallback, follows the file across a rotation
// (draining the rotated file first, then any rotated since, while they are kept, so that
// nothing is lost to a rotation; kubelet reopens the live file and may skip some), and
// ends once the container's instance is over and everything it wrote has been read.
//
// Thread ownership: the agent's main thread (a writer per container instance, a reader per
// /containerLogs request).
import { closeSync, existsSync, fchmodSync, fstatSync, openSync, readdirSync, renameSync, rmSync, watch, writeSync, type FSWatcher } from 'node:fs';
import { open, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import type { LogOptions } from './runtime.js';

/** a partial line longer than this is written as a "P" record (containerd's maxLen is 16 KiB) */
const MAX_LINE = 16 * 1024;
/** how much the reader reads at once */
const READ_CHUNK = 64 * 1024;
/** the block tailLines reads backwards by */
const TAIL_BLOCK = 64 * 1024;
/**
 * a line longer than this is not a record of ours (at most MAX_LINE plus a short header):
 * it is skipped rather than gathered, so that a damaged file cannot make the reader hold it
 */
const MAX_RECORD = 1024 * 1024;
/** how often a follower checks for new output and the instance's end without a change event (kubelet's logForceCheckPeriod is 1 s) */
const FOLLOW_CHECK_MS = 250;

/** KubeletConfiguration's containerLogMaxSize (bytes; negative: never rotate) and containerLogMaxFiles. */
export interface LogRotation {
  maxSize: number;
  maxFiles: number;
}

/** kubelet's defaults: 10Mi and 5 files. */
export const DEFAULT_LOG_ROTATION: LogRotation = { maxSize: 10 * 1024 * 1024, maxFiles: 5 };

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** kubelet's rotated-file suffix, Go's "20060102-150405" (here in UTC). */
export function rotationStamp(d: Date): string {
  return `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}-${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}`;
}

/** The order key of a rotated file's name (its time, then its same-second sequence), or undefined for a file that is not one. */
function rotatedKey(logName: string, name: string): [string, number] | undefined {
  if (!name.startsWith(logName + '.')) return undefined;
  const m = /^(\d{8}-\d{6})(?:-(\d+))?(?:\.gz)?$/.exec(name.slice(logName.length + 1));
  return m ? [m[1], m[2] ? Number(m[2]) : 0] : undefined;
}

/** The rotated files of a log, oldest first (kubelet's GetAllLogs without the live file). */
export function rotatedLogs(path: string): string[] {
  const dir = dirname(path);
  const logName = basename(path);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .map((n) => ({ n, k: rotatedKey(logName, n) }))
    .filter((x): x is { n: string; k: [string, number] } => !!x.k)
    .sort((a, b) => (a.k[0] < b.k[0] ? -1 : a.k[0] > b.k[0] ? 1 : a.k[1] - b.k[1]))
    .map((x) => join(dir, x.n));
}

/** Removes a log and its rotated files (kubelet's ContainerLogManager.Clean). */
export function removeLogFiles(path: string): void {
  for (const p of rotatedLogs(path)) rmSync(p, { force: true });
  rmSync(path, { force: true });
}

/** Appends a process's output to a CRI-format log file, line by line, rotating it by size. */
export class CriLogWriter {
  private fd: number;
  private size: number;
  private partial: Record<'stdout' | 'stderr', Buffer> = { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) };
  constructor(
    private readonly path: string,
    private readonly rotation: LogRotation = DEFAULT_LOG_ROTATION,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.fd = CriLogWriter.openLog(path);
    this.size = fstatSync(this.fd).size;
  }

  private static openLog(path: string): number {
    const fd = openSync(path, 'a', 0o600);
    fchmodSync(fd, 0o600);
    return fd;
  }

  /** records made but not written yet: one write per chunk of output, not one per line */
  private queued: Buffer[] = [];

  private line(stream: string, tag: 'F' | 'P', text: Buffer): void {
    const time = this.now().toISOString().replace('Z', '000000Z');
    const record = Buffer.concat([Buffer.from(`${time} ${stream} ${tag} `), text, Buffer.from('\n')]);
    if (this.rotation.maxSize >= 0 && this.size > 0 && this.size + record.length > this.rotation.maxSize) this.rotate();
    this.queued.push(record);
    this.size += record.length;
  }

  /** Writes the queued records to the live file. */
  private flush(): void {
    if (!this.queued.length) return;
    const all = this.queued.length === 1 ? this.queued[0] : Buffer.concat(this.queued);
    this.queued = [];
    let done = 0;
    while (done < all.length) done += writeSync(this.fd, all, done, all.length - done);
  }

  /** kubelet's rotateLatestLog then removeExcessLogs: the live file renamed aside, the oldest rotated ones removed. */
  private rotate(): void {
    // (what was queued belongs to the file being rotated)
    this.flush();
    const stamp = rotationStamp(this.now());
    let target = `${this.path}.${stamp}`;
    for (let n = 1; existsSync(target) || existsSync(`${target}.gz`); n++) target = `${this.path}.${stamp}-${n}`;
    try {
      renameSync(this.path, target);
    } catch {
      return; // the file went away (the pod's directory removed): keep writing where we are
    }
    closeSync(this.fd);
    this.fd = CriLogWriter.openLog(this.path);
    this.size = 0;
    // the live file and at most maxFiles-1 rotated ones
    const rotated = rotatedLogs(this.path);
    const keep = Math.max(0, this.rotation.maxFiles - 1);
    for (const p of rotated.slice(0, Math.max(0, rotated.length - keep))) rmSync(p, { force: true });
  }

  write(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    let buf = this.partial[stream].length ? Buffer.concat([this.partial[stream], chunk]) : chunk;
    let i;
    while ((i = buf.indexOf(10)) >= 0) {
      this.line(stream, 'F', buf.subarray(0, i));
      buf = buf.subarray(i + 1);
    }
    while (buf.length > MAX_LINE) {
      this.line(stream, 'P', buf.subarray(0, MAX_LINE));
      buf = buf.subarray(MAX_LINE);
    }
    this.partial[stream] = Buffer.from(buf);
    this.flush();
  }

  close(): void {
    for (const s of ['stdout', 'stderr'] as const) if (this.partial[s].length) this.line(s, 'P', this.partial[s]);
    this.flush();
    closeSync(this.fd);
  }
}

interface LogRecord {
  time: Date;
  timeText: string;
  /** with its newline when the record was a full line */
  text: Buffer;
}

/** One CRI record (kubelet's parseCRILog); undefined for a line that is not one. */
function parseCriLine(line: Buffer): LogRecord | undefined {
  const a = line.indexOf(32);
  const b = line.indexOf(32, a + 1);
  const c = line.indexOf(32, b + 1);
  if (a < 0 || b < 0 || c < 0) return undefined;
  const stream = line.subarray(a + 1, b).toString();
  if (stream !== 'stdout' && stream !== 'stderr') return undefined;
  const timeText = line.subarray(0, a).toString();
  const time = new Date(timeText);
  if (Number.isNaN(time.getTime())) return undefined;
  const tag = line.subarray(b + 1, c).toString().split(':')[0];
  const body = line.subarray(c + 1);
  return { time, timeText, text: tag === 'P' ? body : Buffer.concat([body, Buffer.from('\n')]) };
}

/**
 * Where the last n lines of the first `size` bytes start (kubelet's FindTailLineStartIndex):
 * after the (n+1)-th newline from the end, or at 0 when there are not that many. Reads
 * backwards in blocks, holding one block.
 */
export async function tailStart(fh: FileHandle, size: number, n: number): Promise<number> {
  const buf = Buffer.allocUnsafe(Math.min(TAIL_BLOCK, Math.max(1, size)));
  let seen = 0;
  let right = size;
  while (right > 0) {
    const left = Math.max(0, right - buf.length);
    const len = right - left;
    let got = 0;
    while (got < len) {
      const { bytesRead } = await fh.read(buf, got, len - got, left + got);
      if (bytesRead <= 0) break;
      got += bytesRead;
    }
    for (let i = buf.lastIndexOf(10, len - 1); i >= 0; i = i > 0 ? buf.lastIndexOf(10, i - 1) : -1) {
      if (++seen === n + 1) return left + i + 1;
    }
    right = left;
  }
  return 0;
}

/** A container log read as kubelet's /containerLogs options ask (see the header). */
class ContainerLogStream extends Readable {
  private fh?: FileHandle;
  private ino = 0;
  private pos = 0;
  /** where reading stops without follow: the file's size when the request came */
  private stopAt = Infinity;
  private readonly buf = Buffer.allocUnsafe(READ_CHUNK);
  private partialParts: Buffer[] = [];
  private partialLength = 0;
  /** inside a line too long to be a record: skipped up to its newline */
  private skipping = false;
  private remaining: number;
  private readonly since?: Date;
  private readonly follow: boolean;
  private pumping = false;
  private askedAgain = false;
  private endPushed = false;
  private done = false;
  /** the instance was seen over: one more read to the end, then done */
  private lastPass = false;
  /** the path names a new file: the current one is read to its end, then the new one opened */
  private switchPending = false;
  private watcher?: FSWatcher;
  private wake?: () => void;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly path: string,
    private readonly logOpts: LogOptions,
    private readonly abortSignal: AbortSignal,
    live: boolean,
    private readonly isOver: () => boolean,
  ) {
    super({ highWaterMark: READ_CHUNK });
    this.follow = !!logOpts.follow && live;
    this.remaining = logOpts.limitBytes ?? Infinity;
    // kubelet's NewLogOptions: the later of sinceSeconds and sinceTime
    const fromSeconds = logOpts.sinceSeconds ? new Date(Date.now() - logOpts.sinceSeconds * 1000) : undefined;
    this.since = fromSeconds && logOpts.sinceTime ? (logOpts.sinceTime > fromSeconds ? logOpts.sinceTime : fromSeconds) : (logOpts.sinceTime ?? fromSeconds);
  }

  override _construct(callback: (error?: Error | null) => void): void {
    this.open().then(
      () => callback(),
      (e) => callback(e),
    );
  }

  private async open(): Promise<void> {
    try {
      this.fh = await open(this.path, 'r');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
        this.done = true; // no log (yet): nothing to read
        return;
      }
      throw e;
    }
    const st = await this.fh.stat();
    this.ino = st.ino;
    if (!this.follow) this.stopAt = st.size;
    if (this.logOpts.tailLines !== undefined) this.pos = await tailStart(this.fh, st.size, this.logOpts.tailLines);
    if (this.abortSignal.aborted) this.done = true;
    else this.abortSignal.addEventListener('abort', this.onAbort, { once: true });
  }

  private readonly onAbort = () => {
    // the caller went: what was read so far ends the stream
    this.finish();
    this.wake?.();
  };

  override _read(): void {
    if (this.done) {
      this.finish();
      return;
    }
    // a call while a pump runs (the stream asking again before it returned) is served after it:
    // the stream waits for a push after each call
    if (this.pumping) {
      this.askedAgain = true;
      return;
    }
    this.pumping = true;
    this.pump().then(
      () => {
        this.pumping = false;
        if (this.askedAgain) {
          this.askedAgain = false;
          this._read();
        }
      },
      (e) => {
        this.pumping = false;
        this.destroy(e);
      },
    );
  }

  /** Reads until something was pushed (the stream calls _read again when it wants more) or the log is over. */
  private async pump(): Promise<void> {
    for (;;) {
      if (this.done || this.destroyed) return;
      const want = Math.min(READ_CHUNK, this.stopAt - this.pos);
      const fh = this.fh;
      if (!fh) return;
      const n = want > 0 ? (await fh.read(this.buf, 0, want, this.pos)).bytesRead : 0;
      if (this.done || this.destroyed) return;
      if (n > 0) {
        this.pos += n;
        if (this.consume(this.buf.subarray(0, n))) return;
        continue;
      }
      // at the end of what there is
      if (!this.follow) {
        // a last line without its newline is still a line (kubelet's "incomplete line")
        if (this.partialLength && !this.skipping) this.emitLine(Buffer.concat(this.partialParts));
        this.finish();
        return;
      }
      if (this.switchPending) {
        await this.reopen();
        continue;
      }
      if (await this.rotated()) {
        this.switchPending = true; // read what the old file still has, then switch
        continue;
      }
      if (this.lastPass) {
        this.finish();
        return;
      }
      if (this.isOver()) {
        // everything the instance wrote is in the file now: one more read
        this.lastPass = true;
        continue;
      }
      await this.waitForChange();
    }
  }

  /** Whether the path now names another file than the one being read (a rotation). */
  private async rotated(): Promise<boolean> {
    try {
      return (await stat(this.path)).ino !== this.ino;
    } catch {
      return false; // gone (the pod removed): the instance's end will say so
    }
  }

  /**
   * The file to read after the current one: the rotated file that followed it (when several
   * rotations happened since it was opened, and they are still kept), else the live file.
   */
  private async nextFile(): Promise<string> {
    const rotated = rotatedLogs(this.path);
    for (let i = 0; i < rotated.length; i++) {
      try {
        if ((await stat(rotated[i])).ino === this.ino) return rotated[i + 1] ?? this.path;
      } catch {
        /* removed meanwhile */
      }
    }
    return this.path;
  }

  private async reopen(): Promise<void> {
    this.switchPending = false;
    let next: FileHandle;
    try {
      next = await open(await this.nextFile(), 'r');
    } catch {
      return;
    }
    if (this.done || !this.fh) {
      await next.close().catch(() => {});
      return;
    }
    await this.fh.close().catch(() => {});
    this.fh = next;
    this.ino = (await next.stat()).ino;
    this.pos = 0;
    // the rotated file ended with a whole record; anything else is dropped
    this.partialParts = [];
    this.partialLength = 0;
    this.skipping = false;
  }

  private waitForChange(): Promise<void> {
    return new Promise<void>((resolve) => {
      if (!this.watcher) {
        try {
          this.watcher = watch(dirname(this.path), { persistent: false }, () => this.wake?.());
          this.watcher.on('error', () => {
            this.watcher?.close();
          });
        } catch {
          /* no watch: the periodic check alone */
        }
      }
      const done = () => {
        clearTimeout(this.timer);
        this.wake = undefined;
        resolve();
      };
      this.wake = done;
      this.timer = setTimeout(done, FOLLOW_CHECK_MS);
    });
  }

  /** Splits a chunk into lines and emits the complete ones; whether anything was pushed (or the stream ended). */
  private consume(chunk: Buffer): boolean {
    let pushed = false;
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) break;
      const piece = chunk.subarray(start, nl);
      start = nl + 1;
      if (this.skipping) {
        this.skipping = false;
        continue;
      }
      let line = piece;
      if (this.partialLength) {
        line = Buffer.concat([...this.partialParts, piece]);
        this.partialParts = [];
        this.partialLength = 0;
      }
      if (this.emitLine(line)) pushed = true;
      if (this.done) return true;
    }
    const rest = chunk.subarray(start);
    if (rest.length && !this.skipping) {
      if (this.partialLength + rest.length > MAX_RECORD) {
        this.partialParts = [];
        this.partialLength = 0;
        this.skipping = true;
      } else {
        // a copy: the read buffer is reused
        this.partialParts.push(Buffer.from(rest));
        this.partialLength += rest.length;
      }
    }
    return pushed;
  }

  /** One line: parsed, filtered by since, rendered, cut by limitBytes, pushed; whether it was pushed. */
  private emitLine(line: Buffer): boolean {
    const r = parseCriLine(line);
    if (!r || (this.since && r.time < this.since)) return false;
    let out = this.logOpts.timestamps ? Buffer.concat([Buffer.from(r.timeText + ' '), r.text]) : r.text;
    if (out.length > this.remaining) out = out.subarray(0, this.remaining);
    this.remaining -= out.length;
    // a copy: the line may be a view of the reused read buffer
    this.push(Buffer.from(out));
    if (this.remaining <= 0) this.finish();
    return true;
  }

  private cleanup(): void {
    this.abortSignal.removeEventListener('abort', this.onAbort);
    clearTimeout(this.timer);
    this.watcher?.close();
    this.watcher = undefined;
    const fh = this.fh;
    this.fh = undefined;
    void fh?.close().catch(() => {});
  }

  private finish(): void {
    this.done = true;
    if (this.endPushed) return;
    this.endPushed = true;
    this.cleanup();
    if (!this.destroyed) this.push(null);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.done = true;
    this.cleanup();
    callback(error);
  }
}

/**
 * A container log as kubelet's /containerLogs options ask; with follow and a live
 * instance, new records until isOver() (and all it wrote is read) or the signal aborts.
 */
export function readContainerLog(path: string, opts: LogOptions, signal: AbortSignal, live: boolean, isOver: () => boolean): Readable {
  return new ContainerLogStream(path, opts, signal, live, isOver);
}
