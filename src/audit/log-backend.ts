// The log backend (--audit-log-path): one event per line, as JSON (an audit.k8s.io/v1 Event)
// or in the legacy text format, to a file or to standard out ("-").
//
// The file rotates as kube-apiserver's does (it uses lumberjack): when a write would take
// it past --audit-log-maxsize megabytes (100 when 0), it is renamed to
// <name>-<UTC time 2006-01-02T15-04-05.000><ext> and a new one is begun; backups beyond
// --audit-log-maxbackup or older than --audit-log-maxage days are then removed (0 keeps
// them), and --audit-log-compress gzips them.
//
// Writes are synchronous (one writeSync per batch): in blocking mode the line is on disk
// before the response completes; in batch mode the buffered backend calls this off the
// request's path.
import { closeSync, fchmodSync, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Writer } from './backend.js';
import { legacyLine, type AuditEvent } from './event.js';

export type LogFormat = 'json' | 'legacy';
export const LOG_FORMATS: readonly LogFormat[] = ['json', 'legacy'];

export interface LogFileOptions {
  path: string;
  format: LogFormat;
  /** days; 0 keeps backups whatever their age */
  maxAge: number;
  /** 0 keeps every backup */
  maxBackup: number;
  /** megabytes; 0 means lumberjack's default of 100 */
  maxSize: number;
  compress: boolean;
}

const MB = 1024 * 1024;
const DEFAULT_MAX_SIZE_MB = 100;

function backupStamp(d: Date): string {
  // 2006-01-02T15-04-05.000, UTC
  return d.toISOString().slice(0, 23).replace(/:/g, '-');
}

export class LogWriter implements Writer {
  readonly name = 'log';
  private fd: number;
  private size = 0;
  private readonly maxBytes: number;

  constructor(private o: LogFileOptions) {
    this.maxBytes = (o.maxSize > 0 ? o.maxSize : DEFAULT_MAX_SIZE_MB) * MB;
    if (o.path === '-') {
      this.fd = 1;
      return;
    }
    // Created (and its directory) at start, so a path that cannot be written fails start-up.
    mkdirSync(dirname(o.path), { recursive: true });
    this.fd = openSync(o.path, 'a', 0o600);
    // Audit events can carry request and response bodies (Secrets): a log that an earlier
    // version left readable to others is made the owner's only (a regular file: never a
    // device or pipe given as the path).
    const st = fstatSync(this.fd);
    if (st.isFile() && st.mode & 0o077) fchmodSync(this.fd, st.mode & 0o7700);
    this.size = statSync(o.path).size;
  }

  private encode(ev: AuditEvent): string {
    return this.o.format === 'legacy' ? `${legacyLine(ev)}\n` : `${JSON.stringify(ev)}\n`;
  }

  write(events: AuditEvent[]): boolean {
    let text = '';
    for (const ev of events) text += this.encode(ev);
    if (this.fd === 1) {
      // Standard out through the process's stream: a pipe there may be non-blocking, where a
      // writeSync could fail with EAGAIN; the stream keeps the lines in order either way.
      process.stdout.write(text);
      return true;
    }
    const buf = Buffer.from(text);
    if (this.size > 0 && this.size + buf.length > this.maxBytes) this.rotate();
    let off = 0;
    while (off < buf.length) off += writeSync(this.fd, buf, off);
    this.size += buf.length;
    return true;
  }

  private rotate(): void {
    closeSync(this.fd);
    const p = this.o.path;
    const ext = extname(p);
    const stem = basename(p, ext);
    renameSync(p, join(dirname(p), `${stem}-${backupStamp(new Date())}${ext}`));
    this.fd = openSync(p, 'a', 0o600);
    this.size = 0;
    try {
      this.prune(stem, ext);
    } catch (e) {
      console.error(`E audit: pruning audit log backups: ${(e as Error).message}`);
    }
  }

  /** Removes backups beyond the count or age limits; compresses the rest when asked. */
  private prune(stem: string, ext: string): void {
    const dir = dirname(this.o.path);
    const re = new RegExp(`^${stem.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-(\\d{4}-\\d\\d-\\d\\dT\\d\\d-\\d\\d-\\d\\d\\.\\d{3})${ext.replace(/\./g, '\\.')}(\\.gz)?$`);
    const backups: Array<{ file: string; time: number; gz: boolean }> = [];
    for (const f of readdirSync(dir)) {
      const m = re.exec(f);
      if (!m) continue;
      const [d, t] = m[1].split('T');
      const time = Date.parse(`${d}T${t.replace(/-/g, ':').replace(/:(\d{3})$/, '.$1')}Z`);
      backups.push({ file: join(dir, f), time, gz: Boolean(m[2]) });
    }
    backups.sort((a, b) => b.time - a.time);
    const cutoff = this.o.maxAge > 0 ? Date.now() - this.o.maxAge * 86400_000 : -Infinity;
    backups.forEach((b, i) => {
      if ((this.o.maxBackup > 0 && i >= this.o.maxBackup) || b.time < cutoff) {
        unlinkSync(b.file);
        return;
      }
      if (this.o.compress && !b.gz) {
        writeFileSync(`${b.file}.gz`, gzipSync(readFileSync(b.file)), { mode: 0o600 });
        unlinkSync(b.file);
      }
    });
  }

  async close(): Promise<void> {
    if (this.fd !== 1) closeSync(this.fd);
  }
}
