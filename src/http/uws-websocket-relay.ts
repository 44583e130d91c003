// WebSocket upgrades on the uWebSockets.js front end (exec, attach and port-forward to a node's
// agent). Two ways: the relay to the agent's own WebSocket (below), or, for the handlers
// that terminate the client's WebSocket (src/kubelet/'s stream translator and port-forward
// tunnel), a ServedWebSocket that uWS accepts at once (accept). uWS owns its sockets and
// never hands one over, so the byte-for-byte proxy of kube's UpgradeAwareHandler is not
// possible here. Instead: the same request is first made to the agent as a WebSocket client
// (the handshake here, the framing ws's: ws-adopt.ts), offering the client's subprotocols;
// once the agent has accepted, uWS accepts the client's WebSocket with the protocol the
// agent chose, and messages are relayed both ways, binary or text as they came. The agent's
// refusal (any answer but 101) is given to the client as the agent wrote it, as kube does.
//
// Backpressure: the agent's socket is paused while uWS holds more than HIGH_WATER unsent to
// the client, and resumed on uWS's drain. The other way uWS cannot pause a WebSocket's
// reading: what the client sends faster than the agent takes is buffered, up to
// CLIENT_UNTAKEN_MAX, past which the client's connection is closed (1008).
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

import { dialFailure, forwardedHeaders, passRefusal, validWebSocketHandshake, type ServedWebSocket, type UpgradeCarrier, type UpgradeTarget } from './upgrade.js';

/** client-bound bytes uWS may hold before the agent's socket is paused */
const HIGH_WATER = 1 << 20;
/**
 * uWS cannot stop reading a client's WebSocket: past this many bytes of the client's that the
 * other side has not taken (the agent's socket still holds them, or they came while the
 * handler asked for a pause) the connection is closed (1008), so that a client writing faster
 * than the node reads cannot grow the server's memory without bound
 */
const CLIENT_UNTAKEN_MAX = 16 << 20;
/** what uWS may buffer for one client before it drops messages (never reached: HIGH_WATER pauses first) */
const MAX_BACKPRESSURE = 64 << 20;

/**
 * What a WebSocket accepted by uWS is joined to: the relay to an agent's WebSocket
 * (relayHandler), or a ServedWebSocket that a handler of the server drives (servedHandler).
 */
export interface UwsSocketHandler {
  open(ws: uws.WebSocket<RelayData>): void;
  message(message: ArrayBuffer, isBinary: boolean, ws: uws.WebSocket<RelayData>): void;
  drain(ws: uws.WebSocket<RelayData>): void;
  close(code: number, message: ArrayBuffer): void;
}

export interface RelayData {
  handler: UwsSocketHandler;
}

/** Close codes a peer may send in a close frame (RFC 6455 7.4). */
const sendableCode = (c: number): boolean => (c >= 1000 && c <= 1014 && c !== 1004 && c !== 1005 && c !== 1006) || (c >= 3000 && c <= 4999);

/** The app.ws behaviour that hands each accepted WebSocket's events to its handler. */
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
    open: (ws) => ws.getUserData().handler.open(ws),
    message: (ws, message, isBinary) => ws.getUserData().handler.message(message, isBinary, ws),
    drain: (ws) => ws.getUserData().handler.drain(ws),
    close: (ws, code, message) => ws.getUserData().handler.close(code, message),
  };
}

/** The relay of a client's WebSocket to the agent's (peer), message for message. */
function relayHandler(peer: WebSocket): UwsSocketHandler {
  let closed = false;
  return {
    open: (w) => {
      peer.on('message', (data: Buffer, isBinary: boolean) => {
        if (closed) return;
        w.cork(() => w.send(data, isBinary));
        if (w.getBufferedAmount() > HIGH_WATER) peer.pause();
      });
      peer.on('close', (code: number, reason: Buffer) => {
        if (closed) return;
        closed = true;
        w.end(sendableCode(code) ? code : 1000, reason.subarray(0, 120));
      });
      peer.on('error', () => peer.terminate());
      if (peer.readyState !== WebSocket.OPEN) {
        // (the agent went away while uWS was accepting the client)
        closed = true;
        w.end(1000);
        return;
      }
      // (paused since the agent's handshake, so that no message came before this side was open)
      peer.resume();
    },
    message: (message, isBinary, w) => {
      if (peer.readyState !== WebSocket.OPEN) return;
      if (peer.bufferedAmount > CLIENT_UNTAKEN_MAX) {
        w.end(1008, 'the node does not take the input as fast as it comes');
        return;
      }
      // (uWS reuses the ArrayBuffer once this returns)
      peer.send(Buffer.copyBytesFrom(new Uint8Array(message)), { binary: isBinary });
    },
    drain: (w) => {
      if (w.getBufferedAmount() < HIGH_WATER / 2) peer.resume();
    },
    close: (code, message) => {
      if (closed) return;
      closed = true;
      if (peer.readyState === WebSocket.OPEN) {
        peer.close(sendableCode(code) ? code : 1000, Buffer.from(message).subarray(0, 120));
        // the agent answers the close frame; one that does not (busy, or its data still
        // queued behind the frame) loses the connection, so that its command ends either way
        setTimeout(() => {
          if (peer.readyState !== WebSocket.CLOSED) peer.terminate();
        }, 2000).unref();
      } else peer.terminate();
    },
  };
}

/**
 * A client's WebSocket that uWS accepts for a handler of the server (the stream translator,
 * the port-forward tunnel): what is sent before uWS has opened it waits, in order.
 */
function servedHandler(protocol: string): { handler: UwsSocketHandler; served: ServedWebSocket } {
  let ws: uws.WebSocket<RelayData> | undefined;
  let closed = false;
  let pending: Buffer[] = [];
  let closing: [number, string] | undefined;
  let onMessage: (data: Buffer, binary: boolean) => void = () => {};
  let onDrain: () => void = () => {};
  const closers: Array<() => void> = [];
  /** the handler asked for a pause (which uWS cannot make): what comes meanwhile is counted */
  let paused = false;
  let cameWhilePaused = 0;
  const handler: UwsSocketHandler = {
    open: (w) => {
      ws = w;
      w.cork(() => {
        for (const b of pending) w.send(b, true);
      });
      pending = [];
      if (closing) w.end(...closing);
    },
    message: (message, isBinary, w) => {
      if (closed) return;
      if (paused && (cameWhilePaused += message.byteLength) > CLIENT_UNTAKEN_MAX) {
        w.end(1008, 'the node does not take the input as fast as it comes');
        return;
      }
      onMessage(Buffer.copyBytesFrom(new Uint8Array(message)), isBinary);
    },
    drain: () => onDrain(),
    close: () => {
      if (closed) return;
      closed = true;
      ws = undefined;
      for (const f of closers) f();
    },
  };
  const served: ServedWebSocket = {
    protocol,
    send: (data) => {
      if (closed || closing) return;
      if (!ws) pending.push(data);
      else ws.cork(() => ws!.send(data, true));
    },
    bufferedAmount: () => (ws ? ws.getBufferedAmount() : pending.reduce((n, b) => n + b.length, 0)),
    close: (code = 1000, reason = '') => {
      if (closed || closing) return;
      closing = [code, reason];
      ws?.end(code, reason);
    },
    // (uWS cannot stop reading a WebSocket: what the client sends meanwhile is buffered, up
    // to CLIENT_UNTAKEN_MAX)
    pause: () => {
      paused = true;
    },
    resume: () => {
      paused = false;
      cameWhilePaused = 0;
    },
    onMessage: (fn) => (onMessage = fn),
    onDrain: (fn) => (onDrain = fn),
    onClose: (fn) => (closed ? fn() : closers.push(fn)),
  };
  return { handler, served };
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
          res.cork(() => res.upgrade<RelayData>({ handler: relayHandler(peer) }, key, protocol, extensions, context));
          resolve();
        });
        r.on('response', (answer) => {
          // the agent's refusal, given to the client as the agent wrote it
          settled = true;
          passRefusal(answer, sink, resolve);
        });
        r.on('error', (e: NodeJS.ErrnoException) => {
          if (settled) return;
          settled = true;
          reject(dialFailure(e, target.url));
        });
        sink.onAborted(() => r.destroy());
        r.end();
      }),
    accept: (protocol: string) => {
      if (sink.aborted) return undefined;
      if (!validWebSocketHandshake(req.method, req.headers)) {
        sink.send(400, [['Content-Type', 'text/plain; charset=utf-8']], Buffer.from('Bad Request\n'));
        return undefined;
      }
      const { handler, served } = servedHandler(protocol);
      accepted();
      res.cork(() => res.upgrade<RelayData>({ handler }, key, protocol, extensions, context));
      return served;
    },
  };
}
