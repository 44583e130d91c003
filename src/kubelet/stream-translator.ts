// pods/exec and pods/attach from a WebSocket client to a node that speaks SPDY/3.1, as
// kube-apiserver's StreamTranslatorHandler does (apiserver/pkg/util/proxy/streamtranslator.go
// and websocket.go; feature TranslateStreamCloseWebsocketRequests, beta, on): a real kubelet
// serves exec over SPDY, and over WebSockets only up to v4.channel.k8s.io, which cannot say
// "stdin is over" (kubectl cp into a pod would hang). So the server itself terminates the
// client's WebSocket (v5.channel.k8s.io only, as kube's translator), and runs the command
// against the node as client-go's SPDY executor would (remotecommand v5..v1, the node's choice):
// - the WebSocket is accepted first; an empty message on the lowest channel the client
//   reads (stdout, else stderr, else error) says the connection is up (createWebSocketStreams);
// - a POST with Upgrade: SPDY/3.1 goes to the node; then streams error, stdin, stdout,
//   stderr (not with a TTY) and resize (with a TTY), each opened once the previous one is
//   answered (streamProtocolV2/V3's createStreams);
// - channel 0 goes to the stdin stream, and v5's CLOSE of channel 0 ends it (a SPDY FIN:
//   the half-close the v4 WebSocket lacks); resize messages ({"Width","Height"}, one JSON
//   value after another) are re-encoded onto the resize stream, with a TTY only;
// - stdout and stderr come back on channels 1 and 2; once both have ended, what the error
//   stream carried is read as client-go reads it (errorDecoderV4 for v4/v5, text before)
//   and the outcome goes on channel 3 as a Status: Success, kube's NonZeroExitCode Status
//   (codeExitToStatusError), a Status the node refused the upgrade with as it came, else an
//   InternalError ("Internal error occurred: error sending request: ...", "... unable to
//   upgrade connection: ..."); then the WebSocket closes (1000).
// Differences: a client that goes away ends the node's connection at once (kube's goes on
// until the command ends); the node's SPDY connection is pinged every 5 s (kube's
// PingPeriod) to keep it through idle periods.
//
// Backpressure: the node's socket is paused while the client holds more than HIGH_WATER
// unsent, and the client's reading (where the front end can pause it) while the node's socket
// holds more than HIGH_WATER unwritten (SPDY streams have no window here: spdystream has
// none).
//
// Thread ownership: one translation per client connection, on the thread of the front end
// that accepted it.
import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import { SpdyConnection, type SpdyStream } from '../http/spdy-connection.js';
import { readRefusal, type ServedWebSocket, type UpgradeCarrier, type UpgradeTarget } from '../http/upgrade.js';
import { offeredProtocols } from '../http/ws-adopt.js';
import { PROTOCOL_V4, PROTOCOL_V5, STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE } from '../http/channel-protocol.js';
import { dialError } from './kubelet-client.js';

/** what client-go's SPDY executor offers, best first (NewSPDYExecutorForTransports) */
export const SPDY_REMOTE_COMMAND_PROTOCOLS = [PROTOCOL_V5, PROTOCOL_V4, 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'];


const HIGH_WATER = 1 << 20;
/** the most of an unfinished resize value kept between messages */
const RESIZE_MAX_PENDING = 4096;
/** client-go waits this long for each stream's reply (httpstream/spdy createStreamResponseTimeout) */
const STREAM_REPLY_TIMEOUT_MS = 30_000;
const PING_PERIOD_MS = 5_000;

export interface RemoteCommandOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** kube's IsWebSocketRequestWithStreamCloseProtocol: a WebSocket that offers v5.channel.k8s.io. */
export function offersStreamCloseProtocol(headers: Record<string, string>): boolean {
  return (headers.upgrade ?? '').toLowerCase() === 'websocket' && offeredProtocols(headers['sec-websocket-protocol']).includes(PROTOCOL_V5);
}

type Status = Record<string, unknown>;

const success = (): Status => ({ metadata: {}, status: 'Success' });

/** apierrors.NewInternalError as the error channel carries it (no kind: json of the Status alone). */
export function internalStatus(message: string): Status {
  return { metadata: {}, status: 'Failure', message: `Internal error occurred: ${message}`, reason: 'InternalError', details: { causes: [{ message }] }, code: 500 };
}

/** codeExitToStatusError for client-go's CodeExitError of exit code rc. */
export function exitCodeStatus(rc: number): Status {
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: command terminated with exit code ${rc}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(rc) }] },
  };
}

/** A failure that is a Status already (the node's refusal decoded as one): written as it is. */
class StatusFailure extends Error {
  constructor(readonly status: Status) {
    super(String(status.message ?? ''));
  }
}

/**
 * What the error stream carried, read as client-go's stream protocol of that version reads it,
 * then made the Status the translator writes (StreamTranslatorHandler.ServeHTTP's cases).
 */
export function errorStreamStatus(protocol: string, message: Buffer): Status {
  if (message.length === 0) return success();
  const text = message.toString();
  if (protocol !== PROTOCOL_V5 && protocol !== PROTOCOL_V4) return internalStatus(`error executing remote command: ${text}`);
  let st: any;
  try {
    st = JSON.parse(text);
  } catch (e) {
    return internalStatus(`error stream protocol error: ${e instanceof Error ? e.message : String(e)} in ${JSON.stringify(text)}`);
  }
  if (st?.status === 'Success') return success();
  if (st?.status !== 'Failure') return internalStatus('error stream protocol error: unknown error');
  if (st.reason !== 'NonZeroExitCode') return internalStatus(String(st.message ?? ''));
  if (!st.details) return internalStatus('error stream protocol error: details must be set');
  const causes: any[] = Array.isArray(st.details.causes) ? st.details.causes : [];
  for (const c of causes) {
    if (c?.reason !== 'ExitCode') continue;
    const m = String(c.message ?? '');
    // (ParseUint(m, 10, 8): an exit code is 0..255)
    if (!/^\d+$/.test(m) || Number(m) > 255) return internalStatus(`error stream protocol error: invalid exit code value ${JSON.stringify(m)}`);
    return exitCodeStatus(Number(m));
  }
  return internalStatus('error stream protocol error: no ExitCode cause given');
}

/** Go's text for a request that failed before any answer (net/http's client error). */
function requestError(e: NodeJS.ErrnoException, url: URL): string {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const why = e.syscall ? `dial tcp ${url.host}: ${dialError(e, host)}` : e.message;
  return `error sending request: Post ${JSON.stringify(url.href)}: ${why}`;
}

export interface SpdyUpgrade {
  socket: Duplex;
  head: Buffer;
  /** the node's X-Stream-Protocol-Version ('' if it named none) */
  protocol: string;
}

/**
 * client-go's spdy.Negotiate: a POST that asks the node for SPDY/3.1 with these protocols.
 * Rejects with an Error in client-go's words, or a StatusFailure when the node's refusal is a Status.
 */
export function dialSpdy(target: UpgradeTarget, protocols: string[], extraHeaders: Record<string, string | string[]> = {}): Promise<SpdyUpgrade> {
  return new Promise((resolve, reject) => {
    const host = target.url.hostname.replace(/^\[|\]$/g, '');
    const secure = target.url.protocol === 'https:';
    const headers = { ...extraHeaders, Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': protocols, 'Content-Length': '0' };
    const r = (secure ? https : http).request({ ...(secure ? target.tls : {}), host, port: Number(target.url.port || (secure ? 443 : 80)), path: target.url.pathname + target.url.search, method: 'POST', headers, agent: false });
    let settled = false;
    r.on('upgrade', (answer, socket: Duplex, head: Buffer) => {
      settled = true;
      const connection = String(answer.headers.connection ?? '').toLowerCase();
      const upgrade = String(answer.headers.upgrade ?? '').toLowerCase();
      if (!connection.includes('upgrade') || !upgrade.includes('spdy/3.1')) {
        socket.destroy();
        reject(new Error('unable to upgrade connection: '));
        return;
      }
      resolve({ socket, head, protocol: String(answer.headers['x-stream-protocol-version'] ?? '').trim() });
    });
    r.on('response', (answer) => {
      settled = true;
      readRefusal(
        answer,
        (bytes) => {
          const body = bytes.toString();
          // (SpdyRoundTripper.NewConnection: a body that decodes as a Status is that Status)
          try {
            const st = JSON.parse(body);
            if (st && typeof st === 'object' && st.kind === 'Status') return reject(new StatusFailure(st));
          } catch {
            // (not JSON: the text is the message)
          }
          reject(new Error(`unable to upgrade connection: ${body.trim()}`));
        },
        () => reject(new Error('unable to upgrade connection: unable to read error from server response')),
      );
    });
    r.on('error', (e: NodeJS.ErrnoException) => {
      if (settled) return;
      settled = true;
      reject(new Error(requestError(e, target.url)));
    });
    r.end();
  });
}

/** Runs one exec or attach: accepts the client's WebSocket (v5) and translates it to SPDY towards the node. */
export function translateRemoteCommand(up: UpgradeCarrier, target: UpgradeTarget, opts: RemoteCommandOptions): void {
  const ws = up.accept(PROTOCOL_V5);
  if (ws) void new Translation(ws, target, opts).run();
}

class Translation {
  private over = false;
  private socket?: Duplex;
  private conn?: SpdyConnection;
  private pinger?: NodeJS.Timeout;
  private stdin?: SpdyStream;
  private stdinQueue: Buffer[] = [];
  private stdinQueued = 0;
  private stdinClosed = false;
  private resize?: SpdyStream;
  private sizes: string[] = [];
  private resizeText = '';
  private resizeBroken = false;

  constructor(
    private ws: ServedWebSocket,
    private target: UpgradeTarget,
    private opts: RemoteCommandOptions,
  ) {}

  private send(channel: number, data: Buffer): void {
    const frame = Buffer.allocUnsafe(data.length + 1);
    frame[0] = channel;
    data.copy(frame, 1);
    this.ws.send(frame);
    if (this.ws.bufferedAmount() > HIGH_WATER) this.socket?.pause();
  }

  async run(): Promise<void> {
    const { ws, opts } = this;
    this.send(opts.stdout ? STDOUT : opts.stderr ? STDERR : ERROR, Buffer.alloc(0));
    ws.onMessage((m) => this.fromClient(m));
    ws.onDrain(() => {
      if (ws.bufferedAmount() < HIGH_WATER / 2) this.socket?.resume();
    });
    ws.onClose(() => this.abort());
    let status: Status;
    try {
      status = await this.stream();
    } catch (e) {
      status = e instanceof StatusFailure ? e.status : internalStatus(e instanceof Error ? e.message : String(e));
    }
    this.finish(status);
  }

  /** The node's side, through to the outcome of the command (StreamWithContext). */
  private async stream(): Promise<Status> {
    const { opts } = this;
    const up = await dialSpdy(this.target, SPDY_REMOTE_COMMAND_PROTOCOLS);
    const socket = up.socket;
    this.socket = socket;
    if (this.over) {
      socket.destroy();
      return success();
    }
    const conn = new SpdyConnection(
      (frame, cb) => {
        if (socket.destroyed || socket.writableEnded) return cb?.(new Error('closed'));
        socket.write(frame, cb);
        if (socket.writableLength > HIGH_WATER) this.ws.pause();
      },
      // (a node opens no streams of its own)
      (s) => s.reset(),
      () => clearInterval(this.pinger),
      'client',
    );
    this.conn = conn;
    socket.on('data', (d: Buffer) => conn.feed(d));
    socket.on('drain', () => this.ws.resume());
    // (what was read is handled before the streams end: a short command's reply, output
    // and Status may come just before the node closes)
    socket.on('end', () => conn.endOfInput());
    socket.on('close', () => conn.endOfInput());
    socket.on('error', () => socket.destroy());
    if (up.head.length) conn.feed(up.head);
    this.pinger = setInterval(() => conn.ping(), PING_PERIOD_MS);
    this.pinger.unref();

    const open = async (type: string): Promise<SpdyStream> => {
      const s = conn.openStream({ streamtype: type });
      s.on('error', () => {});
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          s.accepted,
          new Promise((_, rej) => {
            timer = setTimeout(() => rej(new Error('timeout waiting for SYN_REPLY')), STREAM_REPLY_TIMEOUT_MS);
          }),
        ]);
      } finally {
        clearTimeout(timer);
      }
      return s;
    };
    const ended = (s: SpdyStream | undefined) =>
      new Promise<void>((res) => {
        if (!s) return res();
        s.once('end', res);
        s.once('close', res);
      });

    const protocol = up.protocol;
    const errorStream = await open('error');
    const errorText: Buffer[] = [];
    errorStream.on('data', (d: Buffer) => errorText.push(d));
    const errorDone = ended(errorStream);
    const stdinStream = opts.stdin ? await open('stdin') : undefined;
    const stdout = opts.stdout ? await open('stdout') : undefined;
    const stderr = opts.stderr && !opts.tty ? await open('stderr') : undefined;
    // (v1 and v2 have no resize stream)
    if (opts.tty && !['v2.channel.k8s.io', 'channel.k8s.io', ''].includes(protocol)) {
      this.resize = await open('resize');
      this.resize.resume();
      for (const s of this.sizes) this.resize.write(s);
      this.sizes = [];
    }
    // The client's input goes to the node only once every stream is open, as kube's
    // translator starts copying once it has created them all: stdin that ends (and a command
    // that exits on it) before the resize stream opens would lose the sizes sent before it.
    if (stdinStream) {
      const s = stdinStream;
      this.stdin = s;
      // (a node that ends its side of stdin ends ours too, as copyStdin's second half does)
      s.on('end', () => s.end());
      s.resume();
      for (const b of this.stdinQueue) s.write(b);
      this.stdinQueue = [];
      if (this.stdinQueued > HIGH_WATER && !(this.socket && this.socket.writableLength > HIGH_WATER)) this.ws.resume();
      this.stdinQueued = 0;
      if (this.stdinClosed) s.end();
    }
    stdout?.on('data', (d: Buffer) => this.send(STDOUT, d));
    stderr?.on('data', (d: Buffer) => this.send(STDERR, d));
    await Promise.all([ended(stdout), ended(stderr)]);
    await errorDone;
    return errorStreamStatus(protocol, Buffer.concat(errorText));
  }

  private fromClient(m: Buffer): void {
    if (this.over || m.length === 0) return;
    const data = m.subarray(1);
    switch (m[0]) {
      case STDIN:
        if (!this.opts.stdin || this.stdinClosed || data.length === 0) return;
        // (each message is a buffer of its own on either front end: no copy needed)
        if (this.stdin) this.stdin.write(data);
        else {
          // (before the node's stdin stream is open: held back as the node's socket would)
          this.stdinQueue.push(data);
          if ((this.stdinQueued += data.length) > HIGH_WATER) this.ws.pause();
        }
        return;
      case RESIZE:
        if (this.opts.tty) this.resized(data.toString());
        return;
      case CLOSE:
        // v5: the client is done with a channel; for stdin that is the stream's FIN
        if (data.length === 1 && data[0] === STDIN && this.opts.stdin && !this.stdinClosed) {
          this.stdinClosed = true;
          this.stdin?.end();
        }
        return;
    }
  }

  /** Resize events: JSON values one after another (a json.Decoder over the channel), each re-encoded as client-go's TerminalSize. */
  private resized(text: string): void {
    if (this.resizeBroken) return;
    this.resizeText += text;
    for (;;) {
      const s = this.resizeText.replace(/^\s+/, '');
      if (!s) {
        this.resizeText = '';
        return;
      }
      const end = jsonValueEnd(s);
      if (end < 0) {
        // (a resize is some thirty bytes: a value that never ends stops resize handling
        // instead of growing, and being scanned again, with every message)
        if (s.length > RESIZE_MAX_PENDING) {
          this.resizeBroken = true;
          this.resizeText = '';
        } else this.resizeText = s;
        return;
      }
      this.resizeText = s.slice(end);
      let size: any;
      try {
        size = JSON.parse(s.slice(0, end));
      } catch {
        // (a decode error ends resize handling, as handleResizeEvents' loop)
        this.resizeBroken = true;
        return;
      }
      const dim = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 0xffff ? v : 0);
      const line = `${JSON.stringify({ Width: dim(size?.Width), Height: dim(size?.Height) })}\n`;
      if (this.resize) this.resize.write(line);
      else this.sizes.push(line);
    }
  }

  /** The Status on the error channel, then the close (kube's writeStatus and conn.Close). */
  private finish(status: Status): void {
    if (this.over) return;
    this.over = true;
    this.send(ERROR, Buffer.from(JSON.stringify(status)));
    this.ws.close(1000);
    this.closeNode();
  }

  /** The client went away: the node's connection ends, and with it the command. */
  private abort(): void {
    if (this.over) return;
    this.over = true;
    this.closeNode();
  }

  private closeNode(): void {
    clearInterval(this.pinger);
    const socket = this.socket;
    if (!socket) return;
    socket.resume();
    this.conn?.goAway();
    socket.end();
    setTimeout(() => socket.destroy(), 2000).unref();
  }
}

/** Where the first complete JSON object or value in s ends (-1: not complete yet). */
function jsonValueEnd(s: string): number {
  if (s[0] !== '{' && s[0] !== '[') {
    // a scalar: up to the next whitespace or structural character
    const m = /^("(?:[^"\\]|\\.)*"|[^\s{}[\],"]+)/.exec(s);
    return m && m[0].length < s.length ? m[0].length : -1;
  }
  let depth = 0;
  let inString = false;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === '{' || ch === '[') depth++;
    else if ((ch === '}' || ch === ']') && --depth === 0) return i + 1;
  }
  return -1;
}
