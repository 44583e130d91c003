// Container logs in the CRI log format (kubelet's and containerd's): one record per line,
// "<RFC 3339 nano time> <stdout|stderr> <F|P> <text>", P marking a part of a longer line.
// The writer appends a process's output; the reader serves kubelet's /containerLogs
// options over a file (sinceTime and sinceSeconds, tailLines, timestamps, limitBytes,
// follow until the container ends or the caller goes).
//
// Thread ownership: the agent's main thread (a writer per container instance).
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync, writeSync } from 'node:fs';
import { PassThrough, Readable } from 'node:stream';
import type { LogOptions } from './runtime.js';

/** a partial line longer than this is written as a "P" record (containerd's maxLen is 16 KiB) */
const MAX_LINE = 16 * 1024;

/** Appends a process's output to a CRI-format log file, line by line. */
export class CriLogWriter {
  private fd: number;
  private partial: Record<'stdout' | 'stderr', Buffer> = { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) };
  constructor(path: string) {
    this.fd = openSync(path, 'a', 0o600);
  }
  private line(stream: string, tag: 'F' | 'P', text: Buffer): void {
    writeSync(this.fd, Buffer.concat([Buffer.from(`${new Date().toISOString().replace('Z', '000000Z')} ${stream} ${tag} `), text, Buffer.from('\n')]));
  }
  write(stream: 'stdout' | 'stderr', chunk: Buffer): void {
    let buf = Buffer.concat([this.partial[stream], chunk]);
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
  }
  close(): void {
    for (const s of ['stdout', 'stderr'] as const) if (this.partial[s].length) this.line(s, 'P', this.partial[s]);
    closeSync(this.fd);
  }
}

interface LogRecord {
  time: Date;
  timeText: string;
  stream: string;
  text: Buffer; // with its newline when the record was a full line
}

function parseCriLine(line: Buffer): LogRecord | undefined {
  const a = line.indexOf(32);
  const b = line.indexOf(32, a + 1);
  const c = line.indexOf(32, b + 1);
  if (a < 0 || b < 0 || c < 0) return undefined;
  const timeText = line.subarray(0, a).toString();
  const tag = line.subarray(b + 1, c).toString();
  const body = line.subarray(c + 1);
  return { time: new Date(timeText), timeText, stream: line.subarray(a + 1, b).toString(), text: tag === 'P' ? Buffer.from(body) : Buffer.concat([body, Buffer.from('\n')]) };
}

function splitLines(buf: Buffer): { lines: Buffer[]; rest: Buffer } {
  const lines: Buffer[] = [];
  let i;
  while ((i = buf.indexOf(10)) >= 0) {
    lines.push(buf.subarray(0, i));
    buf = buf.subarray(i + 1);
  }
  return { lines, rest: buf };
}

function readAt(fd: number, buf: Buffer, position: number): void {
  let done = 0;
  while (done < buf.length) {
    const n = readSync(fd, buf, done, buf.length - done, position + done);
    if (n <= 0) break;
    done += n;
  }
}

/**
 * A container log as kubelet's /containerLogs options ask; with follow and a live
 * instance, new records until isOver() or the signal aborts.
 */
export function readContainerLog(path: string, opts: LogOptions, signal: AbortSignal, live: boolean, isOver: () => boolean): Readable {
  if (!existsSync(path)) return Readable.from([]);
  const since = opts.sinceTime ?? (opts.sinceSeconds ? new Date(Date.now() - opts.sinceSeconds * 1000) : undefined);
  const render = (r: LogRecord) => (opts.timestamps ? Buffer.concat([Buffer.from(r.timeText + ' '), r.text]) : r.text);
  // what is in the file now
  const content = readFileSync(path);
  const { lines, rest } = splitLines(content);
  let records = lines.map(parseCriLine).filter((r): r is LogRecord => !!r);
  if (since) records = records.filter((r) => r.time >= since);
  if (opts.tailLines !== undefined) {
    // tailLines counts full lines: a run of P records is one line with its F
    let n = 0;
    let start = records.length;
    while (start > 0 && n < opts.tailLines) {
      start--;
      if (records[start].text[records[start].text.length - 1] === 10) n++;
      if (n === opts.tailLines) {
        while (start > 0 && records[start - 1].text[records[start - 1].text.length - 1] !== 10) start--;
        break;
      }
    }
    records = records.slice(start);
  }
  const out = new PassThrough();
  let remaining = opts.limitBytes ?? Infinity;
  const push = (b: Buffer): boolean => {
    if (remaining <= 0) return false;
    const piece = b.length > remaining ? b.subarray(0, remaining) : b;
    remaining -= piece.length;
    out.write(piece);
    return remaining > 0;
  };
  let more = true;
  for (const r of records) if (!(more = push(render(r)))) break;
  if (!opts.follow || !live || !more) {
    out.end();
    return out;
  }
  // follow: read what is appended until the instance ends or the caller goes
  let offset = content.length - rest.length;
  let pending = Buffer.alloc(0);
  const tick = () => {
    if (signal.aborted) return finish();
    let size: number;
    try {
      size = statSync(path).size;
    } catch {
      return finish();
    }
    if (size > offset) {
      const fd = openSync(path, 'r');
      const buf = Buffer.alloc(size - offset);
      readAt(fd, buf, offset);
      closeSync(fd);
      offset = size;
      const split = splitLines(Buffer.concat([pending, buf]));
      pending = Buffer.from(split.rest);
      for (const l of split.lines) {
        const r = parseCriLine(l);
        if (r && !push(render(r))) return finish();
      }
    }
    if (isOver()) {
      // one last read happened above; the instance is over
      return finish();
    }
    timer = setTimeout(tick, 100);
  };
  let timer: NodeJS.Timeout | undefined = setTimeout(tick, 100);
  const finish = () => {
    clearTimeout(timer);
    out.end();
  };
  signal.addEventListener('abort', finish, { once: true });
  return out;
}
