// exec and attach over a WebSocket with kube's channel protocols (apimachinery's
// httpstream/wsstream and util/remotecommand): every binary message starts with its channel,
// 0 stdin, 1 stdout, 2 stderr, 3 error (the command's end, as a Status in JSON), 4 resize
// ({"Width":w,"Height":h}); v5.channel.k8s.io adds 255, the client's close of a channel
// (255 0: stdin is over), which `kubectl cp` into a pod needs to end tar's input.
//
// Thread ownership: the agent's main thread.
import type { WebSocket } from 'ws';
import { PROTOCOL_V5, PROTOCOL_V4, STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE } from '../../http/channel-protocol.js';
import type { ExecSession } from '../runtime.js';

export { PROTOCOL_V5, PROTOCOL_V4 };
/** the channel protocols served, best first */
export const CHANNEL_PROTOCOLS = [PROTOCOL_V5, PROTOCOL_V4];


/** a socket holding more than this unsent pauses the command's output */
const HIGH_WATER = 1 << 20;

/** kube's Status for how the command ended (remotecommand's v4 error stream). */
export function exitStatus(command: string[], end: { code: number } | { error: string }): object {
  if ('error' in end) return { metadata: {}, status: 'Failure', message: end.error, reason: 'InternalError', code: 500 };
  if (end.code === 0) return { metadata: {}, status: 'Success' };
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: command '${command.join(' ')}' exited with ${end.code}: `,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(end.code) }] },
  };
}

/** Joins a running session to the WebSocket until the command ends or the client goes. */
export function serveChannels(ws: WebSocket, session: ExecSession, command: string[]): void {
  let over = false;
  const outputs = [session.stdout, session.stderr].filter((s) => s !== undefined);
  const send = (channel: number, data: Buffer) => {
    if (ws.readyState !== ws.OPEN) return;
    const frame = Buffer.allocUnsafe(data.length + 1);
    frame[0] = channel;
    data.copy(frame, 1);
    ws.send(frame, { binary: true }, () => {
      if (ws.bufferedAmount < HIGH_WATER / 2) for (const o of outputs) if (o.isPaused()) o.resume();
    });
    if (ws.bufferedAmount > HIGH_WATER) for (const o of outputs) o.pause();
  };
  const drained: Promise<void>[] = [];
  for (const [channel, stream] of [
    [STDOUT, session.stdout],
    [STDERR, session.stderr],
  ] as const) {
    if (!stream) continue;
    stream.on('data', (d: Buffer) => send(channel, typeof d === 'string' ? Buffer.from(d) : d));
    drained.push(new Promise((res) => {
      stream.once('end', res);
      stream.once('close', res);
      stream.once('error', res);
    }));
  }
  const stdin = session.stdin;
  if (stdin) {
    stdin.on('error', () => {}); // (the command may exit without reading its input)
    stdin.on('drain', () => ws.resume());
  }
  ws.on('message', (msg: Buffer, isBinary: boolean) => {
    if (!isBinary || msg.length === 0) return;
    const data = msg.subarray(1);
    switch (msg[0]) {
      case STDIN:
        if (stdin && !stdin.writableEnded && data.length && !stdin.write(data)) ws.pause();
        return;
      case RESIZE:
        try {
          const size = JSON.parse(data.toString()) as { Width?: number; Height?: number };
          if (typeof size.Width === 'number' && typeof size.Height === 'number') session.resize(size.Width, size.Height);
        } catch {
          // (a resize that does not parse is ignored, as kube's handler logs and goes on)
        }
        return;
      case CLOSE:
        if (ws.protocol === PROTOCOL_V5 && data[0] === STDIN && stdin && !stdin.writableEnded) stdin.end();
        return;
    }
  });
  ws.on('close', () => {
    if (!over) session.close();
    over = true;
  });
  ws.on('error', () => ws.terminate());
  void Promise.all([session.exit, Promise.all(drained)]).then(([end]) => {
    if (over) return;
    over = true;
    send(ERROR, Buffer.from(JSON.stringify(exitStatus(command, end))));
    ws.close(1000);
  });
}
