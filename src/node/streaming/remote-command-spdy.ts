// exec and attach over a plain SPDY/3.1 upgrade (kubelet's remotecommand httpstream path):
// what kubectl falls back to when the WebSocket handshake fails, and what clients before
// 1.30 use. The client opens one stream per channel, named by its streamtype header (error,
// stdin, stdout, stderr, resize); once those its options call for are there the command's
// streams are joined to them; at the end the Status goes on the error stream (v4 and v5
// protocols), every stream gets its FIN and the connection closes. Resize events are JSON
// objects, one after another, on the resize stream.
//
// Thread ownership: the agent's main thread.
import type { Duplex } from 'node:stream';
import type { ExecSession, StreamOptions } from '../runtime.js';
import { exitStatus } from './remote-command.js';

/** the most of an unfinished resize message kept between reads (one is ≈ 30 bytes) */
const RESIZE_MAX_PENDING = 4096;
import { SpdyConnection, type SpdyStream } from '../../http/spdy-connection.js';

/** the remotecommand protocols served over SPDY (the error stream carries a Status in both) */
export const SPDY_CHANNEL_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];
/** how long the client has to open its streams (kubelet's stream creation timeout) */
const STREAMS_TIMEOUT_MS = 30_000;

/** Runs one command's session over the SPDY connection on the socket (the 101 already written). */
export function serveSpdyRemoteCommand(socket: Duplex, head: Buffer, opts: StreamOptions, start: () => Promise<ExecSession>, command: string[]): void {
  const streams: Partial<Record<string, SpdyStream>> = {};
  const wanted = ['error', ...(opts.stdin ? ['stdin'] : []), ...(opts.stdout ? ['stdout'] : []), ...(opts.stderr && !opts.tty ? ['stderr'] : []), ...(opts.tty ? ['resize'] : [])];
  let session: ExecSession | undefined;
  let started = false;
  let over = false;
  const finish = () => {
    if (over) return;
    over = true;
    clearTimeout(timer);
    session?.close();
    socket.end();
  };
  const conn = new SpdyConnection(
    (frame, cb) => {
      if (socket.destroyed || socket.writableEnded) return cb?.(new Error('closed'));
      socket.write(frame, cb);
    },
    (stream) => {
      stream.reply();
      const type = stream.headers['streamtype'] ?? '';
      streams[type] = stream;
      stream.on('error', () => {});
      if (type === 'error' || (type === 'stdout' && !opts.stdout) || (type === 'stderr' && (!opts.stderr || opts.tty))) stream.resume();
      if (!started && wanted.every((w) => streams[w])) {
        started = true;
        void run();
      }
    },
    finish,
  );
  const timer = setTimeout(() => {
    if (!started) finish();
  }, STREAMS_TIMEOUT_MS);

  async function run(): Promise<void> {
    try {
      session = await start();
    } catch (e) {
      streams.error!.end(JSON.stringify(exitStatus(command, { error: e instanceof Error ? e.message : String(e) })));
      setImmediate(finish);
      return;
    }
    if (over) {
      session.close();
      return;
    }
    const s = session;
    if (s.stdin && streams.stdin) streams.stdin.pipe(s.stdin).on('error', () => {});
    else streams.stdin?.resume();
    const drained: Promise<void>[] = [];
    for (const [name, out] of [
      ['stdout', s.stdout],
      ['stderr', s.stderr],
    ] as const) {
      const target = streams[name];
      if (!out || !target) continue;
      out.pipe(target, { end: false });
      drained.push(new Promise((res) => {
        out.once('end', res);
        out.once('close', res);
        out.once('error', res);
      }));
    }
    const resize = streams.resize;
    if (resize) {
      let buf = '';
      resize.on('data', (d: Buffer) => {
        buf += d.toString();
        // objects one after another: cut at each top-level closing brace
        let depth = 0;
        let from = 0;
        for (let i = 0; i < buf.length; i++) {
          if (buf[i] === '{') depth++;
          else if (buf[i] === '}' && --depth === 0) {
            try {
              const size = JSON.parse(buf.slice(from, i + 1)) as { Width?: number; Height?: number };
              if (typeof size.Width === 'number' && typeof size.Height === 'number') s.resize(size.Width, size.Height);
            } catch {
              // (a resize that does not parse is ignored)
            }
            from = i + 1;
          }
        }
        buf = buf.slice(from);
        // a resize is some thirty bytes: text that never closes its object is dropped, so that
        // neither the buffer nor the scan above grows with what the client sends
        if (buf.length > RESIZE_MAX_PENDING) buf = '';
      });
    }
    const [end] = await Promise.all([s.exit, Promise.all(drained)]);
    if (over) return;
    streams.error!.end(JSON.stringify(exitStatus(command, end)));
    streams.stdout?.end();
    streams.stderr?.end();
    // the FINs and the Status leave before the connection ends
    setImmediate(finish);
  }

  socket.on('data', (d: Buffer) => conn.feed(d));
  socket.on('close', () => {
    conn.close();
    finish();
  });
  socket.on('error', () => socket.destroy());
  if (head.length) conn.feed(head);
}
