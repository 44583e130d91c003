// WebSocket upgrades on the uWebSockets.js front end (exec, attach and port-forward to a node's
// agent). uWS owns its sockets and never hands one over, so the byte-for-byte proxy of kube's
// UpgradeAwareHandler is not possible here. Instead: the same request is first made to the
// agent as a WebSocket client (ws), offering the client's subprotocols; once the agent has
// accepted, uWS accepts the client's WebSocket with the protocol the agent chose, and
// messages are relayed both ways, binary or text as they came. The agent's refusal (any
// answer but 101) is given to the client as the agent wrote it, as kube does.
//
// Backpressure: the agent's socket is paused while uWS holds more than HIGH_WATER unsent to
// the client, and resumed on uWS's drain. The other way uWS cannot pause a WebSocket's
// reading: what the client sends faster than the agent takes is buffered by ws.
//
// Thread ownership: the thread that runs the uWS app (as uws-transport.ts).
import type uws from 'uWebSockets.js';
import { WebSocket } from 'ws';
import type { ApiRequest, ResponseSink } from './types.js';
import { dialFailure, forwardedHeaders, type UpgradeCarrier, type UpgradeTarget } from './upgrade.js';

/** client-bound bytes uWS may hold before the agent's socket is paused */
const HIGH_WATER = 1 << 20;
/** what uWS may buffer for one client before it drops messages (never reached: HIGH_WATER pauses first) */
const MAX_BACKPRESSURE = 64 << 20;

export interface RelayData {
  /** the agent's side */
  peer: WebSocket;
  /** the client's side, once uWS has opened it */
  ws?: uws.WebSocket<RelayData>;
  closed: boolean;
}

/** Close codes a peer may send in a close frame (RFC 6455 7.4). */
const sendableCode = (c: number): boolean => (c >= 1000 && c <= 1014 && c !== 1004 && c !== 1005 && c !== 1006) || (c >= 3000 && c <= 4999);

/** The app.ws behaviour that relays an accepted WebSocket to its agent. */
export function relayBehavior(upgrade: uws.WebSocketBehavior<RelayData>['upgrade']): uws.WebSocketBehavior<RelayData> {
  return {
    compression: 0,
    maxPayloadLength: 64 << 20,
    maxBackpressure: MAX_BACKPRESSURE,
    closeOnBackpressureLimit: 0,
    // exec sessions idle for long: uWS pings, and the client's pongs keep the connection
    idleTimeout: 960,
    sendPingsAutomatically: true,
    upgrade,
    open: (ws) => {
      const d = ws.getUserData();
      d.ws = ws;
      const peer = d.peer;
      peer.on('message', (data: Buffer, isBinary: boolean) => {
        if (d.closed) return;
        ws.send(data, isBinary);
        if (ws.getBufferedAmount() > HIGH_WATER) peer.pause();
      });
      peer.on('close', (code: number, reason: Buffer) => {
        if (d.closed) return;
        d.closed = true;
        ws.end(sendableCode(code) ? code : 1000, reason.subarray(0, 120));
      });
      peer.on('error', () => peer.terminate());
    },
    message: (ws, message, isBinary) => {
      const peer = ws.getUserData().peer;
      // (uWS reuses the ArrayBuffer once this returns)
      if (peer.readyState === WebSocket.OPEN) peer.send(Buffer.copyBytesFrom(new Uint8Array(message)), { binary: isBinary });
    },
    drain: (ws) => {
      if (ws.getBufferedAmount() < HIGH_WATER / 2) ws.getUserData().peer.resume();
    },
    close: (ws, code, message) => {
      const d = ws.getUserData();
      if (d.closed) return;
      d.closed = true;
      if (d.peer.readyState === WebSocket.OPEN) d.peer.close(sendableCode(code) ? code : 1000, Buffer.from(message).subarray(0, 120));
      else d.peer.terminate();
    },
  };
}

/** Headers that ws makes itself for its handshake (the client's would clash). */
const HANDSHAKE = /^(upgrade|connection|sec-websocket-.*)$/;

/**
 * The carrier of a WebSocket request that reached uWS's upgrade handler: proxy() connects
 * to the agent, then accepts the client (or answers with the agent's refusal).
 */
export function relayCarrier(req: ApiRequest, sink: ResponseSink, res: uws.HttpResponse, context: uws.us_socket_context_t, accepted: () => void): UpgradeCarrier {
  const key = req.headers['sec-websocket-key'] ?? '';
  const extensions = req.headers['sec-websocket-extensions'] ?? '';
  const protocols = (req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  return {
    protocol: 'websocket',
    proxy: (target: UpgradeTarget) =>
      new Promise<void>((resolve, reject) => {
        const headers: Record<string, string> = {};
        for (const [k, v] of forwardedHeaders(req, HANDSHAKE)) headers[k] = v;
        let peer: WebSocket;
        try {
          peer = new WebSocket(target.url.href.replace(/^http/, 'ws'), protocols, {
            ...target.tls,
            headers,
            perMessageDeflate: false,
            maxPayload: 64 << 20,
          });
        } catch (e) {
          reject(dialFailure(e as NodeJS.ErrnoException, target.url));
          return;
        }
        let settled = false;
        peer.once('open', () => {
          settled = true;
          if (sink.aborted) {
            peer.terminate();
            resolve();
            return;
          }
          accepted();
          res.cork(() => res.upgrade<RelayData>({ peer, closed: false }, key, peer.protocol, extensions, context));
          resolve();
        });
        peer.once('unexpected-response', (_r, answer) => {
          settled = true;
          const chunks: Buffer[] = [];
          answer.on('data', (c: Buffer) => chunks.push(c));
          answer.on('end', () => {
            const ct = answer.headers['content-type'];
            sink.send(answer.statusCode ?? 500, ct ? [['Content-Type', String(ct)]] : [], Buffer.concat(chunks));
            peer.terminate();
            resolve();
          });
          answer.on('error', () => {
            peer.terminate();
            sink.close();
            resolve();
          });
        });
        peer.on('error', (e: NodeJS.ErrnoException) => {
          if (settled) return;
          settled = true;
          reject(dialFailure(e, target.url));
        });
      }),
  };
}
