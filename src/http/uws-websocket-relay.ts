// WebSocket upgrades on the uWebSockets.js front end (exec, attach and port-forward to a node's
// agent). uWS owns its sockets and never hands one over, so the byte-for-byte proxy of kube's
// UpgradeAwareHandler is not possible here. Instead: the same request is first made to the
// agent as a WebSocket client (the handshake here, the framing ws's: ws-adopt.ts), offering the client's subprotocols; once the agent has
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
import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import { WebSocket } from 'ws';
import { errors } from '../errors.js';
import { acceptKey, adoptWebSocket, newKey, offeredProtocols } from './ws-adopt.js';
import type { ApiRequest, ResponseSink } from './types.js';

/** the most of an agent's refusal (its answer to an upgrade it did not take) that is read and passed on */
const REFUSAL_MAX_BYTES = 1 << 20;
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
        ws.cork(() => ws.send(data, isBinary));
        if (ws.getBufferedAmount() > HIGH_WATER) peer.pause();
      });
      peer.on('close', (code: number, reason: Buffer) => {
        if (d.closed) return;
        d.closed = true;
        ws.end(sendableCode(code) ? code : 1000, reason.subarray(0, 120));
      });
      peer.on('error', () => peer.terminate());
      if (peer.readyState !== WebSocket.OPEN) {
        // (the agent went away while uWS was accepting the client)
        d.closed = true;
        ws.end(1000);
        return;
      }
      // (paused since the agent's handshake, so that no message came before this side was open)
      peer.resume();
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
      if (d.peer.readyState === WebSocket.OPEN) {
        d.peer.close(sendableCode(code) ? code : 1000, Buffer.from(message).subarray(0, 120));
        // the agent answers the close frame; one that does not (busy, or its data still
        // queued behind the frame) loses the connection, so that its command ends either way
        const peer = d.peer;
        setTimeout(() => {
          if (peer.readyState !== WebSocket.CLOSED) peer.terminate();
        }, 2000).unref();
      } else d.peer.terminate();
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
  const offer = req.headers['sec-websocket-protocol'] ?? '';
  const protocols = offeredProtocols(offer);
  return {
    protocol: 'websocket',
    proxy: (target: UpgradeTarget) =>
      new Promise<void>((resolve, reject) => {
        // The handshake with the agent is made here (see ws-adopt.ts): the client's offer as it came.
        const headers: Record<string, string> = { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': newKey() };
        if (offer) headers['Sec-WebSocket-Protocol'] = offer;
        for (const [k, v] of forwardedHeaders(req, HANDSHAKE)) headers[k] = v;
        const host = target.url.hostname.replace(/^\[|\]$/g, '');
        const secure = target.url.protocol === 'https:';
        const r = (secure ? https : http).request({ ...(secure ? target.tls : {}), host, port: Number(target.url.port || (secure ? 443 : 80)), path: target.url.pathname + target.url.search, method: 'GET', headers, agent: false });
        let settled = false;
        r.on('upgrade', (answer, socket: Duplex, head: Buffer) => {
          settled = true;
          if (sink.aborted) {
            socket.destroy();
            resolve();
            return;
          }
          const protocol = String(answer.headers['sec-websocket-protocol'] ?? '');
          if (answer.headers['sec-websocket-accept'] !== acceptKey(headers['Sec-WebSocket-Key']) || (protocol && !protocols.includes(protocol))) {
            socket.destroy();
            reject(errors.dialingBackend('the backend\'s WebSocket handshake is not valid'));
            return;
          }
          const peer = adoptWebSocket(socket, head, 'client', protocol);
          peer.pause();
          accepted();
          res.cork(() => res.upgrade<RelayData>({ peer, closed: false }, key, protocol, extensions, context));
          resolve();
        });
        r.on('response', (answer) => {
          // the agent's refusal, given to the client as the agent wrote it
          settled = true;
          // (read up to REFUSAL_MAX_BYTES: an agent's refusal is a Status, never more)
          const chunks: Buffer[] = [];
          let n = 0;
          answer.on('data', (c: Buffer) => {
            n += c.length;
            if (n > REFUSAL_MAX_BYTES) return answer.destroy(new Error('refusal too large'));
            chunks.push(c);
          });
          answer.on('end', () => {
            const ct = answer.headers['content-type'];
            sink.send(answer.statusCode ?? 500, ct ? [['Content-Type', String(ct)]] : [], Buffer.concat(chunks));
            resolve();
          });
          answer.on('error', () => {
            sink.close();
            resolve();
          });
        });
        r.on('error', (e: NodeJS.ErrnoException) => {
          if (settled) return;
          settled = true;
          reject(dialFailure(e, target.url));
        });
        sink.onAborted(() => r.destroy());
        r.end();
      }),
  };
}
