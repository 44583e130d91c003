// portforward.k8s.io over SPDY (kubelet's pkg/kubelet/cri/streaming/portforward httpStreamHandler):
// the client opens, per forwarded TCP connection, an error stream and a data stream that
// carry the same requestid and port headers; once both are there the data stream is joined to
// a connection to the port in the pod's network, and a failure is written, as text, on the
// error stream. kubectl 1.33 carries the SPDY connection either over a plain SPDY/3.1 upgrade
// or tunneled in a WebSocket ("SPDY/3.1+portforward.k8s.io": each binary message some bytes
// of the SPDY connection).
//
// Thread ownership: the agent's main thread.
import type { Duplex } from 'node:stream';
import type { ContainerRef, ContainerRuntime } from '../runtime.js';
import { SpdyConnection, type SpdyStream } from '../../http/spdy-connection.js';

interface Pair {
  data?: SpdyStream;
  error?: SpdyStream;
}

/**
 * Serves one port-forward session over a SPDY connection whose bytes come through feed and
 * leave through write; returns the connection (its feed, and close when the carrier ends).
 */
export function servePortForward(
  ref: Omit<ContainerRef, 'container'>,
  runtime: ContainerRuntime,
  write: (frame: Buffer, cb?: (err?: Error | null) => void) => void,
  onClose: () => void,
): SpdyConnection {
  const pairs = new Map<string, Pair>();
  const open = new Set<Duplex>();
  const conn = new SpdyConnection(
    write,
    (stream) => {
      stream.reply();
      const type = stream.headers['streamtype'];
      // (a client without requestid opens the error stream, then the data stream: ids n and n+2)
      const key = stream.headers['requestid'] ?? String(type === 'error' ? stream.id : stream.id - 2);
      if (type !== 'data' && type !== 'error') {
        stream.reset();
        return;
      }
      const pair = pairs.get(key) ?? {};
      pairs.set(key, pair);
      pair[type] = stream;
      // the client ends its side of the error stream at once: nothing to read there
      if (type === 'error') stream.resume();
      if (pair.data && pair.error) {
        pairs.delete(key);
        void forward(pair.data, pair.error);
      }
    },
    () => {
      for (const c of open) c.destroy();
      open.clear();
      onClose();
    },
  );

  async function forward(data: SpdyStream, error: SpdyStream): Promise<void> {
    const portText = data.headers['port'] ?? '';
    const port = Number(portText);
    const fail = (why: string) => {
      error.end(`error forwarding port ${portText} to pod ${ref.pod}, uid ${ref.uid}: ${why}`);
      data.end();
    };
    if (!/^\d+$/.test(portText) || port < 1 || port > 65535) {
      fail(`invalid port ${JSON.stringify(portText)}`);
      return;
    }
    let target: Duplex;
    try {
      target = await runtime.portForward(ref, port);
    } catch (e) {
      fail(e instanceof Error ? e.message : String(e));
      return;
    }
    open.add(target);
    let failed = false;
    target.on('error', (e) => {
      failed = true;
      fail(e.message);
      target.destroy();
    });
    target.on('close', () => {
      open.delete(target);
      if (!failed) {
        data.end();
        error.end();
      }
    });
    data.on('error', () => target.destroy());
    data.on('close', () => target.destroy());
    // client -> port, and its FIN half-closes the connection; port -> client, and its end a FIN
    data.pipe(target);
    target.pipe(data);
  }

  return conn;
}
